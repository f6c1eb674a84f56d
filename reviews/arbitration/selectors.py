"""Screen-shaped reads for arbitration: the arbiter's (blinded) workspace and the lead's list.

Arbiter-facing selectors return plain dicts keyed by the arbiter's labels A, B, ... Nothing in
them carries a contender, a provider, a model id or a primary key: the only id is the
arbitration's random token. Reviewers are "Reviewer 1", "Reviewer 2", ... (no names).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from evalsite.roles import ARBITER
from reviews import transcript_shown
from reviews.disputes.rules import disputed_cells
from reviews.models import FLAGS, Arbitration, ItemOutput, Review, ReviewItem
from reviews.rubric import Dimension, Rubric, label_map
from reviews.screen import (
    OutputRead,
    Viewer,
    candidates_shown,
    rubric_shown,
    score_text,
    task_json,
    task_shown,
)
from tasks.blinding.campaign_texts import instructions_shown, words_shown
from tasks.blinding.parts import hand_masked
from tasks.blinding.render import labels
from tasks.models import Campaign

STATUS_LABELS = {"open": "open", "in_progress": "in progress", "resolved": "resolved"}


def _choice_label(choice: str | None, label_of: dict[str, str]) -> str:
    if not choice:
        return ""
    return label_of.get(choice, choice)


def arbitration_workspace(*, arbitration: Arbitration) -> dict:
    """Everything the arbitration page and API show, blinded and keyed by the arbiter's labels."""
    item = ReviewItem.objects.select_related("task", "campaign").get(pk=arbitration.item_id)
    campaign = item.campaign
    labels = label_map(arbitration.order)  # {"A": "<output id>"}
    label_of = {pk: label for label, pk in labels.items()}
    viewer = Viewer.of(campaign)
    terms = viewer.terms
    wants_scores, wants_preference = campaign.wants()
    candidates, turns = candidates_shown(_outputs_read(item, labels), item.task.turns, viewer)
    reviews = item.reviews.prefetch_related("scores").order_by("submitted_at", "pk")
    reviewer_rows = [
        _reviewer_row(n=n, review=review, labels=labels, label_of=label_of, terms=terms)
        for n, review in enumerate(reviews, start=1)
    ]
    cells = disputed_cells(item.dispute_reasons or [])
    final = item.final or {}
    agreed = _agreed(final=final, labels=labels, label_of=label_of)
    agreed_scores, agreed_preference = agreed["scores"], agreed["preference"] or ""
    dims = list(Rubric.for_item(item))  # with a conversation's per-turn scores (score_turns)
    shown = rubric_shown(dims, viewer)
    rubric = [_rubric_entry(dim, row) for dim, row in zip(dims, shown, strict=True)]
    reviews_shown = _ReviewsShown(labels=labels, rows=reviewer_rows, cells=cells)
    grid = [
        _grid_row(dim=dim, label=entry["label"], reviews=reviews_shown, agreed_scores=agreed_scores)
        for dim, entry in zip(dims, rubric, strict=True)
    ]
    return {
        "token": arbitration.token,
        "lease_expires_at": arbitration.lease_expires_at,
        "campaign": {"name": campaign.name, "slug": campaign.slug},
        "task": _task_entry(task_shown(item.task, viewer)),
        "labels": list(labels),
        "candidates": candidates,
        "conversation_turns": turns,  # None: each output whole, its steps above its answer
        "instructions": instructions_shown(campaign, terms),
        "rubric": rubric if wants_scores else [],
        "grid": grid if wants_scores else [],
        "wants_preference": wants_preference,
        "preference": _preference_shown(
            labels=labels, agreed=agreed_preference, reviewer_rows=reviewer_rows, cells=cells
        ),
        "flag_rows": _flag_rows(
            labels=labels, final=final, reviewer_rows=reviewer_rows, cells=cells
        ),
        "reviews": reviewer_rows,
        "disputed": _disputed_rows(item=item, grid=grid, label_of=label_of),
        "agreed": agreed,
    }


def _agreed(*, final: dict, labels: dict, label_of: dict) -> dict:
    """The item's current final outcome (scores, preference, flags) keyed by the arbiter's labels."""
    return {
        "scores": {
            label: {k: v for k, v in (final.get("scores") or {}).get(pk, {}).items()}
            for label, pk in labels.items()
        },
        "preference": _choice_label(final.get("preference"), label_of) or None,
        "flags": {
            label: sorted((final.get("flags") or {}).get(pk, [])) for label, pk in labels.items()
        },
    }


