from django.urls import path  # noqa: F401

urlpatterns: list = []
api_urlpatterns: list = []

# Review records and lead dashboards (issue 6).
from . import records_api  # noqa: E402

api_urlpatterns += [
    path("campaigns/<slug:slug>/reviews", records_api.campaign_reviews, name="api_campaign_reviews"),
]

# Campaign report (issue 6, statistics).
from . import report_api  # noqa: E402

api_urlpatterns += [
    path("campaigns/<slug:slug>/report", report_api.campaign_report_api, name="api_campaign_report"),
]
