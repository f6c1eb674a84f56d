"""Logging filters (settings.LOGGING)."""

import logging


class DeniedWithoutTraceback(logging.Filter):
    """A refused request (403) logs one line, not the traceback of its PermissionDenied: the
    traceback tells an operator nothing, and a few dozen of them bury the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = record.exc_text = None
        return True
