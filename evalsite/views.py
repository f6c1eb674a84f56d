from django.contrib import messages
from django.contrib.auth import get_user_model, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from . import selectors
from .api import ApiError, api_endpoint, json_body
from .forms import UserForm
from .roles import ADMIN, ARBITER, LEAD, REVIEWER, ROLES, role_required, roles_of
from .services import (
    UserChangeRefused,
    password_generate,
    user_create_or_update,
    user_password_set,
    user_problems,
    user_token_issue,
    user_tokens_revoke,
    user_update,
)

HOME_BY_ROLE = [
    (ADMIN, "campaign_list"),
    (LEAD, "campaign_list"),
    (REVIEWER, "reviewer_home"),
    (ARBITER, "arbiter_home"),
]


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Send each role to the page it uses most."""
    user_roles = roles_of(request.user)
    for role, target in HOME_BY_ROLE:
        if role in user_roles:
            try:
                return redirect(target)
            except NoReverseMatch:
                continue
    return render(request, "evalsite/no_role.html")


def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


def error_404(request, exception=None):
    return render(request, "404.html", status=404)


def error_403(request, exception=None):
    return render(request, "403.html", status=403)


def error_500(request):
    return render(request, "500.html", status=500)


@api_endpoint(ADMIN, LEAD, REVIEWER, ARBITER, summary="The authenticated user and their roles.")
def whoami(request: HttpRequest) -> JsonResponse:
    return JsonResponse(
        {"username": request.user.get_username(), "roles": sorted(roles_of(request.user))}
    )


USER_BODY = {
    "application/json": {
        "schema": {
            "type": "object",
            "required": ["username", "roles"],
            "properties": {
                "username": {"type": "string"},
                "roles": {"type": "array", "items": {"type": "string", "enum": list(ROLES)}},
                "password": {"type": "string", "description": "omit for an API-only user"},
                "email": {"type": "string"},
            },
        }
    }
}


def user_json(user) -> dict:
    roles = {g.name for g in user.groups.all()} & set(ROLES)
    tokens = user.n_tokens if hasattr(user, "n_tokens") else user.api_tokens.count()
    return {
        "username": user.get_username(),
        "email": user.email,
        "roles": sorted(roles | ({ADMIN} if user.is_superuser else set())),
        "is_active": user.is_active,
        "last_login": user.last_login.isoformat() if user.last_login else None,
        "tokens": tokens,
    }


@api_endpoint(
    ADMIN,
    methods=("GET", "POST"),
    body=USER_BODY,
    summary="""List users (GET) or create one with roles and get their API token (POST, as
`manage.py add_user`).

GET: {"users": [{"username", "email", "roles", "is_active", "last_login", "tokens"}]}.
POST: 201 with {"username", "roles", "token"}. An existing username is 409: change it with
PATCH /api/v1/users/<username> (an admin's token cannot take over another account).""",
    responses={"200": "users", "201": "created", "400": "invalid", "409": "exists"},
)
def user_create(request: HttpRequest) -> JsonResponse:
    if request.method == "GET":
        users = (
            get_user_model()
            .objects.order_by("username")
            .annotate(n_tokens=Count("api_tokens"))
            .prefetch_related("groups")
        )
        return JsonResponse({"users": [user_json(u) for u in users]})
    data = json_body(request)
    User = get_user_model()
    username, roles = data.get("username"), data.get("roles")
    password, email = data.get("password"), data.get("email", "")
    errors = user_problems(username=username, roles=roles, password=password, email=email)
    if errors:
        raise ApiError("invalid user", errors=errors)
    if User.objects.filter(username=username).exists():
        raise ApiError(
            f"a user named {username!r} exists; change it with PATCH /api/v1/users/{username}",
            status=409,
        )
    user, token = user_create_or_update(
        username=username, roles=roles, password=password, email=email
    )
    return JsonResponse(
        {"username": user.get_username(), "roles": sorted(set(roles)), "token": token}, status=201
    )


@api_endpoint(
    ADMIN,
    methods=("GET", "PATCH"),
    body={
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "roles": {"type": "array", "items": {"type": "string", "enum": list(ROLES)}},
                    "email": {"type": "string"},
                    "is_active": {"type": "boolean"},
                },
            }
        }
    },
    summary="""A user (GET), or change their roles, email or access (PATCH; keys left out stay).

PATCH answers the user and {"released": {"leases", "disputes"}}: the open review leases and
disputes returned to the queues because the user lost the reviewer or arbiter role or was
deactivated (`is_active: false` also ends their sessions and tokens' access). Taking away
your own admin role or account, or the last admin's, is 409.""",
    responses={"200": "user", "400": "invalid", "404": "no such user", "409": "refused"},
)
def user_detail(request: HttpRequest, username: str) -> JsonResponse:
    user = get_object_or_404(get_user_model(), username=username)
    if request.method == "GET":
        return JsonResponse(user_json(user))
    data = json_body(request)
    current = user_json(user)
    unknown = sorted(set(data) - {"roles", "email", "is_active"})
    roles, email = data.get("roles", current["roles"]), data.get("email", current["email"])
    is_active = data.get("is_active", current["is_active"])
    errors = [f"{key}: not a field you can change here" for key in unknown]
    if not isinstance(roles, list) or not all(r in ROLES for r in roles):
        errors.append(f"roles: a list of {', '.join(ROLES)} (empty for none)")
    if not isinstance(email, str):
        errors.append("email: a string")
    if not isinstance(is_active, bool):
        errors.append("is_active: true or false")
    if errors:
        raise ApiError("invalid change", errors=errors)
    try:
        released = user_update(
            user=user, by=request.user, roles=roles, email=email, is_active=is_active
        )
    except UserChangeRefused as exc:
        raise ApiError(str(exc), status=409) from None
    return JsonResponse({**user_json(user), "released": released})


