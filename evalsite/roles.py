"""Roles are Django groups. Views ask here; templates only see the resulting nav flags."""

from collections.abc import Callable
from functools import lru_cache, wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import JsonResponse

from . import rawrows

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
    API token), set as attributes of the user. Roles come as one row per group (LEFT JOINs).
    """
    user_model = get_user_model()
    with connection.cursor() as cursor:
        cursor.execute(_user_sql(join, extra, where), [*extra_params, *ROLES, *params])
        rows = cursor.fetchall()
        names = [col[0] for col in cursor.description]
    if not rows:
        return None
    width = len(rawrows.fields_of(user_model))
    user = rawrows.instance(user_model, rows[0][:width])
    for name, value in zip(names[width:-1], rows[0][width:-1], strict=True):
        setattr(user, name, value)
    user._evalsite_roles = {row[-1] for row in rows if row[-1]}
    if user.is_superuser:
        user._evalsite_roles.add(ADMIN)
    return user


@lru_cache(maxsize=16)
def _user_sql(join: str, extra: str, where: str) -> str:
    user_model = get_user_model()
    qn = connection.ops.quote_name
    membership = user_model.groups.through._meta.db_table
    return (
        f"SELECT {rawrows.columns('u', user_model)}{extra}, g.name FROM "
        f"{rawrows.table(user_model)} u {join} LEFT JOIN {qn(membership)} ug ON ug.user_id = u.id "
        f"LEFT JOIN {qn(Group._meta.db_table)} g ON g.id = ug.group_id "
        f"AND g.name IN ({', '.join(['%s'] * len(ROLES))}) WHERE u.is_active AND ({where})"
    )


class RolesModelBackend(ModelBackend):
    """Django's ModelBackend; the session user is loaded together with their roles."""

    def get_user(self, user_id):
        return user_with_roles(where="u.id = %s", params=[user_id])


def has_role(user, *roles: str) -> bool:
    return bool(roles_of(user) & set(roles))


SESSION_ENDED = (
    "Your session has ended, so this was not saved. Log in again in a new tab, then come back "
    "and send it again: what you entered is still on this page."
)


def login_page(request):
    """Where an anonymous request goes: the login page, or, for a request a page's script sent
    (htmx, or a fetch that asks for JSON), a 401 the script explains. A redirect would be
    followed silently and the login page pasted where the answer belongs."""
    if request.headers.get("HX-Request") or "json" in request.headers.get("Accept", ""):
        return JsonResponse({"error": "not logged in", "message": SESSION_ENDED}, status=401)
    return redirect_to_login(request.get_full_path())


def login_required(view):
    """Django's login_required, but answering a page's script with a 401 (login_page)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return login_page(request)
        return view(request, *args, **kwargs)

    return wrapped


def role_required(*roles: str) -> Callable:
    """Deny by default: anonymous -> login page (login_page), wrong role -> 403."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return login_page(request)
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
