"""The campaign search page (leads and admins): tasks and outputs by text."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from evalsite.htmx import AuthedHttpRequest, wants_fragment
from evalsite.roles import ADMIN, LEAD, role_required
from tasks.campaigns.search import campaign_search
from tasks.campaigns.selectors import campaign_get


@require_GET
@role_required(ADMIN, LEAD)
def campaign_search_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """A GET form (the query in the URL, to share); htmx swaps only the results as one types."""
    campaign = campaign_get(slug=slug)
    results = campaign_search(campaign=campaign, query=request.GET.get("q", ""))
    context = {"campaign": campaign, "results": results}
    if wants_fragment(request):
        return render(request, "tasks/campaign_search.html#results", context)
    return render(request, "tasks/campaign_search.html", context)
