"""Monitors a team can leave running: schedules checked by their fire times, a tick that
isolates each monitor, and monitors edited, paused, resumed and deleted (API, CLI, pages)."""

import io
import json
import tempfile
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase
from django.urls import reverse

from evalsite.models import ApiToken
from tasks.campaigns.definition import DefinitionError
from tasks.models import Contender, Generation, Monitor, MonitorRun
from tasks.monitors.cron import fire_times, schedule_problem
from tasks.monitors.definition import monitor_create, monitor_update
from tasks.monitors.schedule import monitor_schedule_tick
from tests.factories import ContenderFactory, personas
from tests.fake_llm import FakeLLM
from tests.services import wait_until
from tests.tasks.test_generation import workers  # noqa: F401 (a fixture)
from tests.tasks.test_monitors import definition, make_testset

NEVER = "0 0 31 2 *"  # passes croniter.is_valid; February never has a 31st


def _file(data) -> str:
    handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(data, handle)
    handle.close()
    return handle.name


def test_it_names_a_schedule_that_never_fires_and_lists_the_next_fire_times():
    assert schedule_problem(NEVER) == (
        "'0 0 31 2 *' never fires (no such date: e.g. the 31st of a 30-day month)"
    )
    assert "never fires" in schedule_problem("0 0 31 4 *")
    assert schedule_problem("0 0 29 2 *") is None  # leap days do come
    assert schedule_problem("61 * * * *") == "'61 * * * *' is not a valid 5-field cron expression"
    now = datetime(2026, 1, 1, 10, 7, tzinfo=UTC)
    assert fire_times("0 */6 * * *", now=now) == [
        datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
        datetime(2026, 1, 1, 18, 0, tzinfo=UTC),
        datetime(2026, 1, 2, 0, 0, tzinfo=UTC),
    ]


class ScheduleIsolationTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url="http://127.0.0.1:9/v1")

    def test_it_refuses_a_never_firing_schedule_by_name(self):
        with pytest.raises(DefinitionError) as info:
            monitor_create(definition=definition(schedule=NEVER, alerts={}))
        assert info.value.errors == [
            "schedule: '0 0 31 2 *' never fires (no such date: e.g. the 31st of a 30-day month)"
        ]

    def test_one_broken_monitor_is_marked_and_the_others_still_run(self):
        good = monitor_create(definition=definition(schedule="* * * * *", alerts={}))
        bad = monitor_create(definition=definition(slug="broken", schedule="0 * * * *", alerts={}))
        # A schedule stored before schedules were checked (or written by hand in the database).
        Monitor.objects.filter(pk=bad.pk).update(schedule=NEVER)
        Monitor.objects.update(created_at=datetime(2026, 1, 1, 11, 0, tzinfo=UTC))
        now = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)
        from unittest import mock

        with mock.patch("tasks.generation.services._send"):  # nobody works the rows
            result = monitor_schedule_tick(now=now)
        assert result["started"] == ["golden#1"] and result["errors"] == ["broken"]
        bad.refresh_from_db()
        assert "never fires" in bad.error and bad.error_at == now
        assert MonitorRun.objects.filter(monitor=good).count() == 1
        # Its page says so; fixing the schedule clears the mark.
        admin = personas()["admin"]
        self.client.force_login(admin)
        page = self.client.get(reverse("monitor_detail", args=["broken"])).content.decode()
        assert "could not start this monitor" in page and "never fires" in page
        monitor_update(monitor=bad, changes={"schedule": "0 * * * *"})
        bad.refresh_from_db()
        assert bad.error == "" and bad.error_at is None

    def test_a_definition_refuses_unknown_metrics_imported_contenders_and_fields(self):
        ContenderFactory(name="from-file", provider="imported", model="", base_url="")
        with pytest.raises(DefinitionError) as info:
            monitor_create(
                definition=definition(
                    contenders=["oa", "from-file"],
                    thresholds=[
                        {"metric": "check_pass_rate.regexp", "max_drop": 0.1},
                        {"metric": "latency_ms.p99", "max_rise": 0.1},
                        {"metric": "error_rate", "max_rise": 0.1, "confidance": 0.9},
                    ],
                    alerts={"webhook": "https://h.example.com/x", "slack": "#ops"},
                    shedule="* * * * *",
                )
            )
        assert info.value.errors == [
            "shedule: unknown field",
            "contenders[1]: 'from-file' is an imported contender (outputs from a file): "
            "a monitor re-runs contenders with an endpoint",
            "thresholds[0].metric: unknown metric 'check_pass_rate.regexp'",
            "thresholds[1].metric: unknown metric 'latency_ms.p99'",
            "thresholds[2].confidance: unknown field",
            "alerts.slack: unknown field",
        ]
        assert Monitor.objects.count() == 0

    def test_a_paused_monitor_starts_nothing_and_says_so(self):
        monitor = monitor_create(definition=definition(schedule="* * * * *", alerts={}))
        Monitor.objects.update(created_at=datetime(2026, 1, 1, 11, 0, tzinfo=UTC))
        monitor_update(monitor=monitor, changes={"paused": True})
        assert monitor_schedule_tick(now=datetime(2026, 1, 1, 12, 0, tzinfo=UTC))["started"] == []
        self.client.force_login(personas()["lead"])
        page = self.client.get(reverse("monitor_detail", args=["golden"])).content.decode()
        assert 'data-testid="paused"' in page and "Paused: the schedule starts no run" in page
        assert 'data-testid="next-runs"' not in page
        # Resumed: the latest due time missed while paused runs once, not each one missed.
        monitor_update(monitor=monitor, changes={"paused": False})
        from unittest import mock

        with mock.patch("tasks.generation.services._send"):
            later = datetime(2026, 1, 1, 12, 5, 10, tzinfo=UTC)
            assert monitor_schedule_tick(now=later)["started"] == ["golden#1"]
        assert MonitorRun.objects.get().scheduled_for == datetime(2026, 1, 1, 12, 5, tzinfo=UTC)


class EditApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {name: ApiToken.issue(user) for name, user in cls.users.items()}
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url="http://127.0.0.1:9/v1")
        ContenderFactory(name="ob", provider="openai", model="ob", base_url="http://127.0.0.1:9/v1")
        ContenderFactory(name="file-outputs", provider="imported", model="", base_url="")

    def setUp(self):
        self.monitor = monitor_create(definition=definition(schedule="0 */6 * * *", alerts={}))

    def _call(self, method, persona, body=None, slug="golden"):
        url = reverse("api_monitor_detail", args=[slug])
        return getattr(self.client, method)(
            url,
            json.dumps(body) if body is not None else "",
            "application/json",
            headers={"Authorization": f"Bearer {self.tokens[persona]}"},
        )

    def test_admins_change_schedule_thresholds_alerts_and_pause(self):
        changes = {
            "schedule": "30 2 * * 1",
            "thresholds": [{"metric": "error_rate", "max_rise": 0.1}],
            "alerts": {"email": ["lead@example.com"]},
            "contenders": ["oa", "ob"],
            "paused": True,
        }
        response = self._call("patch", "admin", changes)
        assert response.status_code == 200, response.json()
        data = response.json()
        assert data["schedule"] == "30 2 * * 1" and data["paused"] is True
        assert data["next_runs"] == []  # paused: nothing is due
        assert data["contenders"] == ["oa", "ob"]
        self.monitor.refresh_from_db()
        assert self.monitor.thresholds == [{"metric": "error_rate", "max_rise": 0.1}]
        resumed = self._call("patch", "admin", {"paused": False}).json()
        assert len(resumed["next_runs"]) == 3

    def test_it_rejects_every_bad_change_at_once_and_changes_nothing(self):
        response = self._call(
            "patch",
            "admin",
            {
                "schedule": NEVER,
                "thresholds": [{"metric": "check_pass_rate.vibes", "max_drop": 0.1}],
                "contenders": ["file-outputs"],
                "testset": "other",
                "colour": "red",
                "paused": "yes",
            },
        )
        assert response.status_code == 400
        errors = response.json()["errors"]
        assert errors == [
            "colour: unknown field",
            "testset: cannot be changed (runs compare on one test set version)",
            "paused: must be true or false",
            "contenders[0]: 'file-outputs' is an imported contender (outputs from a file): "
            "a monitor re-runs contenders with an endpoint",
            "schedule: '0 0 31 2 *' never fires (no such date: e.g. the 31st of a 30-day month)",
            "thresholds[0].metric: unknown metric 'check_pass_rate.vibes'",
        ]
        self.monitor.refresh_from_db()
        assert self.monitor.schedule == "0 */6 * * *" and not self.monitor.paused

    def test_leads_read_but_neither_change_nor_delete(self):
        assert self._call("get", "lead").status_code == 200
        assert self._call("patch", "lead", {"paused": True}).status_code == 403
        assert self._call("delete", "lead").status_code == 403
        for persona in ("reviewer_a", "arbiter", "outsider"):
            assert self._call("get", persona).status_code == 403
            assert self._call("patch", persona, {"paused": True}).status_code == 403
            assert self._call("delete", persona).status_code == 403
        self.monitor.refresh_from_db()
        assert not self.monitor.paused and self.monitor.archived_at is None

    def test_delete_archives_the_monitor_and_keeps_its_runs(self):
        from unittest import mock

        with mock.patch("tasks.generation.services._send"):
            self.client.post(
                reverse("api_monitor_runs", args=["golden"]),
                headers={"Authorization": f"Bearer {self.tokens['admin']}"},
            )
        assert self._call("delete", "admin").status_code == 204
        assert self._call("get", "admin").status_code == 404
        assert self._call("delete", "admin").status_code == 404
        run = self.client.get(
            reverse("api_monitor_run_detail", args=["golden", 1]),
            headers={"Authorization": f"Bearer {self.tokens['lead']}"},
        )
        assert run.status_code == 200 and run.json()["run"] == 1  # kept, still readable
        assert MonitorRun.objects.count() == 1 and Generation.objects.count() == 10
        start = self.client.post(
            reverse("api_monitor_runs", args=["golden"]),
            headers={"Authorization": f"Bearer {self.tokens['admin']}"},
        )
        assert start.status_code == 404
        now = datetime.now(UTC) + timedelta(days=1)
        assert monitor_schedule_tick(now=now)["started"] == []
        with pytest.raises(DefinitionError, match="deleted: its runs are kept"):
            monitor_create(definition=definition(alerts={}))

    def test_a_run_request_refuses_unknown_fields_and_a_non_integer_baseline(self):
        runs = reverse("api_monitor_runs", args=["golden"])
        auth = {"Authorization": f"Bearer {self.tokens['admin']}"}
        typo = self.client.post(runs, json.dumps({"basline": 1}), "application/json", headers=auth)
        assert typo.status_code == 400 and typo.json()["errors"] == [
            'basline: unknown field (send {"baseline": n} or nothing)'
        ]
        text = self.client.post(
            runs, json.dumps({"baseline": "x"}), "application/json", headers=auth
        )
        assert text.json()["errors"] == ["baseline: must be an integer (a run number)"]
        form = self.client.post(runs, {"contender": "oa"}, headers=auth)
        assert form.status_code == 400 and "contender: unknown field" in form.json()["errors"][0]
        assert MonitorRun.objects.count() == 0


class EditCommandTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url="http://127.0.0.1:9/v1")

    def setUp(self):
        self.monitor = monitor_create(definition=definition(schedule="0 */6 * * *", alerts={}))

    def test_update_pause_resume_and_delete_from_the_command_line(self):
        out = io.StringIO()
        call_command(
            "update_monitor", "golden", _file({"schedule": "15 * * * *"}),
            stdout=out, stderr=io.StringIO(),
        )  # fmt: skip
        assert json.loads(out.getvalue())["schedule"] == "15 * * * *"
        # A whole definition file sent back, slug and test set unchanged, is accepted.
        call_command(
            "update_monitor", "golden", _file(definition(schedule="", alerts={})),
            stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
        self.monitor.refresh_from_db()
        assert self.monitor.schedule == ""
        with pytest.raises(CommandError, match="schedule: '0 0 31 2 \\*' never fires"):
            call_command("update_monitor", "golden", _file({"schedule": NEVER}))
        out = io.StringIO()
        call_command("pause_monitor", "golden", stdout=out)
        assert "paused" in out.getvalue()
        assert Monitor.objects.get().paused
        call_command("pause_monitor", "golden", "--resume", stdout=io.StringIO())
        assert not Monitor.objects.get().paused
        out = io.StringIO()
        call_command("delete_monitor", "golden", stdout=out)
        assert out.getvalue().strip() == "Deleted monitor golden (0 runs kept)."
        for command in ("pause_monitor", "delete_monitor"):
            with pytest.raises(CommandError, match="no monitor 'golden'"):
                call_command(command, "golden")
        with pytest.raises(CommandError, match="was deleted"):
            call_command("run_monitor", "golden", stdout=io.StringIO(), stderr=io.StringIO())


class PageActionTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url="http://127.0.0.1:9/v1")

    def setUp(self):
        self.monitor = monitor_create(definition=definition(schedule="0 */6 * * *", alerts={}))

    def test_admins_pause_resume_and_delete_from_the_page(self):
        self.client.force_login(self.users["admin"])
        page = self.client.get(reverse("monitor_detail", args=["golden"])).content.decode()
        assert 'data-testid="next-runs"' in page and ">Pause<" in page
        self.client.post(reverse("monitor_pause", args=["golden"]), {"paused": "1"})
        assert Monitor.objects.get().paused
        page = self.client.get(reverse("monitor_detail", args=["golden"])).content.decode()
        assert ">Resume<" in page
        self.client.post(reverse("monitor_pause", args=["golden"]), {"paused": "0"})
        assert not Monitor.objects.get().paused
        response = self.client.post(reverse("monitor_delete", args=["golden"]))
        assert response.status_code == 302 and response["Location"] == reverse("monitor_list")
        assert self.client.get(reverse("monitor_detail", args=["golden"])).status_code == 404
        assert "golden" not in self.client.get(reverse("monitor_list")).content.decode()

    def test_only_admins_change_a_monitor_from_the_page(self):
        for persona in ("lead", "reviewer_a", "outsider"):
            self.client.force_login(self.users[persona])
            for name, data in (("monitor_pause", {"paused": "1"}), ("monitor_delete", {})):
                response = self.client.post(reverse(name, args=["golden"]), data)
                assert response.status_code in (403, 404), (persona, name)
            assert self.client.get(reverse("monitor_edit", args=["golden"])).status_code in (
                403,
                404,
            )
        monitor = Monitor.objects.get()
        assert not monitor.paused and monitor.archived_at is None

    def test_the_edit_page_saves_a_schedule_and_thresholds_and_lists_problems(self):
        self.client.force_login(self.users["admin"])
        page = self.client.get(reverse("monitor_edit", args=["golden"])).content.decode()
        assert 'value="0 */6 * * *"' in page and "check_pass_rate.json_schema" in page
        form = {
            "name": "Golden",
            "contenders": ["oa"],
            "samples_per_task": "2",
            "schedule": "0 8 * * 1-5",
            "baseline": "previous",
            "threshold_rows": "2",
            "t-0-metric": "check_pass_rate",
            "t-0-rule": "max_drop",
            "t-0-value": "0.05",
            "t-0-confidence": "0.95",
            "t-1-metric": "",
            "webhook": "",
            "email": "lead@example.com",
        }
        response = self.client.post(reverse("monitor_edit", args=["golden"]), form)
        assert response.status_code == 302, response.content.decode()[-2000:]
        monitor = Monitor.objects.get()
        assert monitor.schedule == "0 8 * * 1-5" and monitor.samples_per_task == 2
        assert monitor.thresholds == [
            {"metric": "check_pass_rate", "max_drop": 0.05, "confidence": 0.95}
        ]
        assert monitor.alerts == {"email": ["lead@example.com"]} and monitor.baseline == "previous"
        bad = self.client.post(
            reverse("monitor_edit", args=["golden"]), {**form, "schedule": NEVER}
        ).content.decode()
        assert "never fires" in bad and 'data-testid="form-errors"' in bad
        assert Monitor.objects.get().schedule == "0 8 * * 1-5"

    def test_the_schedule_preview_shows_the_next_three_fire_times(self):
        self.client.force_login(self.users["admin"])
        url = reverse("monitor_schedule_preview")
        ok = self.client.get(url, {"schedule": "0 0 * * *"}).content.decode()
        assert ok.count("00:00 UTC</time>") == 3 and 'data-testid="fire-times"' in ok
        assert "never fires" in self.client.get(url, {"schedule": NEVER}).content.decode()
        self.client.force_login(self.users["lead"])
        assert self.client.get(url, {"schedule": "0 0 * * *"}).status_code == 403


