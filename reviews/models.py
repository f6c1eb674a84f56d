from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Now

from tasks.models import Campaign, Generation, Task


def new_token() -> str:
    # Opaque, random, unrelated to any primary key: the only id a reviewer ever sees.
    return secrets.token_urlsafe(18)


class ReviewItemQuerySet(models.QuerySet):
    def offerable(self, campaign: Campaign) -> ReviewItemQuerySet:
        """Items of `campaign` a reviewer could be given now: ready, in review, a slot free."""
        return self.filter(
            campaign=campaign, ready=True, state=ReviewItem.State.OPEN, live_count__lt=F("overlap")
        )


class ReviewItem(models.Model):
    """One task + sample shown to reviewers with >= 2 outputs side by side."""

    class State(models.TextChoices):
        WAITING = "waiting", "waiting for outputs"
        # A campaign with a review policy: ready, waiting for its judge's judgements, which
        # decide whether people review it (then open) or the judge settles it (reviews.policy).
        JUDGING = "judging", "waiting for the judge"
        OPEN = "open", "in review"
        AGREED = "agreed"
        DISPUTED = "disputed"
        RESOLVED = "resolved"
        # Reported as revealing a model and dropped by an admin: out of every queue and out
        # of the campaign's figures, its reviews kept (reviews.identity_reports).
        DROPPED = "dropped"

    # No index of its own on campaign, nor on state: every query of items names the campaign,
    # and item_unique and the offer index below lead with it. Each index is paid on every
    # claim and settle, which update the row (live_count and state are indexed: no HOT update).
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="items", db_index=False
    )
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="review_items")
    sample_index = models.PositiveIntegerField()
    pair_key = models.CharField(
        max_length=64, blank=True, help_text="pairwise mode: which pair this item shows"
    )
    overlap = models.PositiveIntegerField(
        help_text="k copied from the campaign, for the slot CHECK"
    )
    ready = models.BooleanField(default=False, help_text="every output exists")
    state = models.CharField(max_length=16, choices=State.choices, default=State.WAITING)
    # Live (active + submitted) assignments, updated in the claim transaction: the re-check
    # after a row lock sees it, which a COUNT subquery would not (docs/decisions/0003).
    live_count = models.PositiveIntegerField(default=0)
    submitted_count = models.PositiveIntegerField(default=0)
    shuffle_key = models.PositiveIntegerField(
        default=0, help_text="random, for offering items not by id"
    )
    rotation = models.PositiveSmallIntegerField(
        default=0,
        help_text="random and balanced over the campaign: which order each slot shows "
        "(reviews.review.presented_order)",
    )
    dispute_reasons = models.JSONField(default=list, blank=True)
    final = models.JSONField(
        null=True, blank=True, help_text="final outcome after consensus/arbitration"
    )
    imported = models.BooleanField(default=False)
    # Who settled the final outcome: people (reviews, arbitration) or, under a review policy,
    # the judge alone (its combined answer; reviews.policy).
    source = models.CharField(
        max_length=8, choices=[("human", "human"), ("judge", "judge")], default="human"
    )
    # Under a review policy, why people review the item (its rules that matched, "audit"):
    # empty for items the judge settles and for campaigns without a policy.
    policy_reasons = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ReviewItemQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "task", "sample_index", "pair_key"], name="item_unique"
            ),
            models.CheckConstraint(
                condition=Q(live_count__lte=F("overlap")), name="item_live_count_lte_k"
            ),
        ]
        indexes = [
            # The claim's offer order: in-progress items, then fresh ones from a per-reviewer
            # offset in (shuffle_key, id) order, as index range scans (reviews.review). With
            # the id in the index a pass stops at its first free item; without it PostgreSQL
            # sorted each pass and read 33 items (and probed each) to hand out one.
            models.Index(
                fields=["campaign", "state", "live_count", "shuffle_key", "id"],
                name="reviewitem_offer_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.pk} ({self.state})"


# An item whose outcome is final: its reviewers agreed, or an arbiter resolved the dispute.
SETTLED = (ReviewItem.State.AGREED, ReviewItem.State.RESOLVED)


class ItemOutputQuerySet(models.QuerySet):
    def shown(self, item_id: int) -> ItemOutputQuerySet:
        """An item's outputs with their generations and the item's task, in one query: what
        a reviewer's screen shows of an item."""
        return (
            self.filter(item_id=item_id).select_related("generation", "item__task").order_by("pk")
        )


class ItemOutput(models.Model):
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="outputs")
    generation = models.ForeignKey(
        Generation, on_delete=models.PROTECT, related_name="item_outputs"
    )

    objects = ItemOutputQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "generation"], name="item_output_unique")
        ]

    def __str__(self) -> str:
        return f"output {self.pk} of item {self.item_id}"


