"""Outputs that name a model: flagged for admins with what was found and why, and held out of
reviewers' queues until an admin approves the masked view (issue 22, "flag and hold").

Findings are computed once, when the output is stored (generation or outputs import), never
in a reviewer's request. A held output keeps every item that shows it waiting (not ready), so
the claim, the queue and the API's `next` need no rule of their own: readiness
(reviews/readiness.py) counts a held output as not there yet, and approving one runs the same
opening step a finished generation runs (through tasks/review_side.py, for the count).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from . import blinding, review_side
from .campaign_blinding import campaign_identity_terms
from .models import Campaign, Generation

# An output that repeats a name hundreds of times needs no hundred entries to be judged.
MAX_FINDINGS = 100


def findings_json(findings: Iterable[blinding.Finding]) -> list[dict]:
    """The stored form of a mask's findings: what was matched, why, and where."""
    return [
        {"text": f.text, "reason": f.reason, "start": f.start, "end": f.end}
        for f in list(findings)[:MAX_FINDINGS]
    ]


def identity_fields(*, text: str, campaign: Campaign) -> dict:
    """The identity columns of an output being stored: whether reviewers will see anything
    masked in it or it has a suspect span left as written (a possible model name, a
    chat-template token, look-alike letters ...: blinding.check_identity), what and why
    (admins and leads only), and whether it waits for an admin's approval (the campaign holds
    such outputs)."""
    checked = blinding.check_identity(text or "", campaign_identity_terms(campaign))
    leak = bool(checked.hits or checked.holds)
    return {
        "identity_leak": leak,
        "identity_findings": findings_json([*checked.findings, *checked.holds]),
        "identity_held": leak and campaign.hold_identity_leaks,
    }


class IdentityNotHeld(Exception):
    """The output is not waiting for approval (approved already, or never held)."""


def generation_identity_approve(*, generation: Generation, user: AbstractBaseUser | None) -> int:
    """Release a held output: record who approved its masked view and when, then open the
    items that show it whose other outputs are ready too. Returns how many items opened.

    A conditional UPDATE: two admins approving at once release it once; the other (and
    anyone approving an output that is not held) gets IdentityNotHeld.
    """
    released = Generation.objects.filter(pk=generation.pk, identity_held=True).update(
        identity_held=False, identity_approved_by=user, identity_approved_at=timezone.now()
    )
    if not released:
        raise IdentityNotHeld("this output is not waiting for approval")
    # Its own statement, after the release committed (autocommit): a concurrent finish of an
    # item's other output sees this row released, or this statement sees that one done.
    return review_side.review_items_open_for(generation_id=generation.pk)