def _outputs_read(item: ReviewItem, labels: dict[str, str]) -> list[OutputRead]:
    """The item's outputs in the arbiter's label order, with an admin's hand masks applied to
    the answer and the transcript (tasks/blinding/parts.py): what the screen then masks
    (reviews/screen.py)."""
    shown = item.outputs.values_list(
        "pk",
        "generation__output",
        "generation__identity_masks",
        "generation__transcript",
        "generation__reasoning",
    )
    read = {
        pk: hand_masked(output=text, transcript=t, reasoning=r, masks=masks)
        for pk, text, masks, t, r in shown
    }
    outputs = []
    for label, pk in labels.items():
        one = read.get(int(pk))
        if one is None:
            outputs.append(OutputRead(label, "", None, None))
        else:
            outputs.append(OutputRead(label, one.text, one.reasoning, one.transcript))
    return outputs


def _task_entry(shown: dict) -> dict:
    """The task as reviews/screen.py shows it, its reference as the arbitration page reads it:
    `reference` (text) and `reference_html`, both "" where there is none."""
    reference = shown["reference"] or {"text": "", "html": ""}
    return {
        "category": shown["category"],
        "multi_turn": shown["multi_turn"],
        "conversation": shown["conversation"],
        "reference": reference["text"],
        "reference_html": reference["html"],
        "turns": shown["turns"],
    }


def _reviewer_row(
    *, n: int, review: Review, labels: dict, label_of: dict, terms: tuple[str, ...]
) -> dict:
    """One review as "Reviewer <n>": scores, preference and flags keyed by the arbiter's labels."""
    scores: dict[str, dict[str, float | None]] = {label: {} for label in labels}
    for s in review.scores.all():
        if str(s.output_id) in label_of:
            scores[label_of[str(s.output_id)]][s.dimension] = s.value
    if review.preference == "output" and review.preferred_output_id:
        preference = label_of.get(str(review.preferred_output_id), "")
    else:
        preference = review.preference or ""
    seen = [
        {"theirs": blinding_label(i), "ours": label_of.get(str(pk), "?")}
        for i, pk in enumerate(review.presented_order or [])
    ]
    return {
        "name": f"Reviewer {n}",
        "scores": scores,
        "preference": preference,
        "flags": {
            label: sorted(v)
            for label, v in _by_label(review.flags, label_of).items()
            if label != "?"
        },
        # Comments are free text by blind reviewers; mask them all the same.
        "comment": words_shown(review.comment or "", terms),
        "seen": seen,
    }


def _rubric_entry(dim: Dimension, shown: dict) -> dict:
    """One rubric dimension as the arbitration page and API read it, masked as on the review
    page (`shown`, from reviews/screen.py): anchors as a list, and the dimension's max_gap."""
    return {
        **{k: shown[k] for k in ("key", "label", "description", "min", "max", "allow_na")},
        "max_gap": dim.max_gap,
        "anchors": [{"value": p["value"], "text": p["anchor"]} for p in shown["points"]],
    }


@dataclass(frozen=True)
class _ReviewsShown:
    """The item's reviews as the arbiter reads them: the labels ({"A": "<output id>"}), one row
    per reviewer, and the disputed cells."""

    labels: dict
    rows: list[dict]
    cells: set


def _grid_row(*, dim: Dimension, label: str, reviews: _ReviewsShown, agreed_scores: dict) -> dict:
    """One dimension's row of the score grid: per label, each reviewer's value and the agreed one."""
    labels, reviewer_rows, cells = reviews.labels, reviews.rows, reviews.cells
    key = dim.key
    row: dict[str, Any] = {"key": key, "label": label, "cells": [], "disputed": False}
    for out_label, pk in labels.items():
        disputed = (key, pk) in cells
        row["disputed"] = row["disputed"] or disputed
        values = [r["scores"][out_label].get(key) for r in reviewer_rows]
        row["cells"].append(
            {
                "label": out_label,
                "name": f"score-{out_label}-{key}",
                "disputed": disputed,
                "reviewers": [
                    {"name": r["name"], "value": score_text(v)}
                    for r, v in zip(reviewer_rows, values, strict=True)
                ],
                "agreed": None if disputed else agreed_scores[out_label].get(key),
                "agreed_text": "" if disputed else score_text(agreed_scores[out_label].get(key)),
                "choices": list(dim.points),
                "na": dim.allow_na or any(v is None for v in values),
            }
        )
    return row


