"""Hand masks in a transcript's steps: a held output whose leak is only in a tool's result is
found and held with the part it is in, an admin masks it by hand through the API or the held
outputs page, the mask is recorded with its part, who and when, and reviewers and arbiters
never read the masked words (the review page's HTML, the API's transcript)."""

import json

from django.test import SimpleTestCase, TestCase
from django.urls import reverse

from evalsite.models import ApiToken
from reviews import review as services
from reviews.identity_reports.services import ResolveInvalid, masks_checked
from reviews.models import ReviewItem
from tasks.blinding.hold import MaskInvalid, mask_spans_checked, mask_spans_of_words
from tasks.blinding.parts import hand_masked, maskable, part_label, scanned
from tasks.generation.outputs_import import outputs_import
from tasks.models import Generation
from tests.factories import personas
from tests.tasks.test_conversation import MOCKS, TOOLS, campaign_for

# "Orchid Pilot" is a name the masking does not know: only an admin's hand masks it. The
# vendor beside it is what holds the output.
RESULT = "Order A-17 shipped. Orchid Pilot here, built by OpenAI, checked it for you."
RESULT_PART = "transcript/0/steps/0/tool_results/0/result"
ANSWER = "Your order A-17 has shipped."
CLEAN = "It shipped yesterday."


def line(text: str, result) -> str:
    transcript = [
        {
            "turn": 1,
            "user": None,
            "steps": [
                {
                    "text": "Let me look it up.",
                    "tool_calls": [
                        {"id": "c1", "name": "get_order", "raw": '{"order_id": "A-17"}'}
                    ],
                    "tool_results": [{"id": "c1", "result": result}],
                },
                {"text": text, "tool_calls": [], "tool_results": []},
            ],
            "answer": text,
            "finish_reason": "stop",
        }
    ]
    return json.dumps({"task_id": "T-1", "sample": 0, "transcript": transcript})


def leaky_campaign(slug: str):
    campaign = campaign_for(
        None,
        slug=slug,
        tasks=[{"prompt": "Where is order A-17?", "tools": TOOLS, "tool_mocks": MOCKS}],
        contenders=[
            {"name": "vendor-a", "provider": "imported"},
            {"name": "vendor-b", "provider": "imported"},
        ],
    )
    outputs_import(campaign=campaign, contender_name="vendor-a", raw=line(ANSWER, RESULT).encode())
    outputs_import(
        campaign=campaign, contender_name="vendor-b", raw=line(CLEAN, "shipped").encode()
    )
    return campaign


class TranscriptHoldTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {who: ApiToken.issue(u) for who, u in cls.users.items()}
        cls.campaign = leaky_campaign("hand-steps")
        cls.leaky = Generation.objects.get(campaign=cls.campaign, contender__name="vendor-a")

    def api(self, who: str, path: str, body=None):
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.tokens[who]}"}
        if body is None:
            return self.client.get(path, **auth)
        return self.client.post(path, json.dumps(body), "application/json", **auth)

    @property
    def held_url(self) -> str:
        return f"/api/v1/campaigns/{self.campaign.slug}/held-outputs"

    def review_page(self, who: str) -> str:
        """The reviewer's review page HTML for their next item (claimed on the page)."""
        self.client.force_login(self.users[who])
        response = self.client.post(reverse("review_next", args=[self.campaign.slug]))
        assert response.status_code == 302, response.status_code
        return self.client.get(response["Location"]).content.decode()

    def test_a_leak_only_in_a_tool_result_is_held_with_its_part(self):
        assert "OpenAI" not in ANSWER and self.leaky.identity_held
        assert not ReviewItem.objects.get(campaign=self.campaign).ready
        [output] = self.api("lead", self.held_url).json()["outputs"]
        [reason] = [r for r in output["reasons"] if r["text"] == "OpenAI"]
        assert reason["part"] == RESULT_PART
        assert output["texts"][RESULT_PART][reason["start"] : reason["end"]] == "OpenAI"
        assert output["texts"]["answer"] == ANSWER

    def test_a_mask_on_a_tool_result_through_the_api_never_reaches_reviewers(self):
        start = RESULT.index("Orchid Pilot")
        span = {"part": RESULT_PART, "start": start, "end": start + len("Orchid Pilot")}
        answer = self.api(
            "admin", self.held_url + "/approve", {"ids": [self.leaky.pk], "mask": [span]}
        )
        assert answer.status_code == 200, answer.content
        assert answer.json() == {"approved": [self.leaky.pk], "items_opened": 1}
        self.leaky.refresh_from_db()
        # The record of who masked what, and where.
        [mask] = self.leaky.identity_masks
        assert mask["part"] == RESULT_PART and mask["text"] == "Orchid Pilot"
        assert mask["by"] == "admin" and mask["at"]
        assert self.leaky.transcript[0]["steps"][0]["tool_results"][0]["result"] == RESULT
        # The API's claim: the transcript as reviewers get it.
        claim = self.api("reviewer_a", f"/api/v1/campaigns/{self.campaign.slug}/next", {})
        assert claim.status_code == 200
        shown = json.dumps(claim.json()["candidates"])
        assert "Orchid" not in shown and "Pilot" not in shown and "OpenAI" not in shown
        assert "shipped. [redacted] here" in shown
        # The review page's HTML.
        page = self.review_page("reviewer_b")
        assert "Orchid" not in page and "Pilot" not in page and "OpenAI" not in page
        assert "[redacted] here" in page

    def test_it_rejects_a_part_that_is_not_a_text_of_the_output(self):
        for span in (
            {"part": "transcript/0/steps/9/text", "start": 0, "end": 3},
            {"part": RESULT_PART, "start": 0, "end": len(RESULT) + 1},
            {"part": RESULT_PART, "start": 0},
            {"part": RESULT_PART, "start": 0, "end": 3, "words": "x"},
        ):
            answer = self.api(
                "admin", self.held_url + "/approve", {"ids": [self.leaky.pk], "mask": [span]}
            )
            assert answer.status_code == 400 and answer.json()["errors"], span
        self.leaky.refresh_from_db()
        assert self.leaky.identity_held and self.leaky.identity_masks == []

    def test_the_page_shows_the_step_and_masks_words_in_it_before_approving(self):
        self.client.force_login(self.users["admin"])
        held = self.client.get(reverse("campaign_held", args=[self.campaign.slug])).content
        held = held.decode()
        assert "Turn 1, step 1, tool result 1:" in held
        assert f'data-part="{RESULT_PART}"' in held
        assert "Orchid Pilot here" in held  # unknown: readable until masked by hand
        response = self.client.post(
            reverse("campaign_held_mask", args=[self.campaign.slug, self.leaky.pk]),
            {"words": "orchid pilot"},
            follow=True,
        )
        assert "Masked 1 span and approved" in response.content.decode()
        self.leaky.refresh_from_db()
        assert not self.leaky.identity_held
        assert [(m["part"], m["text"], m["by"]) for m in self.leaky.identity_masks] == [
            (RESULT_PART, "Orchid Pilot", "admin")
        ]
        page = self.review_page("reviewer_a")
        assert "Orchid" not in page and "Pilot" not in page and "OpenAI" not in page

    def test_a_reports_resolve_takes_a_span_in_a_transcript_text(self):
        item = ReviewItem.objects.get(campaign=self.campaign)
        start = RESULT.index("Orchid Pilot")
        span = {"part": RESULT_PART, "start": start, "end": start + len("Orchid Pilot")}
        checked = masks_checked({str(self.leaky.pk): [span, [0, 4]]}, item_id=item.pk)
        assert checked == {
            self.leaky.pk: [(RESULT_PART, span["start"], span["end"]), ("answer", 0, 4)]
        }
        try:
            masks_checked({str(self.leaky.pk): [{**span, "part": "nowhere"}]}, item_id=item.pk)
        except ResolveInvalid as exc:
            assert "'nowhere' is not a text of this output" in exc.errors[0]
        else:
            raise AssertionError("a part the output does not have was accepted")

    def test_a_mask_added_after_the_claim_applies_from_the_next_page_on(self):
        self.api("admin", self.held_url + "/approve", {"ids": [self.leaky.pk]})
        claim = services.assignment_claim_next(
            campaign=self.campaign, reviewer=self.users["reviewer_a"]
        )
        start = RESULT.index("Orchid Pilot")
        mask = {"part": RESULT_PART, "start": start, "end": start + 12, "text": "Orchid Pilot"}
        Generation.objects.filter(pk=self.leaky.pk).update(identity_masks=[mask])
        self.client.force_login(self.users["reviewer_a"])
        body = self.client.get(
            reverse("review_page", args=[self.campaign.slug, claim.assignment.token])
        ).content.decode()
        assert "Orchid" not in body and "[redacted] here" in body


