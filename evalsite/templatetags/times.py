"""Times as `<time>` elements the page's script (static/js/times.js) shows in the reader's own
time zone, with the zone's name; the server writes them in UTC, saying so, for a page read
without JavaScript.

    {{ review.submitted_at|when }}          2026-03-02 14:05 UTC     -> 2026-03-02 15:05 CET
    {{ lease.expires_at|when:"time" }}      14:05 UTC                -> 15:05 CET
    {{ lease.expires_at|when:"ago" }}       3 minutes ago            (the local time as its title)
"""

from datetime import UTC, datetime

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.timesince import timesince

register = template.Library()

FORMATS = {"": "Y-m-d H:i", "time": "H:i"}


@register.filter
def when(value, kind: str = ""):
    if not isinstance(value, datetime):
        return ""
    if timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    utc = value.astimezone(UTC)
    if kind == "ago":
        text = f"{timesince(utc)} ago"
        title = f"{date_format(utc, FORMATS[''])} UTC"
        return format_html(
            '<time datetime="{}" data-when="ago" title="{}">{}</time>', utc.isoformat(), title, text
        )
    text = f"{date_format(utc, FORMATS.get(kind, FORMATS['']))} UTC"
    return format_html(
        '<time datetime="{}" data-when="{}">{}</time>', utc.isoformat(), kind or "datetime", text
    )
