"""Transcripts and conversations on the review, arbitration and item pages and in the reviewer
and arbiter APIs (docs/reviewing.md, "Transcripts and conversations"): readable steps,
formatted JSON, marked errors, the user's turns shown once, everything masked."""

import html
import json
import re

from django.test import TestCase
from django.urls import reverse

from evalsite.models import ApiToken
from reviews.arbitration.services import arbitration_claim_next
from reviews.models import Assignment, ItemOutput
from tasks.blinding import render as blinding
from tasks.models import Contender
from tests.factories import (
    CampaignFactory,
    ReviewItemFactory,
    TaskFactory,
    personas,
    tool_call,
    transcript_step,
    transcript_turn,
    with_transcript,
)
from tests.reviews.test_arbitration import disputed_item

SECRET = "zz-secret-model-9"  # the first contender's model id: a campaign identity term


def tool_use_turns():
    """A: get_order (a result), refund (a mocked error), then an unmocked call; B: arguments
    that are not JSON, then its answer."""
    a = transcript_turn(
        "Your order A-17 has shipped; the refund could not be made.",
        transcript_step(
            "Let me look the order up.",
            tool_call("get_order", {"order_id": "A-17"}, result={"status": "shipped", "n": 2}),
        ),
        transcript_step("", tool_call("refund", {"order_id": "A-17"}, error="timeout")),
        transcript_step("", tool_call("lookup_faq", {"q": "refunds"}, unmocked=True)),
    )
    b = transcript_turn(
        "I could not find the order.",
        transcript_step("", tool_call("get_order", raw="{order_id: A-17", result=None)),
    )
    return a, b


def conversation_turns(tag: str):
    users = ["I need a hotel in Lyon.", "Make it near the station.", "And under 120 euros."]
    return [
        transcript_turn(f"{tag} reply {n}: hotel option {n}.", user=u)
        for n, u in enumerate(users, start=1)
    ], users


def labelled(assignment) -> dict[str, object]:
    """{label: Generation} as this assignment shows them."""
    outputs = {o.pk: o.generation for o in ItemOutput.objects.filter(item=assignment.item)}
    labels = blinding.labels(len(assignment.order))
    return {label: outputs[pk] for label, pk in zip(labels, assignment.order, strict=True)}


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


class TranscriptReviewTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.contenders = [
            Contender.objects.create(name="Model One", provider="openai", model=SECRET),
            Contender.objects.create(name="Model Two", provider="anthropic", model="other-m-2"),
        ]
        cls.campaign = CampaignFactory(contenders=cls.contenders, overlap=2)
        cls.item = ReviewItemFactory(campaign=cls.campaign)
        first, second = (o.generation for o in cls.item.outputs.order_by("generation__contender"))
        turn_a, turn_b = tool_use_turns()
        with_transcript(first, turn_a)
        with_transcript(second, turn_b)
        cls.by_contender = {first.pk: "tools-a", second.pk: "tools-b"}
        cls.token = ApiToken.issue(cls.users["reviewer_a"])

    def setUp(self):
        self.client.force_login(self.users["reviewer_a"])

    def page(self):
        response = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        assert response.status_code == 302
        assignment = Assignment.objects.get(reviewer=self.users["reviewer_a"], state="active")
        return assignment, self.client.get(response.url).content.decode()

    def output_html(self, page: str, label: str) -> str:
        start = page.index(f'id="output-{label}"')
        end = page.find("</article>", start)
        return page[start:end]

    def test_it_shows_each_step_with_formatted_arguments_results_and_marked_errors(self):
        assignment, page = self.page()
        shown = labelled(assignment)
        label_a = next(
            k
            for k, g in shown.items()
            if g.pk in self.by_contender and self.by_contender[g.pk] == "tools-a"
        )
        label_b = next(k for k in shown if k != label_a)
        a, b = self.output_html(page, label_a), self.output_html(page, label_b)
        # A: three steps, collapsible, each naming its tool; the error and the unmocked call
        # are marked in the summary already (collapsed), and again in the step.
        assert a.count("<details data-step>") == 3
        summaries = re.findall(r"<summary>(.*?)</summary>", a, re.S)
        assert "get_order" in summaries[0] and "mark" not in summaries[0]
        assert "refund" in summaries[1] and ">error<" in summaries[1]
        assert "lookup_faq" in summaries[2] and ">unmocked<" in summaries[2]
        # Arguments and results as indented JSON, in the page's text.
        read = text_of(a)
        assert '{\n  "order_id": "A-17"\n}' in read
        # (Indented a key a line; PostgreSQL's jsonb keeps the keys in an order of its own.)
        assert '\n  "status": "shipped"' in read and '\n  "n": 2' in read
        assert "timeout" in read and "no mocked result for this call" in read
        assert "unmocked: no mocked result matched this call" in read
        assert "Let me look the order up." in read
        # The final answer once, emphasised, after the steps; not repeated as a step.
        assert read.count("Your order A-17 has shipped") == 1
        assert a.index("Final answer") > a.rindex("data-step")
        assert 'class="md output-body final-answer"' in a
        # B: the raw text of arguments that are not JSON, marked so; its call never answered.
        read_b = text_of(b)
        assert "{order_id: A-17" in read_b and "not valid JSON" in read_b
        assert "No result: the loop stopped before this call was answered." in read_b
        # Neither the provider's call ids nor its finish reasons reach the page.
        assert "toolu_" not in page and "end_turn" not in page and "tool_calls" not in page

    def test_the_api_returns_each_transcript_as_structured_masked_json(self):
        response = self.client.post(
            reverse("api_campaign_next", args=[self.campaign.slug]),
            headers={"Authorization": f"Bearer {self.token}"},
        )
        assert response.status_code == 200
        body = response.json()
        by_answer = {c["text"][:4]: c for c in body["candidates"]}
        a, b = by_answer["Your"], by_answer["I co"]
        assert [t["turn"] for t in a["transcript"]] == [1]
        turn = a["transcript"][0]
        assert set(turn) == {"turn", "user", "steps", "answer", "cut_off"}
        assert turn["user"] is None and turn["cut_off"] is None
        assert turn["answer"] == a["text"]
        assert len(turn["steps"]) == 3  # the final text-only step is the answer
        first = turn["steps"][0]
        assert first == {
            "text": "Let me look the order up.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "name": "get_order",
                    "arguments": {"order_id": "A-17"},
                    "raw": None,
                    "valid": True,
                    "unknown": False,
                }
            ],
            "tool_results": [
                {
                    "id": "call_1",
                    "name": "get_order",
                    "result": {"status": "shipped", "n": 2},
                    "error": "",
                    "unmocked": False,
                }
            ],
        }
        assert turn["steps"][1]["tool_results"][0]["error"] == "timeout"
        assert turn["steps"][2]["tool_results"][0]["unmocked"] is True
        assert [c["id"] for s in turn["steps"] for c in s["tool_calls"]] == [
            "call_1",
            "call_2",
            "call_3",
        ]
        bad = b["transcript"][0]["steps"][0]
        assert bad["tool_calls"][0]["arguments"] is None
        assert bad["tool_calls"][0]["raw"] == "{order_id: A-17"
        assert bad["tool_calls"][0]["valid"] is False
        assert bad["tool_results"] == []  # never answered
        assert "toolu_" not in response.content.decode()
        assert "latency_ms" not in response.content.decode()

    def test_arbiters_see_the_transcripts_on_the_page_and_in_the_api(self):
        item = disputed_item(self.campaign, self.users["reviewer_a"], self.users["reviewer_b"])
        for output, turn in zip(
            item.outputs.order_by("generation__contender"), tool_use_turns(), strict=True
        ):
            with_transcript(output.generation, turn)
        arbiter = self.users["arbiter"]
        arbitration = arbitration_claim_next(campaign=self.campaign, arbiter=arbiter)
        self.client.force_login(arbiter)
        page = self.client.get(reverse("arbitration_page", args=[arbitration.token]))
        content = page.content.decode()
        assert content.count("<details data-step>") == 4
        assert "not valid JSON" in content and ">unmocked<" in content
        assert '{\n  "order_id": "A-17"\n}' in text_of(content)
        response = self.client.post(
            reverse("api_arbitration_next", args=[self.campaign.slug]),
            headers={"Authorization": f"Bearer {ApiToken.issue(arbiter)}"},
        )
        body = response.json()
        steps = sorted(len(c["transcript"][0]["steps"]) for c in body["candidates"])
        assert steps == [1, 3]
        assert "toolu_" not in response.content.decode()

    def test_the_item_page_shows_leads_the_transcripts_as_written(self):
        self.client.force_login(self.users["lead"])
        response = self.client.get(
            reverse("campaign_item", args=[self.campaign.slug, self.item.task.external_id])
        )
        content = response.content.decode()
        assert response.status_code == 200
        assert content.count("<details data-step>") == 4
        assert "Model One" in content and SECRET in content
        assert '{\n  "order_id": "A-17"\n}' in text_of(content)


class ConversationReviewTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = CampaignFactory(overlap=2)
        users = conversation_turns("x")[1]
        task = TaskFactory(
            testset=cls.campaign.testset,
            prompt="",
            turns=users,
            messages=[{"role": "system", "content": "You book hotels."}],
        )
        cls.item = ReviewItemFactory(campaign=cls.campaign, task=task)
        for tag, output in zip("PQ", cls.item.outputs.order_by("pk"), strict=True):
            with_transcript(output.generation, *conversation_turns(tag)[0])
        cls.users_said = users

    def test_the_user_turns_are_shown_once_with_every_reply_under_its_label(self):
        self.client.force_login(self.users["reviewer_a"])
        response = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        page = self.client.get(response.url).content.decode()
        read = text_of(page)
        assert page.count("data-turn-row=") == 3
        for n, said in enumerate(self.users_said, start=1):
            assert read.count(said) == 1  # shared by the outputs, not repeated per output
            start = page.index(f'id="turn-{n}"')
            end = page.index(f'id="turn-{n + 1}"') if n < 3 else len(page)
            turn = page[start:end]
            assert said in html.unescape(turn)
            # Both replies to this turn, side by side under their labels, after the user turn.
            assert f"P reply {n}:" in turn and f"Q reply {n}:" in turn
            assert turn.index(said.split()[0]) < turn.index("Output A") < turn.index("Output B")
        # The context before the turns is the task's; the turns are said to follow.
        assert "You book hotels." in read and "A conversation of 3 turns" in read

    def test_the_api_gives_the_turns_and_each_reply(self):
        token = ApiToken.issue(self.users["reviewer_b"])
        response = self.client.post(
            reverse("api_campaign_next", args=[self.campaign.slug]),
            headers={"Authorization": f"Bearer {token}"},
        )
        body = response.json()
        assert body["task"]["turns"] == self.users_said
        assert body["task"]["messages"] == [{"role": "system", "content": "You book hotels."}]
        for candidate in body["candidates"]:
            assert [t["user"] for t in candidate["transcript"]] == self.users_said
            tag = candidate["transcript"][0]["answer"][0]
            assert [t["answer"] for t in candidate["transcript"]] == [
                f"{tag} reply {n}: hotel option {n}." for n in (1, 2, 3)
            ]
            assert candidate["text"] == candidate["transcript"][-1]["answer"]


