from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch

from .api import api_endpoint
from .roles import ADMIN, ARBITER, LEAD, REVIEWER, roles_of

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
