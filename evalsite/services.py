from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from .models import ApiToken
from .roles import ROLES


@transaction.atomic
def user_create_or_update(
    *, username: str, roles: list[str], password: str | None = None, email: str = ""
) -> tuple[object, str]:
    """Create (or update the roles and password of) a user; returns (user, new API token)."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(
            f"unknown role(s): {', '.join(sorted(unknown))}; choose from {', '.join(ROLES)}"
        )
    User = get_user_model()
    user, _ = User.objects.get_or_create(username=username, defaults={"email": email})
    if password:
        user.set_password(password)
    elif not user.has_usable_password():
        user.set_unusable_password()
    user.save()
    groups = [Group.objects.get_or_create(name=r)[0] for r in roles]
    user.groups.add(*groups)
    return user, ApiToken.issue(user, label="add_user")
