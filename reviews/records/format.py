"""The review record format: its keys, limits and how a problem with a line is told."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings

from evalsite.text import more_problems

MAX_SECONDS = 2**31 - 1  # what Review.seconds_spent holds on every database

JSONL_KEYS = (
    "task_id",
    "category",
    "candidates",
    "scores",
    "turn_scores",
    "judge",
    "blind",
    "models",
    "preference",
    "sample",
    "flags",
    "comment",
    "submitted_at",
    "seconds",
    "arbitration",
    "source",
)
REQUIRED_KEYS = ("task_id", "candidates", "judge", "models")
MAX_ERRORS = 200
EXPORT_CHUNK = 2000
CSV_FIELD_LIMIT = 131072
USERNAME_RE = re.compile(r"^[\w.@+-]{1,150}$")
FORMATS = ("jsonl", "csv")


def max_import_bytes() -> int:
    return settings.REVIEWS_IMPORT_MAX_BYTES


def too_big_problem() -> str:
    """What a file over the limit is told: by the import, the dashboard form and, before the
    upload, the browser."""
    return f"the file is larger than {max_import_bytes():,} bytes (REVIEWS_IMPORT_MAX_BYTES)"


CSV_FIXED = (
    "task_id",
    "category",
    "sample",
    "judge",
    "blind",
    "submitted_at",
    "candidates",
    "preference",
    "comment",
    "seconds",
    "arbitration",
    "source",
)
# Who a record's outcome is from: a person (a review, an arbitration) or, under a review
# policy, the judge that settled the item alone (exported, never imported as a review).
SOURCES = ("human", "judge")


@dataclass
class RecordError:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, field {self.field or '(record)'}: {self.message}"


class RecordImportError(Exception):
    """The first MAX_ERRORS problems in line order in `errors`; how many there are in `count`."""

    def __init__(self, errors: list[RecordError]):
        self.count = len(errors)
        self.errors = sorted(errors, key=lambda e: (e.line, e.field))[:MAX_ERRORS]
        super().__init__("\n".join(str(e) for e in self.errors))

    def messages(self) -> list[str]:
        """Every listed problem, plus a closing line saying how many were left out (as the
        test-set import says it)."""
        out = [str(e) for e in self.errors]
        if self.count > len(self.errors):
            out.append(more_problems(self.count - len(self.errors)))
        return out
