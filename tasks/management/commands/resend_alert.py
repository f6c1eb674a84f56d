from django.core.management.base import BaseCommand, CommandError

from tasks.models import MonitorAlert
from tasks.monitors.alerts import ResendRefused, alert_resend


class Command(BaseCommand):
    help = (
        "Resend an alert's failed deliveries (a new round of tries under the same delivery "
        "ids) to the monitor's current webhook and addresses. ALERT is the id in the alert log "
        '(and in the webhook body\'s "alert"). Exit 1 when nothing failed.'
    )

    def add_arguments(self, parser):
        parser.add_argument("monitor", help="monitor slug")
        parser.add_argument("alert", type=int, help="alert id")

    def handle(self, *args, **options):
        alert = (
            MonitorAlert.objects.select_related("run__monitor")
            .filter(pk=options["alert"], run__monitor__slug=options["monitor"])
            .first()
        )
        if alert is None:
            raise CommandError(f"monitor {options['monitor']!r} has no alert {options['alert']}")
        try:
            deliveries = alert_resend(alert=alert)
        except ResendRefused as exc:
            raise CommandError(str(exc)) from None
        for d in deliveries:
            self.stdout.write(f"resending {d.channel} to {d.target} (delivery {d.delivery_id})")
