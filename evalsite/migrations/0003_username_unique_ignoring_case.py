"""One account per name regardless of case, enforced by the database.

The users page and the API already refuse "Alice" when "alice" exists, but two admins creating
the two names at the same moment would both pass that check; this index lets only one of them
in. SQLite and PostgreSQL both index an expression.
"""

from django.db import migrations

INDEX = "auth_user_username_lower_uniq"


def refuse_existing_case_twins(apps, schema_editor):
    User = apps.get_model("auth", "User")
    seen: dict[str, str] = {}
    twins = []
    for name in User.objects.order_by("id").values_list("username", flat=True):
        if (first := seen.setdefault(name.lower(), name)) != name:
            twins.append(f"{first} / {name}")
    if twins:
        raise RuntimeError(
            "these accounts differ only in the case of their names: "
            + ", ".join(twins)
            + ". Rename or delete one of each pair (python manage.py shell), then migrate again."
        )


class Migration(migrations.Migration):
    dependencies = [
        ("evalsite", "0002_role_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [
        migrations.RunPython(refuse_existing_case_twins, migrations.RunPython.noop),
        migrations.RunSQL(
            f"CREATE UNIQUE INDEX {INDEX} ON auth_user (lower(username))",
            f"DROP INDEX {INDEX}",
        ),
    ]
