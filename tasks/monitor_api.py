"""JSON API for monitors (admin writes; admin and lead read)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from evalsite.api import ApiError, api_endpoint, found_or_404, json_body
from evalsite.roles import ADMIN, LEAD

from .campaigns import DefinitionError
from .generation import GenerationError
from .models import Monitor, MonitorRun
from .monitors import MonitorError, monitor_create, monitor_run_progress, monitor_run_start

DEFINITION_SCHEMA = {
    "type": "object",
    "required": ["slug", "testset", "contenders"],
    "properties": {
        "slug": {"type": "string"},
        "name": {"type": "string"},
        "testset": {"type": "string"},
        "version": {"type": "integer"},
        "contenders": {"type": "array"},
        "samples_per_task": {"type": "integer", "minimum": 1},
        "schedule": {"type": "string", "description": "5-field cron, UTC"},
        "baseline": {"description": "first, previous or a run number"},
        "thresholds": {"type": "array", "items": {"type": "object"}},
        "alerts": {"type": "object"},
    },
}


def monitor_json(monitor: Monitor) -> dict:
    runs = list(monitor.runs.order_by("number").values("number", "status", "created_at"))
    return {
        "slug": monitor.slug,
        "name": monitor.name,
        "testset": monitor.testset.name,
        "version": monitor.testset.version,
        "contenders": sorted(monitor.contenders.values_list("name", flat=True)),
        "samples_per_task": monitor.samples_per_task,
        "schedule": monitor.schedule or None,
        "baseline": monitor.baseline,
        "thresholds": monitor.thresholds,
        "alerts": monitor.alerts,
        "runs": [
            {"number": r["number"], "status": r["status"], "created_at": r["created_at"]}
            for r in runs
        ],
    }


def run_json(run: MonitorRun) -> dict:
    return {
        "monitor": run.monitor.slug,
        "run": run.number,
        "status": run.status,
        "scheduled_for": run.scheduled_for,
        "baseline": run.baseline_number,
        "progress": monitor_run_progress(run),
        "metrics": run.metrics,
        "comparison": run.comparison,
        "alerts": (run.comparison or {}).get("alerts", []),
        "error": run.error,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
    }


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary="Create a monitor from a definition (admin; the create_monitor format).",
    body={"application/json": {"schema": DEFINITION_SCHEMA}},
    responses={"201": "created", "400": "definition errors (all listed)", "403": "role"},
)
def monitors(request: HttpRequest) -> JsonResponse:
    try:
        monitor = monitor_create(definition=json_body(request), user=request.user)
    except DefinitionError as exc:
        raise ApiError("invalid monitor definition", errors=exc.errors) from None
    return JsonResponse(monitor_json(monitor), status=201)


@api_endpoint(
    ADMIN,
    LEAD,
    summary="A monitor: its definition and runs (admin, lead).",
    responses={"200": "the monitor", "403": "role", "404": "no such monitor"},
)
def monitor_detail(request: HttpRequest, slug: str) -> JsonResponse:
    monitor = found_or_404(Monitor.objects.select_related("testset"), "monitor", slug=slug)
    return JsonResponse(monitor_json(monitor))


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary='Start a run (admin); optional body {"baseline": n}. Answers 202 and the run number.',
    responses={"202": "started", "400": "no such baseline run", "403": "role", "404": "no monitor"},
)
def monitor_runs(request: HttpRequest, slug: str) -> JsonResponse:
    monitor = found_or_404(Monitor.objects.select_related("testset"), "monitor", slug=slug)
    # The body is optional: {"baseline": n} in JSON, or nothing.
    is_json = request.content_type == "application/json"
    body = json_body(request) if is_json and request.body else {}
    baseline = body.get("baseline") if isinstance(body, dict) else None
    if baseline is not None and (isinstance(baseline, bool) or not isinstance(baseline, int)):
        raise ApiError("baseline: a run number", errors=["baseline: must be an integer"])
    try:
        run = monitor_run_start(monitor=monitor, baseline=baseline)
    except (MonitorError, GenerationError) as exc:
        raise ApiError(str(exc)) from None
    return JsonResponse(
        {"monitor": monitor.slug, "run": run.number, "status": run.status}, status=202
    )


@api_endpoint(
    ADMIN,
    LEAD,
    summary="A run: status, progress, metrics, comparison with its baseline and alerts.",
    responses={"200": "the run", "403": "role", "404": "no such monitor or run"},
)
def monitor_run_detail(request: HttpRequest, slug: str, number: int) -> JsonResponse:
    run = found_or_404(
        MonitorRun.objects.select_related("monitor"), "run", monitor__slug=slug, number=number
    )
    return JsonResponse(run_json(run))
