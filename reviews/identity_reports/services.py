"""Filing and resolving identity reports. Lock order, as everywhere in reviews: an item row
before anything else of its own (claims lock the item, then insert the assignment), and an
assignment row before its item (submit, release): so filing takes the item out of the queues in
one short transaction, and hands the leases back in a second one, assignment rows first."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from reviews.models import Arbitration, Assignment, IdentityReport, Review, ReviewItem
from reviews.review import item_leases_release
from tasks.blinding.hold import (
    MaskInvalid,
    Span,
    generation_identity_mask,
    generation_texts,
    mask_spans_checked,
)
from tasks.models import Generation

NOTE_MAX_CHARS = 2000
REASON_MAX_CHARS = 2000
# What the reporter reads (page and API).
REPORTED = (
    "Reported: the item left every queue until an admin looks at it. Thank you; your review "
    "so far is kept."
)


class ReportNotOpen(Exception):
    """The report was resolved already (by another admin, or this one a moment ago)."""


class ResolveInvalid(ValueError):
    """A resolve that cannot be applied; `errors` lists every problem."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors


def identity_report_file(
    *, item_id: int, reporter: User, role: str, note: str = ""
) -> IdentityReport:
    """Report that item `item_id`'s answer reveals its model. The item leaves every queue at
    once: no claim can take it after this returns, and whoever held it gets their lease or
    arbitration taken back (their submit or resolve then says so)."""
    note = (note or "").strip()[:NOTE_MAX_CHARS]
    with transaction.atomic():
        # Its own transaction: the UPDATE waits for a claim that holds the item row and every
        # later claim (both read `ready` under their lock) finds it gone.
        item = ReviewItem.objects.select_for_update(no_key=True).get(pk=item_id)
        ReviewItem.objects.filter(pk=item_id).update(ready=False)
        report = IdentityReport.objects.create(
            campaign_id=item.campaign_id, item_id=item_id, reporter=reporter, role=role, note=note
        )
    item_leases_release(item_id=item_id)
    # An arbitration in progress goes back to the queue (where it waits, the item not ready);
    # the arbiter's resolve is fenced on its state and says the dispute was taken back.
    Arbitration.objects.filter(item_id=item_id, state=Arbitration.State.ACTIVE).update(
        state=Arbitration.State.OPEN, arbiter=None, lease_expires_at=None, claimed_at=None
    )
    # Every review submitted before the leases were handed back: kept, and marked here.
    marked = list(
        Review.objects.filter(item_id=item_id).order_by("pk").values_list("pk", flat=True)
    )
    IdentityReport.objects.filter(pk=report.pk).update(reviews_marked=marked)
    report.reviews_marked = marked
    return report


class NothingToReport(LookupError):
    """No item of yours under this token (someone else's, unknown, or no longer yours)."""


def reviewer_report(*, token: str, reviewer: User, note: str = "") -> IdentityReport:
    """A reviewer's report on the item of their assignment (in review, or reviewed by them)."""
    item_id = (
        Assignment.objects.filter(token=token, reviewer=reviewer, state__in=(Assignment.LIVE))
        .values_list("item_id", flat=True)
        .first()
    )
    if item_id is None:
        raise NothingToReport("no such assignment of yours in review")
    return identity_report_file(
        item_id=item_id, reporter=reviewer, role=IdentityReport.Role.REVIEWER, note=note
    )


def arbiter_report(*, token: str, arbiter: User, note: str = "") -> IdentityReport:
    """An arbiter's report on the item of the arbitration they hold."""
    item_id = (
        Arbitration.objects.filter(token=token, arbiter=arbiter, state=Arbitration.State.ACTIVE)
        .values_list("item_id", flat=True)
        .first()
    )
    if item_id is None:
        raise NothingToReport("no such arbitration of yours in progress")
    return identity_report_file(
        item_id=item_id, reporter=arbiter, role=IdentityReport.Role.ARBITER, note=note
    )


def masks_checked(masks: object, *, item_id: int) -> dict[int, list[Span]]:
    """{"<output id>": [[start, end] or {"part", "start", "end"}, ...]} as an admin gives it:
    each output one of the item's, each span inside its text. Raises ResolveInvalid with
    every problem."""
    if not isinstance(masks, dict):
        raise ResolveInvalid(['mask: must be {"<output id>": [[start, end], ...]}'])
    outputs = {
        g.pk: generation_texts(g) for g in Generation.objects.filter(item_outputs__item_id=item_id)
    }
    errors, checked = [], {}
    for key, spans in masks.items():
        gid = int(key) if str(key).isdigit() else None
        if gid not in outputs:
            errors.append(f"mask: {key} is not an output of this item")
            continue
        try:
            checked[gid] = mask_spans_checked(spans, outputs[gid])
        except MaskInvalid as exc:
            errors += [f"output {gid}: {e}" for e in exc.errors]
    if errors:
        raise ResolveInvalid(errors)
    return checked


def identity_report_resolve(
    *,
    report: IdentityReport,
    action: str,
    user: User,
    reason: str = "",
    masks: dict[int, list[Span]] | None = None,
) -> int:
    """Resolve a report, and with it every open report of its item: `approve` returns the
    item to the queues (after masking `masks`, {generation id: spans}, by hand), `drop` takes
    it out of the campaign and its figures with `reason` (required). Returns how many reports
    were resolved. ReportNotOpen when it was resolved meanwhile."""
    reason = (reason or "").strip()[:REASON_MAX_CHARS]
    if action not in ("approve", "drop"):
        raise ResolveInvalid(['action: must be "approve" or "drop"'])
    if action == "drop" and not reason:
        raise ResolveInvalid(["reason: say why the item is dropped"])
    with transaction.atomic():
        # The item first (a report filed meanwhile waits, then takes it out again), then the
        # item's open reports, fresh under that lock.
        ReviewItem.objects.select_for_update(no_key=True).get(pk=report.item_id)
        open_reports = IdentityReport.objects.select_for_update().filter(
            item_id=report.item_id, state=IdentityReport.State.OPEN
        )
        if not open_reports.filter(pk=report.pk).exists():
            raise ReportNotOpen("this report was resolved already")
        state = (
            IdentityReport.State.APPROVED if action == "approve" else IdentityReport.State.DROPPED
        )
        resolved = open_reports.update(
            state=state, resolved_by=user, resolved_at=timezone.now(), resolution=reason
        )
        item = ReviewItem.objects.filter(pk=report.item_id)
        if action == "drop":
            item.update(state=ReviewItem.State.DROPPED, ready=False)
        else:
            for generation in Generation.objects.filter(pk__in=list(masks or {})):
                generation_identity_mask(
                    generation=generation, spans=masks[generation.pk], user=user
                )
            item.exclude(state=ReviewItem.State.WAITING).update(ready=True)
    return resolved
