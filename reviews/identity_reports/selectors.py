"""Identity reports for admins and leads (contenders named, the original text beside what
reviewers saw) and the campaign's counts; with the blinding probe's figures, whether blinding
held: the campaign page's lines and the report's `blinding` key."""

from __future__ import annotations

from django.db.models import Count

from reviews.blinding_probe.selectors import probe_figures, probe_sentence
from reviews.models import IdentityReport, ItemOutput
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import campaign_identity_terms
from tasks.blinding.hold import output_shown
from tasks.campaigns.selectors import held_outputs
from tasks.models import Campaign


def campaign_report_counts(*, campaign: Campaign) -> dict[str, int]:
    """{"reports", "open", "approved", "dropped"}: a campaign's identity reports by state."""
    counts = dict(
        IdentityReport.objects.filter(campaign=campaign)
        .values_list("state")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return {
        "reports": sum(counts.values()),
        **{state: counts.get(state, 0) for state in IdentityReport.State.values},
    }


def _outputs(item_id: int, terms: tuple[str, ...]) -> list[dict]:
    rows = (
        ItemOutput.objects.filter(item_id=item_id)
        .select_related("generation__contender")
        .order_by("pk")
    )
    return [
        {
            "id": row.generation_id,
            "contender": row.generation.contender.name,
            "text": row.generation.output,
            "masked": blinding.mask_identity(output_shown(row.generation), terms).text,
            "masks": row.generation.identity_masks or [],
        }
        for row in rows
    ]


def identity_reports(*, campaign: Campaign, state: str | None = None) -> list[dict]:
    """The campaign's reports, newest first (open ones only with state="open"), each with its
    item's outputs: the original text and what reviewers were shown."""
    reports = (
        IdentityReport.objects.filter(campaign=campaign)
        .select_related("item__task", "reporter", "resolved_by")
        .order_by("-created_at", "-pk")
    )
    if state:
        reports = reports.filter(state=state)
    terms = campaign_identity_terms(campaign)
    return [
        {
            "id": r.pk,
            "task_id": r.item.task.external_id,
            "sample": r.item.sample_index,
            "item_state": r.item.state,
            "reporter": r.reporter.get_username() if r.reporter else None,
            "role": r.role,
            "note": r.note,
            "state": r.state,
            "created_at": r.created_at.isoformat(),
            "reviews_marked": len(r.reviews_marked or []),
            "resolved_by": r.resolved_by.get_username() if r.resolved_by else None,
            "resolved_at": r.resolved_at.isoformat() if r.resolved_at else None,
            "reason": r.resolution,
            "outputs": _outputs(r.item_id, terms),
        }
        for r in reports
    ]


def blinding_summary(*, campaign: Campaign) -> dict:
    """The campaign page's blinding lines (tasks.review_side.blinding_summary)."""
    counts = campaign_report_counts(campaign=campaign)
    every = (campaign.blinding_probe or {}).get("every")
    return {
        "reports": counts["reports"],
        "open": counts["open"],
        "dropped": counts["dropped"],
        "probe": probe_sentence(probe_figures(campaign=campaign)) if every else None,
    }


def blinding_report(*, campaign: Campaign) -> dict:
    """The report's `blinding` key: identity reports, outputs held now, and the probe."""
    held = held_outputs(campaign).count()
    every = (campaign.blinding_probe or {}).get("every")
    return {
        "reports": campaign_report_counts(campaign=campaign)["reports"],
        "held": held,
        "probe_every": every,
        "probe": probe_figures(campaign=campaign) if every else {},
    }