class AssignmentQuerySet(models.QuerySet):
    def active(self) -> AssignmentQuerySet:
        return self.filter(state=Assignment.State.ACTIVE)

    def live_leases(self) -> AssignmentQuerySet:
        """Active assignments whose lease has not run out (database clock)."""
        return self.filter(state=Assignment.State.ACTIVE, lease_expires_at__gt=Now())

    def stale(self) -> AssignmentQuerySet:
        """Active assignments whose lease ran out, not yet expired by a sweep or a claim."""
        return self.filter(Assignment.stale_q())

    def blocking(self) -> AssignmentQuerySet:
        """Rows that keep their reviewer off the item for good (see Assignment.BLOCKING)."""
        return self.filter(state__in=Assignment.BLOCKING)


class Assignment(models.Model):
    class State(models.TextChoices):
        ACTIVE = "active"
        SUBMITTED = "submitted"
        EXPIRED = "expired"
        SKIPPED = "skipped"
        RELEASED = "released"

    # Live rows hold one of the item's k slots.
    LIVE = (State.ACTIVE, State.SUBMITTED)
    # A reviewer never gets an item again once they hold it, reviewed it or chose to skip it.
    # An expired or released row of theirs may be revived (with two reviewers and k=2 an item
    # must not get stuck because one of them walked away once).
    BLOCKING = (State.ACTIVE, State.SUBMITTED, State.SKIPPED)

    # item and reviewer have no index of their own: assignment_item_reviewer_unique and
    # assignment_reviewer_idx lead with them (every claim inserts a row, every submit rewrites one).
    item = models.ForeignKey(
        ReviewItem, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    # The item's campaign, copied when the assignment is made (an item never changes
    # campaign): a reviewer's rows in a campaign are one index range, not a join per row.
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="assignments",
        db_index=False,
    )
    slot = models.PositiveIntegerField()
    overlap = models.PositiveIntegerField(help_text="k at claim time; CHECK slot < k")
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    # Unique by a constraint (not unique=True): no second, LIKE-only index on PostgreSQL.
    token = models.CharField(max_length=32, default=new_token)
    # The permutation shown: ItemOutput ids in presented order (A, B, ...). Server side only.
    order = models.JSONField(default=list)
    lease_expires_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    submit_key = models.CharField(
        max_length=64, blank=True, help_text="client-generated idempotency key"
    )
    skip_reason = models.CharField(max_length=200, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "reviewer"], name="assignment_item_reviewer_unique"
            ),
            models.UniqueConstraint(
                fields=["item", "slot"],
                condition=Q(state__in=["active", "submitted"]),
                name="assignment_live_slot_unique",
            ),
            models.CheckConstraint(
                condition=Q(slot__gte=0) & Q(slot__lt=F("overlap")), name="assignment_slot_lt_k"
            ),
            models.UniqueConstraint(fields=["token"], name="assignment_token_unique"),
        ]
        indexes = [
            # A reviewer's progress and leases in a campaign: one range, whatever their history.
            models.Index(fields=["reviewer", "campaign", "state"], name="assignment_reviewer_idx"),
            # Leases that may lapse (the sweeper, the claim's lazy expiry): only active rows,
            # so a submit, which ends the lease, adds nothing to it.
            models.Index(
                fields=["lease_expires_at"],
                condition=Q(state="active"),
                name="assignment_active_lease_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.state})"

    @staticmethod
    def stale_q() -> Q:
        """Active, with a lease that ran out (database clock): for filters and counts."""
        return Q(state=Assignment.State.ACTIVE, lease_expires_at__lte=Now())

    @property
    def state_message(self) -> str:
        """What became of this assignment, for its reviewer to read."""
        return {
            Assignment.State.ACTIVE: "This item is yours to review.",
            Assignment.State.SUBMITTED: "You already submitted a review for this item.",
            Assignment.State.SKIPPED: "You skipped this item.",
            Assignment.State.RELEASED: "An administrator released this item from you.",
            Assignment.State.EXPIRED: "Your time on this item ran out and it went back to the pool.",
        }[self.state]


# The per-output flags a reviewer (or arbiter) may raise; stored in Review.flags.
FLAGS = ("hallucination", "refusal", "format_violation", "unsafe", "identity_leak")
# A review's comment, submitted or imported in a review record.
COMMENT_MAX_CHARS = 5000


class Preference(models.TextChoices):
    OUTPUT = "output"  # preferred_output is set
    TIE = "tie"
    BOTH_BAD = "both_bad"


class Review(models.Model):
    """One reviewer's (or imported judge's) submitted review, stored un-permuted."""

    item = models.ForeignKey(  # indexed by review_item_reviewer_unique, which leads with it
        ReviewItem, on_delete=models.CASCADE, related_name="reviews", db_index=False
    )
    assignment = models.OneToOneField(Assignment, null=True, blank=True, on_delete=models.CASCADE)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reviews"
    )
    preference = models.CharField(max_length=16, choices=Preference.choices, blank=True)
    preferred_output = models.ForeignKey(
        ItemOutput, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # {"<ItemOutput id>": ["hallucination", ...]}
    flags = models.JSONField(default=dict, blank=True)
    comment = models.TextField(blank=True)
    seconds_spent = models.PositiveIntegerField(null=True, blank=True)
    submitted_at = models.DateTimeField()
    # The presented order at submit time (ItemOutput ids), kept for position-bias statistics.
    presented_order = models.JSONField(default=list)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "reviewer"], name="review_item_reviewer_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"review {self.pk} of item {self.item_id}"


class Score(models.Model):
    # Its own index although score_unique leads with it: for the export's batches of 2,000
    # reviews the planner scans every score rather than use the wider unique index (3x slower).
    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="scores")
    output = models.ForeignKey(ItemOutput, on_delete=models.CASCADE, related_name="scores")
    dimension = models.CharField(max_length=100)
    value = models.FloatField(null=True, blank=True, help_text="null = N/A or not rated")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["review", "output", "dimension"], name="score_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.dimension}={self.value}"


