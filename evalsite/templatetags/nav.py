"""The top bar's links, reversed once per process instead of on every page."""

from functools import lru_cache

from django import template
from django.conf import settings
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse

register = template.Library()

NAV_URL_NAMES = (
    "home",
    "logout",
    "testset_list",
    "contender_list",
    "campaign_list",
    "reviewer_home",
    "arbiter_home",
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
