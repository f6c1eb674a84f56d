"""Arbitration services: claim a disputed item, resolve it, release it.

The guarantees mirror review assignment (claims, leases and fences):

* Claims lock Arbitration rows with `SELECT ... FOR UPDATE SKIP LOCKED` (`of=("self",)`,
  `no_key=True`), so two arbiters racing for the queue never lock the same row, and then take it
  with a conditional UPDATE fenced on the state and token they saw. The Arbitration row is one per
  item (OneToOne) with a single `arbiter`: holding an item is that row, nothing else.
* Leases are computed on the database clock. An expired lease makes the row claimable again;
  a re-claim rotates the token, so the previous holder's token is dead (fencing). The open page
  sends a heartbeat that extends the lease, as the review page does (same cap).
* An arbiter never gets an item they reviewed: excluded in the query and checked again on the
  locked row.
* Resolve is fenced by token + state, idempotent (a second submit returns the stored result) and
  writes `ReviewItem.final` (state resolved). Raw reviews are never touched.
"""

from __future__ import annotations

import copy
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Case, DateTimeField, ExpressionWrapper, F, Q, QuerySet, When
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Now

from reviews.disputes.rules import disputed_cells, unknown_field_errors
from reviews.models import COMMENT_MAX_CHARS, Arbitration, Review, ReviewItem, Score, new_token
from reviews.review import LeaseGone, lease_extended
from reviews.rubric import (
    WORDING,
    Answers,
    CheckOptions,
    Dimension,
    Rubric,
    answers_check,
    label_map,
)
from reviews.rubric import Mode as AnswerMode
from tasks.models import Campaign, Mode

NOTE_MAX_CHARS = COMMENT_MAX_CHARS
# Errors in the API's words (field keys and the values it takes); the page rewords these.
VALUE_REQUIRED = "disputed: a value is required"
CHOOSE_PREFERENCE = "disputed: choose an output, tie or both_bad"
BAD_PREFERENCE = WORDING[AnswerMode.RESOLUTION].preference_bad
RESOLVE_FIELDS = ("scores", "preference", "flags", "note")
ALREADY_RESOLVED = (
    "You already resolved this dispute with other values; these were not saved and your "
    "decision stands."
)


class ArbitrationGone(Exception):
    """Unknown token, someone else's arbitration, or reassigned after the lease expired."""

    message = (
        "This dispute is not in your hands: it was handed back, or went to another arbiter "
        "after its lease ran out, or the link is not one of yours."
    )


class AlreadyResolved(Exception):
    """A resolve of a resolved dispute with values other than the stored ones."""

    message = ALREADY_RESOLVED


class ResolveInvalid(ValueError):
    """The submitted values do not settle the dispute; `errors` maps a field path to a message."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def lease_length(campaign: Campaign) -> timedelta:
    return timedelta(minutes=max(1, campaign.lease_minutes))


def _lease_end(campaign: Campaign) -> ExpressionWrapper[CombinedExpression]:
    return ExpressionWrapper(Now() + lease_length(campaign), output_field=DateTimeField())


def _reviewed_by(item_id: int, user: User) -> bool:
    return Review.objects.filter(item_id=item_id, reviewer=user).exists()


def arbitration_claim_next(*, campaign: Campaign, arbiter: User) -> Arbitration | None:
    """The arbiter's current arbitration in this campaign, else the next claimable one, else None."""
    with transaction.atomic():
        held = _held_resume(campaign=campaign, arbiter=arbiter)
        if held is not None:
            return held
        return _claimable_take(campaign=campaign, arbiter=arbiter)


