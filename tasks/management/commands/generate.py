import time

from django.core.management.base import BaseCommand, CommandError

from evalsite.text import counted
from tasks.campaigns.selectors import campaign_progress, format_eta
from tasks.generation.services import GenerationError, campaign_status_refresh, generation_enqueue
from tasks.models import Campaign

BAR = 30


class Command(BaseCommand):
    help = "Queue a campaign's generation on the Celery workers; --wait shows progress until done."

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument(
            "--wait", action="store_true", help="show progress until every row is finished"
        )
        parser.add_argument(
            "--interval", type=float, default=1.0, help="seconds between progress updates"
        )
        parser.add_argument(
            "--timeout", type=float, default=0, help="give up waiting after this many seconds"
        )

    def handle(self, *args, **options):
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"no campaign {options['campaign']!r}")
        try:
            queued = generation_enqueue(campaign=campaign)
        except GenerationError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Queued {counted(queued, 'generation')} for {campaign.slug}.")
        if not options["wait"]:
            return
        tty = self.stdout.isatty()
        started = time.monotonic()
        last_line = ""
        while True:
            progress = campaign_progress(campaign=campaign)
            line = self._bar(progress["totals"])
            if tty:
                self.stdout.write("\r" + line, ending="")
                self.stdout.flush()
            elif line != last_line:
                self.stdout.write(line)
            last_line = line
            if not progress["active"]:
                break
            if options["timeout"] and time.monotonic() - started > options["timeout"]:
                if tty:
                    self.stdout.write("")
                raise CommandError(
                    f"still running after {options['timeout']}s (the workers keep going)"
                )
            time.sleep(options["interval"])
        if tty:
            self.stdout.write("")
        # The last worker may not have flipped the status yet: settle it (idempotent).
        campaign_status_refresh(campaign_id=campaign.pk)
        progress = campaign_progress(campaign=campaign)
        self._summary(progress, time.monotonic() - started)
        # A script waits to use the outputs: it must be able to tell that some are missing.
        unfinished = [
            counted(progress["totals"][state], "generation") + f" {state}"
            for state in ("failed", "cancelled")
            if progress["totals"][state]
        ]
        if unfinished:
            raise CommandError(f"{campaign.slug}: {' and '.join(unfinished)}")

    def _bar(self, t: dict) -> str:
        total = max(t["total"], 1)
        filled = int(BAR * t["finished_count"] / total)
        # Cancelled rows are finished too: named, so the counts add up to the fraction.
        cancelled = f"cancelled {t['cancelled']}  " if t["cancelled"] else ""
        # A stalled row's worker stopped renewing its lease: not "running".
        stalled = f"stalled {t['stalled']}  " if t["stalled"] else ""
        return (
            f"[{'#' * filled}{'.' * (BAR - filled)}] {t['finished_count']}/{t['total']}  "
            f"done {t['done']}  failed {t['failed']}  {cancelled}running {t['running']}  {stalled}"
            f"queued {t['queued']}  {t['rate_per_min']} done/min  ETA {format_eta(t['eta_seconds'])}"
        )

    def _summary(self, progress: dict, elapsed: float) -> None:
        self.stdout.write(f"Finished in {elapsed:.1f}s. Status: {progress['status']}.")
        header = f"{'contender':<24} {'done':>6} {'failed':>6} {'retries':>7} {'latency':>9} {'ttft':>7} {'cost':>10}"
        self.stdout.write(header)
        for c in progress["contenders"]:
            latency = f"{c['latency_ms']}ms" if c["latency_ms"] is not None else "-"
            ttft = f"{c['ttft_ms']}ms" if c["ttft_ms"] is not None else "-"
            cost = f"{c['cost']:.4f}" if c["cost"] is not None else "-"
            self.stdout.write(
                f"{c['name'][:24]:<24} {c['done']:>6} {c['failed']:>6} {c['retries']:>7} "
                f"{latency:>9} {ttft:>7} {cost:>10}"
            )
        if progress["totals"]["failed"]:
            self.stdout.write(
                self.style.WARNING(
                    f"{counted(progress['totals']['failed'], 'generation')} failed: see the campaign page; "
                    "'retry failed' queues them again."
                )
            )
