"""Numbers as people write them: `{{ price|plain }}` shows 0.5 and 3, not 0.5000 and 3;
`{{ cost|money }}` a cost with the site's currency (EVALSITE_CURRENCY), `{% currency %}` the
currency alone."""

from decimal import Decimal, InvalidOperation

from django import template
from django.conf import settings

from evalsite import text

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
