"""JSON API for the campaign report (leads and admins: it names the contenders)."""

from django.http import HttpRequest, HttpResponse

from evalsite.api import api_endpoint, found_or_404
from evalsite.roles import ADMIN, LEAD
from tasks.models import Campaign


@api_endpoint(
    ADMIN,
    LEAD,
    summary=(
        "The campaign report: progress, agreement per dimension (Krippendorff's alpha with a 95% "
        "bootstrap CI and band), the Bradley-Terry leaderboard with CIs and ranks, quality by "
        "dimension/category/tier, stability and pass@k, cost and latency, decision score, position "
        "bias, per-reviewer figures, disputes and head-to-head comparisons. Figures without enough "
        "data are null with a reason."
    ),
    responses={"200": "the report", "403": "role does not allow this", "404": "no such campaign"},
)
def campaign_report_api(request: HttpRequest, slug: str) -> HttpResponse:
    # Imported here: pandas/scipy add about a second to every process that loads the URLconf
    # (manage.py commands included), and only this view needs them.
    from .report import campaign_report, report_json

    campaign = found_or_404(Campaign.objects, "campaign", slug=slug)
    response = HttpResponse(
        report_json(campaign_report(campaign=campaign)), content_type="application/json"
    )
    response["Cache-Control"] = "no-store"
    return response