USER_FILTERS = {"role": (*ROLES, "none"), "status": ("active", "inactive")}


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def user_list(request: HttpRequest) -> HttpResponse:
    """Everybody's accounts and roles, and the "new user" form. A new user's password is shown
    once, in this answer, and never again (only its hash is kept)."""
    form = UserForm(request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        password = data["password"] or password_generate()
        user, _ = user_create_or_update(
            username=data["username"],
            roles=data["roles"],
            password=password,
            email=data["email"],
            with_token=False,
        )
        created = {"user": user, "password": password, "generated": not data["password"]}
        form = UserForm()
    filters = {k: v for k, v in request.GET.items() if v in USER_FILTERS.get(k, ())}
    q = request.GET.get("q", "").strip()[:150]
    context = {
        "form": form,
        "created": created,
        "page": selectors.user_rows(q=q, page=request.GET.get("page", 1), **filters),
        "q": q,
        "filters": filters,
        "role_choices": USER_FILTERS["role"],
    }
    if request.htmx and request.method == "POST":
        # The form (with the new password, or the errors) and, when a user was made, the table
        # out of band, so the new row shows.
        html = render_to_string("evalsite/users.html#new-user", context, request)
        if created:
            html += render_to_string("evalsite/users.html#users-oob", context, request)
        response = HttpResponse(html)
    elif request.htmx and not request.htmx.history_restore_request:
        response = render(request, "evalsite/users.html#users", context)
    else:
        response = render(request, "evalsite/users.html", context)
    if created:
        response["Cache-Control"] = "no-store"
    return response


def _user_page(request: HttpRequest, user, form=None, secret=None) -> HttpResponse:
    context = {
        "subject": user,
        "form": form or UserForm(user=user),
        "tokens": selectors.user_tokens(user=user),
        "secret": secret,
        "is_self": user.pk == request.user.pk,
    }
    if request.htmx and form is not None:
        return render(request, "evalsite/user_edit.html#user-form", context)
    response = render(request, "evalsite/user_edit.html", context)
    if secret:
        response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def user_edit(request: HttpRequest, user_id: int) -> HttpResponse:
    user = get_object_or_404(get_user_model(), pk=user_id)
    if request.method == "GET":
        return _user_page(request, user)
    form = UserForm(request.POST, user=user)
    if form.is_valid():
        data = form.cleaned_data
        try:
            released = user_update(
                user=user,
                by=request.user,
                roles=data["roles"],
                email=data["email"],
                is_active=data["is_active"],
            )
        except UserChangeRefused as exc:
            form.add_error(None, str(exc))
        else:
            done = [f"{user.get_username()} saved."]
            if released["leases"]:
                done.append(f"{released['leases']} open review lease(s) returned to the pool.")
            if released["disputes"]:
                done.append(f"{released['disputes']} dispute(s) returned to the arbitration queue.")
            messages.success(request, " ".join(done))
            url = reverse("user_list")
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    return _user_page(request, user, form=form)


@role_required(ADMIN)
@require_POST
def user_password_reset(request: HttpRequest, user_id: int) -> HttpResponse:
    """A generated password, shown once; the user's open sessions end with the old one."""
    user = get_object_or_404(get_user_model(), pk=user_id)
    password = user_password_set(user=user)
    if user.pk == request.user.pk:
        update_session_auth_hash(request, user)  # the admin's own session stays open
    return _user_page(request, user, secret={"kind": "password", "value": password})


@role_required(ADMIN)
@require_POST
def user_tokens(request: HttpRequest, user_id: int) -> HttpResponse:
    """Issue a new API token (shown once) or revoke all of the user's tokens."""
    user = get_object_or_404(get_user_model(), pk=user_id)
    if request.POST.get("action") == "revoke":
        n = user_tokens_revoke(user=user)
        messages.success(request, f"{n} API token(s) of {user.get_username()} revoked.")
        return redirect("user_edit", user_id=user.pk)
    token = user_token_issue(user=user)
    return _user_page(request, user, secret={"kind": "token", "value": token})