TRANSCRIPT = [
    {
        "turn": 1,
        "steps": [
            {
                "text": "Checking.",
                "tool_calls": [
                    {
                        "id": "c1",
                        "name": "lookup",
                        "arguments": {"q": "Orchid Pilot docs", "n": 1},
                        "raw": '{"q": "Orchid Pilot docs", "n": 1}',
                    },
                    {"id": "c2", "name": "echo", "arguments": None, "raw": "say \\u004fpenAI"},
                ],
                "tool_results": [{"id": "c1", "result": {"hits": ["Orchid Pilot manual"]}}],
            },
            {"text": "Done: Orchid Pilot.", "tool_calls": [], "tool_results": []},
        ],
        "answer": "Done: Orchid Pilot.",
    }
]


class PartsTests(SimpleTestCase):
    def test_it_scans_every_text_as_reviewers_read_it(self):
        parts = dict(scanned(output="Done: Orchid Pilot.", transcript=TRANSCRIPT))
        # raw arguments with their escapes written out, objects as their indented JSON
        assert parts["transcript/0/steps/0/tool_calls/1/raw"] == "say OpenAI"
        assert '"hits"' in parts["transcript/0/steps/0/tool_results/0/result"]
        # the answer is read once, though the last step and the turn repeat it
        assert [p for p, t in parts.items() if t == "Done: Orchid Pilot."] == ["answer"]

    def test_a_mask_in_the_answer_also_masks_the_texts_that_repeat_it(self):
        masks = [{"part": "answer", "start": 6, "end": 18}]
        shown = hand_masked(
            output="Done: Orchid Pilot.", transcript=TRANSCRIPT, reasoning=None, masks=masks
        )
        assert shown.text == "Done: [redacted]."
        turn = shown.transcript[0]
        assert turn["answer"] == turn["steps"][1]["text"] == "Done: [redacted]."
        assert "Orchid" in json.dumps(turn["steps"][0])  # another text: not masked
        assert TRANSCRIPT[0]["answer"] == "Done: Orchid Pilot."  # the stored one is left

    def test_a_mask_in_an_arguments_object_masks_its_raw_text_too(self):
        part = "transcript/0/steps/0/tool_calls/0/arguments/q"
        shown = hand_masked(
            output="x",
            transcript=TRANSCRIPT,
            reasoning=None,
            masks=[{"part": part, "start": 0, "end": 12}],
        )
        call = shown.transcript[0]["steps"][0]["tool_calls"][0]
        assert call["arguments"] == {"q": "[redacted] docs", "n": 1}
        assert "Orchid" not in call["raw"]

    def test_words_are_found_in_every_text_and_spans_are_checked_against_their_part(self):
        texts = maskable(output="Done: Orchid Pilot.", transcript=TRANSCRIPT)
        spans = mask_spans_of_words("orchid pilot", texts)
        assert {part for part, _, _ in spans} == {
            "answer",
            "transcript/0/steps/0/tool_calls/0/arguments/q",
            "transcript/0/steps/0/tool_results/0/result/hits/0",
            "transcript/0/steps/1/text",
            "transcript/0/answer",
        }
        assert mask_spans_checked([[0, 4]], texts) == [("answer", 0, 4)]
        try:
            mask_spans_checked(
                [{"part": "transcript/0/steps/0/tool_calls/0/raw", "start": 0, "end": 1}], texts
            )
        except MaskInvalid as exc:  # an arguments object is shown, not its raw text
            assert "is not a text of this output" in exc.errors[0]
        else:
            raise AssertionError("a raw text that is not shown was accepted")

    def test_a_part_reads_in_words(self):
        assert part_label("answer") == "final answer"
        assert part_label(RESULT_PART) == "turn 1, step 1, tool result 1"
        assert (
            part_label("transcript/1/steps/0/tool_calls/2/name")
            == "turn 2, step 1, call 3, tool name"
        )
