"""Reads shaped for the campaign screens, the CLI and the API (admin/lead only: identities shown)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict

from django.db.models import Avg, Count, Exists, F, Min, OuterRef, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404
from django.utils import timezone

from tasks import review_side
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import campaign_identity_terms
from tasks.blinding.hold import generation_hand_masked, generation_texts, output_shown
from tasks.blinding.masking import Finding
from tasks.blinding.parts import ANSWER, mask_part, part_label, shown_texts
from tasks.models import Campaign, Contender, Generation

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

S = Generation.Status
RATE_WINDOW = 60  # seconds of finished rows the rate is measured over
RATE_MIN_SECONDS = 5  # shortest span a rate is taken over (one quick output is no trend)
# The counts campaign_progress sums over contenders for its totals.
PROGRESS_COUNTS = (
    "total",
    "waiting",
    "queued",
    "running",
    "stalled",
    "done",
    "failed",
    "cancelled",
    "recent_done",
)


def campaign_get(*, slug: str) -> Campaign:
    return get_object_or_404(Campaign.objects.select_related("testset"), slug=slug)


class CampaignCounts(TypedDict):
    """What campaign_list annotates on each campaign."""

    total: int
    done: int
    failed: int
    n_contenders: int


def campaign_list() -> list[WithAnnotations[Campaign, CampaignCounts]]:
    campaigns = (
        Campaign.objects.exclude(kind=Campaign.Kind.MONITOR_RUN)
        .select_related("testset")
        .annotate(
            total=Count("generations", distinct=True),
            done=Count("generations", filter=Q(generations__status=S.DONE), distinct=True),
            failed=Count("generations", filter=Q(generations__status=S.FAILED), distinct=True),
            n_contenders=Count("contenders", distinct=True),
        )
        .order_by("-created_at")
    )
    return list(campaigns)


def contender_list() -> list[Contender]:
    # locked: outputs exist, so the configuration that made them is fixed (contender_edit).
    done = Generation.objects.filter(contender=OuterRef("pk"), status=Generation.Status.DONE)
    return list(
        Contender.objects.annotate(n_campaigns=Count("campaigns"), locked=Exists(done)).order_by(
            "name"
        )
    )


def campaign_progress(*, campaign: Campaign) -> dict:
    """Per-contender counts (waiting / queued / running / stalled / done / failed), rate and
    ETA. A running row whose lease lapsed is `stalled`, not running: no worker renews it (its
    worker died, or lost the database), and the lapsed-lease sweep queues it again.

    The rate counts outputs done, not failures: a contender failing fast is not making progress,
    and an ETA built on its failures would promise outputs that never come. It is taken over
    the part of the window that had work in it: from the start of the first output done in
    the window (at most RATE_WINDOW ago), so a run that began seconds ago is not averaged
    over a minute of nothing.
    """
    now = timezone.now()
    since = now - timedelta(seconds=RATE_WINDOW)
    contenders = []
    totals = dict.fromkeys(PROGRESS_COUNTS, 0)
    firsts = []
    for row in _contender_counts(campaign=campaign, since=since, now=now):
        rate = _done_rate(row["recent_done"], row["recent_first"], now=now, since=since)
        if row["recent_first"] is not None:
            firsts.append(row["recent_first"])
        contenders.append(_contender_progress(row, rate))
        for k in totals:
            totals[k] += row[k]
    remaining = totals["queued"] + totals["running"] + totals["stalled"]
    rate = _done_rate(totals["recent_done"], min(firsts, default=None), now=now, since=since)
    return {
        "contenders": contenders,
        "totals": {
            **totals,
            "remaining": remaining,
            "rate_per_min": round(rate * 60, 1),
            "finished_count": totals["done"] + totals["failed"] + totals["cancelled"],
            "eta_seconds": int(remaining / rate) if rate and remaining else None,
        },
        "active": remaining > 0,
        "status": Campaign.objects.filter(pk=campaign.pk).values_list("status", flat=True).first(),
    }


def _done_rate(done: int, first: datetime | None, *, now: datetime, since: datetime) -> float:
    """Outputs done per second since `first` (the earliest start among them)."""
    if not done or first is None:
        return 0.0
    elapsed = (now - max(first, since)).total_seconds()
    return done / max(elapsed, RATE_MIN_SECONDS)


def _contender_counts(
    *, campaign: Campaign, since: datetime, now: datetime
) -> QuerySet[Generation, Mapping[str, Any]]:
    """Per contender (by name): its rows by state (running under a live lease at `now`, or
    stalled), those done since `since` and the earliest start among them, retries, timings,
    cost, checks and identity leaks."""
    recent = Q(status=S.DONE, finished_at__gte=since)
    live = Q(lease_expires_at__gte=now)
    return (
        Generation.objects.filter(campaign=campaign)
        .values("contender_id", "contender__name", "contender__provider")
        .annotate(
            total=Count("pk"),
            waiting=Count("pk", filter=Q(status=S.PENDING, queued_at__isnull=True)),
            queued=Count("pk", filter=Q(status=S.PENDING, queued_at__isnull=False)),
            running=Count("pk", filter=Q(live, status=S.RUNNING)),
            stalled=Count("pk", filter=Q(status=S.RUNNING) & ~live),
            done=Count("pk", filter=Q(status=S.DONE)),
            failed=Count("pk", filter=Q(status=S.FAILED)),
            cancelled=Count("pk", filter=Q(status=S.CANCELLED)),
            recent_done=Count("pk", filter=recent),
            recent_first=Min(Coalesce("started_at", "finished_at"), filter=recent),
            retries=Sum("retries"),
            discarded=Sum("discarded_calls"),
            latency=Avg("latency_ms", filter=Q(status=S.DONE)),
            ttft=Avg("ttft_ms", filter=Q(status=S.DONE)),
            cost=Sum("cost", filter=Q(status=S.DONE)),
            # Paid calls whose answers were not kept (and asked again): in `cost` once stored.
            retried_tokens=Sum(F("retried_input_tokens") + F("retried_output_tokens")),
            retried_cost=Sum("retried_cost"),
            checks_pass=Count("pk", filter=Q(checks_passed=True)),
            checks_fail=Count("pk", filter=Q(checks_passed=False)),
            leaks=Count("pk", filter=Q(identity_leak=True)),
        )
        .order_by("contender__name")
    )


def _contender_progress(row: Mapping[str, Any], rate: float) -> dict:
    """One contender's line: its counts, what remains, its rate and ETA, timings and checks."""
    remaining = row["queued"] + row["running"] + row["stalled"]
    eta = remaining / rate if rate and remaining else None
    return {
        "name": row["contender__name"],
        "provider": row["contender__provider"],
        **{k: row[k] for k in PROGRESS_COUNTS},
        "remaining": remaining,
        "finished_count": row["done"] + row["failed"] + row["cancelled"],
        "rate_per_min": round(rate * 60, 1),
        "eta_seconds": int(eta) if eta is not None else None,
        "retries": row["retries"] or 0,
        "discarded": row["discarded"] or 0,
        "latency_ms": int(row["latency"]) if row["latency"] is not None else None,
        "ttft_ms": int(row["ttft"]) if row["ttft"] is not None else None,
        "cost": row["cost"],
        "retried_tokens": row["retried_tokens"] or 0,
        "retried_cost": row["retried_cost"] or 0,
        "checks_pass": row["checks_pass"],
        "checks_fail": row["checks_fail"],
        "leaks": row["leaks"],
    }