# -- real processes: beat and a worker ------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.redis
def test_beat_runs_a_good_monitor_every_minute_beside_a_never_firing_one(workers):  # noqa: F811
    """A threads worker with beat embedded, ticking every 5 s: the `* * * * *` monitor gets a
    run each minute, the broken one is marked and never stops the tick."""
    fake = FakeLLM()
    try:
        make_testset(tasks=3)
        Contender.objects.create(name="oa", provider="openai", model="oa", base_url=fake.base_url)
        good = monitor_create(definition=definition(schedule="* * * * *", alerts={}))
        bad = monitor_create(definition=definition(slug="broken", schedule="0 * * * *", alerts={}))
        Monitor.objects.filter(pk=bad.pk).update(schedule=NEVER)
        Monitor.objects.update(created_at=datetime.now(UTC) - timedelta(hours=1))
        workers(concurrency=4, beat=True, pool="threads", extra_env={"MONITOR_TICK_SECONDS": "5"})

        def two_runs_done():
            return MonitorRun.objects.filter(monitor=good, status="done").count() >= 2

        wait_until(two_runs_done, timeout=200, interval=2, message="two scheduled runs graded")
        due = sorted(
            MonitorRun.objects.filter(monitor=good).values_list("scheduled_for", flat=True)
        )
        assert all(d.second == 0 for d in due) and due[1] - due[0] == timedelta(minutes=1)
        bad.refresh_from_db()
        assert "never fires" in bad.error and not MonitorRun.objects.filter(monitor=bad).exists()
    finally:
        fake.close()
