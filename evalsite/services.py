import logging
import math
import secrets
from datetime import datetime

from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from evalsite.models import ApiToken, PasswordCheckFailures
from evalsite.roles import ADMIN, ARBITER, REVIEWER, ROLES, roles_of
from reviews.arbitration.services import arbiter_arbitrations_release
from reviews.review import reviewer_leases_release

# Who changed whose account: one line per change, never a secret.
audit = logging.getLogger("evalsite.audit")
log = logging.getLogger(__name__)


def email_problem(email: object) -> str | None:
    if not isinstance(email, str):
        return "a string"
    limit = get_user_model()._meta.get_field("email").max_length
    if len(email) > limit:
        return f"at most {limit} characters"
    if email:
        try:
            validate_email(email)
        except ValidationError:
            return "not an email address"
    return None


def user_problems(
    *, username: object, roles: object, password: object = None, email: object = ""
) -> list[str]:
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
    if not isinstance(roles, list | tuple) or not roles:
        problems.append(f"roles: required, one or more of {', '.join(ROLES)}")
    elif unknown := [str(r) for r in roles if r not in ROLES]:
        problems.append(f"roles: unknown {', '.join(unknown)}; choose from {', '.join(ROLES)}")
    if password is not None:
        if not isinstance(password, str):
            problems.append("password: a string")
        else:
            try:
                validate_password(password)
            except ValidationError as exc:
                problems += [f"password: {m}" for m in exc.messages]
    if problem := email_problem(email):
        problems.append(f"email: {problem}")
    return problems


