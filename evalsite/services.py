from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from .models import ApiToken
from .roles import ROLES


def user_problems(*, username, roles, password=None, email="") -> list[str]:
    """Everything wrong with a user to create ("field: message"), for the command and the API
    alike: the username's own rules, known roles, the password validators, the email's type."""
    User = get_user_model()
    problems = []
    if not isinstance(username, str) or not username.strip():
        problems.append("username: required, a non-empty string")
    else:
        try:
            User._meta.get_field("username").run_validators(username)
        except ValidationError as exc:
            problems += [f"username: {m}" for m in exc.messages]
    if not isinstance(roles, list | tuple) or not roles or not all(r in ROLES for r in roles):
        problems.append(f"roles: required, one or more of {', '.join(ROLES)}")
    if password is not None:
        if not isinstance(password, str):
            problems.append("password: a string")
        else:
            try:
                validate_password(password)
            except ValidationError as exc:
                problems += [f"password: {m}" for m in exc.messages]
    if not isinstance(email, str):
        problems.append("email: a string")
    return problems


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