def _preference_shown(*, labels: dict, agreed: str, reviewer_rows: list[dict], cells: set) -> dict:
    """The preference question: each reviewer's choice, and the agreed one unless disputed."""
    disputed = ("preference", None) in cells
    return {
        "disputed": disputed,
        "agreed": "" if disputed else agreed,
        "choices": [*labels, "tie", "both_bad"],
        "reviewers": [{"name": r["name"], "value": r["preference"] or "—"} for r in reviewer_rows],
    }


def _flag_rows(*, labels: dict, final: dict, reviewer_rows: list[dict], cells: set) -> list[dict]:
    """Per label, every flag: agreed or not, how many reviewers raised it, disputed or split."""
    flag_rows = []
    for label, pk in labels.items():
        agreed_flags = set((final.get("flags") or {}).get(pk, []))
        raised = [set(r["flags"].get(label, [])) for r in reviewer_rows]
        entries = []
        for flag in FLAGS:
            count = sum(flag in s for s in raised)
            entries.append(
                {
                    "flag": flag,
                    "text": flag.replace("_", " "),  # as the review page words it
                    "name": f"flag-{label}",
                    "checked": flag in agreed_flags,
                    "raised_by": count,
                    "disputed": (f"flag:{flag}", pk) in cells,
                    "split": 0 < count < len(raised),
                }
            )
        flag_rows.append({"label": label, "flags": entries})
    return flag_rows


def _disputed_rows(*, item: ReviewItem, grid: list[dict], label_of: dict) -> list[dict]:
    """The item's dispute reasons, named as the form names them, in the arbiter's label order."""
    disputed = []
    part_texts = {row["key"]: row["label"] for row in grid} | {"preference": "Preference"}
    for reason in item.dispute_reasons or []:
        out = reason.get("output")
        flag_text = reason.get("flag", "").replace("_", " ")
        disputed.append(
            {
                "part": reason["part"],
                # Named as the form below names it (the rubric's label, not its key).
                "part_text": f"flag {flag_text}"
                if reason["part"] == "flag"
                else part_texts.get(reason["part"], reason["part"]),
                "flag": reason.get("flag", ""),
                "label": label_of.get(out, "") if out else "",
                "detail": reason["detail"],
                "disputes": bool(reason.get("disputes")),
            }
        )
    # In the arbiter's label order (A first): the reasons were recorded in output-id order.
    disputed.sort(key=lambda d: d["label"])
    return disputed


def blinding_label(index: int) -> str:
    return labels(index + 1)[index]


def workspace_json(ws: dict) -> dict:
    """The API shape of a workspace: labels and text, the reviews mapped to labels, the dispute."""
    return {
        "token": ws["token"],
        "lease_expires_at": ws["lease_expires_at"].isoformat() if ws["lease_expires_at"] else None,
        # An arbiter sees the task and candidates in the same shape as a reviewer.
        "task": task_json(
            category=ws["task"]["category"],
            multi_turn=ws["task"]["multi_turn"],
            conversation=ws["task"]["conversation"],
            reference=ws["task"]["reference"],
            turns=ws["task"]["turns"],
        ),
        "instructions": (ws["instructions"] or {}).get("text", ""),
        "candidates": [transcript_shown.candidate_json(c) for c in ws["candidates"]],
        "rubric": [
            {k: d[k] for k in ("key", "label", "description", "min", "max", "allow_na", "max_gap")}
            | {"anchors": {str(a["value"]): a["text"] for a in d["anchors"] if a["text"]}}
            for d in ws["rubric"]
        ],
        "reviews": [
            {
                "reviewer": r["name"],
                "scores": r["scores"],
                "preference": r["preference"] or None,
                "flags": r["flags"],
                "comment": r["comment"],
            }
            for r in ws["reviews"]
        ],
        "disputed": [
            {
                "part": d["part"],
                "label": d["label"] or None,
                **({"flag": d["flag"]} if d["flag"] else {}),
                "detail": d["detail"],
            }
            for d in ws["disputed"]
            if d["disputes"]
        ],
        "recorded": [
            {
                "part": d["part"],
                "label": d["label"] or None,
                "flag": d["flag"],
                "detail": d["detail"],
            }
            for d in ws["disputed"]
            if not d["disputes"]
        ],
        "agreed": ws["agreed"],
        "asks_preference": ws["wants_preference"],
    }


