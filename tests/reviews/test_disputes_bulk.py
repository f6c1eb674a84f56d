"""reviews/disputes/rules.py `items_settle` (the review-record import's settle, in bulk) stores what
`item_settle` stores item by item: state, reasons, final outcome and arbitrations."""

from django.test import TestCase

from reviews.disputes.rules import item_settle, items_settle
from reviews.models import Arbitration, ReviewItem
from tests.factories import (
    CampaignFactory,
    ContenderFactory,
    ReviewItemFactory,
    UserFactory,
    review_create,
)


def snapshot(items) -> list:
    rows = []
    for item in ReviewItem.objects.filter(pk__in=[i.pk for i in items]).order_by("pk"):
        arbitration = Arbitration.objects.filter(item=item).values_list("state", "reasons").first()
        rows.append((item.state, item.dispute_reasons, item.final, arbitration))
    return rows


class ItemsSettleTests(TestCase):
    def setUp(self):
        self.campaign = CampaignFactory(
            rubric=[{"key": "accuracy", "min": 1, "max": 5, "max_gap": 1}], flags_dispute=True
        )
        self.campaign.contenders.set([ContenderFactory(), ContenderFactory()])
        self.ann, self.bob = UserFactory(), UserFactory()
        self.items = [ReviewItemFactory(campaign=self.campaign) for _ in range(5)]
        cases = [
            ((4, 4), (5, 4), "a", "a", [], []),  # agreed
            ((1, 4), (5, 4), "a", "a", [], []),  # a score apart by 4: disputed
            ((3, 3), (3, 3), "a", "b", [], []),  # preferences differ: disputed
            ((2, 2), (2, 2), "tie", "tie", ["unsafe"], []),  # a flag by one: disputed
            ((None, 3), (None, 3), "both_bad", "both_bad", [], []),  # agreed N/A
        ]
        for item, (ann, bob, pref_a, pref_b, flags_a, flags_b) in zip(
            self.items, cases, strict=True
        ):
            first, second = item.outputs.order_by("pk")
            choice = {"a": first, "b": second, "tie": "tie", "both_bad": "both_bad"}
            review_create(
                item,
                self.ann,
                scores={first: {"accuracy": ann[0]}, second: {"accuracy": ann[1]}},
                preference=choice[pref_a],
                flags={first: flags_a} if flags_a else None,
            )
            review_create(
                item,
                self.bob,
                scores={first: {"accuracy": bob[0]}, second: {"accuracy": bob[1]}},
                preference=choice[pref_b],
                flags={first: flags_b} if flags_b else None,
            )

    def test_it_stores_what_item_settle_stores(self):
        items = list(ReviewItem.objects.filter(pk__in=[i.pk for i in self.items]))
        assert items_settle(items) == 5
        bulk = snapshot(self.items)
        ReviewItem.objects.filter(pk__in=[i.pk for i in self.items]).update(
            state="open", dispute_reasons=[], final={}
        )
        Arbitration.objects.all().delete()
        for item in ReviewItem.objects.filter(pk__in=[i.pk for i in self.items]):
            item_settle(item)
        assert snapshot(self.items) == bulk
        assert [row[0] for row in bulk] == ["agreed", "disputed", "disputed", "disputed", "agreed"]
        assert [row[3] is not None for row in bulk] == [False, True, True, True, False]

    def test_it_updates_an_open_arbitration_and_drops_a_stale_one(self):
        items = list(ReviewItem.objects.filter(pk__in=[i.pk for i in self.items]))
        agreed, disputed = items[0], items[1]
        Arbitration.objects.create(item=agreed, reasons=[{"part": "stale"}])
        Arbitration.objects.create(item=disputed, reasons=[{"part": "stale"}])
        items_settle(items)
        assert not Arbitration.objects.filter(item=agreed).exists()
        reasons = Arbitration.objects.get(item=disputed).reasons
        assert reasons and reasons[0]["part"] == "accuracy"
        assert Arbitration.objects.count() == 3
