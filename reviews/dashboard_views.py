"""Lead dashboards (leads and admins only): pages, their CSV tables and review-record downloads."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from evalsite.csvsafe import csv_response
from evalsite.roles import ADMIN, LEAD, has_role, role_required
from tasks.models import Campaign

from .dashboards import PAGE_TITLES, PAGES, campaign_report_cached, dashboard_page
from .records import FORMATS
from .records_api import export_response


def _context(request: HttpRequest, campaign: Campaign, page: str) -> dict:
    report = campaign_report_cached(campaign)
    data = dashboard_page(report, page, a=request.GET.get("a"), b=request.GET.get("b"))
    return {
        "campaign": campaign,
        "report": report,
        "page": page,
        "page_title": PAGE_TITLES[page],
        "pages": PAGES,
        "can_unblind": has_role(request.user, LEAD),
        **data,
    }


@role_required(ADMIN, LEAD)  # deny first: outsiders get 403 whatever the method
@require_GET
def campaign_dashboard(request: HttpRequest, slug: str, page: str = "overview") -> HttpResponse:
    if page not in PAGE_TITLES:
        raise Http404
    campaign = get_object_or_404(Campaign, slug=slug)
    context = _context(request, campaign, page)
    template = f"reviews/dashboard_{page.replace('-', '_')}.html"
    if request.htmx and page == "head-to-head":
        return render(request, f"{template}#comparison", context)
    return render(request, template, context)


@role_required(ADMIN, LEAD)  # deny first: outsiders get 403 whatever the method
@require_GET
def dashboard_table_csv(request: HttpRequest, slug: str, page: str, table: str) -> HttpResponse:
    """Any dashboard table as CSV, from the same rows the page shows (formula-escaped)."""
    if page not in PAGE_TITLES:
        raise Http404
    campaign = get_object_or_404(Campaign, slug=slug)
    data = dashboard_page(
        campaign_report_cached(campaign), page, a=request.GET.get("a"), b=request.GET.get("b")
    )
    found = next((t for t in data["tables"] if t.key == table), None)
    if found is None:
        raise Http404
    return csv_response(f"{campaign.slug}-{table}.csv", found.csv_header(), found.csv_rows())


@role_required(ADMIN, LEAD)  # deny first: outsiders get 403 whatever the method
@require_GET
def campaign_reviews_download(request: HttpRequest, slug: str) -> HttpResponse:
    """Review records as a streamed file; identities only for leads (`unblind=1`)."""
    campaign = get_object_or_404(Campaign, slug=slug)
    fmt = request.GET.get("format", "jsonl")
    if fmt not in FORMATS:
        raise Http404
    unblind = request.GET.get("unblind") == "1"
    if unblind and not has_role(request.user, LEAD):
        raise PermissionDenied
    return export_response(campaign=campaign, fmt=fmt, unblind=unblind)