def _held_resume(*, campaign: Campaign, arbiter: User) -> Arbitration | None:
    """The arbitration this arbiter holds, locked, its lease renewed; None if none. Inside the
    claim's transaction."""
    # Resume what this arbiter holds, even past its lease if nobody took it meanwhile: the
    # lease is renewed and the token (in their open tab) stays valid.
    held = (
        Arbitration.objects.select_for_update(of=("self",), no_key=True)
        .filter(item__campaign=campaign, arbiter=arbiter, state=Arbitration.State.ACTIVE)
        .order_by("pk")
        .first()
    )
    if held is None:
        return None
    # Taking back a lapsed lease is a new claim (a new heartbeat window), as reviving an
    # expired review assignment is; resuming a live one keeps its window.
    Arbitration.objects.filter(pk=held.pk).update(
        lease_expires_at=_lease_end(campaign),
        claimed_at=Case(When(lease_expires_at__lte=Now(), then=Now()), default=F("claimed_at")),
    )
    held.refresh_from_db()
    return held


def _claimable_take(*, campaign: Campaign, arbiter: User) -> Arbitration | None:
    """Lock and take the oldest claimable dispute the arbiter did not review (five tries),
    with a fresh output order; None if there is none. Inside the claim's transaction."""
    skipped: list[int] = []
    for _ in range(5):
        candidate = (
            Arbitration.objects.select_for_update(skip_locked=True, of=("self",), no_key=True)
            # Not ready: reported as revealing its model, out of every queue until an admin
            # resolves the report (reviews.identity_reports).
            .filter(
                item__campaign=campaign, item__state=ReviewItem.State.DISPUTED, item__ready=True
            )
            .filter(
                Q(state=Arbitration.State.OPEN)
                | Q(state=Arbitration.State.ACTIVE, lease_expires_at__lte=Now())
            )
            .exclude(item__reviews__reviewer=arbiter)
            .exclude(pk__in=skipped)
            # Oldest dispute first, along the primary key index: the scan stops at the first
            # row it can lock instead of sorting the whole queue (an arbiter sees every
            # contender in every item, so queue order reveals nothing).
            .order_by("pk")
            .first()
        )
        if candidate is None:
            return None
        # Defence in depth: the query excludes the arbiter's own items; check the locked row.
        if _reviewed_by(candidate.item_id, arbiter):
            skipped.append(candidate.pk)
            continue
        order = list(candidate.item.outputs.values_list("pk", flat=True))
        secrets.SystemRandom().shuffle(order)  # a fresh order, unrelated to any reviewer's
        taken = Arbitration.objects.filter(
            pk=candidate.pk, state=candidate.state, token=candidate.token
        ).update(
            state=Arbitration.State.ACTIVE,
            arbiter=arbiter,
            token=new_token(),
            order=order,
            lease_expires_at=_lease_end(campaign),
            claimed_at=Now(),
        )
        if taken != 1:  # cannot happen under the row lock; never hand out a row we lost
            skipped.append(candidate.pk)
            continue
        candidate.refresh_from_db()
        return candidate
    return None


def _locked_for(token: str, arbiter: User) -> Arbitration:
    arbitration = (
        Arbitration.objects.select_for_update(of=("self",), no_key=True)
        .select_related("item__campaign")
        .filter(token=token)
        .first()
    )
    if arbitration is None or arbitration.arbiter_id != arbiter.pk:
        raise ArbitrationGone
    return arbitration


LEASE_LAPSED = (
    "Your time on this dispute ran out. Resolving may still work if no other arbiter took it."
)


def arbitration_heartbeat(*, token: str, arbiter: User) -> datetime | None:
    """Extend a live lease (the page is open); None if the lease is already gone.

    The same rule as a review's heartbeat: one more lease length from now, never past
    HEARTBEAT_CAP_LEASES leases after the claim (a forgotten tab cannot hold a dispute for
    ever), never shorter than it was. Raises ArbitrationGone for a token that is not the
    arbiter's (unknown, someone else's, or rotated by a release or a re-claim).
    """
    arbitration = (
        Arbitration.objects.select_related("item__campaign")
        .filter(token=token, arbiter=arbiter)
        .only("pk", "state", "claimed_at", "lease_expires_at", "item__campaign__lease_minutes")
        .first()
    )
    if arbitration is None:
        raise ArbitrationGone
    if arbitration.claimed_at is None or arbitration.lease_expires_at is None:
        return None  # never held through the queue (an imported resolution): no lease
    new_expiry = lease_extended(
        expires_at=arbitration.lease_expires_at,
        claimed_at=arbitration.claimed_at,
        lease=lease_length(arbitration.item.campaign),
    )
    # Fenced on the token and the live lease, on the database clock: a lease that lapsed a
    # moment ago, or a row re-claimed since the read, is not extended.
    updated = Arbitration.objects.filter(
        pk=arbitration.pk,
        token=token,
        arbiter=arbiter,
        state=Arbitration.State.ACTIVE,
        lease_expires_at__gt=Now(),
    ).update(lease_expires_at=new_expiry)
    if not updated and arbitration.state == Arbitration.State.RESOLVED:
        raise LeaseGone("You resolved this dispute: there is nothing left to keep.")
    return new_expiry if updated else None


