"""OpenAPI 3.1 schema built from the URL patterns and the `api_endpoint` docs."""

import re

from django.http import JsonResponse
from django.urls import URLPattern, URLResolver, get_resolver
from django.views.decorators.csrf import csrf_exempt

from evalsite.api import answered_methods, method_not_allowed


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
    "503": "the database is unreachable: try again after the Retry-After header's seconds",
}
# What it answers on every operation that reads a request body.
BODY_REFUSED = {
    "400": "the body is not valid (malformed JSON or multipart)",
    "413": "the body is over the server's limit (DATA_UPLOAD_MAX_MEMORY_SIZE); the message "
    "says how to send more where there is a way",
}


def _answers(responses: dict, method: str) -> dict:
    """The statuses `method` answers: a status given as {"description", "methods"} is answered
    by those methods only (a listing's GET never answers its POST's 201)."""
    return {
        code: spec if isinstance(spec, str) else spec["description"]
        for code, spec in responses.items()
        if isinstance(spec, str) or method in spec["methods"]
    }


def _parameter(name: str, spec) -> dict:
    spec = {"description": spec} if isinstance(spec, str) else spec
    schema = {"type": spec.get("type", "string")}
    schema.update({k: spec[k] for k in ("enum", "minimum", "pattern") if k in spec})
    return {
        "name": name,
        "in": spec.get("in", "query"),
        "required": spec.get("required", False),
        "description": spec["description"],
        "schema": schema,
    }


# What Django's path converters match: any other value is the catch-all's 404.
CONVERTER_PATTERNS = {"slug": "^[-a-zA-Z0-9_]+$", "str": "^[^/]+$", "": "^[^/]+$"}


def _path_schema(converter: str) -> dict:
    if converter == "int":
        return {"type": "integer", "minimum": 0}
    return {"type": "string", "pattern": CONVERTER_PATTERNS.get(converter, "^[^/]+$")}


def build_schema() -> dict:
    paths: dict = {}
    for route, callback in _walk(get_resolver().url_patterns):
        doc = getattr(callback, "api_doc", None)
        if doc is None:
            continue
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        in_path = [
            {"name": name, "in": "path", "required": True, "schema": _path_schema(converter)}
            for converter, name in re.findall(r"<(?:(\w+):)?(\w+)>", route)
        ]
        for method in doc["methods"]:
            reads_body = bool(doc["body"]) and method in ("POST", "PUT", "PATCH")
            responses = {**_answers(doc["responses"] or {"200": "OK"}, method), **GUARDED}
            if reads_body:
                responses = {**BODY_REFUSED, **responses}
            op = {
                "summary": doc["summary"].splitlines()[0] if doc["summary"] else "",
                "description": doc["summary"] + f"\n\nRoles: {', '.join(doc['roles'])}.",
                "parameters": in_path
                + [
                    _parameter(name, spec)
                    for name, spec in doc["query"].items()
                    if isinstance(spec, str) or method in spec.get("methods", (method,))
                ],
                "security": [{"bearer": []}],
                "responses": {str(k): {"description": v} for k, v in sorted(responses.items())},
            }
            if reads_body:
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
        return method_not_allowed(request, answered_methods(["GET"]))
    return JsonResponse(build_schema(), json_dumps_params={"indent": 2})


@csrf_exempt
def not_found(request, path=""):
    """Any other path under /api/v1/: a JSON 404, as the endpoints answer, not the HTML page."""
    return JsonResponse({"error": "not found: no such API path", "path": request.path}, status=404)
