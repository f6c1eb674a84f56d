"""Reads shaped for the review screens.

Reviewer-facing selectors return plain dicts that are already blinded: labels A, B, ..., the
opaque assignment token, masked and sanitized text. No model instance, contender, provider,
model id or primary key of an output/generation/contender/item ever leaves this module
towards a reviewer template or API response.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    F,
    IntegerField,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Now

from evalsite.roles import REVIEWER
from reviews import transcript_shown
from reviews.models import FLAGS, Assignment, ReviewerRemoval, ReviewItem
from reviews.review import sql
from reviews.review.leases import SKIP_REASONS
from reviews.review.standing import REVIEWABLE
from reviews.rubric import Rubric
from reviews.screen import (
    OutputRead,
    Viewer,
    candidates_shown,
    rubric_shown,
    task_json,
    task_shown,
)
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import instructions_shown
from tasks.blinding.hold import generation_hand_masked
from tasks.models import Campaign, Generation, Task


def reviewer_campaigns(*, reviewer: User) -> list[dict]:
    """The reviewer's home: campaigns open to them, with their own progress only."""
    removed = ReviewerRemoval.objects.filter(reviewer=reviewer).values("campaign_id")
    campaigns = (
        Campaign.objects.visible_to(reviewer, REVIEWER)  # the roster (tasks/campaigns/rosters.py)
        .filter(status__in=REVIEWABLE)
        .exclude(pk__in=removed)
        .exclude(kind=Campaign.Kind.MONITOR_RUN)
        .order_by("name")
    )
    rows = []
    for campaign in campaigns:
        mine = Assignment.objects.filter(reviewer=reviewer, campaign=campaign)
        done = mine.filter(state=Assignment.State.SUBMITTED).count()
        active = mine.filter(state=Assignment.State.ACTIVE, lease_expires_at__gt=Now()).exists()
        available = available_for(campaign=campaign, reviewer=reviewer)
        if not (done or active or available):
            continue
        rows.append(
            {
                "slug": campaign.slug,
                "name": campaign.name,
                "done": done,
                "available": available,
                "in_progress": active,
                "total": done + available + (1 if active else 0),
            }
        )
    return rows


def _available(*, campaign: Campaign, reviewer: User) -> QuerySet[ReviewItem]:
    blocked = Assignment.objects.filter(
        reviewer=reviewer, campaign=campaign, state__in=Assignment.BLOCKING
    ).values("item_id")
    return ReviewItem.objects.filter(
        campaign=campaign, ready=True, state=ReviewItem.State.OPEN, live_count__lt=F("overlap")
    ).exclude(pk__in=blocked)


def available_for(*, campaign: Campaign, reviewer: User) -> int:
    """Items this reviewer could still be given (an upper bound: others may take slots first)."""
    return _available(campaign=campaign, reviewer=reviewer).count()


