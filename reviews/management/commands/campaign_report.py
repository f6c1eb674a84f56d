from django.core.management.base import BaseCommand, CommandError

from reviews.report.campaign import N_BOOT, SEED, campaign_report, report_json
from tasks.models import Campaign

MAX_BOOT = 10_000


class Command(BaseCommand):
    help = "Print a campaign's report (agreement, leaderboard, quality, stability, cost, bias) as JSON."

    def add_arguments(self, parser):
        parser.add_argument("campaign", help="campaign slug")
        parser.add_argument(
            "--bootstrap",
            type=int,
            default=N_BOOT,
            help=f"bootstrap rounds (default {N_BOOT}, at most {MAX_BOOT:,})",
        )
        parser.add_argument(
            "--seed", type=int, default=SEED, help="bootstrap seed (fixed: same data, same report)"
        )

    def handle(self, *, campaign, bootstrap, seed, **options):
        try:
            campaign_obj = Campaign.objects.get(slug=campaign)
        except Campaign.DoesNotExist:
            raise CommandError(f"no campaign {campaign!r}") from None
        # Each round is an array over every unit: 10**11 rounds asked numpy for terabytes.
        if not 0 <= bootstrap <= MAX_BOOT:
            raise CommandError(f"--bootstrap must be from 0 to {MAX_BOOT:,}")
        if seed < 0:
            raise CommandError("--seed must be >= 0")
        report = campaign_report(campaign=campaign_obj, n_boot=bootstrap, seed=seed)
        self.stdout.write(report_json(report))
