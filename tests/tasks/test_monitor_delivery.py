"""Alert delivery as trusted webhook senders do it: one delivery id on every try and resend,
the id and the send time inside the signed body, backoff, resend from the log (page, API,
CLI), and receivers that are down or slow, on a real worker."""

import hashlib
import hmac
import io
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase, override_settings
from django.urls import reverse
from django.utils import timezone

from evalsite.models import ApiToken
from tasks.models import AlertDelivery, MonitorAlert
from tasks.monitors import alerts as monitor_alerts
from tasks.monitors.alerts import alert_deliver, alert_resend, retry_countdown
from tasks.monitors.definition import monitor_create
from tasks.monitors.runs import monitor_run_start
from tests.factories import ContenderFactory, personas
from tests.services import wait_until
from tests.tasks.test_generation import workers  # noqa: F401 (a fixture)
from tests.tasks.test_monitors import definition, make_testset

SECRET = "delivery-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    """A webhook receiver on `port`: records every POST (headers, body); the first `slow`
    requests are answered only after `delay` seconds."""

    def __init__(self, port: int, *, slow: int = 0, delay: float = 0.0):
        self.posts: list[tuple[dict, bytes]] = []
        self.slow, self.delay = slow, delay
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.posts.append((dict(self.headers), body))
                if len(outer.posts) <= outer.slow:
                    time.sleep(outer.delay)
                self.send_response(204)
                self.end_headers()

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def ids(self) -> set[str]:
        return {h["X-Evalsite-Delivery"] for h, _ in self.posts}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def crossed_alert(webhook: str) -> MonitorAlert:
    """A recorded alert of run 1 with its webhook delivery pending (not sent yet)."""
    make_testset(tasks=2)
    ContenderFactory(name="oa", provider="openai", model="oa", base_url="http://127.0.0.1:9/v1")
    monitor = monitor_create(definition=definition(schedule="", alerts={"webhook": webhook}))
    with mock.patch("tasks.generation.services._send"):
        run = monitor_run_start(monitor=monitor)
    alert = MonitorAlert.objects.create(
        run=run, contender="oa", metric="check_pass_rate", rule="max_drop",
        threshold={"metric": "check_pass_rate", "max_drop": 0.05},
        baseline_value=1.0, run_value=0.6,
    )  # fmt: skip
    AlertDelivery.objects.create(alert=alert, channel="webhook", target=webhook)
    return alert


def test_the_backoff_doubles_from_the_base_to_the_cap_with_jitter():
    with override_settings(MONITOR_WEBHOOK_BACKOFF_BASE=30, MONITOR_WEBHOOK_BACKOFF_MAX=3600):
        for attempts, ceiling in ((1, 30), (2, 60), (5, 480), (8, 3600), (12, 3600)):
            waits = [retry_countdown(attempts) for _ in range(50)]
            assert all(ceiling / 2 <= w <= ceiling for w in waits), attempts
    # The defaults keep trying for hours: the shortest schedule of 12 tries spans > 2.5 h.
    from django.conf import settings

    shortest = sum(
        min(settings.MONITOR_WEBHOOK_BACKOFF_MAX, settings.MONITOR_WEBHOOK_BACKOFF_BASE * 2**i) / 2
        for i in range(settings.MONITOR_WEBHOOK_ATTEMPTS - 1)
    )
    assert shortest > 2.5 * 3600


@override_settings(
    MONITOR_WEBHOOK_SECRET=SECRET, MONITOR_WEBHOOK_ATTEMPTS=2, MONITOR_WEBHOOK_TIMEOUT=2
)
class ResendTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.tokens = {name: ApiToken.issue(user) for name, user in cls.users.items()}

    def setUp(self):
        self.port = free_port()
        self.alert = crossed_alert(f"http://127.0.0.1:{self.port}/hook")
        self.delivery = AlertDelivery.objects.get()

    def _fail_twice(self):
        """Nothing listens on the port: both tries fail and the delivery is `failed`."""
        assert alert_deliver(delivery_id=self.delivery.pk)[0] == "retry"
        AlertDelivery.objects.update(next_attempt_at=timezone.now())
        assert alert_deliver(delivery_id=self.delivery.pk) == ("failed", 0.0)

    def _resend_inline(self):
        return mock.patch.object(
            monitor_alerts, "_send", lambda pk, countdown=0: alert_deliver(delivery_id=pk)
        )

    def test_a_receiver_back_after_an_outage_gets_the_alert_once_after_a_resend(self):
        self._fail_twice()
        receiver = Receiver(self.port)
        try:
            url = reverse("api_monitor_alert_resend", args=["golden", self.alert.pk])
            lead = self.client.post(url, headers={"Authorization": f"Bearer {self.tokens['lead']}"})
            assert lead.status_code == 403
            with self._resend_inline(), self.captureOnCommitCallbacks(execute=True):
                response = self.client.post(
                    url, headers={"Authorization": f"Bearer {self.tokens['admin']}"}
                )
            assert response.status_code == 202
            assert response.json()["deliveries"][0]["delivery"] == str(self.delivery.delivery_id)
            assert len(receiver.posts) == 1
            headers, body = receiver.posts[0]
            payload = json.loads(body)
            expected = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
            assert headers["X-Evalsite-Signature"] == f"sha256={expected}"
            assert (
                headers["X-Evalsite-Delivery"]
                == payload["delivery"]
                == str(self.delivery.delivery_id)
            )
            assert payload["alert"] == self.alert.pk and payload["sent_at"]
            self.delivery.refresh_from_db()
            assert (self.delivery.status, self.delivery.resends) == ("sent", 1)
            again = self.client.post(
                url, headers={"Authorization": f"Bearer {self.tokens['admin']}"}
            )
            assert again.status_code == 409 and "nothing failed" in again.json()["error"]
            assert len(receiver.posts) == 1
        finally:
            receiver.close()

    def test_the_page_and_the_command_resend_a_failed_delivery(self):
        self._fail_twice()
        self.client.force_login(self.users["admin"])
        page = self.client.get(reverse("monitor_detail", args=["golden"])).content.decode()
        assert ">Resend<" in page and "failed" in page and "ConnectError" in page
        self.client.force_login(self.users["lead"])
        page = self.client.get(reverse("monitor_detail", args=["golden"])).content.decode()
        assert ">Resend<" not in page
        url = reverse("monitor_alert_resend", args=["golden", self.alert.pk])
        assert self.client.post(url).status_code == 403
        self.client.force_login(self.users["admin"])
        with mock.patch.object(monitor_alerts, "_send") as send:
            with self.captureOnCommitCallbacks(execute=True):
                assert self.client.post(url).status_code == 302
        send.assert_called_once_with(self.delivery.pk)
        self.delivery.refresh_from_db()
        assert (self.delivery.status, self.delivery.attempts) == ("pending", 0)
        # A pending delivery is not resent from the command line either.
        with pytest.raises(CommandError, match="nothing failed to resend \\(webhook pending\\)"):
            call_command("resend_alert", "golden", str(self.alert.pk))
        AlertDelivery.objects.update(status="failed")
        out = io.StringIO()
        with mock.patch.object(monitor_alerts, "_send"):
            call_command("resend_alert", "golden", str(self.alert.pk), stdout=out)
        assert str(self.delivery.delivery_id) in out.getvalue()
        with pytest.raises(CommandError, match="has no alert 999"):
            call_command("resend_alert", "golden", "999")

    def test_a_resend_goes_to_the_webhook_the_monitor_has_now(self):
        self._fail_twice()
        receiver = Receiver(free_port())
        try:
            new_url = f"http://127.0.0.1:{receiver.server.server_address[1]}/new"
            monitor = self.alert.run.monitor
            type(monitor).objects.filter(pk=monitor.pk).update(alerts={"webhook": new_url})
            with self._resend_inline(), self.captureOnCommitCallbacks(execute=True):
                alert_resend(alert=MonitorAlert.objects.get())
            assert len(receiver.posts) == 1 and AlertDelivery.objects.get().target == new_url
        finally:
            receiver.close()


# -- a real worker and beat -----------------------------------------------------------------------

WORKER_ENV = {
    "MONITOR_WEBHOOK_SECRET": SECRET,
    "MONITOR_WEBHOOK_ATTEMPTS": "40",
    "MONITOR_WEBHOOK_BACKOFF_BASE": "1",
    "MONITOR_WEBHOOK_BACKOFF_MAX": "3",
    "MONITOR_TICK_SECONDS": "2",
}


@pytest.mark.postgres
@pytest.mark.redis
def test_a_receiver_down_then_back_gets_the_alert_once(workers):  # noqa: F811
    port = free_port()
    alert = crossed_alert(f"http://127.0.0.1:{port}/hook")
    delivery = AlertDelivery.objects.get()
    workers(concurrency=2, beat=True, pool="threads", extra_env=WORKER_ENV)
    monitor_alerts._send(delivery.pk)
    wait_until(
        lambda: AlertDelivery.objects.get().attempts >= 3, timeout=60, message="failed tries"
    )
    receiver = Receiver(port)  # the receiver comes back
    try:
        wait_until(
            lambda: AlertDelivery.objects.get().status == "sent", timeout=60, message="delivered"
        )
        time.sleep(4)  # two more beat sweeps: nothing is sent again
        assert len(receiver.posts) == 1
        assert receiver.ids() == {str(delivery.delivery_id)}
        assert json.loads(receiver.posts[0][1])["alert"] == alert.pk
    finally:
        receiver.close()


@pytest.mark.postgres
@pytest.mark.redis
def test_a_slow_receiver_sees_one_delivery_id_on_every_try(workers):  # noqa: F811
    """The receiver answers its first two requests after 3 s, past the 1 s timeout: it did get
    them, so it is sent the alert again, always under the same id, and evalsite records the
    delivery as sent once a try is answered in time."""
    port = free_port()
    receiver = Receiver(port, slow=2, delay=3.0)
    try:
        crossed_alert(f"http://127.0.0.1:{port}/hook")
        delivery = AlertDelivery.objects.get()
        workers(
            concurrency=2, beat=True, pool="threads",
            extra_env={**WORKER_ENV, "MONITOR_WEBHOOK_TIMEOUT": "1"},
        )  # fmt: skip
        monitor_alerts._send(delivery.pk)
        wait_until(
            lambda: AlertDelivery.objects.get().status == "sent", timeout=90, message="delivered"
        )
        assert len(receiver.posts) == 3
        assert receiver.ids() == {str(delivery.delivery_id)}
        bodies = [json.loads(body) for _, body in receiver.posts]
        assert {b["delivery"] for b in bodies} == {str(delivery.delivery_id)}
        assert len({b["sent_at"] for b in bodies}) == 3  # each try signs its own time
        delivery.refresh_from_db()
        assert delivery.attempts == 3 and delivery.response_code == 204
    finally:
        receiver.close()