def arbitration_final_json(*, arbitration: Arbitration) -> dict:
    """A resolved arbitration's outcome keyed by the arbiter's labels (no ids)."""
    item = arbitration.item
    labels = label_map(arbitration.order)
    label_of = {pk: label for label, pk in labels.items()}
    final = item.final or {}
    return {
        "state": arbitration.state,
        "resolved_at": arbitration.resolved_at.isoformat() if arbitration.resolved_at else None,
        "note": arbitration.note,
        "final": {
            # Keyed and ordered by the arbiter's labels: the stored order is the outputs' (the
            # contenders'), and a JSON object's key order would tell it.
            "scores": _by_label(final.get("scores"), label_of),
            "preference": _choice_label(final.get("preference"), label_of) or None,
            "flags": _by_label(final.get("flags"), label_of),
            "arbitrated": final.get("arbitrated", []),
            "corrections": sorted(
                (
                    {
                        **c,
                        "output": label_of.get(c.get("output"), None) if c.get("output") else None,
                    }
                    | (
                        {
                            "from": _choice_label(c["from"], label_of),
                            "to": _choice_label(c["to"], label_of),
                        }
                        if c.get("part") == "preference"
                        else {}
                    )
                    for c in final.get("corrections", [])
                ),
                key=lambda c: (c["output"] or "", str(c.get("part")), str(c.get("dimension", ""))),
            ),
        },
    }


def _by_label(values: dict | None, label_of: dict) -> dict:
    """{output id: value} as {label: value}, in label order."""
    pairs = ((label_of.get(k, "?"), v) for k, v in (values or {}).items())
    return dict(sorted(pairs, key=lambda kv: kv[0]))


def arbiter_queue(*, arbiter: User) -> list[dict]:
    """Per campaign with disputes: what this arbiter can take, holds and has resolved."""
    campaigns = (
        Campaign.objects.visible_to(arbiter, ARBITER)  # the roster (tasks/campaigns/rosters.py)
        .filter(pk__in=Arbitration.objects.values("item__campaign"))
        .order_by("-created_at")
    )
    return [
        {
            "name": c.name,
            "slug": c.slug,
            **arbiter_counts(campaign=c, arbiter=arbiter),
            "held_token": held_token(campaign=c, arbiter=arbiter),
        }
        for c in campaigns
    ]


def arbiter_counts(*, campaign: Campaign, arbiter: User) -> dict:
    base = Arbitration.objects.filter(item__campaign=campaign)
    claimable = base.filter(item__state="disputed").filter(
        Q(state="open") | Q(state="active", lease_expires_at__lte=Now())
    )
    return {
        "available": claimable.exclude(arbiter=arbiter)
        .exclude(item__reviews__reviewer=arbiter)
        .count(),
        "reviewed_by_you": claimable.filter(item__reviews__reviewer=arbiter).distinct().count(),
        # Held even past the lease until someone else takes it (the claim resumes it).
        "holding": base.filter(state="active", arbiter=arbiter).count(),
        "resolved_by_you": base.filter(state="resolved", arbiter=arbiter).count(),
        "in_progress_by_others": base.filter(state="active", lease_expires_at__gt=Now())
        .exclude(arbiter=arbiter)
        .count(),
        "resolved": base.filter(state="resolved").count(),
        "total": base.count(),
    }


def held_token(*, campaign: Campaign, arbiter: User) -> str | None:
    return (
        Arbitration.objects.filter(item__campaign=campaign, arbiter=arbiter, state="active")
        .order_by("pk")
        .values_list("token", flat=True)
        .first()
    )


# --- lead view -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DisputeFilter:
    dimension: str = ""
    reviewer: str = ""  # username
    status: str = ""  # open | in_progress | resolved


def dispute_status(arbitration: Arbitration, now: datetime) -> str:
    if arbitration.state == Arbitration.State.RESOLVED:
        return "resolved"
    if (
        arbitration.state == Arbitration.State.ACTIVE
        and arbitration.lease_expires_at
        and arbitration.lease_expires_at > now
    ):
        return "in_progress"
    return "open"


def campaign_dispute_counts(*, campaign: Campaign) -> dict:
    """Counts for the campaign page: disputed items by status (leads only)."""
    now = timezone.now()
    base = Arbitration.objects.filter(item__campaign=campaign)
    in_progress = base.filter(state="active", lease_expires_at__gt=now).count()
    resolved = base.filter(state="resolved").count()
    total = base.count()
    return {
        "total": total,
        "open": total - in_progress - resolved,
        "in_progress": in_progress,
        "resolved": resolved,
    }


