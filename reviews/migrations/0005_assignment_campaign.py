import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# Every existing assignment takes its item's campaign (an item never changes campaign).
BACKFILL = (
    "UPDATE reviews_assignment SET campaign_id = "
    "(SELECT i.campaign_id FROM reviews_reviewitem i WHERE i.id = reviews_assignment.item_id)"
)


class Migration(migrations.Migration):

    dependencies = [
        ('reviews', '0004_arbitration_claimed_at'),
        ('tasks', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='assignment',
            name='campaign',
            field=models.ForeignKey(db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='tasks.campaign'),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
        migrations.AlterField(
            model_name='assignment',
            name='campaign',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='tasks.campaign'),
        ),
        migrations.RemoveIndex(
            model_name='assignment',
            name='reviews_ass_reviewe_4ce5c6_idx',
        ),
        migrations.AddIndex(
            model_name='assignment',
            index=models.Index(fields=['reviewer', 'campaign', 'state'], name='assignment_reviewer_idx'),
        ),
    ]
