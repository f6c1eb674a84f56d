"""Items settled by a review-record import while they waited for their generations were left
`ready = False`, so the report counted them as neither ready nor needing reviews. An item that
is no longer waiting is ready (review_items_sync sets both together); repair those."""

from django.db import migrations


def repair(apps, schema_editor):
    ReviewItem = apps.get_model("reviews", "ReviewItem")
    ReviewItem.objects.filter(ready=False).exclude(state="waiting").update(ready=True)


class Migration(migrations.Migration):
    dependencies = [("reviews", "0008_reviewitem_rotation")]

    operations = [migrations.RunPython(repair, migrations.RunPython.noop)]
