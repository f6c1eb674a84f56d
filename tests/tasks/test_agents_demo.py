"""The agents demo step: tool tasks and scripted-user conversations, imported with transcripts
through the real services, give the report and dashboards what they show."""

import html
from io import StringIO

from django.test import TestCase

from evalsite.demo import load_users
from reviews.models import Assignment, ItemOutput
from reviews.report.campaign import campaign_report
from tasks.checks import transcripts
from tasks.demo import agents as agents_demo
from tasks.models import Generation, Task


class AgentsDemoTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = load_users()
        out = StringIO()
        cls.first = agents_demo.load({"users": cls.users}, out)
        cls.campaign = cls.first["agents_campaign"]
        cls.report = campaign_report(campaign=cls.campaign, n_boot=200)

    def test_it_imports_every_output_with_its_transcript(self):
        tasks = Task.objects.filter(testset=self.campaign.testset)
        assert tasks.exclude(tools=[]).count() == 4
        assert tasks.exclude(turns=[]).exclude(single_turn="").count() == 3
        gens = Generation.objects.filter(campaign=self.campaign)
        # 3 contenders x (7 tasks + 3 single-turn statements) x 3 samples, all done
        assert gens.count() == 90 and not gens.exclude(status="done").exists()
        assert not gens.filter(transcript=[]).exists()
        assert gens.filter(single_turn=True).count() == 27
        # nothing in the shipped transcripts names a contender (a date like 2026-11-30 would
        # match partner-export's version label 2026-11 and be masked on the review page)
        assert not gens.filter(identity_leak=True).exists()
        # the single-turn answers are never put in front of reviewers
        assert not ItemOutput.objects.filter(
            item__campaign=self.campaign, generation__single_turn=True
        ).exists()
        assert self.campaign.items.filter(ready=True).count() == 7

    def test_a_second_load_changes_nothing(self):
        before = list(
            Generation.objects.filter(campaign=self.campaign).values_list("id", "finished_at")
        )
        out = StringIO()
        again = agents_demo.load({"users": self.users}, out)
        assert again["agents_campaign"].pk == self.campaign.pk
        assert "(already loaded)" in out.getvalue()
        after = list(
            Generation.objects.filter(campaign=self.campaign).values_list("id", "finished_at")
        )
        assert before == after

    def test_the_tool_figures_show_who_recovers_and_who_calls_what_it_should_not(self):
        tools = self.report["tools"]
        large, small, partner = (
            tools[n] for n in ("northwind-large", "northwind-small", "partner-export")
        )
        assert large["tool_call_accuracy"]["rate"] == 1.0
        assert (
            large["invalid_call_rate"]["rate"] == 0.0 and large["unmocked_call_rate"]["rate"] == 0.0
        )
        assert large["error_recovery_rate"] == {
            "rate": 1.0,
            "ci95": [0.439, 1.0],
            "n": 3,
            "small_sample": True,
        }
        # northwind-small gave up after the timeout once; partner-export once, and once retried
        # with arguments that are not JSON (which no mock answers)
        assert small["error_recovery_rate"]["rate"] == 0.667
        assert partner["error_recovery_rate"]["rate"] == 0.333
        assert partner["invalid_call_rate"]["n"] == partner["n_calls"] > 0
        assert (
            partner["invalid_call_rate"]["rate"] > 0 and partner["unmocked_call_rate"]["rate"] > 0
        )
        # northwind-small looked up an order it had no id for, cancelled a shipped one and
        # refunded without looking the order up: three tool checks fail out of 12
        assert (
            small["tool_call_accuracy"]["rate"] == 0.75 and small["tool_call_accuracy"]["n"] == 12
        )
        assert large["completion_ms"]["p50"] > 0 and large["mean_steps"] > 1

    def test_the_conversation_figures_show_northwind_small_forgetting(self):
        conv = self.report["conversation"]
        small = conv["northwind-small"]
        # people score turns in this campaign, but nobody has yet: the turn checks, said so
        assert small["basis"] == "turn_checks" and "no item with them" in small["basis_reason"]
        curve = {p["turn"]: p["mean"] for p in small["turn_curve"]}
        large = {p["turn"]: p["mean"] for p in conv["northwind-large"]["turn_curve"]}
        assert all(v == 1.0 for v in large.values())
        assert curve[4] < curve[3] and curve[5] < curve[3]
        assert small["decay"]["value"] < 0 == conv["northwind-large"]["decay"]["value"]
        svm = small["single_vs_multi"]
        assert svm["gap"] < 0 and svm["single"] > svm["multi"] and svm["n"] == 3

    def test_the_lead_sees_the_new_dashboard_tabs(self):
        self.client.force_login(self.users["lead"])
        for page in ("tools", "conversation"):
            response = self.client.get(f"/campaigns/{agents_demo.SLUG}/dashboard/{page}/")
            assert response.status_code == 200
        body = self.client.get(
            f"/campaigns/{agents_demo.SLUG}/dashboard/conversation/"
        ).content.decode()
        assert "northwind-small, turn 4" in body


class AgentsDemoReviewTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = load_users()
        agents_demo.load({"users": cls.users}, StringIO())

    def test_a_reviewer_sees_the_steps_or_turns_of_the_item_they_get(self):
        self.client.force_login(self.users["reviewer1"])
        response = self.client.post(f"/review/{agents_demo.SLUG}/next", follow=True)
        assert response.status_code == 200
        body = html.unescape(response.content.decode())
        item = Assignment.objects.get(reviewer=self.users["reviewer1"], state="active").item
        shown = Generation.objects.filter(item_outputs__item=item)
        called = {c["name"] for g in shown for c in transcripts.calls(g.transcript)}
        for text in [*called, *item.task.turns]:
            assert text in body  # every tool called and every user turn is on the page
        for g in shown:  # and each output's final answer (its opening words)
            assert g.output[:30] in body
        for name in ("northwind", "partner-export"):
            assert name not in body
