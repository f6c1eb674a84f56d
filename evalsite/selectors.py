from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.core.paginator import Page, Paginator
from django.db.models import Count, Max, Prefetch, Q
from django.db.models.functions import Lower

from evalsite.models import ApiToken
from evalsite.roles import ADMIN, ROLES

USERS_PER_PAGE = 50


def user_rows(*, q: str = "", role: str = "", status: str = "", page: int | str = 1) -> Page:
    """The users page's table: one row per user with their roles, tokens and last activity.
    `role` "none" lists users without a role (imported judges, retired accounts); `status`
    "active" or "inactive"."""
    users = get_user_model().objects.order_by(Lower("username"), "username")
    if q:
        users = users.filter(Q(username__icontains=q) | Q(email__icontains=q))
    if role == "none":
        users = users.exclude(groups__name__in=ROLES).exclude(is_superuser=True)
    elif role == ADMIN:
        users = users.filter(Q(groups__name=ADMIN) | Q(is_superuser=True)).distinct()
    elif role in ROLES:
        users = users.filter(groups__name=role)
    if status in ("active", "inactive"):
        users = users.filter(is_active=status == "active")
    users = users.annotate(
        n_tokens=Count("api_tokens", distinct=True),
        token_used_at=Max("api_tokens__last_used_at"),
    ).prefetch_related(
        Prefetch("groups", queryset=Group.objects.filter(name__in=ROLES), to_attr="role_groups")
    )
    page = Paginator(users, USERS_PER_PAGE).get_page(page)
    order = {r: i for i, r in enumerate(ROLES)}
    for user in page.object_list:
        names = {g.name for g in user.role_groups} | ({ADMIN} if user.is_superuser else set())
        user.role_list = sorted(names, key=order.get)
        user.can_log_in = user.is_active and user.has_usable_password()
    return page


def user_tokens(*, user: User) -> list[ApiToken]:
    return list(ApiToken.objects.filter(user=user).order_by("-created_at"))
