"""Files the management commands read (definitions) and write (exports)."""

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from django.core.management.base import CommandError

from evalsite.text import counted


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


def definition_text(path: Path) -> str:
    """A definition file's text (UTF-8, a BOM allowed), or the CommandError that says why it
    cannot be read."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except OSError as exc:  # missing, a directory, no permission, ...
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise CommandError(
            f"cannot read {path}: not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def definition_problems(path: Path, errors: list[str]) -> CommandError:
    """Every problem of a definition file, one per line, as the command's error."""
    return CommandError(
        f"{path}: {counted(len(errors), 'problem')}:\n" + "\n".join(f"  {e}" for e in errors)
    )
