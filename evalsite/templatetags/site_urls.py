"""URLs that are the same on every page of a process, worked out once instead of per page:
the top bar's links and the static assets' URLs."""

from functools import lru_cache

from django import template
from django.conf import settings
from django.templatetags.static import static
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse

register = template.Library()

NAV_URL_NAMES = (
    "home",
    "logout",
    "testset_list",
    "contender_list",
    "campaign_list",
    "monitor_list",
    "judge_list",
    "reviewer_home",
    "arbiter_home",
    "user_list",
    "account",
    "login",
)


@lru_cache(maxsize=16)
def _nav_urls(prefix: str, urlconf: str) -> dict[str, str]:
    # `prefix` is part of the key only: reverse() reads the same script prefix itself.
    urls = {}
    for name in NAV_URL_NAMES:
        try:
            urls[name] = reverse(name, urlconf=urlconf)
        except NoReverseMatch:
            urls[name] = ""  # as `{% url ... as var %}` did: that link is left out
    return urls


@register.simple_tag
def nav_urls() -> dict[str, str]:
    """{name: url} of the top bar's links; "" where a name does not resolve."""
    return _nav_urls(get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF)


@lru_cache(maxsize=64)
def _static_url(path: str, static_url: str, debug: bool) -> str:
    # STATIC_URL and DEBUG are part of the key only: the storage reads them itself.
    return static(path)


@register.simple_tag
def static_url(path: str) -> str:
    """`{% static path %}`, looked up once: the collected files do not change while the
    process runs (the manifest storage reads its manifest once, too)."""
    return _static_url(path, settings.STATIC_URL, settings.DEBUG)


@register.filter
def is_under(path: str, prefix: str) -> bool:
    """The top bar's current page: the request's path is the link's or below it."""
    return bool(prefix) and prefix != "/" and str(path).startswith(prefix)
