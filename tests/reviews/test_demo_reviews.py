"""The reviews demo step: real claims, submits and arbitrations leave a campaign worth showing."""

from io import StringIO

from django.test import TestCase

from evalsite.demo import load_users
from reviews import demo
from reviews.models import Arbitration, Assignment, Review, ReviewItem
from reviews.report.campaign import campaign_report
from reviews.review.readiness import review_items_sync
from tasks.models import Contender, Generation
from tests.reviews.test_records import make_campaign


class DemoReviewsTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = load_users()
        contenders = [
            Contender.objects.create(name=n, provider="imported")
            for n in ("alpha", "beta", "gamma")
        ]
        cls.campaign = make_campaign(slug="support-demo", contenders=contenders, n_tasks=12)
        cls.campaign.status = "reviewing"
        cls.campaign.save()
        Generation.objects.bulk_create(
            Generation(
                campaign=cls.campaign,
                task=t,
                contender=c,
                sample_index=0,
                status="done",
                output=f"{t} {c}",
            )
            for t in cls.campaign.testset.tasks.all()
            for c in contenders
        )
        review_items_sync(campaign=cls.campaign)

    def load(self) -> str:
        out = StringIO()
        demo.load({"users": self.users}, out)
        return out.getvalue()

    def test_it_leaves_agreed_disputed_resolved_and_unreviewed_items(self):
        message = self.load()
        assert "Demo reviews on support-demo" in message, message
        states = list(
            ReviewItem.objects.filter(campaign=self.campaign).values_list("state", flat=True)
        )
        assert states.count("agreed") >= 3
        assert states.count("resolved") >= 1 and states.count("disputed") >= 1
        assert states.count("open") >= 1
        assert Arbitration.objects.filter(state="open").exists()
        # Both demo reviewers still have work: items they have not reviewed are open.
        for name in ("reviewer1", "reviewer2"):
            mine = set(
                Review.objects.filter(reviewer=self.users[name]).values_list("item_id", flat=True)
            )
            left = ReviewItem.objects.filter(campaign=self.campaign, state="open").exclude(
                pk__in=mine
            )
            assert left.exists(), name
        # Nothing is left half-claimed, and every review went through an assignment.
        assert not Assignment.objects.filter(state="active").exists()
        assert not Review.objects.filter(assignment__isnull=True).exists()

    def test_it_gives_every_dashboard_real_figures(self):
        self.load()
        report = campaign_report(campaign=self.campaign)
        assert all(row["rating"] is not None for row in report["leaderboard"])
        assert all(a["alpha"] is not None for a in report["agreement"].values())
        assert report["position_bias"]["n"] > 0
        assert set(report["reviewers"]) == {"reviewer1", "reviewer2"}
        assert report["disputes"]["disputed_items"] >= 2
        assert any(v for per in report["quality"]["by_category"].values() for v in per.values())

    def test_it_is_idempotent(self):
        self.load()
        before = (
            Review.objects.count(),
            Arbitration.objects.filter(state="resolved").count(),
            list(ReviewItem.objects.order_by("pk").values_list("state", flat=True)),
        )
        assert "already present" in self.load()
        after = (
            Review.objects.count(),
            Arbitration.objects.filter(state="resolved").count(),
            list(ReviewItem.objects.order_by("pk").values_list("state", flat=True)),
        )
        assert before == after
