import json
from collections.abc import Iterable

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite.csvsafe import csv_response
from evalsite.htmx import AuthedHttpRequest, wants_fragment
from evalsite.roles import ADMIN, LEAD, has_role, role_required
from evalsite.text import counted
from tasks.images.parts import content_text
from tasks.intake import selectors
from tasks.intake.forms import TaskFilterForm, TestSetUploadForm
from tasks.intake.parse import CASE_TYPES, TIERS, oversize_request, oversize_result
from tasks.intake.pending import pending_upload_discard, pending_upload_load, pending_upload_save
from tasks.intake.pii import PII_CHOICES
from tasks.intake.services import (
    PiiChoice,
    TestSetFrozen,
    TestSetImportError,
    testset_delete,
    testset_import,
    testset_pii,
    testset_validate,
)
from tasks.intake.upload_help import EXAMPLE_TASKS, format_help
from tasks.models import TestSet

PREVIEW_ROWS = 10
PII_ROWS = 200  # findings listed on the page; the count says how many more
TESTSETS_PER_PAGE = 50


@require_GET
@role_required(ADMIN, LEAD)
def testset_list(request: AuthedHttpRequest) -> HttpResponse:
    page = Paginator(selectors.testset_list(), TESTSETS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "tasks/testset_list.html",
        {"page": page, "can_upload": has_role(request.user, ADMIN)},
    )


@require_GET
@role_required(ADMIN, LEAD)
def testset_detail(request: AuthedHttpRequest, name: str, version: int) -> HttpResponse:
    testset = selectors.testset_get(name=name, version=version)
    counts = selectors.testset_counts(testset=testset)
    form = TaskFilterForm(request.GET or None, categories=[c for c, _ in counts["category"]])
    filters = form.filters() if form.is_bound else {}
    page = selectors.testset_tasks_page(
        testset=testset,
        filters=selectors.TaskFilters(
            **{k: filters.get(k) or "" for k in ("category", "tier", "case_type", "q")}
        ),
        page=request.GET.get("page", 1),
    )
    page.object_list = list(page.object_list)
    for task in page.object_list:
        task.checks_json = json.dumps(task.checks, indent=2, ensure_ascii=False)
        task.metadata_json = json.dumps(task.metadata, indent=2, ensure_ascii=False)
        task.tools_json = json.dumps(
            {k: getattr(task, k) for k in ("tools", "tool_mocks") if getattr(task, k)},
            indent=2,
            ensure_ascii=False,
        )
        task.turn_checks_json = json.dumps(task.turn_checks, indent=2, ensure_ascii=False)
    context = {
        "testset": testset,
        "count_blocks": [
            ("Categories", counts["category"]),
            ("Tiers", counts["tier"]),
            ("Case types", counts["case_type"]),
        ],
        "form": form,
        "page": page,
        "filtered": any(filters.get(k) for k in ("category", "tier", "case_type", "q")),
        "versions": selectors.testset_versions(name=name),
        "can_delete": has_role(request.user, ADMIN)
        and not testset.frozen
        and not testset.campaigns.exists(),
    }
    # A history restore (back button, no client cache) wants the whole page.
    if wants_fragment(request) and not request.htmx.boosted:
        return render(request, "tasks/testset_detail.html#tasks", context)
    return render(request, "tasks/testset_detail.html", context)


@require_GET
@role_required(ADMIN, LEAD)
def testset_download(
    request: AuthedHttpRequest, name: str, version: int, fmt: str
) -> StreamingHttpResponse:
    testset = selectors.testset_get(name=name, version=version)
    rows = selectors.testset_export_rows(testset=testset)
    return tasks_file_response(f"{testset.name}-v{testset.version}.{fmt}", fmt, rows)


@require_GET
@role_required(ADMIN)
def testset_example(request: AuthedHttpRequest, fmt: str) -> StreamingHttpResponse:
    """The upload page's example file: the same tasks it shows, written as a download is."""
    return tasks_file_response(f"example.{fmt}", fmt, EXAMPLE_TASKS)


