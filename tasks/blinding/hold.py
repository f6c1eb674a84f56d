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
left readable), in its final answer or in any text of its transcript (a tool call's arguments,
a tool's result, an intermediate assistant turn: tasks/blinding/parts.py names them). The
spans are kept on the row with their part, who and when, and `generation_hand_masked` applies
them wherever a reviewer, an arbiter, a judge or a blinding probe reads the output.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from tasks import review_side
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import campaign_identity_terms
from tasks.blinding.parts import ANSWER, HandMasked, hand_masked, maskable
from tasks.models import Campaign, Generation

# An output that repeats a name hundreds of times needs no hundred entries to be judged.
MAX_FINDINGS = 100
# Hand masks on one output: more than this is a rewrite, not a mask.
MAX_HAND_MASKS = 100


def findings_json(findings: Iterable[blinding.Finding], parts: list[tuple[str, str]]) -> list[dict]:
    """The stored form of a check's findings over an output's texts joined (`parts`, as
    `identity_fields` joins them): what was matched, why, in which part and where in it."""
    parts = parts or [(ANSWER, "")]
    starts, at = [], 0
    for _, text in parts:
        starts.append(at)
        at += len(text) + 1  # the "\n" between two texts
    out = []
    for f in list(findings)[:MAX_FINDINGS]:
        i = max(bisect_right(starts, f.start) - 1, 0)
        (part, text), start = parts[i], starts[i]
        end = min(f.end - start, len(text))
        out.append(
            {"text": f.text, "reason": f.reason, "part": part, "start": f.start - start, "end": end}
        )
    return out


def shown_to_reviewers(*, campaign: Campaign, sample_index: int, single_turn: bool) -> bool:
    """Whether an output of this sample is in a review item: what a hold may wait for."""
    return (
        campaign.kind != Campaign.Kind.MONITOR_RUN
        and not single_turn
        and sample_index < campaign.reviewed_samples
    )


def identity_fields(
    *, parts: list[tuple[str, str]], campaign: Campaign, reviewed: bool = True
) -> dict:
    """The identity columns of an output being stored, from its texts as reviewers read them
    (`parts`: tasks.blinding.parts.scanned, the final answer first, then its reasoning and
    transcript): whether reviewers will see anything masked in them or a suspect span left as
    written (a possible model name, a chat-template token, look-alike letters ...:
    blinding.check_identity), what, why and in which part (admins and leads only), and
    whether it waits for an admin's approval (the campaign holds such outputs and reviewers
    will be shown this one)."""
    # One check over the texts joined (one bound on the time it takes, "too long to check"
    # over them all), each finding then placed back in its part.
    joined = "\n".join(text for _, text in parts)
    checked = blinding.check_identity(joined, campaign_identity_terms(campaign))
    leak = bool(checked.hits or checked.holds)
    return {
        "identity_leak": leak,
        "identity_findings": findings_json([*checked.findings, *checked.holds], parts),
        "identity_held": leak and campaign.hold_identity_leaks and reviewed,
    }


def generation_texts(generation: Generation) -> dict[str, str]:
    """{part: text} of every text of the output a hand mask may name (tasks/blinding/parts.py)."""
    return maskable(
        output=generation.output or "",
        transcript=generation.transcript,
        reasoning=generation.reasoning or "",
    )


def generation_hand_masked(generation: Generation) -> HandMasked:
    """The output's answer, reasoning and transcript with the admin's hand masks applied:
    what the automatic masking then masks further for reviewers. The original stays on the
    row for admins."""
    return hand_masked(
        output=generation.output or "",
        transcript=generation.transcript,
        reasoning=generation.reasoning,
        masks=generation.identity_masks,
    )


def output_shown(generation: Generation) -> str:
    """The final answer with the admin's hand masks applied (generation_hand_masked)."""
    if not generation.identity_masks:
        return generation.output or ""
    return generation_hand_masked(generation).text


class IdentityNotHeld(Exception):
    """The output is not waiting for approval (approved already, or never held)."""


class MaskInvalid(ValueError):
    """Hand-mask spans that do not fit the output; `errors` lists every problem."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


# A hand-mask span: (part, start, end), the part as tasks/blinding/parts.py names it.
Span = tuple[str, int, int]


def _span_checked(i: int, span, texts: dict[str, str]) -> Span | str:
    """One span as given ([start, end] in the final answer, or {"part", "start", "end"}),
    checked against the output's texts: the span, or what is wrong with it."""
    if isinstance(span, dict):
        part, bounds = span.get("part"), [span.get("start"), span.get("end")]
        if set(span) - {"part", "start", "end"} or not isinstance(part, str):
            return f'mask[{i}]: must be {{"part", "start", "end"}} or [start, end]'
        if part not in texts:
            return f"mask[{i}]: {part!r} is not a text of this output reviewers read"
    elif isinstance(span, list | tuple) and len(span) == 2:
        part, bounds = ANSWER, list(span)
    else:
        return f"mask[{i}]: must be [start, end], two integers"
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in bounds):
        return f"mask[{i}]: start and end must be integers"
    size = len(texts[part])
    if not 0 <= bounds[0] < bounds[1] <= size:
        return f"mask[{i}]: must satisfy 0 <= start < end <= {size} (the length of {part})"
    return (part, bounds[0], bounds[1])


