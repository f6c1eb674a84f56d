"""JSON API for test sets: import (multipart or JSON), list, detail."""

import re
from collections.abc import Iterable
from typing import Any

from django.http import Http404, JsonResponse, StreamingHttpResponse

from evalsite.api import ApiError, api_endpoint, json_body
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, has_role
from tasks.intake import selectors
from tasks.intake.parse import oversize_request, oversize_result
from tasks.intake.pii import PII_CHOICES
from tasks.intake.services import PiiChoice, TestSetImportError, TestSetPiiFound, testset_import
from tasks.intake.views import tasks_file_response
from tasks.models import TestSet

IMPORT_BODY = {
    "multipart/form-data": {
        "schema": {
            "type": "object",
            "required": ["name", "file"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "file": {"type": "string", "format": "binary"},
                "format": {
                    "type": "string",
                    "enum": ["jsonl", "csv"],
                    "description": "the file's format when its name does not end in .jsonl or .csv",
                },
                "pii": {
                    "type": "string",
                    "enum": list(PII_CHOICES),
                    "description": "personal data in the file: refuse (the default: 400 with "
                    "each place), mask (placeholders) or keep (recorded as your choice)",
                },
            },
        }
    },
    "application/json": {
        "schema": {
            "type": "object",
            "required": ["name", "format", "content"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "format": {"type": "string", "enum": ["jsonl", "csv"]},
                "content": {"type": "string", "description": "the whole JSONL or CSV text"},
                "pii": {
                    "type": "string",
                    "enum": list(PII_CHOICES),
                    "description": "personal data in the file: refuse (the default: 400 with "
                    "each place), mask (placeholders) or keep (recorded as your choice)",
                },
            },
        }
    },
}


@api_endpoint(
    ADMIN,
    LEAD,
    methods=("GET", "POST"),
    body=IMPORT_BODY,
    summary="""List test sets (GET) or import one (POST, admin).

POST takes multipart `file` + `name` (format from the file extension, or `format`), or JSON
{"name", "format": "jsonl"|"csv", "content"}. All-or-nothing: on any problem the answer is 400
with `errors`, every problem as "line L, field F: message". The same name again makes a new
version; content identical to an existing version of that name writes nothing (200,
"created": false). Personal data (emails, phone numbers, card numbers, IBANs, national ids,
postal addresses) is refused unless `pii` is mask or keep: 400 with `personal_data`, each
place as {"line", "field", "kind", "hint"}.""",
    responses={
        "200": "list, or identical content",
        "201": {"description": "imported", "methods": ("POST",)},
        "400": {"description": "row errors", "methods": ("POST",)},
        "403": "not an admin",
        "413": {
            "description": "the file is over TESTSET_MAX_BYTES (refused before the body is read)",
            "methods": ("POST",),
        },
    },
)
def testsets(request: AuthedHttpRequest) -> JsonResponse:
    if request.method == "GET":
        return JsonResponse(
            {"testsets": [selectors.testset_as_dict(ts) for ts in selectors.testset_list()]}
        )
    if not has_role(request.user, ADMIN):
        raise ApiError("only admins import test sets", status=403)
    name, fmt, data, filename, pii = _import_input(request)
    try:
        result = testset_import(
            name=name,
            data=data,
            filename=filename,
            user=request.user,
            format=fmt,
            pii=PiiChoice(action=pii, via="API"),
        )
    except TestSetPiiFound as exc:
        raise ApiError(
            str(exc),
            errors=exc.errors,
            error_count=exc.parsed.error_count,
            personal_data=[
                {"line": f.line, "field": f.field, "kind": f.kind, "hint": f.hint}
                for f in exc.scan.findings
            ],
        ) from None
    except TestSetImportError as exc:
        raise ApiError(str(exc), errors=exc.errors, error_count=exc.parsed.error_count) from None
    body = {
        "created": result.created,
        "message": result.message,
        "testset": selectors.testset_as_dict(result.testset, counts=True),
    }
    return JsonResponse(body, status=201 if result.created else 200)