def arbitration_release(*, token: str, arbiter: User) -> None:
    """Hand an arbitration back to the queue (the token dies with it)."""
    with transaction.atomic():
        arbitration = _locked_for(token, arbiter)
        if arbitration.state != Arbitration.State.ACTIVE:
            raise ArbitrationGone
        _requeue(Arbitration.objects.filter(pk=arbitration.pk, token=token))


def _requeue(arbitrations: QuerySet[Arbitration]) -> int:
    """Active arbitrations back to the open queue, each under a new token (the old link dies)."""
    done = 0
    active = arbitrations.filter(state=Arbitration.State.ACTIVE)
    for pk in active.values_list("pk", flat=True):
        # The caller's conditions again (this arbiter, this token): a lapsed dispute another
        # arbiter claimed since the read is theirs now, not ours to reopen.
        done += active.filter(pk=pk).update(
            state=Arbitration.State.OPEN,
            arbiter=None,
            token=new_token(),
            order=[],
            lease_expires_at=None,
            claimed_at=None,
        )
    return done


def arbitrations_requeue(*, campaign: Campaign, item_ids: list[int]) -> int:
    """A lead's or admin's bulk action on the disputes list: the chosen disputes an arbiter
    holds go back to the queue (new tokens: the arbiter's open page says it is gone and saves
    nothing). Open and resolved ones are left as they are. Returns how many went back."""
    with transaction.atomic():
        return _requeue(Arbitration.objects.filter(item__campaign=campaign, item_id__in=item_ids))


def arbiter_arbitrations_release(*, arbiter: User) -> int:
    """Every dispute the arbiter holds back to the queue, each with a new token (a deactivated
    account, or one that lost the arbiter role, cannot resolve them). Returns how many."""
    with transaction.atomic():
        return _requeue(Arbitration.objects.filter(arbiter=arbiter).order_by("pk"))


def arbiter_campaign_release(*, campaign: Campaign, arbiter: User) -> int:
    """The disputes the arbiter holds in one campaign back to the queue, each with a new
    token (taken off the campaign's arbiter roster). Returns how many."""
    with transaction.atomic():
        return _requeue(
            Arbitration.objects.filter(item__campaign=campaign, arbiter=arbiter).order_by("pk")
        )


def note_checked(note: object) -> tuple[str, str | None]:
    """The arbiter's note, stripped, and what is wrong with it (every resolution needs one)."""
    answers = answers_check(
        rubric=Rubric(), labels=[], data={"note": note}, mode=AnswerMode.RESOLUTION
    )
    return answers.comment, answers.errors.get("note")


@dataclass(frozen=True)
class Resolution:
    """An arbiter's label-keyed values, as the page, the API or a record gives them;
    `unknown_fields`: fields of the request a resolution does not have."""

    scores: dict | None
    preference: str | None = None
    flags: dict | None = None
    note: str | None = None
    unknown_fields: tuple[str, ...] = ()


