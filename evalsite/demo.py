"""Demo accounts. `manage.py demo` calls each app's demo step in order."""

from django.contrib.auth import get_user_model

from evalsite.services import UserExists, user_create

DEMO_USERS = [
    ("admin", ["admin"], "admin-demo-pass"),
    ("lead", ["lead"], "lead-demo-pass"),
    ("reviewer1", ["reviewer"], "reviewer1-demo-pass"),
    ("reviewer2", ["reviewer"], "reviewer2-demo-pass"),
    ("arbiter", ["arbiter"], "arbiter-demo-pass"),
]


def load_users(created: set[str] | None = None) -> dict:
    """The demo accounts, created the first time only: `./dev run` calls this on every start,
    and an account that exists is left exactly as its people made it (a changed password,
    roles taken away or given, deactivated). No API token is made: the demo needs none.
    Returns {username: user}; the names created now are added to `created`."""
    User = get_user_model()
    users = {}
    for username, roles, password in DEMO_USERS:
        try:
            users[username] = user_create(
                username=username, roles=roles, password=password, email="", by="demo"
            )
            if created is not None:
                created.add(username)
        except UserExists:
            users[username] = User.objects.get(username__iexact=username)
    return users