class Arbitration(models.Model):
    class State(models.TextChoices):
        OPEN = "open"
        ACTIVE = "active"
        RESOLVED = "resolved"

    item = models.OneToOneField(ReviewItem, on_delete=models.CASCADE, related_name="arbitration")
    reasons = models.JSONField(default=list)
    state = models.CharField(
        max_length=16, choices=State.choices, default=State.OPEN, db_index=True
    )
    arbiter = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="arbitrations",
    )
    token = models.CharField(max_length=32, unique=True, default=new_token)
    order = models.JSONField(
        default=list, help_text="ItemOutput ids in the order shown to the arbiter"
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # When the current arbiter took the row (database clock): heartbeats extend the lease up to
    # HEARTBEAT_CAP_LEASES leases after it. created_at is when the dispute opened, not this.
    claimed_at = models.DateTimeField(null=True, blank=True)
    # {"scores": {"<ItemOutput id>": {dim: value}}, "preference": ..., "corrected": [...]}
    final_values = models.JSONField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"arbitration of item {self.item_id} ({self.state})"

    def has_values(self, *, scores: dict, preference: str | None, flags: dict, note: str) -> bool:
        """Whether a decision keyed by ItemOutput id is the stored one (`final_values`, written
        by the arbitration rules, and the note): how a repeated resolve and a re-imported
        arbitration record are recognised. A null score is a value, not a missing one."""
        stored = self.final_values or {}
        return (
            {str(o): dims for o, dims in scores.items()} == (stored.get("scores") or {})
            and (preference or None) == stored.get("preference")
            and {str(o): sorted(set(f)) for o, f in flags.items()} == (stored.get("flags") or {})
            and (note or "").strip() == self.note
        )


class ReviewerRemoval(models.Model):
    """A reviewer taken off one campaign by an admin or lead: no more claims there."""

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="reviewer_removals"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    removed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    removed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "reviewer"], name="reviewer_removal_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_id} removed from {self.campaign_id}"