def campaign_disputes(*, campaign: Campaign, filters: DisputeFilter) -> dict:
    """The lead's disputes list: filtered queryset (oldest first), filter options and counts.

    Reason filtering and the per-reason counts run over the JSON in Python (portable across
    SQLite and PostgreSQL; one narrow query, ~10k rows in well under 0.1 s). The caller
    paginates the queryset and shapes one page with `dispute_rows`.
    """
    now = timezone.now()
    base = Arbitration.objects.filter(item__campaign=campaign)
    by_dimension: Counter = Counter()
    matching: list[int] = []
    for pk, reasons in base.values_list("pk", "reasons"):
        parts = {
            r["part"] if r["part"] != "flag" else f"flag:{r.get('flag', '')}"
            for r in reasons
            if r.get("disputes")
        }
        by_dimension.update(parts)
        if filters.dimension in parts:
            matching.append(pk)
    qs = base.filter(pk__in=matching) if filters.dimension else base
    if filters.reviewer:
        qs = qs.filter(item__reviews__reviewer__username=filters.reviewer).distinct()
    if filters.status == "resolved":
        qs = qs.filter(state="resolved")
    elif filters.status == "in_progress":
        qs = qs.filter(state="active", lease_expires_at__gt=now)
    elif filters.status == "open":
        qs = qs.exclude(state="resolved").exclude(state="active", lease_expires_at__gt=now)
    reviewers = sorted(
        Review.objects.filter(item__campaign=campaign, item__arbitration__isnull=False)
        .values_list("reviewer__username", flat=True)
        .distinct()
    )
    return {
        # Primary-key order: no sort over the whole list; status is a filter.
        "queryset": qs.select_related("item__task", "arbiter").order_by("pk"),
        "counts": campaign_dispute_counts(campaign=campaign),
        "by_dimension": sorted(by_dimension.items()),
        "dimensions": sorted(by_dimension),
        "reviewers": reviewers,
        "now": now,
    }


def dispute_rows(*, arbitrations: Sequence[Arbitration], now: datetime) -> list[dict]:
    """One page of the lead's list as plain rows (leads see contender names)."""
    items = [a.item_id for a in arbitrations]
    contender_of = {
        str(pk): name
        for pk, name in ItemOutput.objects.filter(item_id__in=items).values_list(
            "pk", "generation__contender__name"
        )
    }
    reviewers: dict[int, list[str]] = {}
    for item_id, username in (
        ReviewItem.objects.filter(pk__in=items)
        .values_list("pk", "reviews__reviewer__username")
        .order_by("pk", "reviews__submitted_at")
    ):
        if username:
            reviewers.setdefault(item_id, []).append(username)
    rows = []
    for a in arbitrations:
        status = dispute_status(a, now)
        rows.append(
            {
                "task": a.item.task.external_id,
                "sample": a.item.sample_index,
                "item_id": a.item_id,  # leads and admins: the bulk actions' value
                "status": status,
                "status_label": STATUS_LABELS[status],
                "arbiter": a.arbiter.get_username() if a.arbiter and status != "open" else "",
                "note": a.note,
                "resolved_at": a.resolved_at,
                "reviewers": reviewers.get(a.item_id, []),
                "reasons": [
                    {
                        "part": r["part"] if r["part"] != "flag" else f"flag: {r.get('flag', '')}",
                        "contender": contender_of.get(r.get("output") or "", ""),
                        "detail": r["detail"],
                    }
                    for r in a.reasons
                    if r.get("disputes")
                ],
                "arbitrated": (a.item.final or {}).get("arbitrated", [])
                if status == "resolved"
                else [],
                "corrections": len((a.item.final or {}).get("corrections", []))
                if status == "resolved"
                else 0,
            }
        )
    return rows


def arbiter_resolved(*, arbiter: User, limit: int = 20) -> list[dict]:
    """The arbiter's latest resolved items, by token (their item pages)."""
    rows = (
        Arbitration.objects.filter(arbiter=arbiter, state=Arbitration.State.RESOLVED)
        .filter(item__campaign__in=Campaign.objects.visible_to(arbiter, ARBITER))
        .order_by("-resolved_at", "-pk")
        .values_list("token", "item__campaign__name", "resolved_at")[:limit]
    )
    return [{"token": t, "campaign": name, "resolved_at": at} for t, name, at in rows]
