import time

from django.core.management.base import BaseCommand, CommandError

from evalsite.text import counted
from reviews.judges.calibration import judging_progress
from reviews.judges.services import JudgingError, judging_enqueue
from tasks.models import Campaign, Judge


class Command(BaseCommand):
    help = (
        "Judge a campaign's ready review items with a judge: one judgement per item, sample "
        "and order, done by the Celery workers. With --wait, show progress until done."
    )

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument("--judge", required=True, help="judge name")
        parser.add_argument("--wait", action="store_true", help="show progress until done")
        parser.add_argument(
            "--interval", type=float, default=2.0, help="seconds between progress lines (2)"
        )

    def handle(self, *args, **options):
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"no campaign {options['campaign']!r}")
        judge = Judge.objects.filter(name=options["judge"]).first()
        if judge is None:
            raise CommandError(f"no judge {options['judge']!r} (create it with create_judge)")
        try:
            queued = judging_enqueue(campaign=campaign, judge=judge)
        except JudgingError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Queued {counted(queued, 'judgement')} for {judge.name}.")
        if not options["wait"]:
            return
        while True:
            p = judging_progress(campaign=campaign, judge=judge)
            self.stdout.write(
                f"{p['done']} done, {p['failed']} failed, {p['pending'] + p['running']} "
                f"waiting of {p['judgements']}; cost {p['cost']:.6f}"
            )
            if p["finished"] or not p["judgements"]:
                break
            time.sleep(options["interval"])
        if p["failed"]:
            raise CommandError(
                f"{counted(p['failed'], 'judgement')} failed: see the judge's page on the campaign"
            )
