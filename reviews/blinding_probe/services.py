"""Asking and answering the blinding probe."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from reviews.models import Assignment, BlindingGuess, ItemOutput
from tasks.models import Campaign


class ProbeGone(LookupError):
    """No question of yours under this token, or answered already."""


class GuessInvalid(ValueError):
    """The answer is not one of the campaign's contenders."""


def probe_after_submit(*, campaign: Campaign, reviewer: User, item_id: int) -> BlindingGuess | None:
    """After a saved review: the question to ask when this was the reviewer's Nth, 2Nth, ...
    item in the campaign (a random answer of it), else None. A retried submit asks nothing new
    (one question per reviewer and item)."""
    every = (campaign.blinding_probe or {}).get("every")
    if not every:
        return None
    done = Assignment.objects.filter(
        campaign=campaign, reviewer=reviewer, state=Assignment.State.SUBMITTED
    ).count()
    if done == 0 or done % every:
        return None
    outputs = list(
        ItemOutput.objects.filter(item_id=item_id).values_list("pk", "generation__contender_id")
    )
    if len(outputs) < 2:
        return None
    output_id, contender_id = secrets.choice(outputs)
    try:
        with transaction.atomic():
            return BlindingGuess.objects.create(
                campaign=campaign,
                reviewer=reviewer,
                item_id=item_id,
                output_id=output_id,
                contender_id=contender_id,
            )
    except IntegrityError:
        return None  # asked already (a retried submit)


def probe_answer(*, token: str, reviewer: User, guess: str) -> BlindingGuess:
    """Record the reviewer's guess (a contender's name) once; ProbeGone for someone else's or
    an answered question, GuessInvalid for a name that is not a contender of the campaign."""
    probe = (
        BlindingGuess.objects.filter(token=token, reviewer=reviewer, answered_at__isnull=True)
        .select_related("campaign")
        .first()
    )
    if probe is None:
        raise ProbeGone("no open question of yours")
    named = probe.campaign.contenders.filter(name=guess).first() if isinstance(guess, str) else None
    if named is None:
        raise GuessInvalid("guess: must be one of the contenders' names in the question")
    # Conditional: a double click records the first answer only.
    answered = BlindingGuess.objects.filter(pk=probe.pk, answered_at__isnull=True).update(
        guessed=named, answered_at=timezone.now()
    )
    if not answered:
        raise ProbeGone("this question was answered already")
    return probe
