"""A URLconf for tests/evalsite/test_outage_banner.py: the site's, plus a view that fails."""

from django.urls import path

from evalsite.urls import handler500  # noqa: F401 - the handler is read here
from evalsite.urls import urlpatterns as site


def broken(request):
    raise RuntimeError("a bug, for the error page")


urlpatterns = [path("broken/", broken), *site]
