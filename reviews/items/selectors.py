"""One task of a campaign, drilled into: what a lead needs to understand an outcome.

`task_detail` (admins and leads) names contenders and reviewers, unmasked. `arbiter_item`
(an arbiter's own arbitration) is the arbitration workspace read-only: labels A, B, ...,
"Reviewer 1", masked texts, and nothing keyed by a primary key.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import Http404

from evalsite.roles import ARBITER
from reviews import transcript_shown
from reviews.arbitration.selectors import arbitration_workspace
from reviews.comments import item_comments
from reviews.disputes.rules import disputed_cells
from reviews.models import Arbitration, ReviewItem
from reviews.rubric import Rubric
from reviews.screen import score_text
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import campaign_identity_terms, words_shown
from tasks.blinding.render import labels
from tasks.campaigns.selectors import failed_checks
from tasks.models import Campaign, Generation, Task


def _checks(check_results: dict | None) -> list[dict]:
    return [
        {"kind": kind, "passed": bool(v.get("passed")), "detail": v.get("detail", "")}
        for kind, v in sorted((check_results or {}).items())
    ]


def _conversation(task: Task) -> list[dict]:
    """The task's messages as written (tool calls with their tool messages), not masked."""
    reader = transcript_shown.Reader(None)
    return transcript_shown.history_shown(transcript_shown.task_messages(task), reader)


def _transcripts(item: ReviewItem, outputs: list, name_of: dict) -> tuple[list, list | None]:
    """Each output's transcript as written, and a conversation's turns with every output's
    reply under its contender's name (leads and admins: nothing masked)."""
    candidates = [{"label": label} for label in labels(len(outputs))]
    rows = transcript_shown.attach(
        candidates=candidates,
        transcripts=[o.generation.transcript for o in outputs],
        task_turns=item.task.turns,
        reader=transcript_shown.Reader(None),
    )
    names = {c["label"]: name_of[str(o.pk)] for c, o in zip(candidates, outputs, strict=True)}
    for row in rows or []:
        for reply in row["replies"]:
            reply["name"] = names[reply["label"]]
    return [c["turns"] for c in candidates], rows


def _choice(review_or_final_pref: str | None, output_id: int | None, name_of: dict) -> str:
    if review_or_final_pref == "output" and output_id is not None:
        return name_of.get(str(output_id), "?")
    if review_or_final_pref in (None, ""):
        return ""
    return name_of.get(str(review_or_final_pref), str(review_or_final_pref).replace("_", " "))


def _item_block(item: ReviewItem, rubric: Rubric) -> dict:
    outputs = list(item.outputs.select_related("generation__contender").order_by("pk"))
    name_of = {str(o.pk): o.generation.contender.name for o in outputs}
    transcripts, conversation_turns = _transcripts(item, outputs, name_of)
    dims = rubric.keys
    reviews = _item_reviews(item, outputs, name_of, dims)
    final = item.final or {}
    arbitration = Arbitration.objects.filter(item=item).select_related("arbiter").first()
    set_by_arbiter = (
        _arbiter_cells(item, final) if item.state == ReviewItem.State.RESOLVED else set()
    )
    final_rows = _final_rows(final, outputs, name_of, dims, set_by_arbiter)
    return {
        "id": item.pk,
        "sample": item.sample_index,
        "pair": item.pair_key,
        "state": _state_words(item),
        "disagreements": _disagreements(item, rubric, name_of, reviews),
        "comments": item_comments(item=item),
        "thread_id": f"item-{item.pk}-comments",
        "outputs": _item_outputs(outputs, transcripts, name_of),
        "conversation_turns": conversation_turns,
        "id_prefix": f"item-{item.pk}-",  # the page shows each sample's conversation
        "reviews": reviews,
        "final": final_rows if final else [],
        "final_preference": _choice(final.get("preference"), None, name_of),
        "preference_by_arbiter": ("preference", None) in set_by_arbiter,
        "arbiter_marks": bool(set_by_arbiter),
        "arbitration": _arbitration_block(arbitration) if arbitration else None,
    }


