"""Uploaded test-set files kept between "validate" and "confirm", nothing imported yet.

The bytes live in DATA_DIR/uploads under a random token; the token lives in the uploader's
session, so nobody else can confirm (or read) it. Files expire after an hour. A file store
rather than the cache: the embedded mode runs several web processes with a per-process cache.
"""

import hashlib
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

SESSION_KEY = "pending_testset_uploads"
TTL_SECONDS = 3600
KEEP_PER_SESSION = 3
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{32}$")


@dataclass
class PendingUpload:
    token: str
    name: str
    filename: str
    data: bytes


def _dir() -> Path:
    path = Path(settings.DATA_DIR) / "uploads"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def _prune(directory: Path) -> None:
    cutoff = time.time() - TTL_SECONDS
    for entry in directory.iterdir():
        try:
            if entry.stat().st_mtime < cutoff:
                entry.unlink()
        except FileNotFoundError:
            pass  # another process pruned it first


def pending_upload_save(*, session, data: bytes, name: str, filename: str) -> str:
    directory = _dir()
    _prune(directory)
    token = secrets.token_urlsafe(24)
    fd = os.open(directory / token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    entries = dict(session.get(SESSION_KEY, {}))
    entries[token] = {
        "name": name,
        "filename": filename,
        "sha256": hashlib.sha256(data).hexdigest(),
        "at": time.time(),
    }
    # Keep the newest few per session; drop the files of the rest.
    for old in sorted(entries, key=lambda t: entries[t]["at"])[:-KEEP_PER_SESSION]:
        entries.pop(old)
        (directory / old).unlink(missing_ok=True)
    session[SESSION_KEY] = entries
    return token


def pending_upload_load(*, session, token: str) -> PendingUpload | None:
    meta = session.get(SESSION_KEY, {}).get(token)
    if not meta or not TOKEN_RE.match(token) or time.time() - meta["at"] > TTL_SECONDS:
        return None
    try:
        data = (_dir() / token).read_bytes()
    except FileNotFoundError:
        return None
    if hashlib.sha256(data).hexdigest() != meta["sha256"]:
        return None
    return PendingUpload(token=token, name=meta["name"], filename=meta["filename"], data=data)


def pending_upload_discard(*, session, token: str) -> None:
    entries = dict(session.get(SESSION_KEY, {}))
    if entries.pop(token, None) is not None and TOKEN_RE.match(token):
        (_dir() / token).unlink(missing_ok=True)
    session[SESSION_KEY] = entries
