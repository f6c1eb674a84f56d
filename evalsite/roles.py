"""Roles are Django groups. Views ask here; templates only see the resulting nav flags."""

from collections.abc import Callable
from functools import wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import connection

ADMIN, LEAD, REVIEWER, ARBITER = "admin", "lead", "reviewer", "arbiter"
ROLES = (ADMIN, LEAD, REVIEWER, ARBITER)


def roles_of(user) -> set[str]:
    if not user.is_authenticated or not user.is_active:
        return set()
    cached = getattr(user, "_evalsite_roles", None)
    if cached is None:
        cached = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        if user.is_superuser:
            cached.add(ADMIN)
        user._evalsite_roles = cached
    return cached


def user_with_roles(
    *, where: str, params: list, join: str = "", extra: str = "", extra_params: list = ()
):
    """The active user matching `where` (alias `u`), with their roles, in one raw query.

    Every request loads its user and asks for their roles: one round trip instead of two,
    and no ORM query building on the hot path. `join`/`extra` add a table and columns (the
    API token). Roles come as one row per group (LEFT JOINs), gathered here.
    """
    user_model = get_user_model()
    qn = connection.ops.quote_name
    membership = user_model.groups.through._meta.db_table
    cols = ", ".join(f"u.{qn(f.column)}" for f in user_model._meta.concrete_fields)
    sql = (
        f"SELECT {cols}{extra}, g.name AS role_name FROM {qn(user_model._meta.db_table)} u "
        f"{join} LEFT JOIN {qn(membership)} ug ON ug.user_id = u.id "
        f"LEFT JOIN {qn(Group._meta.db_table)} g ON g.id = ug.group_id "
        f"AND g.name IN ({', '.join(['%s'] * len(ROLES))}) WHERE u.is_active AND ({where})"
    )
    rows = list(user_model.objects.raw(sql, [*extra_params, *ROLES, *params]))
    if not rows:
        return None
    user = rows[0]
    user._evalsite_roles = {row.role_name for row in rows if row.role_name}
    if user.is_superuser:
        user._evalsite_roles.add(ADMIN)
    return user


class RolesModelBackend(ModelBackend):
    """Django's ModelBackend; the session user is loaded together with their roles."""

    def get_user(self, user_id):
        return user_with_roles(where="u.id = %s", params=[user_id])


def has_role(user, *roles: str) -> bool:
    return bool(roles_of(user) & set(roles))


def role_required(*roles: str) -> Callable:
    """Deny by default: anonymous -> login page, wrong role -> 403."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not has_role(request.user, *roles):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        wrapped.allowed_roles = roles
        return wrapped

    return decorator


def nav_context(request) -> dict:
    user_roles = roles_of(request.user) if hasattr(request, "user") else set()
    return {
        "nav": {
            "admin": ADMIN in user_roles,
            "lead": bool(user_roles & {ADMIN, LEAD}),
            "reviewer": REVIEWER in user_roles,
            "arbiter": ARBITER in user_roles,
        }
    }