def resolution_build(*, arbitration: Arbitration, resolution: Resolution) -> tuple[dict, dict]:
    """Validate label-keyed values against the dispute; return (item final, final_values).

    Pure apart from reading the item's reviews for N/A permission. Raises ResolveInvalid with
    every problem at once (the resolution's `unknown_fields` among them). The values are
    parsed by reviews/rubric.py; what is disputed is checked here.
    """
    scores, preference, flags, note = (
        resolution.scores,
        resolution.preference,
        resolution.flags,
        resolution.note,
    )
    item = arbitration.item
    labels = label_map(arbitration.order)
    by_output = {v: k for k, v in labels.items()}
    rubric = Rubric.for_item(item)  # per-turn scores are resolved like dimensions
    cells = disputed_cells(item.dispute_reasons or [])
    final = copy.deepcopy(item.final or {})
    final.setdefault("scores", {})
    final.setdefault("flags", {})
    outcome = _Outcome(cells=cells, final=final)
    data = {"scores": scores, "preference": preference, "flags": flags, "note": note}
    answers = _answers_checked(item=item, rubric=rubric, labels=labels, outcome=outcome, data=data)
    errors = unknown_field_errors(resolution.unknown_fields, RESOLVE_FIELDS) | answers.errors
    given_scores = {labels[label]: dims for label, dims in answers.scores.items() if dims}
    _apply_scores(given_scores, outcome)
    # Errors in the arbiter's label order: output-id order would tell the letters' contenders.
    in_label_order = sorted(cells, key=lambda c: (c[0], by_output.get(c[1], "")))
    for part, output in in_label_order:
        if part in rubric and part not in given_scores.get(output, {}):
            errors.setdefault(f"scores.{by_output.get(output, '?')}.{part}", VALUE_REQUIRED)
    choice = answers.preference
    mapped_preference = labels.get(choice, choice) if choice else None
    _apply_preference(mapped_preference, outcome, errors)
    given_flags = {labels[label]: sorted(set(f)) for label, f in answers.flags.items()}
    _apply_flags(given_flags, outcome)
    for part, output in in_label_order:
        if part.startswith("flag:") and output not in given_flags:
            errors[f"flags.{by_output.get(output, '?')}"] = (
                f"disputed flag {part[5:]}: list this output's flags (an empty list clears them)"
            )
    if errors:
        raise ResolveInvalid(errors)
    final["arbitrated"] = sorted(outcome.arbitrated)
    final["corrections"] = outcome.corrections
    values = {
        "scores": given_scores,
        "preference": mapped_preference,
        "flags": given_flags,
        "corrected": outcome.corrections,
        "note": answers.comment,
    }
    return final, values


@dataclass
class _Outcome:
    """The item's final outcome as the arbiter's values go into it: the disputed `cells`, the
    `final` being built, the parts the arbiter decided and the agreed values they corrected."""

    cells: set
    final: dict
    arbitrated: set[str] = field(default_factory=set)
    corrections: list[dict] = field(default_factory=list)


def _answers_checked(
    *, item: ReviewItem, rubric: Rubric, labels: dict, outcome: _Outcome, data: dict
) -> Answers:
    """The arbiter's values parsed as a resolution (reviews/rubric.py): N/A where a reviewer
    gave N/A, a fraction only where it keeps the agreed value."""
    # A reviewer's N/A makes N/A a legitimate final value for that cell.
    na_cells = {
        (dim, str(out))
        for dim, out in Score.objects.filter(review__item=item, value__isnull=True).values_list(
            "dimension", "output_id"
        )
    }

    def kept(label: str, dim: Dimension, value: float) -> bool:
        # A new value must be a point of the scale; keeping an agreed one (the mean of the
        # reviews, so maybe 3.5) is not a new value.
        output = labels[label]
        current = outcome.final["scores"].get(output, {}).get(dim.key)
        return (dim.key, output) not in outcome.cells and value == current

    return answers_check(
        rubric=rubric,
        labels=list(labels),
        data=data,
        mode=AnswerMode.RESOLUTION,
        options=CheckOptions(
            wants_preference=item.campaign.mode != Mode.RUBRIC,
            na_ok=lambda label, dim: (dim.key, labels[label]) in na_cells,
            fraction_ok=kept,
        ),
    )


