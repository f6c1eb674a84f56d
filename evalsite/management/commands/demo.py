from importlib import import_module

from django.core.management.base import BaseCommand

from evalsite.demo import DEMO_USERS, load_users

# Each app contributes one step: load(users, stdout) -> dict of what it made (passed on).
# tasks.demo.agents: the tool-use and conversation campaign (its own test set, so the support
# demo's stays as it is).
DEMO_STEPS = [
    "tasks.demo.testsets",
    "tasks.demo.agents",
    "tasks.demo.vision",
    "reviews.demo",
    "reviews.judges.demo",
]


class Command(BaseCommand):
    help = "Load demo users, a demo test set and a reviewable demo campaign (idempotent)."

    def handle(self, **options):
        created: set[str] = set()
        context = {"users": load_users(created)}
        for dotted in DEMO_STEPS:
            try:
                module = import_module(dotted)
            except ModuleNotFoundError as exc:
                if exc.name != dotted:
                    raise
                continue
            context.update(module.load(context, self.stdout) or {})
        # The dashboards' reports, computed now rather than on the first look at them.
        from reviews.report.cache import reports_warm

        reports_warm()
        self.stdout.write(self.style.SUCCESS("Demo data loaded. Logins:"))
        for username, roles, password in DEMO_USERS:
            # An account from an earlier start is as its people left it: its password may
            # have changed, so the published one is not shown as if it still held.
            shown = password if username in created else "(as it was left)"
            self.stdout.write(f"  {username:<10} {shown:<22} ({', '.join(roles)})")
