"""A campaign's stage, derived from its rows: draft -> generating -> reviewing -> arbitrating ->
complete, or closed by an admin (cancelled when its generation was cancelled).

The stored `Campaign.status` says only what generation did last (and whether an admin closed
it); whether reviewing or arbitration is over is read from the items, so the stage can never
say "reviewing" about a campaign whose every item is settled.
"""

from __future__ import annotations

from django.db.models import Count, Q

from evalsite.roles import ARBITER, REVIEWER
from tasks import review_side
from tasks.campaigns.rosters import roster_holders
from tasks.models import Campaign, Generation, Provider

S = Generation.Status
STAGES = ("draft", "generating", "reviewing", "arbitrating", "complete", "closed", "cancelled")
LABELS = {
    "draft": "Draft",
    "generating": "Generating",
    "reviewing": "Reviewing",
    "arbitrating": "Arbitrating",
    "complete": "Complete",
    "closed": "Closed",
    "cancelled": "Cancelled",
}


def _percent(done: int, total: int) -> int:
    return round(100 * done / total) if total else 0


def campaign_lifecycle(campaign: Campaign) -> dict:
    """{stage, label, review: {done, total, pct}, arbitration: {...}, blockers: [text]}."""
    gens = Generation.objects.filter(campaign=campaign).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=S.DONE)),
        active=Count(
            "pk", filter=Q(status=S.RUNNING) | Q(status=S.PENDING, queued_at__isnull=False)
        ),
    )
    items = review_side.review_item_progress(campaign=campaign)
    stage = _stage(campaign, gens, items)
    blockers = []
    if stage not in ("closed", "complete"):
        blockers = _stage_blockers(campaign, stage, items)
    arbitrated = items["disputed"] + items["resolved"]
    return {
        "stage": stage,
        "label": LABELS[stage],
        "review": {
            "done": items["reviewed"],
            "total": items["total"],
            "pct": _percent(items["reviewed"], items["total"]),
        },
        "arbitration": {
            "done": items["resolved"],
            "total": arbitrated,
            "pct": _percent(items["resolved"], arbitrated),
        },
        "blockers": blockers,
    }


def _stage(campaign: Campaign, gens: dict, items: dict) -> str:
    """The campaign's stage from its status and its generation and item counts."""
    if campaign.status == Campaign.Status.CLOSED:
        return "closed"
    if campaign.status == Campaign.Status.CANCELLED and not gens["active"]:
        return "cancelled"
    if gens["active"] or campaign.status == Campaign.Status.GENERATING:
        # Stored "generating" with nothing running: the last worker is about to flip it, or
        # failures wait for a retry (the page says so).
        return "generating"
    if not gens["done"] and not items["ready"]:
        return "draft"
    if not items["total"] or items["reviewed"] < items["total"]:
        return "reviewing"
    if items["disputed"]:
        return "arbitrating"
    return "complete"


def _stage_blockers(campaign: Campaign, stage: str, items: dict) -> list[str]:
    """What keeps an unfinished campaign from moving on: imported contenders without outputs,
    no item ready, and the roster's gaps."""
    blockers = []
    missing = (
        campaign.contenders.filter(provider=Provider.IMPORTED)
        .annotate(
            n_done=Count(
                "generations",
                filter=Q(generations__campaign=campaign, generations__status=S.DONE),
            )
        )
        .filter(n_done=0)
        .order_by("name")
    )
    for contender in missing:
        blockers.append(
            f"{contender.name} is an imported contender without outputs: upload its file "
            "under Import outputs (no item opens for review without them)."
        )
    if stage in ("reviewing", "arbitrating") and not items["ready"]:
        blockers.append(
            "0 items ready: reviewers have nothing to take until every output of an item exists."
        )
    blockers += _roster_blockers(campaign, disputed=items["disputed"])
    return blockers


def _roster_blockers(campaign: Campaign, *, disputed: int) -> list[str]:
    """Nobody who could take the items (or the open disputes) is on the roster."""
    blockers = []
    if not roster_holders(campaign=campaign, role=REVIEWER).exists():
        blockers.append(
            "No reviewers on the roster: nobody can take its items. Add reviewers under "
            "Reviewers and arbiters"
            + (" (nobody has the reviewer role yet: see Users)." if campaign.reviewers_all else ".")
        )
    if disputed and not roster_holders(campaign=campaign, role=ARBITER).exists():
        blockers.append(
            f"No arbiters on the roster: {disputed} disputed item{'s' if disputed != 1 else ''} "
            "wait for one. Add arbiters under Reviewers and arbiters"
            + (" (nobody has the arbiter role yet: see Users)." if campaign.arbiters_all else ".")
        )
    return blockers


def campaign_close(*, campaign: Campaign) -> None:
    """An admin's close: no more claims (reviewing needs generating/reviewing status)."""
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)


def campaign_reopen(*, campaign: Campaign) -> None:
    Campaign.objects.filter(pk=campaign.pk, status=Campaign.Status.CLOSED).update(
        status=Campaign.Status.REVIEWING
    )
