"""Reads shaped for the review screens.

Reviewer-facing selectors return plain dicts that are already blinded: labels A, B, ..., the
opaque assignment token, masked and sanitized text. No model instance, contender, provider,
model id or primary key of an output/generation/contender/item ever leaves this module
towards a reviewer template or API response.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.paginator import Paginator
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import BooleanField, Count, ExpressionWrapper, F, Q
from django.db.models.functions import Now

from evalsite import rawrows
from evalsite.roles import REVIEWER
from tasks.models import Campaign, Generation, Task

from . import blinding, pagerows
from .models import Assignment, ItemOutput, ReviewerRemoval, ReviewItem
from .rubric import Rubric
from .services import (
    BLOCKING,
    REVIEWABLE,
    SKIP_REASONS,
    campaign_identity_terms,
    campaign_wants,
    labels_for,
    stale_leases_q,
)


def reviewer_campaigns(*, reviewer: AbstractBaseUser) -> list[dict]:
    """The reviewer's home: campaigns open to them, with their own progress only."""
    removed = ReviewerRemoval.objects.filter(reviewer=reviewer).values("campaign_id")
    campaigns = (
        Campaign.objects.visible_to(reviewer, REVIEWER)  # the roster (tasks/rosters.py)
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


def available_for(*, campaign: Campaign, reviewer: AbstractBaseUser) -> int:
    """Items this reviewer could still be given (an upper bound: others may take slots first)."""
    blocked = Assignment.objects.filter(
        reviewer=reviewer, campaign=campaign, state__in=BLOCKING
    ).values("item_id")
    return (
        ReviewItem.objects.filter(
            campaign=campaign, ready=True, state=ReviewItem.State.OPEN, live_count__lt=F("overlap")
        )
        .exclude(pk__in=blocked)
        .count()
    )


def reviewer_progress(
    *, campaign: Campaign, reviewer: AbstractBaseUser, with_available: bool = True
) -> dict:
    """The reviewer's own progress. `available` counts over every item of the campaign, so
    the review page (loaded once per item) leaves it out; home and start pages show it."""
    done = Assignment.objects.filter(
        reviewer=reviewer, campaign=campaign, state=Assignment.State.SUBMITTED
    ).count()
    progress = {"done": done}
    if with_available:
        progress["available"] = available_for(campaign=campaign, reviewer=reviewer)
    return progress


@dataclass(frozen=True)
class ReviewPage:
    """What the review page reads, from one query (see review_page_data)."""

    assignment: Assignment
    campaign: Campaign
    task: Task
    may_review: bool
    removed: bool  # an administrator removed the reviewer from the campaign
    done: int  # the reviewer's submitted assignments in the campaign (their progress)
    generations: dict[int, Generation]  # ItemOutput pk -> its generation's text and leak flag


@cache
def _review_page_sql(vendor: str) -> str:
    qn = connections[DEFAULT_DB_ALIAS].ops.quote_name
    a, i, c, t, o, g, r = (
        qn(m._meta.db_table)
        for m in (Assignment, ReviewItem, Campaign, Task, ItemOutput, Generation, ReviewerRemoval)
    )
    # One row per output of the item (LEFT JOIN: an item without outputs still has its row).
    # The removal and the progress count refer to the assignment's own reviewer and campaign
    # columns, not to parameters: the planner's estimate for them is then the same for every
    # reviewer, so PostgreSQL keeps the statement's generic plan. Given the reviewer as a
    # parameter, it planned the statement again on every page (1.2 ms, ten times the run)
    # for any reviewer newer than the table statistics. They sit with the assignment row in
    # a subquery that OFFSET 0 keeps whole on PostgreSQL, so they run once, not once per
    # output (the count reads the reviewer's whole progress in the campaign).
    keep_whole = " OFFSET 0" if vendor == "postgresql" else ""
    me = (
        f"SELECT a.*, EXISTS (SELECT 1 FROM {r} rr "
        f"WHERE rr.reviewer_id = a.reviewer_id AND rr.campaign_id = a.campaign_id) AS removed, "
        f"(SELECT COUNT(*) FROM {a} da WHERE da.reviewer_id = a.reviewer_id "
        f"AND da.campaign_id = a.campaign_id "
        f"AND da.state = {rawrows.literal(Assignment.State.SUBMITTED)}) AS done "
        # The token alone picks the row (its unique index); whose it is is checked after.
        f"FROM {a} a WHERE a.token = %s{keep_whole}"
    )
    return (
        f"SELECT {pagerows.columns('a', Assignment)}, {pagerows.columns('c', Campaign)}, {pagerows.columns('t', Task)}, o.id, "
        f"{pagerows.columns('g', Generation)}, a.removed, a.done "
        f"FROM ({me}) a JOIN {i} i ON i.id = a.item_id JOIN {c} c ON c.id = i.campaign_id "
        f"JOIN {t} t ON t.id = i.task_id "
        f"LEFT JOIN {o} o ON o.item_id = a.item_id LEFT JOIN {g} g ON g.id = o.generation_id "
        f"WHERE c.slug = %s"
    )


def item_outputs(item_id: int) -> tuple[Task, dict[int, Generation]]:
    """An item's task and {ItemOutput pk: Generation (output, identity_leak)}, in one query."""
    db = connections[DEFAULT_DB_ALIAS]
    with db.cursor() as cursor:
        cursor.execute(pagerows.item_outputs_sql(), [item_id])
        rows = cursor.fetchall()
    return pagerows.task_and_generations(rows, 0)


def review_page_data(*, slug: str, token: str, reviewer: AbstractBaseUser) -> ReviewPage | None:
    """The assignment `token` of `reviewer` in campaign `slug`, with what its page shows.

    The page is loaded once per reviewed item: assignment, campaign, task, outputs, the
    reviewer's removal and progress come in one query written once, instead of five ORM
    queries whose building alone cost more than the rest of the page.
    """
    db = connections[DEFAULT_DB_ALIAS]
    with db.cursor() as cursor:
        cursor.execute(
            _review_page_sql(db.vendor),
            [token, slug],
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    parts, start = {}, 0
    for model in (Assignment, Campaign, Task):
        width = len(pagerows.fields(model))
        parts[model] = pagerows.instance(model, rows[0][start : start + width])
        start += width
    if parts[Assignment].reviewer_id != reviewer.pk:
        return None  # someone else's token: as if it did not exist
    generations = pagerows.generations(rows, start)
    removed, done = rows[0][-2:]
    campaign = parts[Campaign]
    return ReviewPage(
        assignment=parts[Assignment],
        campaign=campaign,
        task=parts[Task],
        # services.reviewer_may_review, with the removal read in the same query.
        may_review=campaign.status in REVIEWABLE and not removed,
        removed=bool(removed),
        done=done,
        generations=generations,
    )


def _rubric(campaign: Campaign, terms: tuple[str, ...]) -> list[dict]:
    """The rubric as reviewers read it: label, description and anchors masked (they end up in
    the page's text and in attributes: title=, aria-label=). The key is an identifier (form
    field names, the API): shown as written, so the campaign's definition warns about it."""
    rows = []
    for dim in Rubric.of(campaign):
        anchors = {k: words_shown(v, terms) for k, v in dim.anchors.items()}
        rows.append(
            {
                "key": dim.key,
                "label": words_shown(dim.label, terms),
                "description": words_shown(dim.description, terms),
                "min": dim.min,
                "max": dim.max,
                "allow_na": dim.allow_na,
                "anchors": anchors,
                "points": [{"value": v, "anchor": anchors.get(str(v), "")} for v in dim.points],
            }
        )
    return rows


def text_shown(text: str, terms: tuple[str, ...], *, html: bool = True) -> dict:
    """Text of the campaign or its test set (instructions, a task's messages, its reference)
    as reviewers and arbiters see it: masked like the outputs, as an admin naming a contender
    there, or a logged conversation whose assistant says who it is, must not unblind the
    campaign."""
    if not html:
        return {"text": blinding.mask_identity(text, terms).text, "html": None}
    masked, rendered, _ = blinding.render_output(text, terms)
    return {"text": masked, "html": rendered}


def words_shown(text: str, terms: tuple[str, ...]) -> str:
    """A short plain text of the campaign or its test set (a rubric label, an anchor, a task's
    category, a reviewer's comment) as reviewers and arbiters see it: text_shown's text."""
    return text_shown(text, terms, html=False)["text"] if text else text


def instructions_shown(campaign: Campaign, terms: tuple[str, ...], *, html: bool = True):
    """The campaign's instructions as reviewers and arbiters see them (None without any)."""
    if not campaign.instructions:
        return None
    return text_shown(campaign.instructions, terms, html=html)


def conversation_shown(task: Task, terms: tuple[str, ...], *, html: bool = True) -> list[dict]:
    """The task's messages (or its prompt as one), masked."""
    rows = []
    for m in task.conversation():
        shown = text_shown(str(m.get("content", "")), terms, html=html)
        rows.append(
            {"role": str(m.get("role", "user")), "content": shown["text"], "html": shown["html"]}
        )
    return rows


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
        task, generations = item_outputs(assignment.item_id)
    terms = campaign_identity_terms(campaign)
    labels = labels_for(len(assignment.order))
    candidates = []
    for label, output_id in zip(labels, assignment.order, strict=True):
        generation = generations[output_id]
        # The API sends text only: mask, but skip the Markdown rendering. (Flagging for
        # admins happens when the output is stored: reviews/identity_hold.py.)
        if html:
            text, rendered, _ = blinding.render_output(generation.output, terms)
        else:
            text, rendered = blinding.mask_identity(generation.output or "", terms).text, None
        candidates.append({"label": label, "text": text, "html": rendered})

    conversation = conversation_shown(task, terms, html=html)
    reference = None
    if campaign.show_reference and task.reference:
        reference = text_shown(task.reference, terms, html=html)
    wants_scores, wants_preference = campaign_wants(campaign)
    return {
        "token": assignment.token,
        "state": assignment.state,
        "lease_expires_at": assignment.lease_expires_at,
        "campaign": {"slug": campaign.slug, "name": campaign.name, "mode": campaign.mode},
        "task": {
            "category": words_shown(task.category, terms),
            "multi_turn": bool(task.messages),
            "conversation": conversation,
            "reference": reference,
        },
        "candidates": candidates,
        "instructions": instructions_shown(campaign, terms, html=html),
        "rubric": _rubric(campaign, terms) if wants_scores else [],
        "wants_scores": wants_scores,
        "wants_preference": wants_preference,
        "preference_choices": [*labels, "tie", "both_bad"] if wants_preference else [],
        "flag_choices": list(blinding.FLAG_CHOICES),
        "skip_reasons": SKIP_REASONS,
    }


def review_form_input(screen: dict) -> str:
    """Everything review_form reads from `screen`, as a string: screens with the same input
    get the same blank form (a cache key; keep it in step with review_form)."""
    labels = [cand["label"] for cand in screen["candidates"]]
    return repr((screen["rubric"], labels, screen["preference_choices"], screen["flag_choices"]))


def review_form(*, screen: dict, entered: dict | None = None, errors: dict | None = None) -> dict:
    """The score grid with what the reviewer entered and per-field errors (for re-renders)."""
    entered, errors = entered or {}, errors or {}
    scores = entered.get("scores") or {}
    dims = []
    for dim in screen["rubric"]:
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
        dims.append({**dim, "cells": cells})
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


def task_json(*, category: str, multi_turn: bool, conversation: list, reference: str | None):
    """A task as the API shows it, to reviewers and arbiters alike: `messages` for a multi-turn
    task, else `prompt`, and `reference` where the campaign shows it."""
    task = {"category": category}
    if multi_turn:
        task["messages"] = [{"role": m["role"], "content": m["content"]} for m in conversation]
    else:
        task["prompt"] = conversation[0]["content"] if conversation else ""
    if reference:
        task["reference"] = reference
    return task


def review_api_payload(*, screen: dict, resumed: bool, submit_url: str) -> dict:
    """The JSON shape of SPEC's reviewer loop: labels and text only."""
    shown = screen["task"]
    task = task_json(
        category=shown["category"],
        multi_turn=shown["multi_turn"],
        conversation=shown["conversation"],
        reference=shown["reference"]["text"] if shown["reference"] else None,
    )
    return {
        "token": screen["token"],
        "resumed": resumed,
        "lease_expires_at": screen["lease_expires_at"].isoformat(),
        "campaign": screen["campaign"]["slug"],
        "mode": screen["campaign"]["mode"],
        "task": task,
        "instructions": (screen["instructions"] or {}).get("text", ""),
        "candidates": [{"label": c["label"], "text": c["text"]} for c in screen["candidates"]],
        "rubric": [
            {k: d[k] for k in ("key", "label", "description", "min", "max", "anchors", "allow_na")}
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
    User = get_user_model()
    removed = set(
        ReviewerRemoval.objects.filter(campaign=campaign).values_list("reviewer_id", flat=True)
    )
    per_reviewer = (
        Assignment.objects.filter(campaign=campaign)
        .values("reviewer_id", "reviewer__username")
        .annotate(
            active=Count("pk", filter=Q(state=Assignment.State.ACTIVE, lease_expires_at__gt=Now())),
            stale=Count("pk", filter=stale_leases_q()),
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

    items = (
        ReviewItem.objects.filter(campaign=campaign)
        .select_related("task")
        .order_by("task__position", "sample_index", "pair_key", "pk")
    )
    if item_state:
        items = items.filter(state=item_state)
    paginator = Paginator(items, per_page)
    page_obj = paginator.get_page(page)
    page_items = list(page_obj.object_list)
    by_item: dict[int, list] = {}
    for a in (
        Assignment.objects.filter(item__in=page_items)
        .select_related("reviewer")
        .annotate(is_stale=ExpressionWrapper(stale_leases_q(), output_field=BooleanField()))
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
    totals = ReviewItem.objects.filter(campaign=campaign).aggregate(
        items=Count("pk"),
        ready=Count("pk", filter=Q(ready=True)),
        complete=Count("pk", filter=Q(submitted_count__gte=F("overlap"))),
        in_progress=Count("pk", filter=Q(live_count__gt=0, submitted_count__lt=F("overlap"))),
    )
    stale = list(
        Assignment.objects.filter(stale_leases_q(), campaign=campaign)
        .select_related("reviewer", "item__task")
        .order_by("lease_expires_at")[:200]
    )
    return {
        "totals": totals,
        "reviewers": reviewers,
        "items": [
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
            for i in page_items
        ],
        "page": page_obj,
        "item_state": item_state,
        "item_states": ReviewItem.State.choices,
        "stale": [
            {
                "token": a.token,
                "reviewer": a.reviewer.get_username(),
                "task": a.item.task.external_id,
                "lease_expires_at": a.lease_expires_at,
            }
            for a in stale
        ],
    }
