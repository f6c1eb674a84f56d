"""A test set uploaded as a zip: one JSONL (or CSV) file and the images its tasks name by path.

Refused before anything is decoded: a member whose path leaves the zip's root (absolute, a
drive letter, `..`), too many members, a member or a total larger than the limits once
inflated (counted while reading, never trusted from the header, so a zip bomb stops at the
limit), and a zip without exactly one test-set file.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from dataclasses import dataclass, field

from django.conf import settings

MAX_MEMBERS = 10_000
TESTSET_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv")


class BundleProblem(ValueError):
    """Why the zip is refused."""


@dataclass
class Bundle:
    filename: str  # the test-set file's name inside the zip
    data: bytes
    files: dict[str, bytes] = field(default_factory=dict)  # normalized path -> bytes


def is_zip(data: bytes) -> bool:
    return data[:4] == b"PK\x03\x04"


def member_path(name: str) -> str | None:
    """The member's path relative to the zip's root, or None when it leaves the root."""
    name = name.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    normalized = posixpath.normpath(name)
    if normalized == ".." or normalized.startswith("../"):
        return None
    return normalized


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int) -> bytes:
    """A member's bytes, read in pieces and stopped past `budget` (the header's sizes are
    the uploader's word)."""
    chunks, size = [], 0
    with archive.open(info) as member:
        while chunk := member.read(64 * 1024):
            size += len(chunk)
            if size > budget:
                raise BundleProblem(
                    f"{info.filename!r} inflates the zip past {settings.TESTSET_ZIP_MAX_BYTES:,} "
                    "bytes (the limit of what a zip may hold): refused as a zip bomb"
                )
            chunks.append(chunk)
    return b"".join(chunks)


def bundle_read(data: bytes) -> Bundle:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise BundleProblem(f"not a readable zip file: {exc}") from None
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > MAX_MEMBERS:
            raise BundleProblem(f"the zip holds {len(infos):,} files; the limit is {MAX_MEMBERS:,}")
        budget = settings.TESTSET_ZIP_MAX_BYTES
        files: dict[str, bytes] = {}
        for info in infos:
            path = member_path(info.filename)
            if path is None:
                raise BundleProblem(f"{info.filename!r} is outside the zip's root: refused")
            if path.startswith("__MACOSX/") or posixpath.basename(path).startswith("._"):
                continue  # a Mac's resource forks, not part of the test set
            try:
                content = _read(archive, info, budget)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
                raise BundleProblem(f"{info.filename!r} cannot be read: {exc}") from None
            budget -= len(content)
            files[path] = content
    testsets = sorted(p for p in files if p.lower().endswith(TESTSET_SUFFIXES))
    if len(testsets) != 1:
        found = ", ".join(testsets) if testsets else "none"
        raise BundleProblem(
            f"the zip must hold exactly one .jsonl or .csv test set (found {found})"
        )
    name = testsets[0]
    return Bundle(filename=name, data=files.pop(name), files=files)