def campaign_failures(*, campaign: Campaign, limit: int = 50) -> list[Mapping[str, Any]]:
    """Failed rows with the provider's message: admins only (never reviewers)."""
    return list(
        Generation.objects.filter(campaign=campaign, status=S.FAILED)
        .order_by("-finished_at")
        .values("task__external_id", "contender__name", "sample_index", "attempts", "error")[:limit]
    )


def campaign_failure_summary(*, campaign: Campaign) -> list[dict]:
    """Per contender with failures: how many, and the provider's commonest message with its
    count (admins only, like every provider message)."""
    rows = (
        Generation.objects.filter(campaign=campaign, status=S.FAILED)
        .values("contender__name", "error")
        .annotate(n=Count("pk"))
        .order_by("contender__name", "-n", "error")
    )
    summary: dict[str, dict] = {}
    for row in rows:
        name = row["contender__name"]
        entry = summary.setdefault(
            name, {"contender": name, "failed": 0, "error": row["error"], "error_count": row["n"]}
        )
        entry["failed"] += row["n"]
    return list(summary.values())


def campaign_check_failures(*, campaign: Campaign, limit: int = 50) -> list[dict]:
    """Outputs whose automatic checks failed: admins and leads."""
    rows = (
        Generation.objects.filter(campaign=campaign, checks_passed=False)
        .order_by("task__position", "contender__name", "sample_index")
        .values("task__external_id", "contender__name", "sample_index", "check_results")[:limit]
    )
    return [{**row, "failed": failed_checks(row["check_results"])} for row in rows]