def mask_spans_checked(spans, texts: dict[str, str]) -> list[Span]:
    """Spans as given by an admin, each [start, end] in the final answer or {"part", "start",
    "end"} in another text (`texts`: generation_texts), checked: 0 <= start < end <= the
    text's length. Raises MaskInvalid with every problem."""
    if not isinstance(spans, list) or not spans:
        raise MaskInvalid(["mask: must be a non-empty list of [start, end] pairs"])
    if len(spans) > MAX_HAND_MASKS:
        raise MaskInvalid([f"mask: at most {MAX_HAND_MASKS} spans per output"])
    checked = [_span_checked(i, span, texts) for i, span in enumerate(spans)]
    errors = [c for c in checked if isinstance(c, str)]
    if errors:
        raise MaskInvalid(errors)
    return checked


def mask_spans_of_words(words: str, texts: dict[str, str]) -> list[Span]:
    """Every occurrence of `words` (as written, case ignored) in every text of the output
    (`texts`: generation_texts), its answer and its transcript's steps: the pages' way to give
    spans. Raises MaskInvalid when they occur nowhere."""
    needle = (words or "").strip().casefold()
    spans: list[Span] = []
    for part, text in texts.items():
        haystack, at = text.casefold(), 0
        while needle and (at := haystack.find(needle, at)) >= 0 and len(spans) < MAX_HAND_MASKS:
            spans.append((part, at, at + len(needle)))
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


def mask_records(
    generation: Generation, spans: list[Span], user: AbstractBaseUser | None
) -> list[dict]:
    """The stored form of hand masks: part, span, the text masked, who and when."""
    by = user.get_username() if user is not None else ""
    at = timezone.now().isoformat()
    texts = generation_texts(generation)
    return [
        {"part": part, "start": s, "end": e, "text": texts[part][s:e], "by": by, "at": at}
        for part, s, e in spans
    ]


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
    mask: list[Span] | None = None,
) -> int:
    """Release a held output: record who approved its masked view and when (and the spans
    they masked by hand first, `mask`), then open the items that show it whose other outputs
    are ready too. Returns how many items opened.

    Under a row lock: two admins approving at once release it once; the other (and anyone
    approving an output that is not held) gets IdentityNotHeld.
    """
    masks = {generation.pk: mask_records(generation, mask, user)} if mask else None
    released = _released([generation.pk], user=user, masks=masks)
    if not released:
        raise IdentityNotHeld("this output is not waiting for approval")
    return _items_opened(released)


def generation_identity_mask(
    *, generation: Generation, spans: list[Span], user: AbstractBaseUser | None
) -> None:
    """Mask spans of an output by hand, held or not (an item reported as revealing its model
    is approved with them): recorded with who and when, applied to what reviewers see from
    their next page on."""
    added = mask_records(generation, spans, user)
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
