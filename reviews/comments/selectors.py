"""Reading an item's thread, as a lead or admin sees it or as its arbiter does."""

from __future__ import annotations

from django.contrib.auth.models import User

from reviews.models import ItemComment, ReviewItem
from tasks.blinding.campaign_texts import campaign_identity_terms, words_shown

ROLE_WORDS = {"admin": "an admin", "lead": "a lead", "arbiter": "the arbiter"}


def item_comments(*, item: ReviewItem, for_arbiter: User | None = None) -> list[dict]:
    """The thread, oldest first: {author, role, text, created_at}. For an arbiter
    (`for_arbiter`), texts masked with the campaign's words and authors by role only ("You"
    for their own): a lead's name could be a reviewer's, and a lead may name a model."""
    rows = ItemComment.objects.filter(item=item).select_related("author")
    terms = campaign_identity_terms(item.campaign) if for_arbiter is not None else None
    out = []
    for comment in rows:
        if for_arbiter is None:
            author = comment.author.get_username() if comment.author else "(deleted user)"
            text = comment.text
        else:
            mine = comment.author_id == for_arbiter.pk and comment.author_role == "arbiter"
            author = "You" if mine else ROLE_WORDS.get(comment.author_role, "someone")
            text = words_shown(comment.text, terms)
        out.append(
            {
                "author": author,
                "role": comment.author_role,
                "text": text,
                "created_at": comment.created_at,
            }
        )
    return out