def failed_checks(check_results: dict | None) -> dict[str, str]:
    """{check: its detail} for the automatic checks an output failed."""
    return {k: v.get("detail", "") for k, v in (check_results or {}).items() if not v.get("passed")}


OUTPUT_FILTERS = {
    "": ("all outputs", Q(status=S.DONE)),
    "checks": ("failed an automatic check", Q(status=S.DONE, checks_passed=False)),
    "identity": ("self-identifying (masked for reviewers)", Q(status=S.DONE, identity_leak=True)),
    "held": (
        "held: awaiting an admin's approval of the masked view",
        Q(status=S.DONE, identity_held=True),
    ),
    "failed": ("generation failed", Q(status=S.FAILED)),
}


def campaign_outputs(
    *, campaign: Campaign, only: str = "", contender: str = ""
) -> QuerySet[Generation]:
    """The campaign's generations for reading (admins and leads): done ones with their text,
    or the failed ones, optionally one contender's; in task order."""
    rows = Generation.objects.filter(campaign=campaign).filter(OUTPUT_FILTERS[only][1])
    if contender:
        rows = rows.filter(contender__name=contender)
    return rows.select_related("task", "contender").order_by(
        "task__position", "contender__name", "sample_index"
    )


def finding_rows(findings: list[dict] | None) -> list[dict]:
    """A stored output's findings, each matched text and reason once (in order of appearance)."""
    rows: dict[tuple[str, str], None] = {}
    for f in findings or []:
        rows.setdefault((f.get("text", ""), f.get("reason", "")), None)
    return [{"text": text, "reason": reason} for text, reason in rows]


def held_outputs(campaign: Campaign) -> QuerySet[Generation]:
    """The campaign's outputs waiting for an admin, reviewers' ones only (a hold never waits
    on a sample no review item shows), in task order."""
    return Generation.objects.filter(
        campaign=campaign,
        status=S.DONE,
        identity_held=True,
        single_turn=False,
        sample_index__lt=campaign.reviewed_samples,
    ).order_by("task__position", "contender__name", "sample_index")


def highlighted_parts(
    text: str, *, reasons: list[dict], found: Iterable[Finding], masks: list[dict]
) -> list[dict]:
    """The masked view of `text` as parts {"text", "reason", "masked"}: what the masking
    (`found`, current findings) and the admin's hand `masks` hide shows as the mask, and a
    stored hold reason left readable (the text is suspect, not certain) shows as written, each
    with its reason; the rest as written, with no reason. Only the reasons and masks of the
    final answer are parts (a reason stored before parts were named: within its length)."""
    spans = [(f.start, f.end, f.reason, True) for f in found]
    spans += [
        (m["start"], m["end"], "masked by hand", True)
        for m in masks or []
        if mask_part(m) == ANSWER
    ]
    spans += [
        (r["start"], r["end"], r.get("reason", ""), False)
        for r in reasons or []
        if r.get("part", ANSWER) == ANSWER
        and isinstance(r.get("start"), int)
        and isinstance(r.get("end"), int)
        and r["end"] <= len(text)
    ]
    # Masked spans first at a tie, so a reason that the mask covers shows masked.
    spans.sort(key=lambda s: (s[0], not s[3], -s[1]))
    parts, last = [], 0
    for start, end, reason, masked in spans:
        if start < last or end <= start:
            continue  # overlaps a part already taken
        if start > last:
            parts.append({"text": text[last:start], "reason": "", "masked": False})
        shown = blinding.MASK if masked else text[start:end]
        parts.append({"text": shown, "reason": reason or "held", "masked": masked})
        last = end
    if last < len(text):
        parts.append({"text": text[last:], "reason": "", "masked": False})
    return parts


