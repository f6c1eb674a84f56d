import itertools
import json

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")

    @factory.post_generation
    def password(self, create, extracted, **kwargs):
        self.set_password(extracted or PASSWORD)
        if create:
            self.save(update_fields=["password"])

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        for role in extracted or []:
            self.groups.add(Group.objects.get_or_create(name=role)[0])


def personas() -> dict:
    """The house personas: admin, lead, reviewer_a, reviewer_b, arbiter, outsider."""
    return {
        "admin": UserFactory(username="admin", roles=["admin"]),
        "lead": UserFactory(username="lead", roles=["lead"]),
        "reviewer_a": UserFactory(username="reviewer_a", roles=["reviewer"]),
        "reviewer_b": UserFactory(username="reviewer_b", roles=["reviewer"]),
        "arbiter": UserFactory(username="arbiter", roles=["arbiter"]),
        "outsider": UserFactory(username="outsider", roles=[]),
    }


# --- Domain factories (shared: reuse them; add fields rather than parallel factories) ---

RUBRIC = [
    {
        "key": "accuracy",
        "label": "Accuracy",
        "min": 1,
        "max": 5,
        "level": "ordinal",
        "max_gap": 1,
        "anchors": {"1": "wrong", "5": "fully correct"},
    },
    {
        "key": "completeness",
        "label": "Completeness",
        "min": 1,
        "max": 5,
        "level": "ordinal",
        "max_gap": 1,
        "allow_na": True,
        "anchors": {"1": "misses most", "5": "covers everything"},
    },
]


class TestSetFactory(factory.django.DjangoModelFactory):
    __test__ = False

    class Meta:
        model = "tasks.TestSet"

    name = factory.Sequence(lambda n: f"testset-{n}")
    version = 1
    checksum = factory.Sequence(lambda n: f"{n:064x}")
    frozen = True


class TaskFactory(factory.django.DjangoModelFactory):
    __test__ = False

    class Meta:
        model = "tasks.Task"

    testset = factory.SubFactory(TestSetFactory)
    position = factory.Sequence(lambda n: n)
    external_id = factory.Sequence(lambda n: f"T-{1000 + n}")
    category = "support"
    prompt = factory.Sequence(lambda n: f"Summarise ticket number {n} for the customer.")


class ContenderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "tasks.Contender"
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"contender-{n}")
    provider = "openai"
    base_url = "http://127.0.0.1:9/v1"
    model = factory.Sequence(lambda n: f"model-id-{n}")


class CampaignFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "tasks.Campaign"
        skip_postgeneration_save = True

    slug = factory.Sequence(lambda n: f"campaign-{n}")
    name = factory.Sequence(lambda n: f"Campaign {n}")
    testset = factory.SubFactory(TestSetFactory)
    rubric = factory.LazyFunction(lambda: [dict(d) for d in RUBRIC])
    mode = "both"
    overlap = 2
    status = "reviewing"

    @factory.post_generation
    def contenders(self, create, extracted, **kwargs):
        if create:
            self.contenders.set(extracted or [ContenderFactory(), ContenderFactory()])


class GenerationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "tasks.Generation"

    campaign = factory.SubFactory(CampaignFactory)
    task = factory.SubFactory(TaskFactory, testset=factory.SelfAttribute("..campaign.testset"))
    contender = factory.SubFactory(ContenderFactory)
    sample_index = 0
    status = "done"
    output = factory.Sequence(
        lambda n: f"Answer number {n}: the customer should restart the router."
    )


def _rotation(campaign, n_outputs: int) -> int:
    from reviews.review.readiness import item_rotations

    return item_rotations(campaign_id=campaign.pk, sizes=[n_outputs])[0]


class ReviewItemFactory(factory.django.DjangoModelFactory):
    """A ready item with one output per campaign contender (outputs=False to skip them)."""

    class Meta:
        model = "reviews.ReviewItem"
        skip_postgeneration_save = True

    campaign = factory.SubFactory(CampaignFactory)
    task = factory.SubFactory(TaskFactory, testset=factory.SelfAttribute("..campaign.testset"))
    sample_index = 0
    overlap = factory.SelfAttribute("campaign.overlap")
    ready = True
    state = "open"
    shuffle_key = factory.Sequence(lambda n: (n * 7919) % 100003)
    rotation = factory.LazyAttribute(
        lambda item: _rotation(item.campaign, item.campaign.contenders.count())
    )

    @factory.post_generation
    def outputs(self, create, extracted, **kwargs):
        if not create or extracted is False:
            return
        from reviews.models import ItemOutput

        for contender in self.campaign.contenders.order_by("pk"):
            generation = GenerationFactory(
                campaign=self.campaign,
                task=self.task,
                contender=contender,
                sample_index=self.sample_index,
            )
            ItemOutput.objects.create(item=self, generation=generation)


