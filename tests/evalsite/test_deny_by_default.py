"""Every view declares who may use it; nothing is reachable by accident."""

from django.urls import URLPattern, URLResolver, get_resolver

# Views anyone may reach: authentication itself, the health probe, the API description.
PUBLIC = {"login", "logout", "healthz", "api_schema", "api_not_found"}


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
        if not guarded and pattern.name not in PUBLIC and pattern.name != "home":
            unguarded.append(f"{route} ({pattern.name})")
    assert unguarded == []


def test_it_requires_authentication_for_the_start_page(client):
    response = client.get("/")
    assert response.status_code == 302 and response.url.startswith("/login/")
