from django.conf import settings
from django.db import models
from django.db.models import Q

from evalsite.roles import ADMIN, ARBITER, LEAD, REVIEWER, has_role

# Monitors' models live in their package (tasks/monitors/models.py); imported here so Django
# registers them with the tasks app, under the names `tasks.models` gives every model of it.
from tasks.monitors.models import AlertDelivery as AlertDelivery
from tasks.monitors.models import Monitor as Monitor
from tasks.monitors.models import MonitorAlert as MonitorAlert
from tasks.monitors.models import MonitorRun as MonitorRun


class Tier(models.TextChoices):
    BASE = "base"
    ADVANCED = "advanced"
    BOUNDARY = "boundary"


class CaseType(models.TextChoices):
    TYPICAL = "typical"
    EDGE = "edge"
    FAILURE = "failure"


class TestSet(models.Model):
    """A versioned, checksummed set of tasks. Frozen once a campaign uses it."""

    __test__ = False  # not a pytest class

    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField(default=1)
    checksum = models.CharField(max_length=64, help_text="SHA-256 of the canonical task list")
    frozen = models.BooleanField(default=False)
    source_filename = models.CharField(max_length=255, blank=True)
    task_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Personal data found on intake and what the admin chose: masked (placeholders stored
    # instead) or kept as uploaded; a file with personal data and no choice is refused.
    pii_action = models.CharField(
        max_length=8, blank=True, choices=[("", "none found"), ("mask", "masked"), ("keep", "kept")]
    )
    pii_count = models.PositiveIntegerField(default=0)
    pii_decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    pii_decided_via = models.CharField(max_length=200, blank=True)  # "upload page", "command ..."

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="testset_name_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def freeze(self) -> None:
        """Mark the test set as used (by a campaign or a monitor): read-only from now on.
        Call it with the row locked (select_for_update)."""
        if not self.frozen:
            self.frozen = True
            self.save(update_fields=["frozen"])

    def pii_decision(self) -> dict | None:
        """What was done with the personal data found on intake, and who chose it; None if none."""
        if not self.pii_count:
            return None
        return {
            "found": self.pii_count,
            "action": self.pii_action,
            "decided_by": self.pii_decided_by.get_username() if self.pii_decided_by else None,
            "via": self.pii_decided_via,
        }


class Task(models.Model):
    """One test case. Either `prompt` or `messages` (multi-turn) is set."""

    __test__ = False

    testset = models.ForeignKey(TestSet, on_delete=models.CASCADE, related_name="tasks")
    position = models.PositiveIntegerField(help_text="order in the uploaded file")
    external_id = models.CharField(max_length=100)
    category = models.CharField(max_length=100)
    tier = models.CharField(max_length=16, choices=Tier.choices, default=Tier.BASE)
    case_type = models.CharField(max_length=16, choices=CaseType.choices, default=CaseType.TYPICAL)
    prompt = models.TextField(blank=True)
    messages = models.JSONField(null=True, blank=True)
    reference = models.TextField(blank=True)
    checks = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Tool use (docs/tools.md): [{"name", "description", "parameters"}] in the OpenAI function
    # format, how they answer ([{"tool", "match"?, "result" | "error", "times"?}], first match
    # wins) and the model calls allowed per turn.
    tools = models.JSONField(default=list, blank=True)
    tool_mocks = models.JSONField(default=list, blank=True)
    max_steps = models.PositiveSmallIntegerField(default=8)
    # A scripted user (docs/conversations.md): user messages revealed one per turn after the
    # `messages` prefix; the same request stated in one message; checks per turn {"3": {...}}.
    turns = models.JSONField(default=list, blank=True)
    single_turn = models.TextField(blank=True)
    turn_checks = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["testset", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["testset", "external_id"], name="task_external_id_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["testset", "category"]),
            models.Index(fields=["testset", "tier"]),
        ]

    def __str__(self) -> str:
        return self.external_id

    def conversation(self) -> list[dict]:
        """The task as chat messages, whether it was given as a prompt or as messages (as
        stored: assistant tool_calls and tool messages included). For a task with turns, the
        context before the first turn, which may be empty: the turns follow it one by one."""
        if self.messages:
            return list(self.messages)
        if self.turns:
            return []
        return [{"role": "user", "content": self.prompt}]


class Provider(models.TextChoices):
    OPENAI = "openai", "OpenAI-compatible"
    ANTHROPIC = "anthropic", "Anthropic"
    IMPORTED = "imported", "Imported outputs"


class Contender(models.Model):
    """One model configuration. The API key is never stored: only the variable's name."""

    name = models.CharField(max_length=100, unique=True)
    provider = models.CharField(max_length=16, choices=Provider.choices)
    base_url = models.URLField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    params = models.JSONField(default=dict, blank=True)
    system_prompt = models.TextField(blank=True)
    api_key_env = models.CharField(max_length=100, blank=True)
    price_in_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    price_out_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    version_label = models.CharField(max_length=100, blank=True)
    max_concurrency = models.PositiveIntegerField(
        default=4, help_text="concurrent calls across all workers"
    )
    # The full price table the costs are computed with (tasks/generation/prices.py): where it came from
    # (the definition, or the price data and its version), base, cached-read, cache-write and
    # reasoning rates and tiers by prompt length. Empty: the two flat prices above.
    pricing = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Mode(models.TextChoices):
    RUBRIC = "rubric"
    PAIRWISE = "pairwise"
    BOTH = "both"


ROSTER_ROLES = (REVIEWER, ARBITER)


class CampaignQuerySet(models.QuerySet):
    def visible_to(self, user, role: str) -> "CampaignQuerySet":
        """The campaigns `user` may see and work on as a `role` (reviewer or arbiter): every
        one for admins and leads; else those whose roster for the role is "all" or names them;
        none without the role (docs/campaigns.md, "Rosters")."""
        if role not in ROSTER_ROLES:
            raise ValueError(f"rosters are for {' and '.join(ROSTER_ROLES)}s, not {role!r}")
        if has_role(user, ADMIN, LEAD):
            return self
        if not has_role(user, role):
            return self.none()
        through = Campaign._meta.get_field(f"{role}s").remote_field.through
        named = through.objects.filter(user_id=user.pk).values("campaign_id")
        return self.filter(Q(**{f"{role}s_all": True}) | Q(pk__in=named))


class Campaign(models.Model):
    """A blind test: frozen test set x contenders x samples, reviewed with a rubric."""

    class Kind(models.TextChoices):
        BLIND = "blind"
        # The hidden campaign a monitor run owns, so that the run's generation is the same
        # pipeline as a campaign's (docs/decisions/0006-monitor-runs-own-a-campaign.md):
        # never listed, never offered to reviewers.
        MONITOR_RUN = "monitor_run", "monitor run"

    class Status(models.TextChoices):
        DRAFT = "draft"
        GENERATING = "generating"
        REVIEWING = "reviewing"
        CANCELLED = "cancelled"
        CLOSED = "closed"

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    testset = models.ForeignKey(TestSet, on_delete=models.PROTECT, related_name="campaigns")
    contenders = models.ManyToManyField(Contender, related_name="campaigns")
    # [{"key", "label", "description", "min", "max", "anchors": {"1": ...}, "level",
    #   "direction": "higher"|"lower", "max_gap", "allow_na"}]
    rubric = models.JSONField(default=list, blank=True)
    samples_per_task = models.PositiveIntegerField(default=1)
    reviewed_samples = models.PositiveIntegerField(default=1)
    overlap = models.PositiveIntegerField(default=2)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.RUBRIC)
    # {"categories": {name: weight}, "quality": 0.7, "stability": 0.3}
    weights = models.JSONField(default=dict, blank=True)
    redact = models.JSONField(default=list, blank=True)
    lease_minutes = models.PositiveIntegerField(default=20)
    pass_threshold = models.FloatField(
        default=0.6, help_text="final quality (0..1) a sample needs to pass"
    )
    show_reference = models.BooleanField(default=False)
    # Reviewers see a model's reasoning (masked, collapsed under its answer) only when asked.
    show_reasoning = models.BooleanField(default=False)
    # Markdown for reviewers and arbiters (what to look for, how to use the scale); editable
    # while the campaign runs, masked like the outputs where it names a model.
    instructions = models.TextField(blank=True)
    flags_dispute = models.BooleanField(
        default=False, help_text="a flag raised by one reviewer only disputes the item"
    )
    hold_identity_leaks = models.BooleanField(
        default=True,
        help_text="an output that names a model waits for an admin to approve its masked view "
        "before its items are offered to reviewers",
    )
    # {"every": N}: after every Nth item a reviewer is asked which contender wrote one answer
    # of it (reviews.blinding_probe); null: never asked.
    blinding_probe = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.BLIND)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Rosters: only the people named (or everyone holding the role, when *_all is set) see
    # the campaign and can claim its items or disputes.
    reviewers_all = models.BooleanField(default=True)
    reviewers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="reviewer_rosters"
    )
    arbiters_all = models.BooleanField(default=True)
    arbiters = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="arbiter_rosters"
    )
    # Per-turn scoring of conversations: {"dimension": "turn_quality", "min": 1, "max": 5}
    # (null = only the final reply is scored with the rubric).
    score_turns = models.JSONField(null=True, blank=True)

    objects = CampaignQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(samples_per_task__gte=1), name="campaign_samples_gte_1"
            ),
            models.CheckConstraint(condition=Q(overlap__gte=1), name="campaign_overlap_gte_1"),
            models.CheckConstraint(
                condition=Q(reviewed_samples__gte=1)
                & Q(reviewed_samples__lte=models.F("samples_per_task")),
                name="campaign_reviewed_samples_in_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def wants(self) -> tuple[bool, bool]:
        """(wants rubric scores, wants a preference) for the campaign's mode."""
        scores = self.mode in (Mode.RUBRIC, Mode.BOTH) and bool(self.rubric)
        preference = self.mode in (Mode.PAIRWISE, Mode.BOTH)
        return scores, preference

    def review_policy(self) -> dict | None:
        """The campaign's checked review policy (tasks/campaigns/policy.py), or None: people
        review every item."""
        policy = (self.weights or {}).get("review_policy")
        return policy if isinstance(policy, dict) and policy.get("judge") else None

    def on_roster(self, user, role: str, named: bool | None = None) -> bool:
        """Whether `user` may see this campaign as a `role`: `visible_to` for one campaign
        (no query when the roster is "all", or when the caller read already whether the
        roster names the user: `named`)."""
        if role not in ROSTER_ROLES:
            raise ValueError(f"rosters are for {' and '.join(ROSTER_ROLES)}s, not {role!r}")
        if has_role(user, ADMIN, LEAD):
            return True
        if not has_role(user, role):
            return False
        if getattr(self, f"{role}s_all"):
            return True
        if named is not None:
            return named
        return getattr(self, f"{role}s").filter(pk=user.pk).exists()


class Generation(models.Model):
    """One (campaign, task, contender, sample). The database, not Celery, says what is done."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="generations")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="generations")
    contender = models.ForeignKey(Contender, on_delete=models.PROTECT, related_name="generations")
    sample_index = models.PositiveIntegerField()
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    attempts = models.PositiveIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)
    discarded_calls = models.PositiveIntegerField(
        default=0, help_text="duplicate provider calls whose result was dropped"
    )
    # Paid calls whose answer was not kept (an attempt that lost its row, a transcript too
    # long to store, a store that failed): their tokens and cost, also counted in the row's
    # input_tokens, output_tokens and cost once it is stored (docs/tools.md, "Resuming").
    retried_input_tokens = models.PositiveIntegerField(default=0)
    retried_output_tokens = models.PositiveIntegerField(default=0)
    retried_cost = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    # A tool loop's state after its last saved step (tasks/generation/conversation.py): the next attempt
    # carries on from it. Cleared when the row is stored or fails.
    loop_progress = models.JSONField(null=True, blank=True)
    claim_token = models.CharField(max_length=32, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    output = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True)
    cost = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    # Parts of the tokens above, as the provider's usage block reports them: prompt tokens
    # read from or written to its cache, and output tokens spent on reasoning (with their
    # share of the cost). Null when the provider does not report them.
    cache_read_tokens = models.PositiveIntegerField(null=True, blank=True)
    cache_write_tokens = models.PositiveIntegerField(null=True, blank=True)
    reasoning_tokens = models.PositiveIntegerField(null=True, blank=True)
    reasoning_cost = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    # Output tokens per second while the answer streamed (first token to last).
    tokens_per_s = models.FloatField(null=True, blank=True)
    # The model's reasoning text (OpenAI-compatible reasoning_content / reasoning, Anthropic
    # thinking blocks); a tool loop's steps keep theirs in the transcript.
    reasoning = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=50, blank=True)
    # The model the endpoint answered with (OpenAI-compatible `model`, Anthropic's
    # `message.model`) and OpenAI's `system_fingerprint`: what was really served.
    served_model = models.CharField(max_length=200, blank=True)
    fingerprint = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True, help_text="provider message; admins only")
    check_results = models.JSONField(default=dict, blank=True)
    checks_passed = models.BooleanField(null=True)
    identity_leak = models.BooleanField(default=False)
    # What masking hides in the output, and why: [{"text", "reason", "start", "end"}], found
    # when the output is stored (admins and leads only; reviewers see the masked text).
    identity_findings = models.JSONField(default=list, blank=True)
    # Flagged, and its campaign holds such outputs: its items stay waiting (not ready) until
    # an admin approves the masked view (tasks.blinding.hold).
    identity_held = models.BooleanField(default=False)
    identity_approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    identity_approved_at = models.DateTimeField(null=True, blank=True)
    # Spans of the output an admin masked by hand before approving it, with who and when:
    # [{"start", "end", "text", "by", "at"}] (tasks.blinding.hold.output_shown applies them).
    identity_masks = models.JSONField(default=list, blank=True)
    # Per turn, each model call's text, tool calls and results, latency and tokens
    # (docs/tools.md, "Transcripts"); empty for a single call without tools.
    transcript = models.JSONField(default=list, blank=True)
    # This row answers the task's `single_turn` statement (the single-turn regime of a
    # conversation task): its own sample set, scored by checks, never offered for review.
    single_turn = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "task", "contender", "sample_index", "single_turn"],
                name="generation_unique_row",
            ),
        ]
        indexes = [models.Index(fields=["campaign", "status"])]

    def __str__(self) -> str:
        return f"{self.campaign_id}/{self.task_id}/{self.contender_id}/{self.sample_index}"


# Judges (tasks/judges/): imported here so Django registers them with the tasks app.
from tasks.judges.models import Judge  # noqa: E402, F401
