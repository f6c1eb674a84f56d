"""A message's content given as parts: [{"type": "text", "text"}, {"type": "image", "path" |
"url" | "data"}], checked while a test set is parsed.

An image part names a file of the uploaded zip (`path`, relative to the test-set file), or
carries the image itself (`data`: base64 or a data URL; `url`: a data URL; evalsite never
fetches a remote address). Each image is decoded and re-encoded (decode.py) and the part is
stored as {"type": "image", "image": "<neutral name>", "media_type", "width", "height"}: the
original path or file name is not kept. The images found are collected on the parse's
`ImageSource`, and written only when the whole test set imports.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from evalsite.uploads import RowError, kind
from tasks.images.decode import CheckedImage, ImageProblem, image_checked
from tasks.images.store import image_stored

PART_TYPES = ("text", "image")
IMAGE_SOURCES = ("path", "url", "data")
MAX_IMAGES_PER_TASK = 20
DATA_URL = re.compile(r"^data:(image/[a-z0-9.+-]+)?(;[a-z0-9=.+-]+)*;base64,", re.I)


@dataclass
class ImageSource:
    """The images a parse can read (the zip's files) and the images it found."""

    files: dict[str, bytes] = field(default_factory=dict)
    root: str = ""  # the test-set file's folder inside the zip
    found: dict[str, CheckedImage] = field(default_factory=dict)
    # Checked images by the bytes' source, so a chart used by 300 tasks is decoded once.
    _cache: dict[tuple[str, str], CheckedImage | ImageProblem] = field(default_factory=dict)


_source: contextvars.ContextVar[ImageSource | None] = contextvars.ContextVar(
    "task_image_source", default=None
)


def image_source_set(source: ImageSource) -> contextvars.Token:
    """Give the parse being run its images (the zip's files); reset with the returned token.
    A context variable, as rows are validated deep below the parse that knows the upload."""
    return _source.set(source)


def image_source_reset(token: contextvars.Token) -> None:
    _source.reset(token)


def _bytes_of(part: dict, key: str, source: ImageSource) -> bytes:
    value = part[key]
    if not isinstance(value, str) or not value:
        raise ImageProblem(f"must be a non-empty string, not {kind(value)}")
    if key == "path":
        path = posixpath.normpath(posixpath.join(source.root, value.replace("\\", "/")))
        if value.startswith("/") or path == ".." or path.startswith("../"):
            raise ImageProblem("must be a path inside the zip, relative to the test-set file")
        if path not in source.files:
            raise ImageProblem(
                f"no file {value!r} in the upload (give the test set as a zip holding its images)"
            )
        return source.files[path]
    if key == "url" and not value.lower().startswith("data:"):
        raise ImageProblem(
            "only data: URLs are taken (evalsite never fetches an address): put the image in "
            "the zip and name it with path"
        )
    encoded = value
    if value.lower().startswith("data:"):
        match = DATA_URL.match(value)
        if match is None:
            raise ImageProblem("a data URL must be data:image/...;base64,...")
        encoded = value[match.end() :]
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ImageProblem("is not valid base64") from None


STORED_KEYS = {"type", "image", "media_type", "width", "height"}
STORED_NAME = re.compile(r"^[0-9a-f]{64}\.(png|jpg)$")


def _stored_part(part: dict, where: str) -> dict:
    """An image already stored here, named as a download names it: the same image again."""
    extra = set(part) - STORED_KEYS
    name = part.get("image")
    if extra or not isinstance(name, str) or not STORED_NAME.match(name):
        raise RowError(f"{where}.image", "must name an image stored here (as a download does), "
                       "with only media_type, width and height beside it")  # fmt: skip
    if not image_stored(name):
        raise RowError(f"{where}.image", f"no stored image {name!r}: give it with path or data")
    return {
        key: part[key] for key in ("type", "image", "media_type", "width", "height") if key in part
    }


def _image_part(part: dict, where: str, source: ImageSource) -> dict:
    if "image" in part:
        return _stored_part(part, where)
    given = [k for k in IMAGE_SOURCES if k in part]
    extra = set(part) - {"type", *IMAGE_SOURCES}
    if extra:
        raise RowError(where, f"unknown key(s) {', '.join(sorted(extra))}; an image part has "
                       "type and one of path, url or data")  # fmt: skip
    if len(given) != 1:
        raise RowError(where, "an image part needs exactly one of path, url or data")
    key = given[0]
    cache_key = (key, part[key] if isinstance(part[key], str) else repr(part[key]))
    checked = source._cache.get(cache_key)
    if checked is None:
        try:
            checked = image_checked(_bytes_of(part, key, source))
        except ImageProblem as exc:
            checked = exc
        source._cache[cache_key] = checked
    if isinstance(checked, ImageProblem):
        raise RowError(f"{where}.{key}", str(checked))
    source.found[checked.name] = checked
    return {
        "type": "image",
        "image": checked.name,
        "media_type": checked.media_type,
        "width": checked.width,
        "height": checked.height,
    }


def _text_part(part: dict, where: str, limit: int) -> dict:
    extra = set(part) - {"type", "text"}
    if extra:
        raise RowError(
            where, f"unknown key(s) {', '.join(sorted(extra))}; a text part has type and text"
        )
    text = part.get("text")
    if not isinstance(text, str) or not text.strip():
        raise RowError(f"{where}.text", "must be a non-empty string")
    if len(text) > limit:
        raise RowError(f"{where}.text", f"is {len(text):,} characters long; the limit is {limit:,}")
    return {"type": "text", "text": text}


def parts_value(value: list, where: str, *, limit: int) -> list[dict]:
    """A content given as parts, checked; `where` names the content (messages[0].content)."""
    source = _source.get() or ImageSource()
    if not value:
        raise RowError(where, "is an empty array of parts")
    out = []
    for j, part in enumerate(value):
        at = f"{where}[{j}]"
        if not isinstance(part, dict):
            raise RowError(at, f"must be a {{type, ...}} object, not {kind(part)}")
        kind_ = part.get("type")
        if kind_ not in PART_TYPES:
            raise RowError(f"{at}.type", f"unknown part type {kind_!r}; use text or image")
        out.append(
            _text_part(part, at, limit) if kind_ == "text" else _image_part(part, at, source)
        )
    if sum(1 for p in out if p["type"] == "image") > MAX_IMAGES_PER_TASK:
        raise RowError(where, f"holds more than {MAX_IMAGES_PER_TASK} images")
    return out


def content_text(content: Any) -> str:
    """A content's text (its text parts joined), for checks, masking and identity findings."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def content_images(content: Any) -> list[dict]:
    """A content's image parts, as stored."""
    if not isinstance(content, list):
        return []
    return [p for p in content if isinstance(p, dict) and p.get("type") == "image"]


def image_links(content: Any) -> list[dict]:
    """A content's images as pages show them: the URL of the stored copy (a neutral name,
    no metadata), its size and its number; never the file name it was uploaded under."""
    return [
        {
            "url": reverse("task_image", args=[part["image"]]),
            "width": part.get("width"),
            "height": part.get("height"),
            "number": number,
        }
        for number, part in enumerate(content_images(content), start=1)
    ]
