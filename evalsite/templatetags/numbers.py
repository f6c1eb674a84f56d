"""Numbers as people write them: `{{ price|plain }}` shows 0.5 and 3, not 0.5000 and 3."""

from decimal import Decimal, InvalidOperation

from django import template

register = template.Library()


@register.filter
def plain(value) -> str:
    try:
        number = Decimal(str(value)).normalize()
    except (InvalidOperation, ValueError):
        return str(value)
    return f"{number:f}"
