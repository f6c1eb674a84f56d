"""Bearer-token JSON API plumbing shared by the apps' api.py modules.

`api_endpoint` authenticates `Authorization: Bearer <token>`, checks the method and role
(deny by default), turns `ApiError` and a refused request body into a JSON error and records
the docs the OpenAPI schema is built from.
"""

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import wraps
from typing import TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import (
    BadRequest,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.db.models import F, Manager, Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from evalsite.models import ApiToken
from evalsite.roles import has_role, user_with_roles
from evalsite.uploads import strict_json

M = TypeVar("M", bound=Model)
View = Callable[..., HttpResponse]


class ApiError(Exception):
    def __init__(self, message: str, status: int = 400, **extra: object) -> None:
        super().__init__(message)
        self.message, self.status, self.extra = message, status, extra


def bearer_user(request: HttpRequest) -> User | None:
    header = request.headers.get("Authorization", "")
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        return None
    # The user, their roles and the token's last use: one query.
    now = timezone.now()
    tokens = get_user_model().objects.filter(api_tokens__digest=ApiToken.hash(raw.strip()))
    user = user_with_roles(
        tokens.annotate(token_pk=F("api_tokens__pk"), token_used_at=F("api_tokens__last_used_at"))
    )
    if user is None:
        return None
    if user.token_used_at is None or user.token_used_at < now - timedelta(seconds=60):
        ApiToken.objects.filter(pk=user.token_pk).update(last_used_at=now)
    return user


def no_content() -> HttpResponse:
    """204: nothing left. No body, so no Content-Type either (Django's default is HTML)."""
    response = HttpResponse(status=204)
    del response["Content-Type"]
    return response


def answered_methods(methods: Sequence[str]) -> tuple[str, ...]:
    """The methods a path answers: HEAD too wherever GET (RFC 9110 9.3.2, HEAD is a GET
    without the body)."""
    return (*methods, "HEAD") if "GET" in methods else tuple(methods)


def method_not_allowed(request: HttpRequest, methods: Sequence[str]) -> JsonResponse:
    """405 in JSON, with the methods the path does answer."""
    return JsonResponse(
        {"error": f"method {request.method} not allowed"},
        status=405,
        headers={"Allow": ", ".join(methods)},
    )


def json_body(request: HttpRequest) -> dict:
    """The request's JSON object, parsed as strictly as uploaded files: NaN, Infinity and
    duplicate keys are refused (a NaN would slip past every range check)."""
    try:
        data = strict_json((request.body or b"{}").decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ApiError(f"request body is not valid UTF-8: {exc}") from None
    except ValueError as exc:
        raise ApiError(f"request body: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError("request body must be a JSON object")
    return data


def found_or_404(queryset: QuerySet[M] | Manager[M], what: str, **lookup: object) -> M:
    """The row `lookup` names, or the API's 404 saying what is missing ("no such campaign")."""
    found = queryset.filter(**lookup).first()
    if found is None:
        raise ApiError(f"no such {what}", status=404)
    return found


def body_too_big(how_to_send_more: str = "") -> JsonResponse:
    """413 for a body over DATA_UPLOAD_MAX_MEMORY_SIZE, which Django refuses on reading it."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    size = f"{limit / (1024 * 1024):.1f} MiB" if limit >= 1024 * 1024 else f"{limit:,} bytes"
    message = f"request body too large: the limit is {size} ({limit:,} bytes)"
    if how_to_send_more:
        message += f"; {how_to_send_more}"
    return JsonResponse({"error": message, "limit_bytes": limit}, status=413)


def bad_request(request: HttpRequest, exc: Exception) -> JsonResponse:
    """What Django's handler400 would answer in HTML (a malformed multipart body, too many
    fields), as JSON. Logged where Django logs it: security monitoring keeps seeing it."""
    name = "django.security." + type(exc).__name__
    if not isinstance(exc, SuspiciousOperation):
        name = "django.request"
    logging.getLogger(name).warning("Bad request %s: %s", request.path, exc)
    # Django's own wording for the body problems a client can fix; nothing else of the
    # exception's text (which may name server paths) reaches the client.
    if isinstance(exc, TooManyFieldsSent | TooManyFilesSent):
        message = f"bad request: {exc}"
    elif isinstance(exc, MultiPartParserError):
        message = "bad request: a malformed multipart body"
    else:
        message = "bad request"
    return JsonResponse({"error": message}, status=400)


def api_endpoint(
    *roles: str,
    methods: tuple[str, ...] = ("GET",),
    summary: str = "",
    body: dict | None = None,
    responses: dict | None = None,
    query: dict | None = None,
    too_big: str = "",
) -> Callable:
    """`query`: the query (or header) parameters the view reads, name -> description, or a dict
    with "description" and any of "enum", "minimum", "pattern", "required", "type", "in"
    ("header") and "methods" (the methods that read it, when not all). `responses`: status ->
    description, or a dict with "description" and "methods" for a status only those methods
    answer. `too_big`: how to send data over the body limit, where there is a way; it ends the
    413's message."""

    answered = answered_methods(methods)

    def decorator(view: View) -> View:
        @csrf_exempt
        @wraps(view)
        def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            refused = _refusal(request, roles, answered)
            if refused is not None:
                return refused
            if request.method != "HEAD":
                return _respond(view, too_big, request, *args, **kwargs)
            # HEAD runs the view's GET branch (its other branch may be a POST or PATCH), so the
            # headers are the GET's. The body is dropped by the server (gunicorn, runserver),
            # not here; the test client drops it on request.method, hence the restore.
            request.method = "GET"
            try:
                return _respond(view, too_big, request, *args, **kwargs)
            finally:
                request.method = "HEAD"

        # A function attribute mypy cannot see: evalsite/openapi.py builds the schema from it.
        wrapped.api_doc = {  # type: ignore[attr-defined]
            "roles": roles,
            "methods": methods,
            "summary": summary or (view.__doc__ or "").strip(),
            "body": body,
            "responses": responses or {},
            "query": query or {},
        }
        return wrapped

    return decorator


def _refusal(
    request: HttpRequest, roles: tuple[str, ...], answered: tuple[str, ...]
) -> JsonResponse | None:
    """The answer to a request without a valid token, the role or an answered method; None
    when it may go on (then `request.user` is the token's user)."""
    user = bearer_user(request)
    if user is None:
        return JsonResponse(
            {"error": "authentication required: send Authorization: Bearer <token>"},
            status=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not has_role(user, *roles):
        return JsonResponse({"error": "your role does not allow this"}, status=403)
    if request.method not in answered:
        return method_not_allowed(request, answered)
    request.user = user
    return None


def _respond(
    view: View, too_big: str, request: HttpRequest, *args: object, **kwargs: object
) -> HttpResponse:
    """The view's answer, with its errors answered in JSON."""
    try:
        return view(request, *args, **kwargs)
    except ApiError as exc:
        return JsonResponse({"error": exc.message, **exc.extra}, status=exc.status)
    except Http404:
        # get_object_or_404 in a view: the API answers in JSON, not the HTML page.
        return JsonResponse({"error": "not found"}, status=404)
    except RequestDataTooBig:
        # Caught here, not in a handler400: that one is skipped with DEBUG on (the
        # embedded mode) and would also catch DisallowedHost, which is not ours.
        return body_too_big(too_big)
    except (SuspiciousOperation, MultiPartParserError, BadRequest) as exc:
        return bad_request(request, exc)
