"""Alert deliveries get an id of their own (X-Evalsite-Delivery), a due time for the next try,
and a count of resends. Existing rows each get a fresh id (added nullable, filled, then made
unique and required: a callable default would give every existing row the same value)."""

import uuid

from django.db import migrations, models


def fill_ids(apps, schema_editor):
    AlertDelivery = apps.get_model("tasks", "AlertDelivery")
    for pk in AlertDelivery.objects.values_list("pk", flat=True):
        AlertDelivery.objects.filter(pk=pk).update(delivery_id=uuid.uuid4())


class Migration(migrations.Migration):
    dependencies = [
        ("tasks", "0007_monitor_pause_archive_error"),
    ]

    operations = [
        migrations.AddField(
            model_name="alertdelivery",
            name="delivery_id",
            field=models.UUIDField(null=True, editable=False),
        ),
        migrations.RunPython(fill_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="alertdelivery",
            name="delivery_id",
            field=models.UUIDField(default=uuid.uuid4, unique=True, editable=False),
        ),
        migrations.AddField(
            model_name="alertdelivery",
            name="resends",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="alertdelivery",
            name="next_attempt_at",
            field=models.DateTimeField(null=True, blank=True),
        ),
        migrations.AddField(
            model_name="alertdelivery",
            name="last_attempt_at",
            field=models.DateTimeField(null=True, blank=True),
        ),
    ]
