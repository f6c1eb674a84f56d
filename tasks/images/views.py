"""The images of test cases, as reviewers, arbiters, leads and admins see them beside a task's
text: served under their neutral names, re-encoded without metadata (tasks/images/)."""

from __future__ import annotations

import re

from django.http import Http404, HttpResponse
from django.views.decorators.http import require_GET

from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ROLES, role_required
from tasks.images.store import image_bytes

NAME_RE = re.compile(r"^[0-9a-f]{64}\.(png|jpg)$")
CONTENT_TYPES = {"png": "image/png", "jpg": "image/jpeg"}


@require_GET
@role_required(*ROLES)
def task_image(request: AuthedHttpRequest, image: str) -> HttpResponse:
    """One stored image. Its name is the SHA-256 of its content, so it tells nothing of the
    file it came from and cannot be guessed; anything else is not found."""
    if not NAME_RE.match(image):
        raise Http404("no such image")
    try:
        data = image_bytes(image)
    except FileNotFoundError:
        raise Http404("no such image") from None
    response = HttpResponse(data, content_type=CONTENT_TYPES[image.rsplit(".", 1)[1]])
    # Content-addressed: the bytes under a name never change.
    response["Cache-Control"] = "private, max-age=604800, immutable"
    response["Content-Disposition"] = "inline"
    return response
