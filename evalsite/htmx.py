"""How a page answers htmx."""

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request through django-htmx's middleware, which sets `request.htmx`."""

    htmx: HtmxDetails


class AuthedHttpRequest(HtmxHttpRequest):
    """A request past `role_required`, `login_required` or `api_endpoint`: a signed-in user."""

    user: User


def wants_fragment(request: HtmxHttpRequest) -> bool:
    """An htmx request that swaps a part of the page. Back and Forward restore a pushed URL with
    an htmx request too (the history cache is off), and that one needs the whole page: a
    fragment would replace the body."""
    return bool(request.htmx) and not request.htmx.history_restore_request