def _apply_preference(mapped: str | None, outcome: _Outcome, errors: dict) -> None:
    """The arbiter's preference (an output id, tie or both_bad) into `final`: required when
    disputed; a change to an agreed one is a correction."""
    cells, final = outcome.cells, outcome.final
    if ("preference", None) in cells:
        if mapped is None and "preference" not in errors:
            errors["preference"] = CHOOSE_PREFERENCE
        elif mapped is not None:
            outcome.arbitrated.add("preference")
            final["preference"] = mapped
    elif mapped is not None and mapped != final.get("preference"):
        outcome.corrections.append(
            {"part": "preference", "output": None, "from": final.get("preference"), "to": mapped}
        )
        outcome.arbitrated.add("preference")
        final["preference"] = mapped


def _apply_scores(given: dict, outcome: _Outcome) -> None:
    """The arbiter's scores into `final`; a change to an agreed value is a correction."""
    cells, final = outcome.cells, outcome.final
    for output, dims in given.items():
        for key, value in dims.items():
            current = final["scores"].setdefault(output, {}).get(key)
            if (key, output) in cells:
                outcome.arbitrated.add(key)
            elif value != current:
                outcome.corrections.append(
                    {"part": key, "output": output, "from": current, "to": value}
                )
                outcome.arbitrated.add(key)
            final["scores"][output][key] = value


def _apply_flags(given: dict, outcome: _Outcome) -> None:
    """The arbiter's flags into `final`; a change to a flag the reviewers agreed on is a
    correction, recorded as such."""
    cells, final = outcome.cells, outcome.final
    for output, names in given.items():
        before, after = set(final["flags"].get(output, [])), set(names)
        decided = {part[5:] for part, out in cells if out == output and part.startswith("flag:")}
        if decided:
            outcome.arbitrated.add("flag")
        for name in sorted((before ^ after) - decided):
            outcome.corrections.append(
                {
                    "part": "flag",
                    "output": output,
                    "flag": name,
                    "from": name in before,
                    "to": name in after,
                }
            )
            outcome.arbitrated.add("flag")
        final["flags"][output] = sorted(after)


def arbitration_resolve(
    *,
    token: str,
    arbiter: User,
    scores: dict | None,
    preference: str | None = None,
    flags: dict | None = None,
    note: str | None = None,
    unknown_fields: tuple[str, ...] = (),
) -> tuple[Arbitration, bool]:
    """Record the arbiter's final values. Returns (arbitration, newly_resolved).

    A repeat of the resolve that settled it (a retry) returns it unchanged with newly_resolved
    False; a resolve with other values raises AlreadyResolved, so they are never dropped
    without a word.
    """
    request = Resolution(scores, preference, flags, note, unknown_fields)
    with transaction.atomic():
        arbitration = _locked_for(token, arbiter)
        if arbitration.state == Arbitration.State.RESOLVED:
            if not _same_resolution(arbitration, request):
                raise AlreadyResolved
            return arbitration, False
        if arbitration.state != Arbitration.State.ACTIVE:
            raise ArbitrationGone
        final, values = resolution_build(arbitration=arbitration, resolution=request)
        note_text = values.pop("note")
        done = Arbitration.objects.filter(
            pk=arbitration.pk, token=token, state=Arbitration.State.ACTIVE, arbiter=arbiter
        ).update(
            state=Arbitration.State.RESOLVED, final_values=values, note=note_text, resolved_at=Now()
        )
        if done != 1:
            raise ArbitrationGone
        settled = ReviewItem.objects.filter(
            pk=arbitration.item_id, state=ReviewItem.State.DISPUTED
        ).update(final=final, state=ReviewItem.State.RESOLVED)
        if settled != 1:
            raise ArbitrationGone
        arbitration.refresh_from_db()
        return arbitration, True


def _same_resolution(arbitration: Arbitration, request: Resolution) -> bool:
    """Whether a resolve request carries the values its resolved arbitration stored: the same
    label -> output mapping (the token, hence the order, is unchanged) and the same rules."""
    try:
        _final, values = resolution_build(arbitration=arbitration, resolution=request)
    except ResolveInvalid:
        return False
    return arbitration.has_values(
        scores=values["scores"],
        preference=values["preference"],
        flags=values["flags"],
        note=values["note"],
    )
