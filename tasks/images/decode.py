"""One image, checked by decoding it, and re-encoded without its metadata.

Only PNG, JPEG, GIF (its first frame) and WebP are taken; what Pillow cannot decode is refused
whatever its name says, and an SVG is refused by name (it can carry script). The stored bytes
are a fresh encoding of the decoded pixels, so no EXIF, XMP, ICC comment or text chunk (a
camera, a path, an author's name) reaches a provider or a reviewer, and the name is the
SHA-256 of those bytes: it says nothing of the original file.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from django.conf import settings
from PIL import Image, ImageOps, UnidentifiedImageError

# Formats taken, and how each is stored (JPEG stays JPEG; the others become PNG).
FORMATS = {"PNG": "PNG", "JPEG": "JPEG", "GIF": "PNG", "WEBP": "PNG"}
MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg"}
EXTENSIONS = {"PNG": "png", "JPEG": "jpg"}


class ImageProblem(ValueError):
    """Why an image is refused, in words for the uploader."""


@dataclass(frozen=True)
class CheckedImage:
    name: str  # neutral: "<sha256>.png"
    data: bytes  # re-encoded, without metadata
    media_type: str
    width: int
    height: int


def _looks_like_svg(raw: bytes) -> bool:
    head = raw[:512].lstrip().lower()
    return head.startswith((b"<?xml", b"<svg", b"<!doctype svg")) or b"<svg" in head


def image_checked(raw: bytes) -> CheckedImage:
    """The image in `raw`, decoded, bounded and re-encoded; ImageProblem when it is refused."""
    limit = settings.TASK_IMAGE_MAX_BYTES
    if len(raw) > limit:
        raise ImageProblem(f"the image is {len(raw):,} bytes; the limit is {limit:,}")
    if _looks_like_svg(raw):
        raise ImageProblem("SVG images are refused (they can carry script): use PNG or JPEG")
    pixels = settings.TASK_IMAGE_MAX_PIXELS
    try:
        with warnings.catch_warnings():
            # Pillow warns above MAX_IMAGE_PIXELS and raises above twice that: both refused.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(raw)) as probe:
                kind = probe.format
                if kind not in FORMATS:
                    raise ImageProblem(
                        f"{kind or 'this'} images are not taken: use PNG, JPEG, GIF or WebP"
                    )
                if probe.width * probe.height > pixels:
                    raise ImageProblem(
                        f"the image is {probe.width} x {probe.height} pixels; the limit is "
                        f"{pixels:,} pixels"
                    )
                probe.seek(0)
                image = ImageOps.exif_transpose(probe)  # keep its orientation, not its EXIF
                image.load()
    except ImageProblem:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageProblem("not an image that decodes (PNG, JPEG, GIF or WebP)") from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise ImageProblem(f"the image does not decode: {exc}") from None
    return _reencoded(image, FORMATS[kind])


def _reencoded(image: Image.Image, fmt: str) -> CheckedImage:
    if fmt == "JPEG":
        image = image.convert("RGB")
    elif image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA")
    out = io.BytesIO()
    # No exif=, no pnginfo=: the new file holds the pixels only.
    image.save(out, format=fmt, **({"quality": 90} if fmt == "JPEG" else {"optimize": False}))
    data = out.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    return CheckedImage(
        name=f"{digest}.{EXTENSIONS[fmt]}",
        data=data,
        media_type=MEDIA_TYPES[fmt],
        width=image.width,
        height=image.height,
    )