class ReviewVersion(models.Model):
    """A review's answers as they were before its reviewer corrected them: the Review row is
    always the latest version (what settling, agreement and exports read); these are kept."""

    review = models.ForeignKey(Review, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField(help_text="1 = as first submitted")
    # {"preference", "preferred_output", "flags", "comment", "seconds_spent",
    #  "scores": [[ItemOutput id, dimension, value], ...]}
    answers = models.JSONField()
    replaced_at = models.DateTimeField(help_text="when the correction replaced these answers")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["review", "version"], name="review_version_unique"),
        ]

    def __str__(self) -> str:
        return f"version {self.version} of review {self.review_id}"


class ItemComment(models.Model):
    """A note on a review item between its leads, admins and its arbiter. Reviewers never see
    it; an arbiter reads it masked, as every text of the item."""

    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The capacity the author wrote in (admin, lead, arbiter): what an arbiter is shown of
    # them, since a name could be a reviewer's they must not learn.
    author_role = models.CharField(max_length=16)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"comment {self.pk} on item {self.item_id}"


class IdentityReport(models.Model):
    """A reviewer's or an arbiter's report that an item's answer reveals its model. While a
    report is open the item is out of every queue (ready is false); an admin approves it (the
    item returns, optionally with spans masked by hand) or drops it (out of the campaign and
    its figures, with the reason). The item's reviews so far are kept and listed here."""

    class State(models.TextChoices):
        OPEN = "open"
        APPROVED = "approved"
        DROPPED = "dropped"

    class Role(models.TextChoices):
        REVIEWER = "reviewer"
        ARBITER = "arbiter"

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="identity_reports"
    )
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="identity_reports")
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    note = models.TextField(blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    # The item's reviews when it was reported (Review ids): kept, but marked as given while
    # the answer may have shown who wrote it.
    reviews_marked = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.TextField(blank=True, help_text="the admin's reason")

    class Meta:
        indexes = [models.Index(fields=["campaign", "state"], name="identity_report_state_idx")]

    def __str__(self) -> str:
        return f"identity report {self.pk} of item {self.item_id} ({self.state})"


class BlindingGuess(models.Model):
    """One blinding-probe question to a reviewer and their answer: which contender wrote
    `output`, one answer of an item they just reviewed (reviews.blinding_probe). The truth is
    the output's contender; `guessed` is null until answered."""

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="blinding_guesses"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="blinding_guesses"
    )
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="+")
    output = models.ForeignKey(ItemOutput, on_delete=models.CASCADE, related_name="+")
    contender = models.ForeignKey("tasks.Contender", on_delete=models.PROTECT, related_name="+")
    guessed = models.ForeignKey(
        "tasks.Contender", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The only id the reviewer sees: random, unrelated to any key.
    token = models.CharField(max_length=32, default=new_token, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # A retried submit asks no second question about the same item.
            models.UniqueConstraint(fields=["reviewer", "item"], name="blinding_guess_unique"),
        ]

    def __str__(self) -> str:
        return f"blinding guess {self.pk} ({'answered' if self.answered_at else 'asked'})"


# Judgements (reviews/judges/): imported here so Django registers them with the reviews app.
from reviews.judges.models import Judgement  # noqa: E402, F401
