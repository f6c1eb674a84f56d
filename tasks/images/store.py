"""Checked images, written and read through Django's storage API (local files in the embedded
mode, any storage backend in production), under their neutral names."""

from __future__ import annotations

import base64
import functools

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from tasks.images.decode import CheckedImage

FOLDER = "task-images"


def image_path(name: str) -> str:
    return f"{FOLDER}/{name}"


def images_store(images: dict[str, CheckedImage]) -> int:
    """Write the images not yet stored (a name is its content's hash: the same image is stored
    once, whatever test sets use it). Returns how many were written."""
    written = 0
    for name, image in images.items():
        path = image_path(name)
        if not default_storage.exists(path):
            default_storage.save(path, ContentFile(image.data))
            written += 1
    return written


@functools.lru_cache(maxsize=256)
def image_base64(name: str) -> str:
    """A stored image as base64, as providers send it (cached: a chart shared by many tasks is
    read once per worker process; the content of a name never changes)."""
    with default_storage.open(image_path(name), "rb") as handle:
        return base64.b64encode(handle.read()).decode("ascii")


def image_stored(name: str) -> bool:
    return default_storage.exists(image_path(name))


def image_bytes(name: str) -> bytes:
    with default_storage.open(image_path(name), "rb") as handle:
        return handle.read()
