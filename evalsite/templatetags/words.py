"""Identifiers shown as words: `{{ task.category|words }}` turns shipping_delay into
"shipping delay"."""

from django import template

register = template.Library()


@register.filter
def words(value) -> str:
    return str(value).replace("_", " ")


def counted(n: int, noun: str, plural: str = "") -> str:
    """ "1 review", "3 reviews"; `plural` for a noun that does not just take an s."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
