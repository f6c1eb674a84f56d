"""How a page answers htmx."""

from django.http import HttpRequest


def wants_fragment(request: HttpRequest) -> bool:
    """An htmx request that swaps a part of the page. Back and Forward restore a pushed URL with
    an htmx request too (the history cache is off), and that one needs the whole page: a
    fragment would replace the body."""
    return bool(request.htmx) and not request.htmx.history_restore_request
