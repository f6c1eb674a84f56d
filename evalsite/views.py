import ipaddress
import sys
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import InterfaceError, OperationalError
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import NoReverseMatch

from evalsite import health
from evalsite.api import ApiError, api_endpoint, json_body
from evalsite.htmx import AuthedHttpRequest
from evalsite.models import ApiToken
from evalsite.roles import ADMIN, ARBITER, LEAD, REVIEWER, ROLES, login_required, roles_of
from evalsite.services import (
    UserChangeRefused,
    UserExists,
    email_problem,
    user_create,
    user_problems,
    user_update,
)

HOME_BY_ROLE = [
    (ADMIN, "campaign_list"),
    (LEAD, "campaign_list"),
    (REVIEWER, "reviewer_home"),
    (ARBITER, "arbiter_home"),
]


@login_required
def home(request: AuthedHttpRequest) -> HttpResponse:
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
    """Each dependency's state, without login: 503 only when the database is down (nothing
    works); a missing Redis or broker is "degraded" but 200, since pages still work and a load
    balancer must not take every web server out for it. `?quick`: the database alone (the
    benchmarks' trivial baseline)."""
    status, checks = health.health(quick="quick" in request.GET)
    return JsonResponse(
        {"status": status, "checks": checks}, status=503 if status == "down" else 200
    )


def login_client_ip(request: HttpRequest) -> str | None:
    """The address the login lock counts failures from (django-axes).

    Behind proxies REMOTE_ADDR is the nearest proxy's, the same for everyone, so with
    TRUSTED_PROXY_COUNT = n the client is the n-th X-Forwarded-For entry from the right: each
    trusted proxy appended the address it saw, and a client can only put entries before
    those. With n = 0 (the default) the header is ignored: anyone who reaches the server
    directly could otherwise send a new address with every try and never be locked. A header
    with fewer entries than trusted proxies did not come through them all, so it is not
    believed either (as django-xff does)."""
    remote = request.META.get("REMOTE_ADDR")
    depth = settings.TRUSTED_PROXY_COUNT
    if depth == 0:
        return remote
    entries = [e.strip() for e in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    entries = [e for e in entries if e]
    if len(entries) < depth:
        return remote
    try:
        return str(ipaddress.ip_address(entries[-depth]))
    except ValueError:
        return remote


def error_404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "404.html", status=404)


def error_403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "403.html", status=403)


def error_500(request: HttpRequest) -> HttpResponse:
    """The error page, or 503 with Retry-After while the database is unreachable (a script
    can tell "try later" from a bug). Rendered without the request's context: its context
    processors read the user from the database, and an error page that fails shows the bare
    "Internal Server Error" of the server."""
    failure = sys.exc_info()[1]
    api = request.path.startswith("/api/")
    if isinstance(failure, OperationalError | InterfaceError):
        retry = {"Retry-After": str(settings.DATABASE_RETRY_AFTER_SECONDS)}
        if api:
            message = "the database is unreachable; try again later"
            return JsonResponse({"error": message}, status=503, headers=retry)
        page = render_to_string("503.html", {"retry_after": settings.DATABASE_RETRY_AFTER_SECONDS})
        return HttpResponse(page, status=503, headers=retry)
    if api:
        # An API client reads JSON, errors included; never the HTML page (nor any detail).
        return JsonResponse({"error": "internal server error; it has been logged"}, status=500)
    return HttpResponse(render_to_string("500.html"), status=500)


