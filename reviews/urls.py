from django.urls import path

from reviews.arbitration import api as arbitration_api
from reviews.arbitration import views as arbitration_views
from reviews.dashboards import views as dashboard_views
from reviews.identity_reports import api as report_identity_api
from reviews.identity_reports import views as report_identity_views
from reviews.items import views as item_views
from reviews.judges import api as judge_api
from reviews.judges import views as judge_views
from reviews.records import api as records_api
from reviews.report import api as report_api
from reviews.review import api as review_api
from reviews.review import assignment_views
from reviews.review import views as review_views

urlpatterns: list = []
api_urlpatterns: list = []

# Review records over the API.

api_urlpatterns += [
    path(
        "campaigns/<slug:slug>/reviews", records_api.campaign_reviews, name="api_campaign_reviews"
    ),
]

# Blind review and double assignment.

urlpatterns += [
    path("review/", review_views.reviewer_home, name="reviewer_home"),
    path("review/<slug:slug>/", review_views.review_campaign, name="review_campaign"),
    path("review/<slug:slug>/next", review_views.review_next, name="review_next"),
    path("review/<slug:slug>/mine/", review_views.review_history, name="review_history"),
    path("review/<slug:slug>/probe/<str:token>/", review_views.review_probe, name="review_probe"),
    path("review/<slug:slug>/<str:token>/", review_views.review_page, name="review_page"),
    path(
        "review/<slug:slug>/<str:token>/correct",
        review_views.review_correct,
        name="review_correct",
    ),
    path("review/<slug:slug>/<str:token>/submit", review_views.review_submit, name="review_submit"),
    path("review/<slug:slug>/<str:token>/skip", review_views.review_skip, name="review_skip"),
    path(
        "review/<slug:slug>/<str:token>/heartbeat",
        review_views.review_heartbeat,
        name="review_heartbeat",
    ),
    path(
        "campaigns/<slug:slug>/assignments/",
        assignment_views.campaign_assignments,
        name="campaign_assignments",
    ),
    path(
        "campaigns/<slug:slug>/assignments/<str:token>/release",
        assignment_views.assignment_release,
        name="assignment_release",
    ),
    path(
        "campaigns/<slug:slug>/reviewers/<int:user_id>/remove",
        assignment_views.reviewer_remove,
        name="reviewer_remove",
    ),
]
api_urlpatterns += [
    path("campaigns/<slug:slug>/next", review_api.campaign_next, name="api_campaign_next"),
    path(
        "assignments/<str:token>/submit", review_api.assignment_submit, name="api_assignment_submit"
    ),
    path(
        "assignments/<str:token>/heartbeat",
        review_api.assignment_heartbeat,
        name="api_assignment_heartbeat",
    ),
    path(
        "blinding-probes/<str:token>",
        review_api.blinding_probe_answer,
        name="api_blinding_probe_answer",
    ),
]

# Disagreement and arbitration.

urlpatterns += [
    path("arbitration/", arbitration_views.arbiter_home, name="arbiter_home"),
    path(
        "arbitration/<slug:slug>/next", arbitration_views.arbitration_next, name="arbitration_next"
    ),
    path("arbitration/t/<str:token>/", arbitration_views.arbitration_page, name="arbitration_page"),
    path(
        "arbitration/t/<str:token>/resolve",
        arbitration_views.arbitration_resolve_view,
        name="arbitration_resolve",
    ),
    path(
        "arbitration/t/<str:token>/release",
        arbitration_views.arbitration_release_view,
        name="arbitration_release",
    ),
    path(
        "arbitration/t/<str:token>/heartbeat",
        arbitration_views.arbitration_heartbeat_view,
        name="arbitration_heartbeat",
    ),
    path(
        "campaigns/<slug:slug>/disputes/",
        arbitration_views.campaign_disputes_view,
        name="campaign_disputes",
    ),
    path(
        "campaigns/<slug:slug>/disputes/requeue",
        arbitration_views.campaign_disputes_requeue,
        name="campaign_disputes_requeue",
    ),
]
api_urlpatterns += [
    path(
        "campaigns/<slug:slug>/arbitration/next",
        arbitration_api.arbitration_next,
        name="api_arbitration_next",
    ),
    path(
        "arbitrations/<str:token>/resolve",
        arbitration_api.arbitration_resolve_api,
        name="api_arbitration_resolve",
    ),
    path(
        "arbitrations/<str:token>/heartbeat",
        arbitration_api.arbitration_heartbeat_api,
        name="api_arbitration_heartbeat",
    ),
]

