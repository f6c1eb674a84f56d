"""Numbers as people write them: `{{ price|plain }}` shows 0.5 and 3, not 0.5000 and 3;
`{{ cost|money }}` a cost with the site's currency (EVALSITE_CURRENCY), `{% currency %}` the
currency alone."""

from decimal import Decimal, InvalidOperation

from django import template
from django.conf import settings

from evalsite import text
from tasks.monitors import format as monitor_format

register = template.Library()


@register.filter
def plain(value) -> str:
    try:
        number = Decimal(str(value)).normalize()
    except (InvalidOperation, ValueError):
        return str(value)
    return f"{number:f}"


@register.filter
def money(value) -> str:
    return text.money(value)


@register.simple_tag
def currency() -> str:
    return settings.EVALSITE_CURRENCY


@register.filter
def with_unit(metric: str) -> str:
    """A metric's name with its currency where it is a cost (monitor pages)."""
    text = str(metric)
    return f"{text} ({settings.EVALSITE_CURRENCY})" if "cost" in text else text


@register.filter
def metric_value(value, metric: str) -> str:
    """A monitor metric's value, formatted for its kind (tasks/monitors/format.py)."""
    return monitor_format.metric_value(value, str(metric))


@register.filter
def metric_delta(entry: dict, metric: str) -> str:
    """A comparison entry's delta, to the precision its interval supports."""
    return monitor_format.delta_value(entry.get("delta"), str(metric), entry.get("ci95"))


@register.filter
def metric_interval(entry: dict, metric: str) -> str:
    return monitor_format.interval(entry.get("ci95"), str(metric))


@register.filter
def p_value(value) -> str:
    return monitor_format.p_value(value)
