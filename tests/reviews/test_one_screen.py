"""An arbiter reads a disputed item exactly as its reviewers read it: the same masked task,
outputs (an admin's hand masks, the automatic masking, transcripts, reasoning) and rubric,
on the pages and in the APIs, because both are built by reviews/screen.py."""

from django.test import TestCase
from django.utils import timezone

from reviews.arbitration.selectors import arbitration_workspace, workspace_json
from reviews.arbitration.services import arbitration_claim_next
from reviews.judges.screen import Seat
from reviews.review.selectors import review_api_payload, review_screen
from tests.factories import (
    RUBRIC,
    CampaignFactory,
    ContenderFactory,
    TaskFactory,
    personas,
    tool_call,
    transcript_step,
    transcript_turn,
    with_transcript,
)
from tests.reviews.test_arbitration import disputed_item

SECRET = "zz-secret-model-7"
HAND = "Quillmark"  # no identity term: only the admin's hand mask hides it


class OneScreenTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        users = personas()
        rubric = [{**RUBRIC[0], "label": f"Accuracy vs {SECRET}"}, RUBRIC[1]]
        cls.campaign = CampaignFactory(
            contenders=[ContenderFactory(name=SECRET), ContenderFactory()],
            rubric=rubric,
            show_reference=True,
            show_reasoning=True,
        )
        task = TaskFactory(
            testset=cls.campaign.testset,
            category=f"{SECRET}_tickets",
            reference=f"**Restart** the router, as {SECRET} says.",
        )
        item = disputed_item(cls.campaign, users["reviewer_a"], users["reviewer_b"], task=task)
        first, second = (o.generation for o in item.outputs.order_by("pk"))
        call = tool_call("lookup", {"who": SECRET}, result={"found": f"{SECRET} v2"})
        with_transcript(
            first, transcript_turn(f"I am {SECRET}. Restart it.", transcript_step("Looking.", call))
        )
        first.reasoning = f"As {SECRET}, I think a restart helps."
        first.save(update_fields=["reasoning"])
        # A tool's result names it too: masked by hand in that step.
        found = tool_call("search", {"q": "router"}, result=f"{HAND} manual, page 3")
        with_transcript(second, transcript_turn("Restart.", transcript_step("Searching.", found)))
        second.output = f"{HAND} says: restart the router."
        second.identity_masks = [
            {"start": 0, "end": len(HAND)},
            {"part": "transcript/0/steps/0/tool_results/0/result", "start": 0, "end": len(HAND)},
        ]
        second.reasoning = "Short thought."
        second.save(update_fields=["output", "identity_masks", "reasoning"])
        cls.arbitration = arbitration_claim_next(campaign=cls.campaign, arbiter=users["arbiter"])
        assert cls.arbitration.item_id == item.pk and len(cls.arbitration.order) == 2

    def screens(self, *, html: bool = True) -> tuple[dict, dict]:
        """The reviewer's screen in the arbiter's order, and the arbiter's workspace."""
        order = [int(pk) for pk in self.arbitration.order]
        seat = Seat(self.arbitration.item_id, order, "t", "active", timezone.now())
        screen = review_screen(assignment=seat, campaign=self.campaign, html=html)
        return screen, arbitration_workspace(arbitration=self.arbitration)

    def test_the_arbiter_page_shows_the_reviewers_masked_task_outputs_and_rubric(self):
        screen, ws = self.screens()
        for shown in (screen, ws):
            text = repr((shown["task"], shown["candidates"], shown["rubric"]))
            assert SECRET not in text and HAND not in text
        assert ws["candidates"] == screen["candidates"]  # texts, HTML, reasoning, transcripts
        assert ws["conversation_turns"] == screen["conversation_turns"]
        assert [c["reasoning"]["text"] for c in ws["candidates"]] != ["", ""]
        assert any(c["turns"] for c in ws["candidates"])
        for key in ("category", "multi_turn", "conversation", "turns"):
            assert ws["task"][key] == screen["task"][key], key
        assert ws["task"]["reference"] == screen["task"]["reference"]["text"]
        assert ws["task"]["reference_html"] == screen["task"]["reference"]["html"]
        assert "<strong>Restart</strong>" in ws["task"]["reference_html"]
        for theirs, ours in zip(ws["rubric"], screen["rubric"], strict=True):
            assert theirs["label"] == ours["label"]
            assert theirs["description"] == ours["description"]
            assert {str(a["value"]): a["text"] for a in theirs["anchors"]} == {
                str(p["value"]): p["anchor"] for p in ours["points"]
            }
        assert ws["rubric"][0]["label"] == "Accuracy vs [redacted]"

    def test_the_arbiter_api_sends_the_reviewer_apis_task_and_candidates(self):
        screen, ws = self.screens(html=False)
        theirs = workspace_json(ws)
        ours = review_api_payload(screen=screen, resumed=False, submit_url="/")
        assert theirs["task"] == ours["task"]
        assert theirs["candidates"] == ours["candidates"]
        assert SECRET not in repr(theirs) and HAND not in repr(theirs)
        assert theirs["candidates"][0]["transcript"] or theirs["candidates"][1]["transcript"]
