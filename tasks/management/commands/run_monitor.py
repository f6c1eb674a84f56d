import json
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from tasks.generation.services import GenerationError
from tasks.models import Monitor, MonitorRun
from tasks.monitors.definition import MonitorError
from tasks.monitors.grading import monitor_run_finish
from tasks.monitors.runs import monitor_run_active, monitor_run_progress, monitor_run_start
from tasks.monitors.summary import comparison_summary

WITHIN, CROSSED = 0, 3


class Command(BaseCommand):
    help = (
        "Start a monitor run. With --wait: wait for it, print the comparison with the baseline "
        "as JSON on stdout (a summary on stderr) and exit 0 within thresholds, 3 when one was "
        "crossed (alerts sent), 1 on an error."
    )

    def add_arguments(self, parser):
        parser.add_argument("monitor", help="monitor slug")
        parser.add_argument("--wait", action="store_true", help="wait for the run and compare")
        parser.add_argument("--baseline", type=int, help="compare with this run number")
        parser.add_argument("--interval", type=float, default=1.0)
        parser.add_argument("--timeout", type=float, default=0, help="give up after N seconds")

    def handle(self, *args, **options):
        monitor = Monitor.objects.filter(slug=options["monitor"]).first()
        if monitor is None:
            raise CommandError(f"no monitor {options['monitor']!r}")
        try:
            run = monitor_run_start(monitor=monitor, baseline=options["baseline"])
        except (MonitorError, GenerationError) as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"Started {monitor.slug}#{run.number}.")
        if not options["wait"]:
            self.stdout.write(json.dumps({"monitor": monitor.slug, "run": run.number}))
            return
        self._wait(run, options)
        self._grade(run, options)
        run = MonitorRun.objects.select_related("monitor").get(pk=run.pk)
        if run.status != MonitorRun.Status.DONE:
            raise CommandError(f"{monitor.slug}#{run.number}: {run.status} {run.error}")
        comparison = run.comparison or {
            "monitor": monitor.slug,
            "baseline": None,
            "run": run.number,
            "contenders": {},
            "alerts": [],
            "metrics": run.metrics,
        }
        self.stdout.write(json.dumps(comparison, indent=2, sort_keys=True))
        self.stderr.write(comparison_summary(comparison, metrics=run.metrics))
        if comparison["alerts"]:
            sys.exit(CROSSED)
        return

    def _grade(self, run: MonitorRun, options: dict) -> None:
        """Grade the run (the worker's finish job may not have run yet: grading is
        idempotent); a monitor with a judge waits for its judgements first."""
        started = time.monotonic()
        while monitor_run_finish(run_id=run.pk) is None and (
            MonitorRun.objects.filter(pk=run.pk, status=MonitorRun.Status.GENERATING).exists()
        ):
            if options["timeout"] and time.monotonic() - started > options["timeout"]:
                raise CommandError(
                    f"{run.monitor.slug}#{run.number} still judged after the timeout"
                )
            time.sleep(options["interval"])

    def _wait(self, run: MonitorRun, options: dict) -> None:
        """Progress on stderr: rewritten in place on a terminal; elsewhere (a CI log, a pipe)
        one line each time it changes, so the log never holds one line of carriage returns."""
        tty = self.stderr.isatty()
        started, last = time.monotonic(), ""
        while monitor_run_active(run):
            if options["timeout"] and time.monotonic() - started > options["timeout"]:
                if tty:
                    self.stderr.write("")
                raise CommandError(
                    f"{run.monitor.slug}#{run.number} still running after the timeout"
                )
            p = monitor_run_progress(run)
            line = (
                f"{run.monitor.slug}#{run.number}: "
                f"{p['done'] + p['failed'] + p['cancelled']}/{p['total']} done"
                + (f", {p['failed']} failed" if p["failed"] else "")
            )
            if tty:
                self.stderr.write("\r" + line, ending="")
                self.stderr.flush()
            elif line != last:
                self.stderr.write(line)
            last = line
            time.sleep(options["interval"])
        if tty:
            self.stderr.write("")
