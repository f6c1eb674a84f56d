"""Identifiers shown as words: `{{ task.category|words }}` turns shipping_delay into
"shipping delay"."""

from django import template

register = template.Library()


@register.filter
def words(value) -> str:
    return str(value).replace("_", " ")