def held_steps(
    gen: Generation, *, terms: tuple[str, ...], reasons: list[dict], show_reasoning: bool
) -> list[dict]:
    """The texts other than the final answer (a tool's result, a call's arguments, an
    intermediate turn, the reasoning) that a hold reason was found in or an admin masked by
    hand, each {"part", "label", "parts"} as reviewers will read it: the hand masks applied,
    what the masking hides as the mask and each suspect span left as written marked with its
    reason (found again in that text)."""
    wanted = {r.get("part") for r in reasons} | {mask_part(m) for m in gen.identity_masks or []}
    wanted.discard(ANSWER)
    shown = generation_hand_masked(gen)
    rows = []
    for part, text in shown_texts(
        output=shown.text,
        transcript=shown.transcript,
        reasoning=shown.reasoning or "",
        show_reasoning=show_reasoning,
    ):
        # A mask names a string inside a JSON value: its value's text is the one shown.
        if part == ANSWER or not any(w == part or w.startswith(part + "/") for w in wanted if w):
            continue
        checked = blinding.check_identity(text, terms)
        suspects = [
            {"text": f.text, "reason": f.reason, "start": f.start, "end": f.end}
            for f in checked.holds
        ]
        # The transcript is masked strictly for reviewers (reviews/transcript_shown.py).
        found = blinding.mask_identity(text, terms, strict=True).findings
        rows.append(
            {
                "part": part,
                "label": part_label(part),
                "parts": highlighted_parts(text, reasons=suspects, found=found, masks=[]),
            }
        )
    return rows


def _held_row(gen: Generation, terms: tuple[str, ...], show_reasoning: bool) -> dict:
    found = blinding.mask_identity(gen.output, terms).findings
    reasons = [
        {
            k: r.get(k, ANSWER if k == "part" else None)
            for k in ("text", "reason", "part", "start", "end")
        }
        for r in gen.identity_findings or []
    ]
    return {
        "id": gen.pk,
        "task_id": gen.task.external_id,
        "contender": gen.contender.name,
        "sample": gen.sample_index,
        "reasons": reasons,
        "findings": finding_rows(reasons),
        "masks": [{**m, "label": part_label(mask_part(m))} for m in gen.identity_masks or []],
        "masked": blinding.mask_identity(output_shown(gen), terms).text,
        "texts": generation_texts(gen),
        "parts": highlighted_parts(
            gen.output, reasons=reasons, found=found, masks=gen.identity_masks
        ),
        "steps": held_steps(gen, terms=terms, reasons=reasons, show_reasoning=show_reasoning),
    }


def campaign_held_outputs(*, campaign: Campaign, ids: list[int] | None = None) -> list[dict]:
    """The outputs waiting for an admin to approve their masked view (admins and leads: the
    contender is named), each with its hold reasons ({"text", "reason", "part", "start",
    "end"}, as stored when it was found), the admin's hand masks (each with its part's
    `label`), every text a hand mask may name (`texts`), the transcript's texts with a reason
    or a mask as reviewers will read them (`steps`: held_steps), the text reviewers will get
    and that masked view as highlighted parts (`highlighted_parts`)."""
    terms = campaign_identity_terms(campaign)
    rows = held_outputs(campaign).select_related("task", "contender")
    if ids is not None:  # one page of them
        rows = rows.filter(pk__in=ids)
    return [_held_row(gen, terms, campaign.show_reasoning) for gen in rows]


def identity_review(*, campaign: Campaign, pk: int) -> dict:
    """One self-identifying output as its approval page shows it: the original text in plain
    and matched parts (each with its reason), and the masked view exactly as reviewers get it
    (found again with the campaign's current words, so both sides agree), the admin's hand
    masks applied."""
    gen = get_object_or_404(
        Generation.objects.select_related("task", "contender", "identity_approved_by"),
        campaign=campaign,
        pk=pk,
        status=S.DONE,
        identity_leak=True,
    )
    terms = campaign_identity_terms(campaign)
    findings = blinding.mask_identity(gen.output, terms).findings
    _, masked_html, _ = blinding.render_output(output_shown(gen), terms)
    parts, last = [], 0
    for f in findings:
        if f.start > last:
            parts.append({"text": gen.output[last : f.start], "reason": ""})
        parts.append({"text": gen.output[f.start : f.end], "reason": f.reason})
        last = f.end
    parts.append({"text": gen.output[last:], "reason": ""})
    return {
        "generation": gen,
        "parts": [p for p in parts if p["text"]],
        "findings": finding_rows([{"text": f.text, "reason": f.reason} for f in findings]),
        "reasons": finding_rows(gen.identity_findings),
        "masked_html": masked_html,
    }


def campaign_items_summary(*, campaign: Campaign) -> dict:
    """The campaign page's review items by state (tasks.review_side), and the outputs that
    name a model, kept from reviewers until an admin approves them."""
    return {
        **review_side.review_item_states(campaign=campaign),
        "held_outputs": held_outputs(campaign).count(),
    }


def format_eta(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