def refuse_nul_characters(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: PostgreSQL can neither store nor compare text with a NUL character, so a
    lookup or a save with one was a 500. A URL with one (`%00`) is a 400 before any view sees
    it. A browser form may carry one pasted into a comment, invisible to the person who would
    have to remove it: the page's form fields lose it instead. (API bodies are JSON, whose
    parser refuses it, see uploads.strict_json.)"""

    def middleware(request: HttpRequest) -> HttpResponse:
        api = request.path.startswith("/api/")
        # The raw query string: parsing it for every request would cost more than this check.
        if "\x00" in request.path or "%00" in request.META.get("QUERY_STRING", ""):
            message = "the URL contains a NUL character (%00)"
            if api:
                return JsonResponse({"error": message}, status=400)
            return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
        if (
            not api
            and request.method == "POST"
            and request.content_type == "application/x-www-form-urlencoded"
            and b"%00" in request.body  # a literal "%" is sent as %25
        ):
            form = request.POST.copy()
            for key, values in form.lists():
                form.setlist(key, [v.replace("\x00", "") for v in values])
            request.POST = form
        return get_response(request)

    return middleware


@api_endpoint(ADMIN, LEAD, REVIEWER, ARBITER, summary="The authenticated user and their roles.")
def whoami(request: AuthedHttpRequest) -> JsonResponse:
    return JsonResponse(
        {"username": request.user.get_username(), "roles": sorted(roles_of(request.user))}
    )


USER_BODY = {
    "application/json": {
        "schema": {
            "type": "object",
            "required": ["username", "roles"],
            "additionalProperties": False,
            "properties": {
                "username": {"type": "string", "minLength": 1, "maxLength": 150},
                "roles": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "enum": list(ROLES)},
                },
                "password": {
                    "type": ["string", "null"],
                    "description": "omit (or null) for an API-only user",
                },
                "email": {"type": "string", "maxLength": 254},
            },
        }
    }
}


def user_json(user: User) -> dict:
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
    responses={
        "200": "users",
        "201": {"description": "created", "methods": ("POST",)},
        "400": {"description": "invalid", "methods": ("POST",)},
        "409": {"description": "exists", "methods": ("POST",)},
    },
)
def users_api(request: AuthedHttpRequest) -> JsonResponse:
    if request.method == "GET":
        users = (
            get_user_model()
            .objects.order_by("username")
            .annotate(n_tokens=Count("api_tokens"))
            .prefetch_related("groups")
        )
        return JsonResponse({"users": [user_json(u) for u in users]})
    data = json_body(request)
    username, roles = data.get("username"), data.get("roles")
    password, email = data.get("password"), data.get("email", "")
    errors = user_problems(username=username, roles=roles, password=password, email=email)
    # A misspelt key ("role", "mail") must not create a user without what it meant to say.
    known = USER_BODY["application/json"]["schema"]["properties"]
    errors += [f"{key}: not a field of a new user" for key in sorted(set(data) - set(known))]
    if errors:
        raise ApiError("invalid user", errors=errors)
    try:
        user = user_create(
            username=username, roles=roles, password=password, email=email, by=request.user
        )
    except UserExists as exists:
        raise ApiError(
            f"a user named {str(exists)!r} exists; change it with PATCH /api/v1/users/{exists}",
            status=409,
        ) from None
    token = ApiToken.issue(user, label=f"issued by {request.user.get_username()} at creation")
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
                "additionalProperties": False,
                "minProperties": 1,
                "properties": {
                    "roles": {"type": "array", "items": {"type": "string", "enum": list(ROLES)}},
                    "email": {"type": "string", "maxLength": 254},
                    "is_active": {"type": "boolean"},
                },
            }
        }
    },
    summary="""A user (GET), or change their roles, email or access (PATCH; keys left out stay;
a body naming none of them is 400).

PATCH answers the user and {"released": {"leases", "disputes"}}: the open review leases and
disputes returned to the queues because the user lost the reviewer or arbiter role or was
deactivated (`is_active: false` also ends their sessions and tokens' access). Taking away
your own admin role or account, or the last admin's, is 409.""",
    responses={
        "200": "user",
        "400": {"description": "invalid", "methods": ("PATCH",)},
        "404": "no such user",
        "409": {"description": "refused", "methods": ("PATCH",)},
    },
)
def user_api(request: AuthedHttpRequest, username: str) -> JsonResponse:
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ApiError(f"no such user {username!r}", status=404)
    if request.method == "GET":
        return JsonResponse(user_json(user))
    data = json_body(request)
    changeable = ("roles", "email", "is_active")
    if not data:
        # An empty body changed nothing and answered 200, as if a change had been made.
        raise ApiError(f"nothing to change: send any of {', '.join(changeable)}")
    unknown = sorted(set(data) - set(changeable))
    # Keys left out stay: the user's role groups (a superuser's admin is not a group).
    held = sorted(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    roles, email = data.get("roles", held), data.get("email", user.email)
    is_active = data.get("is_active", user.is_active)
    errors = [
        f"{key}: not a field you can change here; accepted: {', '.join(changeable)}"
        for key in unknown
    ]
    if not isinstance(roles, list) or not all(r in ROLES for r in roles):
        errors.append(f"roles: a list of {', '.join(ROLES)} (empty for none)")
    if problem := email_problem(email):
        errors.append(f"email: {problem}")
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
