"""Comments on a review item: a thread for its campaign's leads and admins and its arbiter.

Owns writing (`item_comment_add`) and reading (`item_comments`: names for leads and admins,
masked text and roles only for an arbiter). Reviewers have no way in: no view of theirs reads
it.

May import: reviews.models and tasks' masking (tasks.blinding) only.
"""

from reviews.comments.selectors import item_comments
from reviews.comments.services import COMMENT_MAX_CHARS, CommentInvalid, item_comment_add

__all__ = ["COMMENT_MAX_CHARS", "CommentInvalid", "item_comment_add", "item_comments"]