@transaction.atomic
def user_create_or_update(
    *,
    username: str,
    roles: list[str],
    password: str | None = None,
    email: str = "",
) -> tuple[object, str]:
    """Create (or update the roles and password of) a user; returns (user, new API token)."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(
            f"unknown role(s): {', '.join(sorted(unknown))}; choose from {', '.join(ROLES)}"
        )
    User = get_user_model()
    # The name as written, else one that differs only in case (never a second "Alice").
    user = (
        User.objects.filter(username=username).first()
        or User.objects.filter(username__iexact=username).first()
        or User.objects.create(username=username, email=email)
    )
    if password:
        user.set_password(password)
    elif not user.has_usable_password():
        user.set_unusable_password()
    user.save()
    groups = [Group.objects.get_or_create(name=r)[0] for r in roles]
    user.groups.add(*groups)
    return user, ApiToken.issue(user, label="add_user")


class UserChangeRefused(Exception):
    """A change the users page refuses, with the reason to show."""


class UserExists(Exception):
    pass


def user_create(
    *, username: str, roles: list[str], password: str | None, email: str, by: User
) -> User:
    """A new user (never an existing one changed: two admins creating the same name at once get
    one account and one refusal). A name that differs from an existing one only in case is
    refused too: "Alice" and "alice" would be two people to the site and one to everyone
    else. No password makes an API-only account."""
    User = get_user_model()
    existing = User.objects.filter(username__iexact=username).values_list("username", flat=True)
    if existing:
        raise UserExists(existing[0])
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, email=email, password=password)
            user.groups.add(*(Group.objects.get_or_create(name=r)[0] for r in roles))
    except IntegrityError:
        # Someone created the name, or a case twin (a unique index on lower(username)), since
        # the check above.
        raise UserExists(existing.first() or username) from None
    audit.info("%s created user %s with roles %s", by, username, ",".join(sorted(roles)))
    return user


def password_generate() -> str:
    # 16 URL-safe characters (96 bits): passes the validators, and reads out over a call.
    return secrets.token_urlsafe(12)


def user_update(
    *, user: User, by: User, roles: list[str], email: str, is_active: bool
) -> dict[str, int]:
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
        ended = user.is_active and not is_active
        user.email, user.is_active = email, is_active
        if ended:
            # Ended, not paused: reactivating the account must not revive an old session or
            # token (it may have been deactivated because it leaked). A new password and new
            # tokens are needed to use it again.
            user.set_unusable_password()
            ApiToken.objects.filter(user=user).delete()
        user.save(update_fields=["email", "is_active", "password"])
        user.groups.remove(*Group.objects.filter(name__in=set(ROLES) - set(roles)))
        user.groups.add(*(Group.objects.get_or_create(name=r)[0] for r in roles))
        user._evalsite_roles = None  # roles_of reads them again
        released = {"leases": 0, "disputes": 0}
        if REVIEWER in before - after:
            released["leases"] = reviewer_leases_release(reviewer=user)
        if ARBITER in before - after:
            released["disputes"] = arbiter_arbitrations_release(arbiter=user)
    audit.info(
        "%s set user %s: roles %s, %s",
        by,
        user,
        ",".join(sorted(roles)) or "none",
        "active" if is_active else "deactivated",
    )
    return released


def user_password_set(*, user: User, by: User) -> str:
    """A generated password, returned to be shown once. Every session the user has open ends
    with the old password (Django's session hash)."""
    password = password_generate()
    user.set_password(password)
    user.save(update_fields=["password"])
    # They may have been locked out of the password change by guessing at the forgotten one.
    PasswordCheckFailures.objects.filter(user=user).delete()
    audit.info("%s set a new password for %s", by, user)
    return password


def may_issue_token(*, user: User, by: User) -> bool:
    """Tokens are issued by their owner, or by an admin for an account nobody logs in to (a
    script's). An admin holding a reviewer's token could submit 'blind' reviews in their name
    while seeing the models. A deactivated account gets none: the token would not work."""
    return user.pk == by.pk or (user.is_active and not user.has_usable_password())


def user_token_issue(*, user: User, by: User) -> str:
    if not user.is_active:
        raise UserChangeRefused(
            f"{user.get_username()} is deactivated: a token would not work; reactivate them first."
        )
    if not may_issue_token(user=user, by=by):
        raise UserChangeRefused(
            f"{user.get_username()} logs in with a password: they issue their own tokens on "
            "their account page."
        )
    label = "self-service" if user.pk == by.pk else f"issued by {by.get_username()}"
    token = ApiToken.issue(user, label=label)
    audit.info("%s issued an API token for %s", by, user)
    return token


def user_tokens_revoke(*, user: User, by: User) -> int:
    n = ApiToken.objects.filter(user=user).delete()[0]
    audit.info("%s revoked %d API token(s) of %s", by, n, user)
    return n


class PasswordChecksLocked(Exception):
    def __init__(self, until: datetime):
        super().__init__(f"locked until {until.isoformat()}")
        self.until = until

    def minutes_left(self) -> int:
        return max(1, math.ceil((self.until - timezone.now()).total_seconds() / 60))


def user_password_check(*, user: User, password: str) -> bool:
    """Whether `password` is `user`'s current one, for the password change page, throttled as
    the login is: after AXES_FAILURE_LIMIT wrong ones, each within AXES_COOLOFF_TIME of the last,
    raises PasswordChecksLocked (checking nothing) until the cool-off after the last has passed.
    Axes never sees this check (PasswordChangeForm calls user.check_password), and its own
    counter is per username and address: a stolen session guesses from any address it likes.
    A right password clears the count: whoever typed it knows it already."""
    limit, cool_off = settings.AXES_FAILURE_LIMIT, get_cool_off()
    now = timezone.now()
    with transaction.atomic():
        failures, _ = PasswordCheckFailures.objects.select_for_update().get_or_create(
            user=user, defaults={"last_failure_at": now}
        )
        if failures.last_failure_at + cool_off <= now:
            failures.failures = 0  # the earlier ones have cooled off
        if failures.failures >= limit:
            # Refused, not counted: the cool-off runs from the last password actually checked.
            # The lock does not end the user's sessions: the session holder has the account
            # already and the lock keeps the password from them, while ending sessions would
            # let an owner who mistypes log themselves out everywhere. Admins end sessions
            # ("Generate a new password", deactivating) when a session was stolen.
            raise PasswordChecksLocked(failures.last_failure_at + cool_off)
        # Counted as wrong before checking, under the row lock: guesses sent all at once each
        # take a place, so no burst gets more than `limit` checks.
        failures.failures += 1
        failures.last_failure_at = now
        failures.save()
    if user.check_password(password):
        PasswordCheckFailures.objects.filter(user=user).delete()
        return True
    if failures.failures == limit:
        log.warning(
            "Locking the password change of %s for %s after %d wrong current passwords.",
            user,
            cool_off,
            limit,
        )
    return False