def _state_words(item: ReviewItem) -> str:
    if item.source == "judge":
        return "settled by the judge"  # a review policy: its final outcome is the judge's
    if item.state == "open" and not item.live_count:
        return "not started"  # nobody took it yet: "in review" would say someone is at it
    return item.get_state_display()


def _item_reviews(item: ReviewItem, outputs: list, name_of: dict, dims: list[str]) -> list[dict]:
    """The item's reviews in submit order, each with its reviewer and a row per output, and
    whether it was given before a report that the item's answer revealed its model."""
    marked = {
        pk
        for ids in item.identity_reports.values_list("reviews_marked", flat=True)
        for pk in ids or []
    }
    reviews = []
    for review in (
        item.reviews.select_related("reviewer")
        .prefetch_related("scores")
        .order_by("submitted_at", "pk")
    ):
        scores = {(str(s.output_id), s.dimension): s.value for s in review.scores.all()}
        reviews.append(
            {
                "reviewer": review.reviewer.get_username(),
                "submitted_at": review.submitted_at,
                "seconds": review.seconds_spent,
                "preference": _choice(review.preference, review.preferred_output_id, name_of),
                "comment": review.comment,
                "values": scores,  # (output id, dimension) -> value, for the disagreements
                "flag_sets": {k: set(v) for k, v in (review.flags or {}).items()},
                "before_identity_report": review.pk in marked,
                "rows": [
                    {
                        "contender": name_of[str(o.pk)],
                        "scores": [score_text(scores.get((str(o.pk), d))) for d in dims],
                        "flags": [
                            f.replace("_", " ") for f in (review.flags or {}).get(str(o.pk), [])
                        ],
                    }
                    for o in outputs
                ],
            }
        )
    return reviews


def _final_rows(
    final: dict, outputs: list, name_of: dict, dims: list[str], by_arbiter: set
) -> list[dict]:
    """The final outcome's scores and flags, a row per output ("—": a disputed score), each
    value marked when the arbiter set it (a disputed cell decided, or an agreed one changed)."""
    scores = final.get("scores") or {}
    return [
        {
            "contender": name_of[str(o.pk)],
            "scores": [
                {
                    "value": score_text(scores.get(str(o.pk), {}).get(d))
                    if d in scores.get(str(o.pk), {})
                    else "—",
                    "arbiter": (d, str(o.pk)) in by_arbiter,
                }
                for d in dims
            ],
            "flags": [f.replace("_", " ") for f in (final.get("flags") or {}).get(str(o.pk), [])],
            "flags_by_arbiter": ("flag", str(o.pk)) in by_arbiter,
        }
        for o in outputs
    ]


def _arbiter_cells(item: ReviewItem, final: dict) -> set[tuple[str, str | None]]:
    """(part, output id) of every final value the arbiter set: the disputed cells it decided
    and the agreed ones it corrected; flags as ("flag", output)."""
    cells = set()
    for part, output in disputed_cells(item.dispute_reasons or []):
        cells.add(("flag" if part.startswith("flag:") else part, output))
    for c in final.get("corrections") or []:
        output = c.get("output")
        cells.add((c["part"], str(output) if output is not None else None))
    return cells


def _disagreements(item: ReviewItem, rubric: Rubric, name_of: dict, reviews: list) -> list:
    """Each reason the item was disputed (or a flag only some raised), said in full: the
    dimension by its label, the output by its contender, what each reviewer gave."""
    labels = {d.key: d.label for d in rubric}
    out = []
    for reason in item.dispute_reasons or []:
        part, output = reason.get("part"), reason.get("output")
        output = str(output) if output is not None else None
        if part == "preference":
            what, values = (
                "Preference",
                [(r["reviewer"], r["preference"] or "none") for r in reviews],
            )
        elif part == "flag":
            flag = reason.get("flag", "")
            what = f"Flag “{flag.replace('_', ' ')}”"
            values = [
                (
                    r["reviewer"],
                    "raised" if flag in r["flag_sets"].get(output, set()) else "not raised",
                )
                for r in reviews
            ]
        else:
            what = labels.get(part, part)
            values = [(r["reviewer"], score_text(r["values"].get((output, part)))) for r in reviews]
        out.append(
            {
                "what": what,
                "output": name_of.get(output, "") if output else "",
                "values": values,
                "detail": reason.get("detail", ""),
                "disputes": reason.get("disputes", True),
            }
        )
    return out