def _import_input(request: AuthedHttpRequest) -> tuple[str, str | None, bytes, str, str]:
    too_big = oversize_request(request)  # before the body is read
    if too_big is not None:
        raise ApiError(too_big.errors[0], status=413, errors=too_big.errors, error_count=1)
    if request.content_type == "multipart/form-data":
        _refuse_unknown_fields([*request.POST, *request.FILES], ("name", "format", "file", "pii"))
        upload = request.FILES.get("file")
        if upload is None:
            raise ApiError("send the test set as the multipart field 'file'")
        too_big = oversize_result(upload.size, filename=upload.name)
        if too_big is not None:
            raise ApiError(too_big.errors[0], errors=too_big.errors, error_count=1)
        fmt = request.POST.get("format") or None
        pii = _pii(request.POST.get("pii"))
        return request.POST.get("name", "").strip(), fmt, upload.read(), upload.name, pii
    body = json_body(request)
    _refuse_unknown_fields(body, ("name", "format", "content", "pii"))
    content, fmt = body.get("content"), body.get("format")
    if not isinstance(content, str):
        raise ApiError("'content' must be the file's text (a string)")
    if fmt not in ("jsonl", "csv"):
        raise ApiError("'format' must be jsonl or csv")
    name = body.get("name")
    if not isinstance(name, str):
        raise ApiError("'name' must be a string")
    return name.strip(), fmt, content.encode("utf-8"), f"{name}.{fmt}", _pii(body.get("pii"))


def _pii(value: Any) -> str:
    if value in (None, ""):
        return "refuse"
    if value not in PII_CHOICES:
        raise ApiError(f"'pii' must be one of {', '.join(PII_CHOICES)}")
    return value


def _refuse_unknown_fields(fields: Iterable[str], known: tuple[str, ...]) -> None:
    # A field the import does not read ("version": 3, "fromat") was dropped without a word,
    # and the test set imported as something the client did not ask for.
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise ApiError(
            f"nothing imported: unknown field {', '.join(map(repr, unknown))}; "
            f"this body takes {', '.join(known)}",
            errors=[f"{key}: unknown field; accepted: {', '.join(known)}" for key in unknown],
        )


VERSION = {
    "description": "a version number (1, 2, ...); the latest when left out",
    "type": "integer",
    "minimum": 1,
}
NOT_FOUND = "no such test set, or no such version of it (the message lists the versions)"


def _testset(request: AuthedHttpRequest, name: str) -> TestSet:
    """The version ?version=N asks for (the latest without it), or a 404 saying what exists."""
    version = request.GET.get("version")
    # ASCII digits only: str.isdigit() also takes '²' or '①', which int() refuses (a 500).
    if version is not None and not re.fullmatch(r"[0-9]+", version):
        raise ApiError(f"version must be a whole number such as 1 or 2, not {version[:20]!r}")
    try:
        return selectors.testset_get(name=name, version=int(version) if version else None)
    except Http404:
        versions = list(selectors.testset_versions(name=name).values_list("version", flat=True))
        if not versions:
            raise ApiError(f"no test set {name!r}", status=404) from None
        raise ApiError(
            f"test set {name!r} has no version {version}; its versions are "
            + ", ".join(map(str, versions)),
            status=404,
            versions=versions,
        ) from None


@api_endpoint(
    ADMIN,
    LEAD,
    summary="One test set: the latest version, or ?version=N; with counts by "
    "category, tier and case type.",
    query={"version": VERSION},
    responses={"200": "the test set", "400": "version is not a number", "404": NOT_FOUND},
)
def testset_detail(request: AuthedHttpRequest, name: str) -> JsonResponse:
    testset = _testset(request, name)
    data = selectors.testset_as_dict(testset, counts=True)
    data["versions"] = list(selectors.testset_versions(name=name).values_list("version", flat=True))
    return JsonResponse(data)


@api_endpoint(
    ADMIN,
    LEAD,
    summary="Download a test set's tasks: ?format=jsonl (default, re-importable) or csv "
    "(formula-escaped); the latest version, or ?version=N.",
    query={
        "format": {"description": "jsonl (the default) or csv", "enum": ["jsonl", "csv"]},
        "version": VERSION,
    },
    responses={
        "200": "the tasks, streamed",
        "400": "unknown format, or version is not a number",
        "404": NOT_FOUND,
    },
)
def testset_tasks(request: AuthedHttpRequest, name: str) -> StreamingHttpResponse:
    fmt = request.GET.get("format", "jsonl")
    if fmt not in ("jsonl", "csv"):
        raise ApiError("format must be jsonl or csv")
    testset = _testset(request, name)
    return tasks_file_response(
        f"{testset.name}-v{testset.version}.{fmt}",
        fmt,
        selectors.testset_export_rows(testset=testset),
    )
