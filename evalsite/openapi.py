"""OpenAPI 3.1 schema built from the URL patterns and the `api_endpoint` docs."""

import re

from django.http import JsonResponse
from django.urls import URLPattern, URLResolver, get_resolver
from django.views.decorators.csrf import csrf_exempt

from .api import method_not_allowed


def _walk(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _walk(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.callback


# What api_endpoint answers on every endpoint before the view runs (JSON, like the rest).
GUARDED = {
    "401": "no bearer token, or an unknown one",
    "403": "your role does not allow this",
}


def build_schema() -> dict:
    paths: dict = {}
    for route, callback in _walk(get_resolver().url_patterns):
        doc = getattr(callback, "api_doc", None)
        if doc is None:
            continue
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        params = [
            {"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
            for n in re.findall(r"{(\w+)}", path)
        ]
        for method in doc["methods"]:
            op = {
                "summary": doc["summary"].splitlines()[0] if doc["summary"] else "",
                "description": doc["summary"] + f"\n\nRoles: {', '.join(doc['roles'])}.",
                "parameters": params,
                "security": [{"bearer": []}],
                "responses": {
                    str(k): {"description": v}
                    for k, v in ({**(doc["responses"] or {"200": "OK"}), **GUARDED}).items()
                },
            }
            if doc["body"] and method in ("POST", "PUT", "PATCH"):
                op["requestBody"] = {"required": True, "content": doc["body"]}
            paths.setdefault(path, {})[method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "evalsite API", "version": "1"},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": dict(sorted(paths.items())),
    }


@csrf_exempt  # a JSON answer to any method; no session is read
def schema_view(request):
    if request.method not in ("GET", "HEAD"):
        return method_not_allowed(request, ["GET"])
    return JsonResponse(build_schema(), json_dumps_params={"indent": 2})


@csrf_exempt
def not_found(request, path=""):
    """Any other path under /api/v1/: a JSON 404, as the endpoints answer, not the HTML page."""
    return JsonResponse({"error": "not found: no such API path", "path": request.path}, status=404)
