"""JSON API for judges (admins create; admins and leads read)."""

from __future__ import annotations

from django.http import JsonResponse

from evalsite.api import ApiError, api_endpoint, found_or_404, json_body
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, has_role
from tasks.campaigns.definition import DefinitionError
from tasks.judges.definition import judge_create
from tasks.judges.models import Judge

DEFINITION_SCHEMA = {
    "type": "object",
    "required": ["name", "provider", "model"],
    "properties": {
        "name": {"type": "string"},
        "provider": {"type": "string", "enum": list(Judge.Provider.values)},
        "base_url": {"type": "string"},
        "model": {"type": "string"},
        "api_key_env": {"type": "string", "description": "the NAME of the variable"},
        "params": {"type": "object"},
        "price_in_per_mtok": {"type": "number"},
        "price_out_per_mtok": {"type": "number"},
        "max_concurrency": {"type": "integer", "minimum": 1},
        "samples": {"type": "integer", "minimum": 1},
        "position_swap": {"type": "boolean"},
        "instructions": {"type": "string"},
    },
}


def judge_json(judge: Judge) -> dict:
    return {
        "name": judge.name,
        "provider": judge.provider,
        "base_url": judge.base_url,
        "model": judge.model,
        "api_key_env": judge.api_key_env,
        "params": judge.params,
        "price_in_per_mtok": float(judge.price_in_per_mtok),
        "price_out_per_mtok": float(judge.price_out_per_mtok),
        "max_concurrency": judge.max_concurrency,
        "samples": judge.samples,
        "position_swap": judge.position_swap,
        "instructions": judge.instructions,
        "created_at": judge.created_at,
    }


@api_endpoint(
    ADMIN,
    LEAD,
    methods=("GET", "POST"),
    summary="GET: the judges (admin, lead). POST: create a judge from a definition (admin; "
    "the create_judge format).",
    body={"application/json": {"schema": DEFINITION_SCHEMA}},
    responses={
        "200": {"description": "the judges", "methods": ["GET"]},
        "201": {"description": "created", "methods": ["POST"]},
        "400": {"description": "definition errors (all listed)", "methods": ["POST"]},
        "403": "role",
    },
)
def judges(request: AuthedHttpRequest) -> JsonResponse:
    if request.method == "GET":
        return JsonResponse({"judges": [judge_json(j) for j in Judge.objects.order_by("name")]})
    if not has_role(request.user, ADMIN):
        raise ApiError("your role does not allow this", status=403)
    try:
        judge = judge_create(definition=json_body(request))
    except DefinitionError as exc:
        raise ApiError("invalid judge definition", errors=exc.errors) from None
    return JsonResponse(judge_json(judge), status=201)


@api_endpoint(
    ADMIN,
    LEAD,
    summary="A judge's definition (admin, lead).",
    responses={"200": "the judge", "403": "role", "404": "no such judge"},
)
def judge_detail(request: AuthedHttpRequest, name: str) -> JsonResponse:
    return JsonResponse(judge_json(found_or_404(Judge.objects.all(), "judge", name=name)))