# The campaign report (statistics).

api_urlpatterns += [
    path(
        "campaigns/<slug:slug>/report", report_api.campaign_report_api, name="api_campaign_report"
    ),
]

# Lead dashboards and review-record downloads.

urlpatterns += [
    path(
        "campaigns/<slug:slug>/dashboard/",
        dashboard_views.campaign_dashboard,
        name="campaign_dashboard",
    ),
    path(
        "campaigns/<slug:slug>/dashboard/<str:page>/",
        dashboard_views.campaign_dashboard,
        name="campaign_dashboard_page",
    ),
    path(
        "campaigns/<slug:slug>/dashboard/<str:page>/<str:table>.csv",
        dashboard_views.dashboard_table_csv,
        name="campaign_dashboard_csv",
    ),
    path(
        "campaigns/<slug:slug>/reviews/download",
        dashboard_views.campaign_reviews_download,
        name="campaign_reviews_download",
    ),
    path(
        "campaigns/<slug:slug>/reviews/import",
        dashboard_views.campaign_reviews_upload,
        name="campaign_reviews_upload",
    ),
]

# The item page: one task drilled into; blinded for its arbiter.

urlpatterns += [
    # Before the item page: its task_id is a path and would take "<id>/comments" too.
    path(
        "campaigns/<slug:slug>/items/<int:item_id>/comments",
        item_views.campaign_item_comment,
        name="campaign_item_comment",
    ),
    path(
        "campaigns/<slug:slug>/items/<path:task_id>",
        item_views.campaign_item,
        name="campaign_item",
    ),
    path(
        "arbitration/t/<str:token>/item/",
        item_views.arbitration_item,
        name="arbitration_item",
    ),
    path(
        "arbitration/t/<str:token>/comments",
        item_views.arbitration_comment,
        name="arbitration_comment",
    ),
]

# A campaign's judges (docs/judges.md): judging runs, progress and calibration.

urlpatterns += [
    path("campaigns/<slug:slug>/judges/", judge_views.campaign_judges_view, name="campaign_judges"),
    path(
        "campaigns/<slug:slug>/judges/<str:name>/",
        judge_views.campaign_judge_view,
        name="campaign_judge",
    ),
    path(
        "campaigns/<slug:slug>/judges/<str:name>/run",
        judge_views.campaign_judge_run,
        name="campaign_judge_run",
    ),
]
api_urlpatterns += [
    path(
        "campaigns/<slug:slug>/judges/<str:name>/runs",
        judge_api.judge_runs,
        name="api_campaign_judge_runs",
    ),
    path(
        "campaigns/<slug:slug>/judges/<str:name>",
        judge_api.judge_on_campaign,
        name="api_campaign_judge",
    ),
]

# Reports that an answer reveals its model (docs/blinding.md, "Reports").

urlpatterns += [
    path(
        "review/<slug:slug>/<str:token>/report-identity",
        report_identity_views.review_report_identity,
        name="review_report_identity",
    ),
    path(
        "arbitration/t/<str:token>/report-identity",
        arbitration_views.arbitration_report_identity_view,
        name="arbitration_report_identity",
    ),
    path(
        "campaigns/<slug:slug>/identity-reports/",
        report_identity_views.campaign_identity_reports_view,
        name="campaign_identity_reports",
    ),
    path(
        "campaigns/<slug:slug>/identity-reports/<int:report_id>/resolve",
        report_identity_views.identity_report_resolve_view,
        name="campaign_identity_report_resolve",
    ),
]
api_urlpatterns += [
    path(
        "assignments/<str:token>/report-identity",
        report_identity_api.assignment_report_identity,
        name="api_assignment_report_identity",
    ),
    path(
        "arbitrations/<str:token>/report-identity",
        report_identity_api.arbitration_report_identity,
        name="api_arbitration_report_identity",
    ),
    path(
        "campaigns/<slug:slug>/identity-reports",
        report_identity_api.campaign_identity_reports,
        name="api_campaign_identity_reports",
    ),
    path(
        "campaigns/<slug:slug>/identity-reports/<int:report_id>/resolve",
        report_identity_api.identity_report_resolve_api,
        name="api_campaign_identity_report_resolve",
    ),
]
