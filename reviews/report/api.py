"""JSON API for the campaign report (leads and admins: it names the contenders)."""

from django.http import HttpResponse

from evalsite.api import api_endpoint, found_or_404
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD
from tasks.models import Campaign


@api_endpoint(
    ADMIN,
    LEAD,
    summary=(
        "The campaign report: progress, agreement per dimension (Krippendorff's alpha and Gwet's "
        "AC1/AC2 with 95% intervals, the band judged on the interval), the Bradley-Terry "
        "leaderboard with intervals, ranks, rank intervals, P(best) and bounds for undefeated "
        "contenders, quality by dimension/category/tier/case type, stability (within-task spread), "
        "pass rates per basis (human, checks, combined; pending apart) with the pass@k curve, "
        "check and flag rates, cost and latency, decision score with its interval, quality floor "
        "and Pareto front, position bias, per-reviewer figures, disputes and head-to-head "
        "comparisons (Holm-adjusted). Every interval comes from one seeded bootstrap over test "
        "cases; figures without enough data are null with a reason."
    ),
    responses={"200": "the report", "403": "role does not allow this", "404": "no such campaign"},
)
def campaign_report_api(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    # Imported here: pandas/scipy add about a second to every process that loads the URLconf
    # (manage.py commands included), and only this view needs them.
    from reviews.report.campaign import campaign_report, report_json

    campaign = found_or_404(Campaign.objects, "campaign", slug=slug)
    response = HttpResponse(
        report_json(campaign_report(campaign=campaign)), content_type="application/json"
    )
    response["Cache-Control"] = "no-store"
    return response