class HistoryWithToolCallsTests(TestCase):
    """Task messages logged from production (OpenAI shape) render like generated steps."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = CampaignFactory(overlap=2)
        messages = [
            {"role": "user", "content": "Where is my order A-17?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_prod_9",
                        "type": "function",
                        "function": {"name": "get_order", "arguments": '{"order_id":"A-17"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_prod_9", "content": '{"status":"late"}'},
            {"role": "user", "content": "Can you refund it?"},
        ]
        task = TaskFactory(testset=cls.campaign.testset, prompt="", messages=messages)
        ReviewItemFactory(campaign=cls.campaign, task=task)

    def test_the_history_shows_the_call_with_its_result_under_the_assistant(self):
        self.client.force_login(self.users["reviewer_a"])
        response = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        page = self.client.get(response.url).content.decode()
        start = page.index('aria-label="Task conversation"')
        history = page[start : page.index("</ol>", start)]
        read = text_of(history)
        assert history.count('<li class="turn') == 3  # the tool message sits under its call
        assert "get_order" in read
        assert '{\n  "order_id": "A-17"\n}' in read and '{\n  "status": "late"\n}' in read
        assert "call_prod_9" not in page

    def test_the_api_keeps_the_messages_in_place_with_neutral_ids(self):
        token = ApiToken.issue(self.users["reviewer_a"])
        response = self.client.post(
            reverse("api_campaign_next", args=[self.campaign.slug]),
            headers={"Authorization": f"Bearer {token}"},
        )
        messages = response.json()["task"]["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user"]
        assert messages[1]["tool_calls"] == [
            {"id": "call_1", "name": "get_order", "arguments": {"order_id": "A-17"}, "raw": None}
        ]
        assert messages[2] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": json.dumps({"status": "late"}),
        }


# Identities hidden in every part of a transcript: the contender's model id, a vendor, a model
# family, a name split over a key and its value, JSON escapes in arguments that are not JSON.
LEAKY_TURNS = [
    transcript_turn(
        f"Done. Signed, {SECRET}.",
        transcript_step(
            "As an AI developed by OpenAI I will look it up.",
            tool_call(
                "ask_claude",
                {"model": SECRET, SECRET: ["GPT-4o", {"by": "Anthropic"}], "Open": "AI"},
                result={"served_by": f"{SECRET} on inference.zz-labs.example", "n": 3},
            ),
            tool_call("get_order", {"order_id": "A-17"}, error=f"{SECRET} is overloaded"),
        ),
        transcript_step("", tool_call("get_order", raw='{"who": "\\u0043laude", oops')),
        user=f"Are you {SECRET}?",
    ),
]
IDENTITIES = [SECRET, "claude", "openai", "anthropic", "gpt4o", "zzlabs"]


def readable_identities(strings) -> list[tuple[str, str]]:
    found = []
    for s in strings:
        view = blinding.skeleton(s.casefold())
        found += [(i, s[:120]) for i in IDENTITIES if blinding.skeleton(i) in view]
    return found


def json_strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from json_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from json_strings(v)


def page_strings(page: str):
    """Every text between tags and every attribute value, unescaped."""
    yield from (html.unescape(t) for t in re.split(r"<[^>]*>", page) if t.strip())
    yield from (html.unescape(v) for v in re.findall(r'="([^"]*)"', page))


class TranscriptMaskingTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        contender = Contender.objects.create(
            name="Model One",
            provider="openai",
            model=SECRET,
            base_url="https://inference.zz-labs.example/v1",
        )
        cls.campaign = CampaignFactory(
            contenders=[
                contender,
                Contender.objects.create(name="Model Two", provider="openai", model="other-m-2"),
            ],
            overlap=2,
        )
        task = TaskFactory(testset=cls.campaign.testset, prompt="", turns=[f"Are you {SECRET}?"])
        cls.item = ReviewItemFactory(campaign=cls.campaign, task=task)
        for output in cls.item.outputs.all():
            with_transcript(output.generation, *LEAKY_TURNS)

    def test_the_fixture_names_the_identities_unmasked(self):
        strings = list(json_strings(LEAKY_TURNS)) + [
            LEAKY_TURNS[0]["steps"][1]["tool_calls"][0]["raw"].replace("\\u0043", "C")
        ]
        assert {i for i, _ in readable_identities(strings)} == set(IDENTITIES)

    def test_no_identity_is_readable_on_the_review_page(self):
        self.client.force_login(self.users["reviewer_a"])
        response = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        page = self.client.get(response.url).content.decode()
        assert page.count("<details data-step>") == 4
        assert "ask_[redacted]" in page  # the tool's name, masked where it names a vendor
        assert readable_identities(page_strings(page)) == []

    def test_no_identity_is_readable_in_the_reviewer_or_arbiter_api(self):
        response = self.client.post(
            reverse("api_campaign_next", args=[self.campaign.slug]),
            headers={"Authorization": f"Bearer {ApiToken.issue(self.users['reviewer_a'])}"},
        )
        body = response.json()
        call = body["candidates"][0]["transcript"][0]["steps"][0]["tool_calls"][0]
        # The split name is only found in the whole: the value is withheld, its text masked.
        assert call["arguments"] is None and "[redacted]" in call["raw"]
        assert body["candidates"][0]["transcript"][0]["steps"][0]["tool_results"][0]["result"]
        assert readable_identities(json_strings(body)) == []
        task = TaskFactory(testset=self.campaign.testset, prompt="", turns=self.item.task.turns)
        item = disputed_item(
            self.campaign, self.users["reviewer_a"], self.users["reviewer_b"], task=task
        )
        for output in item.outputs.all():
            with_transcript(output.generation, *LEAKY_TURNS)
        arbiter = self.users["arbiter"]
        response = self.client.post(
            reverse("api_arbitration_next", args=[self.campaign.slug]),
            headers={"Authorization": f"Bearer {ApiToken.issue(arbiter)}"},
        )
        assert response.status_code == 200
        assert readable_identities(json_strings(response.json())) == []
        self.client.force_login(arbiter)
        page = self.client.get(reverse("arbitration_page", args=[response.json()["token"]]))
        assert readable_identities(page_strings(page.content.decode())) == []


def test_the_openapi_schema_describes_the_transcripts(client):
    paths = client.get("/api/v1/schema").json()["paths"]
    claim = paths["/api/v1/campaigns/{slug}/next"]["post"]
    assert "transcript" in claim["responses"]["200"]["description"]
    assert "transcript" in claim["description"]
    arbitration = paths["/api/v1/campaigns/{slug}/arbitration/next"]["post"]
    assert "transcript" in arbitration["description"]