def review_create(
    item,
    reviewer,
    *,
    scores: dict,
    preference: str = "",
    flags: dict | None = None,
    comment: str = "",
):
    """A submitted review, un-permuted. `scores` = {ItemOutput: {dim: value|None}};
    `preference` = an ItemOutput, "tie", "both_bad" or ""; `flags` = {ItemOutput: [flag, ...]}."""
    from django.utils import timezone

    from reviews.models import Review, Score

    outputs = list(item.outputs.order_by("pk"))
    chosen = preference if not isinstance(preference, str) else None
    review = Review.objects.create(
        item=item,
        reviewer=reviewer,
        preference="output" if chosen else preference,
        preferred_output=chosen,
        flags={str(o.pk): f for o, f in (flags or {}).items()},
        comment=comment,
        submitted_at=timezone.now(),
        presented_order=[o.pk for o in outputs],
    )
    Score.objects.bulk_create(
        Score(review=review, output=output, dimension=dim, value=value)
        for output, dims in scores.items()
        for dim, value in dims.items()
    )
    return review


def campaign_ready(
    *,
    items: int = 4,
    overlap: int = 2,
    contenders: list | None = None,
    outputs: list | None = None,
    **campaign_fields,
):
    """A reviewing campaign with `items` ready review items, one output per contender.

    `outputs`, if given, is a list of texts used for the generations in contender order.
    """
    campaign = CampaignFactory(overlap=overlap, contenders=contenders, **campaign_fields)
    for _ in range(items):
        item = ReviewItemFactory(campaign=campaign)
        if outputs:
            for generation, text in zip(
                (o.generation for o in item.outputs.order_by("generation__contender_id")),
                outputs,
                strict=False,
            ):
                generation.output = text
                generation.save(update_fields=["output"])
    return campaign


# --- transcripts (Generation.transcript, docs/reviewing.md "Transcripts and conversations") ---

_call_ids = itertools.count(1)


def tool_call(
    name: str,
    arguments: dict | None = None,
    *,
    raw: str | None = None,
    result=None,
    error: str = "",
    unmocked: bool = False,
    valid: bool | None = None,
    unknown: bool = False,
) -> tuple[dict, dict | None]:
    """A call and its result as the tool loop stores them. `raw` alone (arguments None) is a
    call whose text is not a JSON object; result=None with no error: never answered."""
    call_id = f"toolu_{next(_call_ids):04d}"  # a provider's id: never shown to reviewers
    raw = raw if raw is not None else json.dumps(arguments or {}, ensure_ascii=False)
    call = {
        "id": call_id,
        "name": name,
        "arguments": arguments,
        "raw": raw,
        "valid": arguments is not None if valid is None else valid,
        "unknown": unknown,
    }
    if unmocked:
        error = error or "no mocked result for this call"
    answered = result is not None or error
    answer = {"id": call_id, "name": name, "result": result, "error": error, "unmocked": unmocked}
    return call, answer if answered else None


def transcript_step(text: str = "", *calls: tuple[dict, dict | None]) -> dict:
    """One model call: its text and tool calls (from tool_call) with their results."""
    return {
        "text": text,
        "tool_calls": [c for c, _ in calls],
        "tool_results": [r for _, r in calls if r is not None],
        "latency_ms": 200,
        "ttft_ms": 40,
        "input_tokens": 100,
        "output_tokens": 20,
        "finish_reason": "tool_calls" if calls else "end_turn",
    }


def transcript_turn(answer: str, *steps: dict, user: str | None = None, finish: str = "stop"):
    """One turn: the steps given, then (unless cut off) the final answer as a last step."""
    steps = list(steps)
    if finish != "max_steps":
        steps.append(transcript_step(answer))
    return {"turn": None, "user": user, "steps": steps, "answer": answer, "finish_reason": finish}


def with_transcript(generation, *turns: dict):
    """The generation given these turns (numbered 1, 2, ...); its output is the last answer."""
    generation.transcript = [{**t, "turn": n} for n, t in enumerate(turns, start=1)]
    generation.output = turns[-1]["answer"]
    generation.save(update_fields=["transcript", "output"])
    return generation
