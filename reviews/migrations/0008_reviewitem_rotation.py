"""Each item's presented-order class, random and balanced, instead of one derived from its id.

Items with assignments keep the class their id gave them (rotation = id mod 2n is the old
rule), so the reviewers still to come on them see orders different from those already shown.
The others get the 2n classes in equal shares per campaign, in random order.
"""

import random

from django.db import migrations, models
from django.db.models import Count, Exists, OuterRef


def assign(apps, schema_editor):
    ReviewItem = apps.get_model("reviews", "ReviewItem")
    Assignment = apps.get_model("reviews", "Assignment")
    rng = random.SystemRandom()
    items = ReviewItem.objects.annotate(
        n=Count("outputs"), started=Exists(Assignment.objects.filter(item_id=OuterRef("pk")))
    ).values_list("pk", "campaign_id", "n", "started")
    fresh: dict[tuple[int, int], list[int]] = {}
    changed = []
    for pk, campaign_id, n, started in items.iterator(chunk_size=2000):
        classes = 2 * max(n, 1)
        if started:
            changed.append(ReviewItem(pk=pk, rotation=pk % classes))
        else:
            fresh.setdefault((campaign_id, classes), []).append(pk)
    for (_, classes), pks in fresh.items():
        rotations = [i % classes for i in range(len(pks))]
        rng.shuffle(rotations)
        changed.extend(ReviewItem(pk=pk, rotation=r) for pk, r in zip(pks, rotations))
    ReviewItem.objects.bulk_update(changed, ["rotation"], batch_size=2000)


class Migration(migrations.Migration):
    dependencies = [("reviews", "0007_offer_index_with_id")]

    operations = [
        migrations.AddField(
            model_name="reviewitem",
            name="rotation",
            field=models.PositiveSmallIntegerField(
                default=0,
                help_text="random and balanced over the campaign: which order each slot shows "
                "(reviews.services.presented_order)",
            ),
        ),
        migrations.RunPython(assign, migrations.RunPython.noop),
    ]
