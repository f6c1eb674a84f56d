"""Demo accounts. `manage.py demo` calls each app's demo step in order."""

from .services import user_create_or_update

DEMO_USERS = [
    ("admin", ["admin"], "admin-demo-pass"),
    ("lead", ["lead"], "lead-demo-pass"),
    ("reviewer1", ["reviewer"], "reviewer1-demo-pass"),
    ("reviewer2", ["reviewer"], "reviewer2-demo-pass"),
    ("arbiter", ["arbiter"], "arbiter-demo-pass"),
]


def load_users() -> dict:
    users = {}
    for username, roles, password in DEMO_USERS:
        user, _ = user_create_or_update(username=username, roles=roles, password=password)
        users[username] = user
    return users
