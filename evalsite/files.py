"""Files an export command writes."""

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def write_whole(path: Path, chunks: Iterable[str]) -> None:
    """Write to a temporary file beside `path` and rename it into place, so a failure (a full
    disk, a database error mid-export) leaves no half-written export, nor spoils an old one.
    Not a regular file (/dev/stdout, a pipe): written directly, there is nothing to rename."""
    if path.exists() and not path.is_file() and not path.is_dir():
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.writelines(chunks)
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        # newline="" keeps the CSV's CRLF row endings exactly as written.
        with open(fd, "w", encoding="utf-8", newline="") as fh:
            fh.writelines(chunks)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the export from the group
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
