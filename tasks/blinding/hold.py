"""Outputs that name a model: flagged for admins with what was found and why, and held out of
reviewers' queues until an admin approves the masked view (docs/blinding.md, "Flag and hold").

Findings are computed once, when the output is stored (generation or outputs import), never
in a reviewer's request. Only an output reviewers will be shown is held: a sample beyond the
campaign's reviewed samples, a single-turn regime row or a monitor run's answer is in no review
item, so holding it would only ask an admin for an approval nobody needs. A held output keeps
every item that shows it waiting (not ready), so the claim, the queue and the API's `next` need
no rule of their own: readiness (reviews/review/readiness.py) counts a held output as not there yet,
and approving one runs the same opening step a finished generation runs (through
tasks/review_side.py, for the count).

An admin may mask spans of an output by hand before approving it (what the automatic masking
left readable). The spans are kept on the row with who and when, and `output_shown` applies
them wherever a reviewer, an arbiter or a blinding probe reads the output.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from tasks import review_side
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import campaign_identity_terms
from tasks.models import Campaign, Generation

# An output that repeats a name hundreds of times needs no hundred entries to be judged.
MAX_FINDINGS = 100
# Hand masks on one output: more than this is a rewrite, not a mask.
MAX_HAND_MASKS = 100


def findings_json(findings: Iterable[blinding.Finding]) -> list[dict]:
    """The stored form of a mask's findings: what was matched, why, and where."""
    return [
        {"text": f.text, "reason": f.reason, "start": f.start, "end": f.end}
        for f in list(findings)[:MAX_FINDINGS]
    ]


def shown_to_reviewers(*, campaign: Campaign, sample_index: int, single_turn: bool) -> bool:
    """Whether an output of this sample is in a review item: what a hold may wait for."""
    return (
        campaign.kind != Campaign.Kind.MONITOR_RUN
        and not single_turn
        and sample_index < campaign.reviewed_samples
    )


def identity_fields(*, text: str, campaign: Campaign, reviewed: bool = True) -> dict:
    """The identity columns of an output being stored: whether reviewers will see anything
    masked in it or it has a suspect span left as written (a possible model name, a
    chat-template token, look-alike letters ...: blinding.check_identity), what and why
    (admins and leads only), and whether it waits for an admin's approval (the campaign holds
    such outputs and reviewers will be shown this one)."""
    checked = blinding.check_identity(text or "", campaign_identity_terms(campaign))
    leak = bool(checked.hits or checked.holds)
    return {
        "identity_leak": leak,
        "identity_findings": findings_json([*checked.findings, *checked.holds]),
        "identity_held": leak and campaign.hold_identity_leaks and reviewed,
    }


def output_shown(generation: Generation) -> str:
    """The output with the admin's hand masks applied: what the automatic masking then masks
    further for reviewers. The original stays on the row for admins."""
    return masks_applied(generation.output or "", generation.identity_masks)


def masks_applied(text: str, masks: list[dict] | None) -> str:
    """`text` with each hand-masked span ({"start", "end"}) written as the mask."""
    text = text or ""
    spans = sorted((m["start"], m["end"]) for m in masks or [])
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        start = max(start, last)  # overlapping spans mask their union, once
        if end <= start:
            continue
        out += [text[last:start], blinding.MASK]
        last = end
    out.append(text[last:])
    return "".join(out)


class IdentityNotHeld(Exception):
    """The output is not waiting for approval (approved already, or never held)."""


