"""JSON API for review records: streamed export and all-or-nothing import."""

from django.http import JsonResponse, StreamingHttpResponse

from evalsite.api import ApiError, api_endpoint, found_or_404
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, has_role
from reviews.records import (
    FORMATS,
    RecordImportError,
    export_filename,
    records_export,
    reviews_import,
)
from tasks.models import Campaign

UNBLIND_WORDS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}
CONTENT_TYPES = {"jsonl": "application/x-ndjson; charset=utf-8", "csv": "text/csv; charset=utf-8"}


def export_response(*, campaign: Campaign, fmt: str, unblind: bool) -> StreamingHttpResponse:
    """A streamed download: rows leave as they are read, nothing is built in memory first."""
    response = StreamingHttpResponse(
        records_export(campaign=campaign, fmt=fmt, unblind=unblind), content_type=CONTENT_TYPES[fmt]
    )
    response["Content-Disposition"] = (
        f'attachment; filename="{export_filename(campaign=campaign, fmt=fmt, unblind=unblind)}"'
    )
    response["Cache-Control"] = "no-store"
    return response


def _format_of_upload(request: AuthedHttpRequest) -> tuple[bytes, str | None, str | None]:
    fmt = request.GET.get("format") or None
    content_type = request.content_type or ""
    if content_type == "multipart/form-data":
        # Parsing the form consumed the body: without a `file` part there is nothing else.
        upload = request.FILES.get("file")
        if upload is None:
            raise ApiError("send the records as the multipart field 'file'")
        return upload.read(), fmt, upload.name
    if fmt is None:
        if content_type == "text/csv":
            fmt = "csv"
        elif content_type in ("application/x-ndjson", "application/jsonl", "application/json"):
            fmt = "jsonl"
    return request.body, fmt, ""


@api_endpoint(
    ADMIN,
    LEAD,
    methods=("GET", "POST"),
    summary=(
        "Review records of a campaign. GET streams them (`?format=jsonl|csv`, blind unless "
        "`&unblind=1`, which needs the lead role). POST imports a JSONL or CSV file (raw body with "
        "Content-Type application/x-ndjson or text/csv, or multipart field `file`); all or nothing."
    ),
    body={
        "application/x-ndjson": {"schema": {"type": "string"}},
        "text/csv": {"schema": {"type": "string"}},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {"file": {"type": "string", "format": "binary"}},
            }
        },
    },
    query={
        "format": {
            "description": "jsonl or csv: GET, the download's (jsonl when left out); POST, the "
            "file's (else from the Content-Type or the file name)",
            "enum": list(FORMATS),
        },
        "unblind": {
            "description": "1 (or true, yes) adds the model identities, leads only; 0 (false, no)"
            " or left out: blind",
            "enum": ["", "0", "1", "true", "false", "yes", "no"],
            "methods": ("GET",),
        },
    },
    too_big="send the file as the multipart field `file` (up to REVIEWS_IMPORT_MAX_BYTES, "
    "100 MiB by default), or use `manage.py import_reviews`",
    responses={
        "200": "records (GET) or the import summary (POST)",
        "400": "invalid records, listed per line; or an unknown format or unblind value",
        "403": "role does not allow this",
        "404": "no such campaign",
    },
)
def campaign_reviews(request: AuthedHttpRequest, slug: str) -> JsonResponse | StreamingHttpResponse:
    campaign = found_or_404(Campaign.objects, "campaign", slug=slug)
    if request.method == "GET":
        fmt = request.GET.get("format", "jsonl")
        if fmt not in FORMATS:
            raise ApiError("format must be jsonl or csv")
        # Python's requests sends params={"unblind": True} as "True": read case-blind, and
        # refuse a word it is not, rather than hand back a blind file without a word.
        unblind = (request.GET.get("unblind") or "0").strip().lower()
        if unblind not in UNBLIND_WORDS:
            raise ApiError("unblind must be 1 (or true, yes) or 0 (or false, no)")
        unblind = UNBLIND_WORDS[unblind]
        if unblind and not has_role(request.user, LEAD):
            raise ApiError("only leads may export with model identities", status=403)
        return export_response(campaign=campaign, fmt=fmt, unblind=unblind)
    data, fmt, filename = _format_of_upload(request)
    if fmt is not None and fmt not in FORMATS:
        raise ApiError("format must be jsonl or csv")
    try:
        summary = reviews_import(campaign=campaign, data=data, fmt=fmt, filename=filename)
    except RecordImportError as exc:
        raise ApiError("nothing imported: the file has problems", errors=exc.messages()) from None
    return JsonResponse(summary.as_dict())
