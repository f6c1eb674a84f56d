from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch

from .api import ApiError, api_endpoint, json_body
from .roles import ADMIN, ARBITER, LEAD, REVIEWER, ROLES, roles_of
from .services import user_create_or_update, user_problems

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


@api_endpoint(
    ADMIN,
    methods=("POST",),
    body=USER_BODY,
    summary="""Create a user with roles and get their API token (as `manage.py add_user`).

201 with {"username", "roles", "token"}. An existing username is 409: its roles and token are
changed on the server only (`add_user`), so an admin's token cannot take over another account.""",
    responses={"201": "created", "400": "invalid", "403": "not an admin", "409": "exists"},
)
def user_create(request: HttpRequest) -> JsonResponse:
    data = json_body(request)
    User = get_user_model()
    username, roles = data.get("username"), data.get("roles")
    password, email = data.get("password"), data.get("email", "")
    errors = user_problems(username=username, roles=roles, password=password, email=email)
    if errors:
        raise ApiError("invalid user", errors=errors)
    if User.objects.filter(username=username).exists():
        raise ApiError(f"a user named {username!r} exists; use manage.py add_user", status=409)
    user, token = user_create_or_update(
        username=username, roles=roles, password=password, email=email
    )
    return JsonResponse(
        {"username": user.get_username(), "roles": sorted(set(roles)), "token": token}, status=201
    )
