"""Every view declares who may use it; nothing is reachable by accident."""

from django.urls import URLPattern, URLResolver, get_resolver

# Views anyone may reach: authentication itself, the health probe, the API description.
PUBLIC = {"login", "logout", "healthz", "api_schema", "api_not_found"}
# Views for anyone logged in, whatever their roles: the start page and their own password.
LOGGED_IN = {"home": "/", "account": "/account/", "password_change": "/account/password/"}
LOGGED_IN["password_change_done"] = "/account/password/done/"


def walk(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from walk(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p


def test_it_guards_every_view_with_a_role_check_or_lists_it_as_public():
    unguarded = []
    for route, pattern in walk(get_resolver().url_patterns):
        view = pattern.callback
        guarded = hasattr(view, "allowed_roles") or hasattr(view, "api_doc")
        if not guarded and pattern.name not in PUBLIC | set(LOGGED_IN):
            unguarded.append(f"{route} ({pattern.name})")
    assert unguarded == []


def test_it_requires_authentication_for_the_views_of_any_logged_in_user(client):
    for path in LOGGED_IN.values():
        response = client.get(path)
        assert response.status_code == 302 and response.url.startswith("/login/"), path


def test_a_pages_script_gets_a_401_it_can_explain_instead_of_the_login_page(client, db):
    # htmx and fetch follow redirects silently: the login page would be pasted into the form's
    # place (htmx) or fail to parse (the heartbeat). A 401 leaves the page as it was.
    for path, headers in [
        ("/", {"HX-Request": "true"}),
        ("/account/", {"HX-Request": "true"}),
        ("/review/some-campaign/", {"HX-Request": "true"}),
        ("/review/some-campaign/tok/heartbeat", {"Accept": "application/json"}),
    ]:
        response = client.post(path, headers=headers)
        assert response.status_code == 401, path
        assert "session has ended" in response.json()["message"]
    # A browser's own navigation still goes to the login page, and comes back after it.
    response = client.get("/review/some-campaign/", headers={"Accept": "text/html"})
    assert response.status_code == 302
    assert response.url == "/login/?next=/review/some-campaign/"
