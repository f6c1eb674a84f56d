"""Accounts in the browser: the admins' users pages and everyone's own account page.

Passwords and tokens are shown once, in the answer that made them, and never stored readable;
pages showing accounts are not cached by the browser (a generated password must not come back
with the Back button).
"""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import get_user_model, update_session_auth_hash
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite import selectors
from evalsite.forms import UserForm, user_exists_message
from evalsite.htmx import AuthedHttpRequest, wants_fragment
from evalsite.roles import ADMIN, ROLES, login_required, role_required, roles_of
from evalsite.services import (
    UserChangeRefused,
    UserExists,
    may_issue_token,
    password_generate,
    user_create,
    user_password_set,
    user_token_issue,
    user_tokens_revoke,
    user_update,
)

USER_FILTERS = {"role": (*ROLES, "none"), "status": ("active", "inactive")}


@never_cache
@sensitive_post_parameters("password")
@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def user_list(request: AuthedHttpRequest) -> HttpResponse:
    """Everybody's accounts and roles, and the "new user" form. A new user's password is shown
    once, in this answer, and never again (only its hash is kept)."""
    form = UserForm(request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        password = data["password"] or password_generate()
        try:
            user = user_create(
                username=data["username"],
                roles=data["roles"],
                password=password,
                email=data["email"],
                by=request.user,
            )
        except UserExists as exists:
            form.add_error("username", user_exists_message(str(exists), data["username"]))
        else:
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
        "list_query": _list_query(request),
    }
    if request.htmx and request.method == "POST":
        # The form (with the new password, or the errors) and, when a user was made, the table
        # out of band, so the new row shows.
        html = render_to_string("evalsite/users.html#new-user", context, request)
        if created:
            html += render_to_string("evalsite/users.html#users-oob", context, request)
        return HttpResponse(html)
    if wants_fragment(request):
        return render(request, "evalsite/users.html#users", context)
    return render(request, "evalsite/users.html", context)


def _list_query(request: AuthedHttpRequest) -> str:
    """The users list's filters and page ("?role=reviewer&page=2", or ""), carried through an
    edit so that saving returns to the same part of the list."""
    kept = {k: request.GET[k] for k in ("q", "role", "status", "page") if request.GET.get(k)}
    return f"?{urlencode(kept)}" if kept else ""


def _tokens_context(
    request: AuthedHttpRequest, user: User, secret: dict[str, str] | None = None
) -> dict:
    return {
        "list_query": _list_query(request),
        "subject": user,
        "tokens": selectors.user_tokens(user=user),
        "secret": secret,
        "is_self": user.pk == request.user.pk,
        "may_issue": may_issue_token(user=user, by=request.user),
    }


def _user_page(
    request: AuthedHttpRequest,
    user: User,
    form: UserForm | None = None,
    secret: dict[str, str] | None = None,
) -> HttpResponse:
    context = {
        **_tokens_context(request, user, secret),
        "form": form or UserForm(user=user),
        # A secret answers a POST to /password or /tokens: reloading shows this page instead.
        "page_url": reverse("user_edit", args=[user.pk]) + _list_query(request),
    }
    if request.htmx and form is not None:
        return render(request, "evalsite/user_edit.html#user-form", context)
    return render(request, "evalsite/user_edit.html", context)


@never_cache
@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def user_edit(request: AuthedHttpRequest, user_id: int) -> HttpResponse:
    user = get_object_or_404(get_user_model(), pk=user_id)
    if request.method == "GET":
        return _user_page(request, user)
    form = UserForm(request.POST, user=user)
    if form.is_valid():
        data = form.cleaned_data
        was_active = user.is_active
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
            if was_active and not user.is_active:
                done.append("Their sessions and API tokens have ended.")
            if user.is_active and not data["roles"] and not user.is_superuser:
                done.append("They have no role now: they can log in but see nothing to do.")
            if not was_active and user.is_active:
                done.append("To log in again they need a new password: generate one below.")
            if released["leases"]:
                n = released["leases"]
                done.append(f"{n} open review lease{pluralize(n)} returned to the pool.")
            if released["disputes"]:
                n = released["disputes"]
                done.append(f"{n} dispute{pluralize(n)} returned to the arbitration queue.")
            messages.success(request, " ".join(done))
            # Reactivated: stay here, where the new password is made.
            reactivated = user.is_active and not was_active
            url = reverse(
                "user_edit" if reactivated else "user_list", args=[user.pk] if reactivated else []
            )
            url += _list_query(request)
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    return _user_page(request, user, form=form)


@never_cache
@role_required(ADMIN)
@require_POST
def user_password_reset(request: AuthedHttpRequest, user_id: int) -> HttpResponse:
    """A generated password, shown once; the user's open sessions end with the old one."""
    user = get_object_or_404(get_user_model(), pk=user_id)
    if not user.is_active:
        messages.error(request, f"{user.get_username()} is deactivated: reactivate them first.")
        return redirect("user_edit", user_id=user.pk)
    password = user_password_set(user=user, by=request.user)
    if user.pk == request.user.pk:
        update_session_auth_hash(request, user)  # the admin's own session stays open
    return _user_page(request, user, secret={"kind": "password", "value": password})


def _tokens_post(request: AuthedHttpRequest, user: User) -> str | None:
    """Issue a token (shown once: returns it) or revoke them all (returns None)."""
    if request.POST.get("action") == "revoke":
        n = user_tokens_revoke(user=user, by=request.user)
        messages.success(request, f"{n} API token{pluralize(n)} of {user.get_username()} revoked.")
        return None
    try:
        return user_token_issue(user=user, by=request.user)
    except UserChangeRefused as exc:
        messages.error(request, str(exc))
        return None


@never_cache
@role_required(ADMIN)
@require_POST
def user_tokens(request: AuthedHttpRequest, user_id: int) -> HttpResponse:
    """Revoke all of the user's tokens, or issue one for an account nobody logs in to."""
    user = get_object_or_404(get_user_model(), pk=user_id)
    token = _tokens_post(request, user)
    if token is None:
        return redirect("user_edit", user_id=user.pk)
    return _user_page(request, user, secret={"kind": "token", "value": token})


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def account(request: AuthedHttpRequest) -> HttpResponse:
    """Everyone's own account: roles, password, and their own API tokens (POST issues one,
    shown once, or revokes them all)."""
    secret = None
    if request.method == "POST":
        token = _tokens_post(request, request.user)
        if token is None:
            return redirect("account")
        secret = {"kind": "token", "value": token}
    context = {
        **_tokens_context(request, request.user, secret),
        "roles": [r for r in ROLES if r in roles_of(request.user)],
    }
    return render(request, "evalsite/account.html", context)
