"""Lead dashboards (leads and admins only): pages, their CSV tables and review-record downloads."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite.csvsafe import csv_response
from evalsite.htmx import AuthedHttpRequest, wants_fragment
from evalsite.roles import ADMIN, LEAD, has_role, role_required
from evalsite.text import counted
from reviews.dashboards.selectors import (
    PAGE_TITLES,
    dashboard_page,
    pages_for,
)
from reviews.records import (
    FORMATS,
    RecordImportError,
    max_import_bytes,
    reviews_import,
    too_big_problem,
)
from reviews.records.api import export_response
from reviews.report.cache import campaign_report_cached
from tasks.models import Campaign


def _report_for(campaign: Campaign, page: str) -> dict:
    """The cached report; 404 for a page this campaign does not have (tool use without tool
    tasks, conversation without conversation tasks)."""
    report = campaign_report_cached(campaign)
    if page not in dict(pages_for(report)):
        raise Http404
    return report


def _context(request: AuthedHttpRequest, campaign: Campaign, page: str) -> dict:
    report = _report_for(campaign, page)
    data = dashboard_page(report, page, a=request.GET.get("a"), b=request.GET.get("b"))
    return {
        "campaign": campaign,
        "report": report,
        "page": page,
        "page_title": PAGE_TITLES[page],
        "pages": pages_for(report),
        "can_unblind": has_role(request.user, LEAD),
        **(_import_limit() if page == "overview" else {}),
        **data,
    }


def _import_limit() -> dict:
    """For the overview's import form: the browser refuses a file over the limit when it is
    chosen, in the server's words, instead of sending it all to be refused unread."""
    problem = too_big_problem()
    return {
        "import_max_bytes": max_import_bytes(),
        "import_too_big": f"{problem[:1].upper()}{problem[1:]}.",
    }


@role_required(ADMIN, LEAD)  # deny first: outsiders get 403 whatever the method
@require_GET
def campaign_dashboard(
    request: AuthedHttpRequest, slug: str, page: str = "overview"
) -> HttpResponse:
    if page not in PAGE_TITLES:
        raise Http404
    campaign = get_object_or_404(Campaign, slug=slug)
    context = _context(request, campaign, page)
    template = f"reviews/dashboard_{page.replace('-', '_')}.html"
    if wants_fragment(request) and page == "head-to-head":
        return render(request, f"{template}#comparison", context)
    return render(request, template, context)


@role_required(ADMIN, LEAD)  # deny first: outsiders get 403 whatever the method
@require_GET
def dashboard_table_csv(
    request: AuthedHttpRequest, slug: str, page: str, table: str
) -> StreamingHttpResponse:
    """Any dashboard table as CSV, from the same rows the page shows (formula-escaped)."""
    if page not in PAGE_TITLES:
        raise Http404
    campaign = get_object_or_404(Campaign, slug=slug)
    data = dashboard_page(
        _report_for(campaign, page), page, a=request.GET.get("a"), b=request.GET.get("b")
    )
    found = next((t for t in data["tables"] if t.key == table), None)
    if found is None:
        raise Http404
    return csv_response(f"{campaign.slug}-{table}.csv", found.csv_header(), found.csv_rows())


@role_required(ADMIN, LEAD)  # deny first: outsiders get 403 whatever the method
@require_GET
def campaign_reviews_download(request: AuthedHttpRequest, slug: str) -> StreamingHttpResponse:
    """Review records as a streamed file; identities only for leads (`unblind=1`)."""
    campaign = get_object_or_404(Campaign, slug=slug)
    fmt = request.GET.get("format", "jsonl")
    if fmt not in FORMATS:
        raise Http404
    unblind = request.GET.get("unblind") == "1"
    if unblind and not has_role(request.user, LEAD):
        raise PermissionDenied
    return export_response(campaign=campaign, fmt=fmt, unblind=unblind)


@role_required(ADMIN, LEAD)
@require_POST
def campaign_reviews_upload(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Import a review-record file (all or nothing); problems are listed under the form."""
    campaign = get_object_or_404(Campaign, slug=slug)
    upload = request.FILES.get("file")
    errors: list[str] = []
    if upload is None:
        errors = ["choose a JSONL or CSV file of review records"]
    elif upload.size > max_import_bytes():
        errors = [too_big_problem()]
    else:
        try:
            summary = reviews_import(campaign=campaign, data=upload.read(), filename=upload.name)
        except RecordImportError as exc:
            errors = exc.messages()
        else:
            messages.success(
                request,
                f"Imported {counted(summary.reviews_created, 'review')} and "
                f"{counted(summary.arbitrations_created, 'arbitration')} "
                f"from {upload.name}; already here: "
                f"{counted(summary.reviews_unchanged + summary.arbitrations_unchanged, 'record')}.",
            )
            url = reverse("campaign_dashboard", args=[campaign.slug])
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    if request.htmx:
        return render(
            request,
            "reviews/dashboard_overview.html#import-form",
            {
                "campaign": campaign,
                "import_errors": errors,
                "upload_name": getattr(upload, "name", ""),
                **_import_limit(),
            },
        )
    context = _context(request, campaign, "overview")
    context.update(import_errors=errors, upload_name=getattr(upload, "name", ""))
    return render(request, "reviews/dashboard_overview.html", context)
