"""The judge row: a model configuration (like a contender) plus how it judges."""

from django.db import models
from django.db.models import Q


class Judge(models.Model):
    """An LLM that scores review items blind. The API key is never stored: only the variable's
    name, as for contenders."""

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible"
        ANTHROPIC = "anthropic", "Anthropic"

    name = models.CharField(max_length=100, unique=True)
    provider = models.CharField(max_length=16, choices=Provider.choices)
    base_url = models.URLField(blank=True)
    model = models.CharField(max_length=200)
    api_key_env = models.CharField(max_length=100, blank=True)
    params = models.JSONField(default=dict, blank=True)
    price_in_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    price_out_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    max_concurrency = models.PositiveIntegerField(
        default=4, help_text="concurrent calls across all workers"
    )
    samples = models.PositiveIntegerField(default=1, help_text="judgements per item and order")
    position_swap = models.BooleanField(
        default=True, help_text="ask again with the outputs in reverse order"
    )
    instructions = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(samples__gte=1), name="judge_samples_gte_1"),
            models.CheckConstraint(
                condition=Q(max_concurrency__gte=1), name="judge_max_concurrency_gte_1"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    # The providers read a contender's configuration; a judge has no system prompt of its own
    # (its instructions go into the messages it is sent, tasks/judges/prompt.py).
    system_prompt = ""

    @property
    def orders(self) -> int:
        """How many orders each item is judged in: the drawn one, and its reverse with a swap."""
        return 2 if self.position_swap else 1
