"""A task message's content on the leads' and admins' test-set page: its text, and its images
(content parts, tasks/images/) as links to their stored copies."""

from django import template

from tasks.images.parts import content_text as _text
from tasks.images.parts import image_links

register = template.Library()


@register.filter
def content_text(content) -> str:
    return _text(content)


@register.filter
def content_images(content) -> list[dict]:
    return image_links(content)
