from django.urls import path  # noqa: F401

urlpatterns: list = []
api_urlpatterns: list = []

# Review records and lead dashboards (issue 6).
from . import records_api  # noqa: E402

api_urlpatterns += [
    path("campaigns/<slug:slug>/reviews", records_api.campaign_reviews, name="api_campaign_reviews"),
]
