"""`check --deploy` refuses an empty MONITOR_WEBHOOK_SECRET while a monitor sends webhooks."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import TestCase, override_settings

from tasks.models import Monitor
from tasks.monitors.definition import monitor_archive, monitor_create
from tests.factories import ContenderFactory
from tests.tasks.test_monitors import definition, make_testset


def deploy_check() -> str:
    out = io.StringIO()
    call_command("check", "--deploy", "--fail-level", "ERROR", stdout=out, stderr=out)
    return out.getvalue()


class WebhookSecretCheckTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        make_testset()
        ContenderFactory(name="oa", provider="openai", model="oa", base_url="http://127.0.0.1:9/v1")

    @override_settings(MONITOR_WEBHOOK_SECRET="")
    def test_it_fails_with_an_empty_secret_while_a_monitor_has_a_webhook(self):
        deploy_check()  # no monitor: nothing to sign
        monitor_create(definition=definition(alerts={"email": ["lead@example.com"]}))
        deploy_check()  # e-mail only: nothing is signed
        Monitor.objects.update(alerts={"webhook": "https://hooks.example.com/eval"})
        with pytest.raises(SystemCheckError) as info:
            deploy_check()
        assert "evalsite.E101" in str(info.value)
        assert "MONITOR_WEBHOOK_SECRET is empty while monitors send webhooks (golden)" in str(
            info.value
        )
        monitor_archive(monitor=Monitor.objects.get())
        deploy_check()  # a deleted monitor sends nothing

    @override_settings(MONITOR_WEBHOOK_SECRET="a-long-random-secret")
    def test_it_passes_with_a_secret(self):
        monitor_create(definition=definition(alerts={"webhook": "https://hooks.example.com/e"}))
        assert "E101" not in deploy_check()
