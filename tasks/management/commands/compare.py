import json

from django.core.management.base import BaseCommand, CommandError

from tasks.monitors.compare import compare_refs
from tasks.monitors.definition import MonitorError
from tasks.monitors.summary import comparison_summary


class Command(BaseCommand):
    help = (
        "Compare two monitor runs (support-golden#4) or two campaigns on the same test set "
        "version (contenders matched by name): JSON on stdout, a summary on stderr."
    )

    def add_arguments(self, parser):
        parser.add_argument("a", help="the baseline: monitor#run or campaign slug")
        parser.add_argument("b", help="the other: monitor#run or campaign slug")

    def handle(self, *args, **options):
        try:
            comparison = compare_refs(options["a"], options["b"])
        except MonitorError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(comparison, indent=2, sort_keys=True))
        self.stderr.write(comparison_summary(comparison, thresholds=False))
