"""Roles are Django groups. Views ask here; templates only see the resulting nav flags."""

from collections.abc import Callable
from functools import wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import F, FilteredRelation, Q, QuerySet
from django.http import JsonResponse

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


def user_with_roles(users: QuerySet):
    """The active user of `users` (the user model's rows, filtered), with their roles read in
    the same query (one row per role group; every request needs both), or None."""
    rows = list(
        users.filter(is_active=True).annotate(
            role_groups=FilteredRelation("groups", condition=Q(groups__name__in=ROLES)),
            role=F("role_groups__name"),
        )
    )
    if not rows:
        return None
    user = rows[0]
    user._evalsite_roles = {row.role for row in rows if row.role}
    if user.is_superuser:
        user._evalsite_roles.add(ADMIN)
    return user


class RolesModelBackend(ModelBackend):
    """Django's ModelBackend; the session user is loaded together with their roles."""

    def get_user(self, user_id):
        return user_with_roles(get_user_model().objects.filter(pk=user_id))


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