class _Count(Subquery):
    """The number of rows of a queryset, as a scalar subquery."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) counted)"
    output_field = IntegerField()


def reviewer_progress(*, campaign: Campaign, reviewer: User, with_available: bool = True) -> dict:
    """The reviewer's own progress: reviews done and, `with_available`, the items that may
    still come to them, both in one statement (the review page after a claim shows them)."""
    done = Assignment.objects.filter(
        reviewer=reviewer, campaign=campaign, state=Assignment.State.SUBMITTED
    )
    if not with_available:
        return {"done": done.count()}
    available = _available(campaign=campaign, reviewer=reviewer)
    counts = (
        Campaign.objects.filter(pk=campaign.pk)
        .annotate(done=_Count(done.values("pk")), available=_Count(available.values("pk")))
        .values("done", "available")
        .get()
    )
    return {"done": counts["done"], "available": counts["available"]}


@dataclass(frozen=True)
class ReviewPage:
    """What the review page reads (see review_page_data)."""

    assignment: Assignment
    campaign: Campaign
    task: Task
    may_review: bool
    removed: bool  # an administrator removed the reviewer from the campaign
    done: int  # the reviewer's submitted assignments in the campaign (their progress)
    generations: dict[int, Generation]  # ItemOutput pk -> its generation's text and leak flag


def review_page_data(*, slug: str, token: str, reviewer: User) -> ReviewPage | None:
    """The assignment `token` of `reviewer` in campaign `slug`, with what its page shows, or
    None (no such token, or someone else's: as if it did not exist). Two queries written as
    SQL: the page runs for every reviewed item (reviews/review/sql.py)."""
    found = sql.review_page(token=token, slug=slug)
    if found is None or found[0].reviewer_id != reviewer.pk:
        return None
    assignment, campaign, removed, done = found
    task, generations = sql.item_outputs(assignment.item_id)
    return ReviewPage(
        assignment=assignment,
        campaign=campaign,
        task=task,
        may_review=campaign.status in REVIEWABLE and not removed,
        removed=removed,
        done=done,
        generations=generations,
    )


def review_screen(
    *,
    assignment: Assignment,
    campaign: Campaign | None = None,
    task: Task | None = None,
    html: bool = True,
    generations: dict[int, Generation] | None = None,
) -> dict:
    """Everything the review page shows for one assignment, blinded.

    `generations` (ItemOutput pk -> Generation with its output and identity_leak) is read
    here unless the caller already has it (review_page_data).
    """
    if campaign is None:
        campaign = Campaign.objects.get(items__pk=assignment.item_id)
    if task is None or generations is None:
        # The API claim's answer: the item's task and outputs in one query.
        task, generations = sql.item_outputs(assignment.item_id)
    viewer = Viewer.of(campaign, html=html)
    labels = blinding.labels(len(assignment.order))
    # An admin's hand masks first, in the answer and the transcript's steps alike
    # (tasks/blinding/hold.py), then the screen's masking.
    shown = {pk: generation_hand_masked(generations[pk]) for pk in assignment.order}
    outputs = [
        OutputRead(
            label=label,
            text=shown[output_id].text,
            reasoning=shown[output_id].reasoning,
            transcript=shown[output_id].transcript,
        )
        for label, output_id in zip(labels, assignment.order, strict=True)
    ]
    # Each output masked under its label, with its transcript (tool calls, turns) and its
    # reasoning where shown; a conversation turn by turn.
    candidates, turns = candidates_shown(outputs, task.turns, viewer)
    rubric = Rubric.for_task(campaign, task)
    wants_scores, wants_preference = campaign.wants()
    return {
        "token": assignment.token,
        "state": assignment.state,
        "lease_expires_at": assignment.lease_expires_at,
        "campaign": {"slug": campaign.slug, "name": campaign.name, "mode": campaign.mode},
        "task": task_shown(task, viewer),
        "candidates": candidates,
        "conversation_turns": turns,  # None: each output whole, its steps above its answer
        "instructions": instructions_shown(campaign, viewer.terms, html=html),
        # A conversation's per-turn scores (score_turns) first, turn by turn, as it is read.
        "rubric": rubric_shown((*rubric.turn_dimensions, *rubric.final), viewer)
        if wants_scores
        else [],
        "wants_scores": wants_scores,
        "wants_preference": wants_preference,
        "preference_choices": [*labels, "tie", "both_bad"] if wants_preference else [],
        "flag_choices": list(FLAGS),
        "skip_reasons": SKIP_REASONS,
    }


def review_form_input(screen: dict) -> str:
    """Everything review_form reads from `screen`, as a string: screens with the same input
    get the same blank form (a cache key; keep it in step with review_form)."""
    labels = [cand["label"] for cand in screen["candidates"]]
    return repr(
        (
            screen["rubric"],
            labels,
            screen["preference_choices"],
            screen["flag_choices"],
            sorted(_turns_in_blocks(screen)),
        )
    )


def _turns_in_blocks(screen: dict) -> set[int]:
    """The turns whose score question sits in the conversation's turn block (the rest, and
    every turn of an output shown whole, stay in the answer grid)."""
    rows = screen.get("conversation_turns") or []
    return {row["number"] for row in rows} & {d["turn"] for d in screen["rubric"] if d["turn"]}


def _question(dim: dict, screen: dict, scores: dict, errors: dict) -> dict:
    """One question (a rubric dimension or a turn's score) with a cell per output."""
    cells = []
    for cand in screen["candidates"]:
        label = cand["label"]
        value = str((scores.get(label) or {}).get(dim["key"], "") or "")
        cells.append(
            {
                "label": label,
                "name": f"score-{label}-{dim['key']}",
                "points": [{**p, "checked": value == str(p["value"])} for p in dim["points"]],
                "na_checked": value.lower() == "na",
                "error": errors.get(f"scores.{label}.{dim['key']}", ""),
            }
        )
    return {**dim, "cells": cells}


def turn_questions_attach(
    *, screen: dict, entered: dict | None = None, errors: dict | None = None
) -> None:
    """Each conversation turn's score question (score_turns) onto its turn block, as
    `row["score"]`: the reviewer scores every output's reply where they read it. Its inputs
    belong to the review form (form="review-form"); review.js moves through them as through
    the grid's questions, turn by turn."""
    inline = _turns_in_blocks(screen)
    if not inline:
        return
    scores = (entered or {}).get("scores") or {}
    by_turn = {d["turn"]: d for d in screen["rubric"] if d["turn"] in inline}
    for row in screen["conversation_turns"]:
        if row["number"] in by_turn:
            row["score"] = _question(by_turn[row["number"]], screen, scores, errors or {})


def review_form(*, screen: dict, entered: dict | None = None, errors: dict | None = None) -> dict:
    """The score grid with what the reviewer entered and per-field errors (for re-renders).
    Turns scored in their turn block (turn_questions_attach) are not repeated here."""
    entered, errors = entered or {}, errors or {}
    scores = entered.get("scores") or {}
    inline = _turns_in_blocks(screen)
    dims, turns = [], False
    for dim in screen["rubric"]:
        if dim["turn"] in inline:
            turns = True
            continue
        # A conversation's per-turn rows come first under a heading; the rubric then follows.
        heading = ""
        if dim["turn"] and not turns:
            heading, turns = "Turn by turn", True
        elif turns and not dim["turn"]:
            heading, turns = "The final reply", False
        dims.append({**_question(dim, screen, scores, errors), "heading": heading})
    flags = entered.get("flags") or {}
    pref = str(entered.get("preference") or "")
    pref_labels = {
        "tie": "Tie",
        "both_bad": "Both bad" if len(screen["candidates"]) == 2 else "All bad",
    }
    return {
        "dims": dims,
        "preference": [
            {"value": c, "text": pref_labels.get(c, c), "checked": pref == c}
            for c in screen["preference_choices"]
        ],
        "preference_error": errors.get("preference", ""),
        "flags": [
            {
                "label": cand["label"],
                "name": f"flag-{cand['label']}",
                "choices": [
                    {
                        "value": f,
                        "text": f.replace("_", " "),
                        "checked": f in (flags.get(cand["label"]) or []),
                    }
                    for f in screen["flag_choices"]
                ],
                "error": errors.get(f"flags.{cand['label']}", ""),
            }
            for cand in screen["candidates"]
        ],
        "flags_open": bool(flags) or any(k.startswith("flags.") for k in errors),
        "comment": entered.get("comment", ""),
        "comment_error": errors.get("comment", ""),
        # Errors with no field of their own on the page (e.g. a hand-made POST).
        "general_errors": [f"{k}: {v}" for k, v in errors.items() if k not in _inline_keys(screen)],
        "error_count": len(errors),
    }


def _inline_keys(screen: dict) -> set[str]:
    keys = {"preference", "comment"}
    for cand in screen["candidates"]:
        keys.add(f"flags.{cand['label']}")
        keys.update(f"scores.{cand['label']}.{d['key']}" for d in screen["rubric"])
    return keys


def review_api_payload(*, screen: dict, resumed: bool, submit_url: str) -> dict:
    """The JSON shape of the reviewer loop's API (docs/reviewing.md): labels and text only."""
    shown = screen["task"]
    task = task_json(
        category=shown["category"],
        multi_turn=shown["multi_turn"],
        conversation=shown["conversation"],
        reference=shown["reference"]["text"] if shown["reference"] else None,
        turns=shown["turns"],
    )
    return {
        "token": screen["token"],
        "resumed": resumed,
        "lease_expires_at": screen["lease_expires_at"].isoformat(),
        "campaign": screen["campaign"]["slug"],
        "mode": screen["campaign"]["mode"],
        "task": task,
        "instructions": (screen["instructions"] or {}).get("text", ""),
        "candidates": [transcript_shown.candidate_json(c) for c in screen["candidates"]],
        "rubric": [
            {k: d[k] for k in ("key", "label", "description", "min", "max", "anchors", "allow_na")}
            | ({"turn": d["turn"]} if d["turn"] else {})  # a per-turn score (score_turns)
            for d in screen["rubric"]
        ],
        "preference_choices": screen["preference_choices"],
        "flags": screen["flag_choices"],
        "submit_url": submit_url,
    }


# --- admin / lead ---------------------------------------------------------------------------


def assignment_overview(
    *, campaign: Campaign, page: int = 1, item_state: str = "", per_page: int = 50
) -> dict:
    """Assignment state for admins and leads: per reviewer, per item, stale leases."""
    items = (
        ReviewItem.objects.filter(campaign=campaign)
        .select_related("task")
        .order_by("task__position", "sample_index", "pair_key", "pk")
    )
    if item_state:
        items = items.filter(state=item_state)
    paginator = Paginator(items, per_page)
    page_obj = paginator.get_page(page)
    totals = ReviewItem.objects.filter(campaign=campaign).aggregate(
        items=Count("pk"),
        ready=Count("pk", filter=Q(ready=True)),
        complete=Count("pk", filter=Q(submitted_count__gte=F("overlap"))),
        in_progress=Count("pk", filter=Q(live_count__gt=0, submitted_count__lt=F("overlap"))),
    )
    return {
        "totals": totals,
        "reviewers": _reviewer_counts(campaign=campaign),
        "items": _item_rows(items=list(page_obj.object_list)),
        "page": page_obj,
        "item_state": item_state,
        "item_states": ReviewItem.State.choices,
        "stale": _stale_rows(campaign=campaign),
    }


def _reviewer_counts(*, campaign: Campaign) -> list[dict]:
    """Per reviewer, their assignments by state; a removed reviewer is listed even with none."""
    User = get_user_model()
    removed = set(
        ReviewerRemoval.objects.filter(campaign=campaign).values_list("reviewer_id", flat=True)
    )
    per_reviewer = (
        Assignment.objects.filter(campaign=campaign)
        .values("reviewer_id", "reviewer__username")
        .annotate(
            active=Count("pk", filter=Q(state=Assignment.State.ACTIVE, lease_expires_at__gt=Now())),
            stale=Count("pk", filter=Assignment.stale_q()),
            submitted=Count("pk", filter=Q(state=Assignment.State.SUBMITTED)),
            skipped=Count("pk", filter=Q(state=Assignment.State.SKIPPED)),
            expired=Count("pk", filter=Q(state=Assignment.State.EXPIRED)),
            released=Count("pk", filter=Q(state=Assignment.State.RELEASED)),
        )
        .order_by("reviewer__username")
    )
    reviewers = [{**r, "removed": r["reviewer_id"] in removed} for r in per_reviewer]
    seen = {r["reviewer_id"] for r in reviewers}
    for user in User.objects.filter(pk__in=removed - seen):
        reviewers.append(
            {
                "reviewer_id": user.pk,
                "reviewer__username": user.get_username(),
                "active": 0,
                "stale": 0,
                "submitted": 0,
                "skipped": 0,
                "expired": 0,
                "released": 0,
                "removed": True,
            }
        )
    return reviewers


def _item_rows(*, items: list[ReviewItem]) -> list[dict]:
    """One page of items as rows, each with its assignments (slot order) and their leases."""
    by_item: dict[int, list] = {}
    for a in (
        Assignment.objects.filter(item__in=items)
        .select_related("reviewer")
        .annotate(is_stale=ExpressionWrapper(Assignment.stale_q(), output_field=BooleanField()))
        .order_by("slot", "created_at")
    ):
        by_item.setdefault(a.item_id, []).append(
            {
                "token": a.token,
                "reviewer": a.reviewer.get_username(),
                "state": a.state,
                "slot": a.slot,
                "lease_expires_at": a.lease_expires_at,
                "stale": a.is_stale,
                "skip_reason": a.skip_reason,
            }
        )
    return [
        {
            "task": i.task.external_id,
            "sample": i.sample_index,
            "pair": i.pair_key,
            "state": i.state,
            "ready": i.ready,
            "live": i.live_count,
            "submitted": i.submitted_count,
            "k": i.overlap,
            "assignments": by_item.get(i.pk, []),
        }
        for i in items
    ]


def _stale_rows(*, campaign: Campaign) -> list[dict]:
    """The campaign's stale leases, oldest first (the first 200)."""
    stale = (
        Assignment.objects.filter(Assignment.stale_q(), campaign=campaign)
        .select_related("reviewer", "item__task")
        .order_by("lease_expires_at")[:200]
    )
    return [
        {
            "token": a.token,
            "reviewer": a.reviewer.get_username(),
            "task": a.item.task.external_id,
            "lease_expires_at": a.lease_expires_at,
        }
        for a in stale
    ]
