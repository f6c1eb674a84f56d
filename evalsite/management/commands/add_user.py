from django.core.management.base import BaseCommand, CommandError

from evalsite.roles import ROLES
from evalsite.services import user_create_or_update, user_problems


class Command(BaseCommand):
    help = "Create a user (or add roles to an existing one) and print a new API token."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument(
            "--role", action="append", choices=ROLES, required=True, help="repeat for several roles"
        )
        parser.add_argument("--password", help="omit to create an API-only user without a password")
        parser.add_argument("--email", default="")

    def handle(self, name, role, password, email, **options):
        problems = user_problems(username=name, roles=role, password=password, email=email)
        if problems:
            raise CommandError("; ".join(problems))
        try:
            user, token = user_create_or_update(
                username=name, roles=role, password=password, email=email
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        # Only the token on stdout, so a script can take it: TOKEN=$(manage.py add_user ...).
        held = user.groups.filter(name__in=ROLES).values_list("name", flat=True)
        self.stderr.write(f"user {user.username} roles={','.join(sorted(held))}; API token:")
        self.stdout.write(token)
