"""System checks of the tasks app, run by `manage.py check --deploy` (and so before the
compose web service starts gunicorn).

An empty MONITOR_WEBHOOK_SECRET signs every alert with the empty key: anyone who knows the
receiver's address can forge an alert that verifies. That is refused as an error while any
monitor sends webhooks.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.db import DatabaseError

from tasks.models import Monitor

SECRET_MISSING = "evalsite.E101"


@checks.register(checks.Tags.security, deploy=True)
def monitor_webhook_secret_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    if settings.MONITOR_WEBHOOK_SECRET:
        return []
    try:
        hooked = sorted(
            Monitor.objects.filter(archived_at=None, alerts__has_key="webhook").values_list(
                "slug", flat=True
            )
        )
    except DatabaseError:
        # Not migrated yet, or unreachable: nothing to judge here. The compose web service
        # runs this check after `migrate`, when the monitors can be read.
        return []
    if not hooked:
        return []
    return [
        checks.Error(
            "MONITOR_WEBHOOK_SECRET is empty while monitors send webhooks "
            f"({', '.join(hooked[:5])}{', ...' if len(hooked) > 5 else ''}): every alert would "
            "be signed with the empty key, so anyone could forge one.",
            hint=(
                "Set MONITOR_WEBHOOK_SECRET (e.g. the output of python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))') in .env and give receivers the same value."
            ),
            id=SECRET_MISSING,
        )
    ]