def tasks_file_response(filename: str, fmt: str, rows: Iterable[dict]) -> StreamingHttpResponse:
    """Tasks in the intake format as a download (the page, the API and the example files)."""
    if fmt == "csv":
        # Formula-escaped: prompts and references are user-supplied text opened in spreadsheets.
        return csv_response(filename, selectors.EXPORT_FIELDS, selectors.rows_as_csv_cells(rows))
    if fmt == "jsonl":
        response = StreamingHttpResponse(
            selectors.rows_as_jsonl(rows), content_type="application/x-ndjson; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    raise Http404("unknown format")


@require_POST
@role_required(ADMIN)
def testset_remove(request: AuthedHttpRequest, name: str, version: int) -> HttpResponse:
    testset = selectors.testset_get(name=name, version=version)
    try:
        testset_delete(testset=testset)
    except TestSetFrozen as exc:
        messages.error(request, str(exc))
        target = reverse("testset_detail", args=[name, version])
    else:
        messages.success(request, f"Deleted {testset}.")
        target = reverse("testset_list")
    if request.htmx:
        return HttpResponseClientRedirect(target)
    return redirect(target)


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
@csrf_exempt  # only so an oversize body is refused before anything reads it; see below
def testset_upload(request: AuthedHttpRequest) -> HttpResponse:
    """Choose a file -> validate (preview + every problem) -> confirm. Nothing is written
    before confirm; between the two steps the bytes wait in a per-session pending store."""
    too_big = oversize_request(request)
    if too_big is not None:
        # Answered from the Content-Length alone: the body is never parsed or spooled to disk.
        # No state changes here, so answering before the CSRF check is safe.
        context = {
            "form": TestSetUploadForm(),
            "parsed": too_big,
            "filename": "the upload",
            "format": format_help(),
        }
        template = (
            "tasks/testset_upload.html#upload" if request.htmx else "tasks/testset_upload.html"
        )
        return render(request, template, context)
    return _testset_upload(request)


@csrf_protect
def _testset_upload(request: AuthedHttpRequest) -> HttpResponse:
    context: dict = {"form": TestSetUploadForm(), "format": format_help()}
    if request.method == "POST":
        if request.POST.get("action") == "confirm":
            response = _upload_confirm(request, context)
            if response is not None:
                return response
        else:
            context.update(_upload_validate(request))
    if request.htmx and request.method == "POST":  # a GET is a page load or history restore
        return render(request, "tasks/testset_upload.html#upload", context)
    return render(request, "tasks/testset_upload.html", context)


def _upload_validate(request: AuthedHttpRequest) -> dict:
    form = TestSetUploadForm(request.POST, request.FILES)
    valid = form.is_valid()
    upload = form.cleaned_data.get("file")
    if not valid and (upload is None or set(form.errors) - {"name"}):
        return {"form": form}
    # A bad name alone does not stop the file's check: one submit lists every problem (the
    # name's among them, as the API and the command list it), and nothing can be confirmed.
    name = form.cleaned_data.get("name") or request.POST.get("name", "").strip()
    # Size first: Django has already spooled the upload to disk, but we never parse it.
    parsed = oversize_result(upload.size, filename=upload.name)
    data = b""
    if parsed is None:
        data = upload.read()
        parsed = testset_validate(name=name, data=data, filename=upload.name)
    context = {"form": form, "parsed": parsed, "name": name, "filename": upload.name}
    if not parsed.ok:
        return context
    pii = testset_pii(parsed)
    context["pii"] = pii
    context["pii_rows"] = pii.findings[:PII_ROWS]
    context["pii_more"] = max(0, pii.count - PII_ROWS)
    context["preview"] = [_preview_row(task) for task in parsed.tasks[:PREVIEW_ROWS]]
    counts = parsed.counts()
    context["counts"] = {
        "category": sorted(counts["category"].items(), key=lambda kv: (-kv[1], kv[0])),
        "tier": [(t, counts["tier"].get(t, 0)) for t in TIERS],
        "case_type": [(c, counts["case_type"].get(c, 0)) for c in CASE_TYPES],
    }
    existing = TestSet.objects.filter(name=name)
    context["identical"] = existing.filter(checksum=parsed.checksum).order_by("version").first()
    if context["identical"] is None:
        latest = existing.order_by("-version").first()
        context["next_version"] = latest.version + 1 if latest else 1
        context["token"] = pending_upload_save(
            session=request.session, data=data, name=name, filename=upload.name
        )
    return context


def _upload_confirm(request: AuthedHttpRequest, context: dict) -> HttpResponse | None:
    token = request.POST.get("token", "")
    pending = pending_upload_load(session=request.session, token=token)
    if pending is None:
        context["expired"] = True
        return None
    action = request.POST.get("pii", "refuse")
    try:
        result = testset_import(
            name=pending.name,
            data=pending.data,
            filename=pending.filename,
            user=request.user,
            pii=PiiChoice(action=action if action in PII_CHOICES else "refuse", via="upload page"),
        )
    except TestSetImportError as exc:
        context.update(parsed=exc.parsed, name=pending.name, filename=pending.filename)
        return None
    finally:
        pending_upload_discard(session=request.session, token=token)
    ts = result.testset
    if result.created:
        note = ""
        if ts.pii_count:
            done = "masked" if ts.pii_action == "mask" else "kept as uploaded, as you chose"
            note = f" Personal data: {counted(ts.pii_count, 'piece')} {done}."
        messages.success(request, f"Imported {ts.name} v{ts.version}: {ts.task_count} tasks.{note}")
    else:
        messages.info(
            request, f"The file is identical to {ts.name} v{ts.version}; nothing was imported."
        )
    target = reverse("testset_detail", args=[ts.name, ts.version])
    if request.htmx:
        return HttpResponseClientRedirect(target)
    return redirect(target)


def _preview_row(task: dict) -> dict:
    messages, turns = task["messages"] or [], task.get("turns", [])
    users = [content_text(m["content"]) for m in messages if m["role"] == "user"]
    # A scripted user's first turn, else the conversation's last user message, else the prompt.
    text = content_text(turns[0]) if turns else users[-1] if users else task["prompt"]
    return {
        **task,
        "text": text,
        "message_count": len(messages),
        "turn_count": len(turns),
        "tool_count": len(task.get("tools", [])),
        "check_names": sorted(task["checks"]),
    }