def _item_outputs(outputs: list, transcripts: list, name_of: dict) -> list[dict]:
    """Each output under its contender's name, with its served model, text and checks."""
    return [
        {
            "contender": name_of[str(o.pk)],
            "model": o.generation.served_model or o.generation.contender.model,
            "html": blinding.render_markdown(o.generation.output),
            "checks": _checks(o.generation.check_results),
            "identity_leak": o.generation.identity_leak,
            "turns": turns,
        }
        for o, turns in zip(outputs, transcripts, strict=True)
    ]


def _arbitration_block(arbitration: Arbitration) -> dict:
    """The item's arbitration: its state, arbiter, note and when it was resolved."""
    return {
        "state": arbitration.state,
        "arbiter": arbitration.arbiter.get_username() if arbitration.arbiter else "",
        "note": arbitration.note,
        "resolved_at": arbitration.resolved_at,
    }


def task_detail(*, campaign: Campaign, task_id: str) -> dict:
    """The task (by its id in the test set) and each of its review items in the campaign."""
    task = Task.objects.filter(testset_id=campaign.testset_id, external_id=task_id).first()
    if task is None:
        raise Http404
    items = ReviewItem.objects.filter(campaign=campaign, task=task).order_by(
        "sample_index", "pair_key", "pk"
    )
    in_items = set(
        Generation.objects.filter(item_outputs__item__in=items).values_list("pk", flat=True)
    )
    # Outputs not on any item (samples past reviewed_samples, failed or missing ones).
    others = [
        {
            "contender": g.contender.name,
            "sample": g.sample_index,
            "status": g.status,
            "checks": _checks(g.check_results),
            "failed": failed_checks(g.check_results),
        }
        for g in Generation.objects.filter(campaign=campaign, task=task)
        .exclude(pk__in=in_items)
        .select_related("contender")
        .order_by("sample_index", "contender__name")
    ]
    rubric = Rubric.for_task(campaign, task)  # with its per-turn scores (score_turns)
    return {
        "task": {
            "id": task.external_id,
            "category": task.category,
            "tier": task.tier,
            "case_type": task.case_type,
            "multi_turn": bool(task.messages or task.turns),
            "conversation": _conversation(task),
            "turns": list(task.turns or []),
            "reference_html": blinding.render_markdown(task.reference) if task.reference else "",
            "check_kinds": sorted(task.checks or {}),
        },
        "dimensions": [d.label for d in rubric],
        "items": [_item_block(item, rubric) for item in items],
        "other_outputs": others,
    }


def arbiter_item(*, token: str, arbiter: User) -> dict:
    """An arbiter's own item (open, at work or resolved by them), blinded as they saw it."""
    arbitration = (
        Arbitration.objects.filter(token=token, arbiter=arbiter)
        .select_related("item__campaign")
        .first()
    )
    if arbitration is None or not arbitration.item.campaign.on_roster(arbiter, ARBITER):
        raise Http404
    ws = arbitration_workspace(arbitration=arbitration)
    terms = campaign_identity_terms(arbitration.item.campaign)
    labels = {pk: label for label, pk in zip(ws["labels"], arbitration.order, strict=False)}
    checks: dict[str, list] = {label: [] for label in ws["labels"]}
    for pk, results in arbitration.item.outputs.values_list("pk", "generation__check_results"):
        label = labels.get(pk) or labels.get(str(pk))
        if label:
            # A check's detail may quote the output: masked as the output is.
            checks[label] = [
                {**c, "detail": words_shown(c["detail"], terms)} for c in _checks(results)
            ]
    ws["checks"] = [{"label": label, "checks": checks[label]} for label in ws["labels"]]
    ws["state"] = arbitration.state
    ws["comments"] = item_comments(item=arbitration.item, for_arbiter=arbiter)
    ws["note"] = arbitration.note
    ws["resolved_at"] = arbitration.resolved_at
    return ws
