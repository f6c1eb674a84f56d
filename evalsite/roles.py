"""Roles are Django groups. Views ask here; templates only see the resulting nav flags."""

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

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