class MaskInvalid(ValueError):
    """Hand-mask spans that do not fit the output; `errors` lists every problem."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


def mask_spans_checked(spans, text: str) -> list[tuple[int, int]]:
    """[[start, end], ...] as given by an admin, checked against the output: each a pair of
    integers with 0 <= start < end <= len(text). Raises MaskInvalid with every problem."""
    if not isinstance(spans, list) or not spans:
        raise MaskInvalid(["mask: must be a non-empty list of [start, end] pairs"])
    if len(spans) > MAX_HAND_MASKS:
        raise MaskInvalid([f"mask: at most {MAX_HAND_MASKS} spans per output"])
    errors, checked = [], []
    for i, span in enumerate(spans):
        ok = (
            isinstance(span, list | tuple)
            and len(span) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in span)
        )
        if not ok:
            errors.append(f"mask[{i}]: must be [start, end], two integers")
        elif not 0 <= span[0] < span[1] <= len(text):
            errors.append(
                f"mask[{i}]: must satisfy 0 <= start < end <= {len(text)} (the output's length)"
            )
        else:
            checked.append((span[0], span[1]))
    if errors:
        raise MaskInvalid(errors)
    return checked


def mask_spans_of_words(words: str, text: str) -> list[tuple[int, int]]:
    """Every occurrence of `words` (as written, case ignored) in the output: the admin page's
    way to give spans. Raises MaskInvalid when they do not occur."""
    needle = (words or "").strip().casefold()
    haystack, spans, at = text.casefold(), [], 0
    while needle and (at := haystack.find(needle, at)) >= 0 and len(spans) < MAX_HAND_MASKS:
        spans.append((at, at + len(needle)))
        at += len(needle)
    if not spans:
        raise MaskInvalid(
            [
                f"{words.strip()!r} does not occur in this output"
                if needle
                else "give the words to mask"
            ]
        )
    return spans


def _released(pks: list[int], *, user: AbstractBaseUser | None, masks: dict | None = None):
    """Release the held rows among `pks` (locked, so two admins release each once) and record
    the approval (and the hand masks of a single output). Returns the pks released."""
    with transaction.atomic():
        held = list(
            Generation.objects.select_for_update()
            .filter(pk__in=pks, identity_held=True)
            .order_by("pk")
        )
        now = timezone.now()
        for generation in held:
            generation.identity_held = False
            generation.identity_approved_by = user
            generation.identity_approved_at = now
            if masks and generation.pk in masks:
                generation.identity_masks = [
                    *(generation.identity_masks or []),
                    *masks[generation.pk],
                ]
        Generation.objects.bulk_update(
            held,
            ["identity_held", "identity_approved_by", "identity_approved_at", "identity_masks"],
        )
    return [g.pk for g in held]


def _items_opened(pks: list[int]) -> int:
    # After the release committed (autocommit): a concurrent finish of an item's other output
    # sees these rows released, or this statement sees that one done.
    return sum(review_side.review_items_open_for(generation_id=pk) for pk in pks)


def generation_identity_approve(
    *,
    generation: Generation,
    user: AbstractBaseUser | None,
    mask: list[tuple[int, int]] | None = None,
) -> int:
    """Release a held output: record who approved its masked view and when (and the spans
    they masked by hand first, `mask`), then open the items that show it whose other outputs
    are ready too. Returns how many items opened.

    Under a row lock: two admins approving at once release it once; the other (and anyone
    approving an output that is not held) gets IdentityNotHeld.
    """
    masks = None
    if mask:
        by = user.get_username() if user is not None else ""
        at = timezone.now().isoformat()
        text = generation.output or ""
        masks = {
            generation.pk: [
                {"start": s, "end": e, "text": text[s:e], "by": by, "at": at} for s, e in mask
            ]
        }
    released = _released([generation.pk], user=user, masks=masks)
    if not released:
        raise IdentityNotHeld("this output is not waiting for approval")
    return _items_opened(released)


def generation_identity_mask(
    *, generation: Generation, spans: list[tuple[int, int]], user: AbstractBaseUser | None
) -> None:
    """Mask spans of an output by hand, held or not (an item reported as revealing its model
    is approved with them): recorded with who and when, applied to what reviewers see from
    their next page on."""
    by = user.get_username() if user is not None else ""
    at = timezone.now().isoformat()
    text = generation.output or ""
    added = [{"start": s, "end": e, "text": text[s:e], "by": by, "at": at} for s, e in spans]
    with transaction.atomic():
        row = (
            Generation.objects.select_for_update()
            .only("pk", "identity_masks")
            .get(pk=generation.pk)
        )
        Generation.objects.filter(pk=row.pk).update(
            identity_masks=[*(row.identity_masks or []), *added]
        )


def generations_identity_approve(
    *, campaign: Campaign, ids: list[int] | None, user: AbstractBaseUser | None
) -> dict:
    """Approve held outputs of a campaign in bulk: those in `ids`, or every held one when
    `ids` is None. {"approved": [pks released by this call], "items_opened": n}; an id
    approved meanwhile by someone else is simply not in "approved"."""
    held = Generation.objects.filter(campaign=campaign, identity_held=True)
    if ids is not None:
        held = held.filter(pk__in=ids)
    released = _released(list(held.values_list("pk", flat=True)), user=user)
    return {"approved": released, "items_opened": _items_opened(released)}
