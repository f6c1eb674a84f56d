"""Writing a comment on an item."""

from __future__ import annotations

from django.contrib.auth.models import User

from reviews.models import ItemComment, ReviewItem

COMMENT_MAX_CHARS = 5000
ROLES = ("admin", "lead", "arbiter")


class CommentInvalid(ValueError):
    """Said to the author; nothing was written."""


def item_comment_add(*, item: ReviewItem, author: User, role: str, text: str) -> ItemComment:
    """Add `author`'s comment (written as `role`) to `item`'s thread."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}")
    text = (text or "").strip()
    if not text:
        raise CommentInvalid("Write something first.")
    if len(text) > COMMENT_MAX_CHARS:
        raise CommentInvalid(
            f"A comment is at most {COMMENT_MAX_CHARS:,} characters; this one has {len(text):,}."
        )
    return ItemComment.objects.create(item=item, author=author, author_role=role, text=text)
