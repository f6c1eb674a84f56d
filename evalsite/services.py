import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q

from reviews.arbitration import arbiter_arbitrations_release
from reviews.services import reviewer_leases_release

from .models import ApiToken
from .roles import ADMIN, ARBITER, REVIEWER, ROLES, roles_of


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
    *,
    username: str,
    roles: list[str],
    password: str | None = None,
    email: str = "",
    with_token: bool = True,
) -> tuple[object, str | None]:
    """Create (or update the roles and password of) a user; returns (user, new API token or
    None without `with_token`)."""
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
    return user, ApiToken.issue(user, label="add_user") if with_token else None


class UserChangeRefused(Exception):
    """A change the users page refuses, with the reason to show."""


def password_generate() -> str:
    # 16 URL-safe characters (96 bits): passes the validators, and reads out over a call.
    return secrets.token_urlsafe(12)


def user_update(*, user, by, roles: list[str], email: str, is_active: bool) -> dict[str, int]:
    """An admin sets a user's roles, email and whether they may log in.

    Nobody can take away their own admin role or account, and the last active admin stays
    one: otherwise nobody could manage users from the site any more. Work a user can no longer
    finish goes back to the queues at once instead of waiting for its lease to lapse: review
    leases when they lose the reviewer role or the account, disputes likewise for arbiters.
    Returns {"leases": n, "disputes": n} released."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown role(s): {', '.join(sorted(unknown))}")
    before = roles_of(user) if user.is_active else set()
    after = set(roles) | ({ADMIN} if user.is_superuser else set()) if is_active else set()
    with transaction.atomic():
        if ADMIN in before - after:
            if user.pk == by.pk:
                raise UserChangeRefused(
                    "You cannot take away your own admin role or deactivate your own account: "
                    "another admin must."
                )
            # Two admins demoting each other at once: the group's row lock orders them.
            Group.objects.select_for_update().get_or_create(name=ADMIN)
            others = get_user_model().objects.filter(
                Q(groups__name=ADMIN) | Q(is_superuser=True), is_active=True
            )
            if not others.exclude(pk=user.pk).exists():
                raise UserChangeRefused(
                    f"{user.get_username()} is the last admin: make someone else an admin first."
                )
        user.email, user.is_active = email, is_active
        user.save(update_fields=["email", "is_active"])
        user.groups.remove(*Group.objects.filter(name__in=set(ROLES) - set(roles)))
        user.groups.add(*(Group.objects.get_or_create(name=r)[0] for r in roles))
        user._evalsite_roles = None  # roles_of reads them again
        released = {"leases": 0, "disputes": 0}
        if REVIEWER in before - after:
            released["leases"] = reviewer_leases_release(reviewer=user)
        if ARBITER in before - after:
            released["disputes"] = arbiter_arbitrations_release(arbiter=user)
    return released


def user_password_set(*, user, password: str | None = None) -> str:
    """A new password (the given one, or a generated one), returned to be shown once. Every
    session the user has open ends with the old password (Django's session hash)."""
    password = password or password_generate()
    user.set_password(password)
    user.save(update_fields=["password"])
    return password


def user_token_issue(*, user, label: str = "users page") -> str:
    return ApiToken.issue(user, label=label)


def user_tokens_revoke(*, user) -> int:
    return ApiToken.objects.filter(user=user).delete()[0]
