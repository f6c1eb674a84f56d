"""JSON API for monitors (admin writes; admin and lead read)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, JsonResponse

from evalsite.api import ApiError, api_endpoint, found_or_404, json_body, no_content
from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, has_role
from tasks.campaigns.definition import DefinitionError
from tasks.generation.services import GenerationError
from tasks.monitors.alerts import ResendRefused, alert_resend
from tasks.monitors.cron import ScheduleError, fire_times
from tasks.monitors.definition import (
    MonitorError,
    monitor_archive,
    monitor_create,
    monitor_definition,
    monitor_update,
)
from tasks.monitors.models import Monitor, MonitorAlert, MonitorRun
from tasks.monitors.runs import monitor_run_progress, monitor_run_start

LIVE = Monitor.objects.select_related("testset").filter(archived_at=None)

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
        "judge": {"type": "string", "description": "a judge grading judge.<dimension>"},
        "calibration": {"type": "string", "description": "the campaign it is calibrated on"},
        "allow_uncalibrated": {"type": "boolean"},
    },
}


def monitor_json(monitor: Monitor) -> dict:
    runs = list(monitor.runs.order_by("number").values("number", "status", "created_at"))
    return {
        **monitor_definition(monitor),
        "schedule": monitor.schedule or None,
        "baseline": monitor.baseline,
        "paused": monitor.paused,
        "next_runs": _next_runs(monitor),
        "error": monitor.error or None,
        "error_at": monitor.error_at,
        "runs": [
            {"number": r["number"], "status": r["status"], "created_at": r["created_at"]}
            for r in runs
        ],
    }


def _next_runs(monitor: Monitor) -> list:
    """The next three due times, none while paused or without a schedule."""
    if not monitor.schedule or monitor.paused:
        return []
    try:
        return fire_times(monitor.schedule)
    except ScheduleError:
        return []  # a schedule stored before it was checked: `error` says why


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
        "judging": run.judging,
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
def monitors(request: AuthedHttpRequest) -> JsonResponse:
    try:
        monitor = monitor_create(definition=json_body(request), user=request.user)
    except DefinitionError as exc:
        raise ApiError("invalid monitor definition", errors=exc.errors) from None
    return JsonResponse(monitor_json(monitor), status=201)


UPDATE_SCHEMA = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "contenders": {"type": "array"},
        "samples_per_task": {"type": "integer", "minimum": 1},
        "schedule": {"type": ["string", "null"], "description": "5-field cron, UTC; null: none"},
        "baseline": {"description": "first, previous or a run number"},
        "thresholds": {"type": "array", "items": {"type": "object"}},
        "alerts": {"type": "object"},
        "paused": {"type": "boolean", "description": "true: the schedule starts nothing"},
        "judge": {"type": "string"},
        "calibration": {"type": "string"},
        "allow_uncalibrated": {"type": "boolean"},
    },
}


@api_endpoint(
    ADMIN,
    LEAD,
    methods=("GET", "PATCH", "DELETE"),
    body={"application/json": {"schema": UPDATE_SCHEMA}},
    summary="""A monitor: its definition, next due times and runs (GET, admin and lead); a
change of its schedule, thresholds, alerts, contenders, name, baseline or `paused` (PATCH,
admin; every problem listed, nothing changed then); DELETE (admin) archives it: it leaves the
pages, the API and the schedule, and its runs are kept.""",
    responses={
        "200": "the monitor",
        "204": {"description": "deleted (archived)", "methods": ("DELETE",)},
        "400": {"description": "invalid change (all listed)", "methods": ("PATCH",)},
        "403": "role",
        "404": "no such monitor",
    },
)
def monitor_detail(request: AuthedHttpRequest, slug: str) -> JsonResponse | HttpResponse:
    monitor = found_or_404(LIVE, "monitor", slug=slug)
    if request.method == "GET":
        return JsonResponse(monitor_json(monitor))
    if not has_role(request.user, ADMIN):
        raise ApiError("only admins change or delete a monitor", status=403)
    if request.method == "DELETE":
        monitor_archive(monitor=monitor)
        return no_content()
    try:
        monitor = monitor_update(monitor=monitor, changes=json_body(request))
    except DefinitionError as exc:
        raise ApiError("invalid monitor change", errors=exc.errors) from None
    return JsonResponse(monitor_json(monitor))


@api_endpoint(
    ADMIN,
    methods=("POST",),
    body={
        "application/json": {
            "schema": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"baseline": {"type": "integer", "minimum": 1}},
            }
        }
    },
    summary='Start a run (admin); optional body {"baseline": n}. Answers 202 and the run number.',
    responses={
        "202": "started",
        "400": "no such baseline run, or an unknown field",
        "403": "role",
        "404": "no monitor",
    },
)
def monitor_runs(request: AuthedHttpRequest, slug: str) -> JsonResponse:
    monitor = found_or_404(LIVE, "monitor", slug=slug)
    # The body is optional: {"baseline": n} in JSON, or nothing. Whatever else is sent is
    # refused, not ignored: a misspelt key would otherwise run against the wrong baseline.
    body = _run_body(request)
    errors = [
        f'{key}: unknown field (send {{"baseline": n}} or nothing)'
        for key in sorted(body)
        if key != "baseline"
    ]
    baseline = body.get("baseline")
    if baseline is not None and (isinstance(baseline, bool) or not isinstance(baseline, int)):
        errors.append("baseline: must be an integer (a run number)")
    if errors:
        raise ApiError("invalid run request", errors=errors)
    try:
        run = monitor_run_start(monitor=monitor, baseline=baseline)
    except (MonitorError, GenerationError) as exc:
        raise ApiError(str(exc)) from None
    return JsonResponse(
        {"monitor": monitor.slug, "run": run.number, "status": run.status}, status=202
    )


FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


def _run_body(request: AuthedHttpRequest) -> dict:
    """A run request's fields: its JSON object, or a form's fields (an empty form, or no
    body at all, is "nothing")."""
    if request.content_type in FORM_TYPES:
        body: dict[str, Any] = {key: request.POST[key] for key in request.POST}
        if isinstance(body.get("baseline"), str) and body["baseline"].isdigit():
            body["baseline"] = int(body["baseline"])
        return body
    return json_body(request) if request.body.strip() else {}


@api_endpoint(
    ADMIN,
    LEAD,
    summary="A run: status, progress, metrics, comparison with its baseline and alerts.",
    responses={"200": "the run", "403": "role", "404": "no such monitor or run"},
)
def monitor_run_detail(request: AuthedHttpRequest, slug: str, number: int) -> JsonResponse:
    run = found_or_404(
        MonitorRun.objects.select_related("monitor"), "run", monitor__slug=slug, number=number
    )
    return JsonResponse(run_json(run))


@api_endpoint(
    ADMIN,
    methods=("POST",),
    summary="""Resend an alert's failed deliveries (admin): a new round of tries under the same
delivery ids (`X-Evalsite-Delivery`), to the monitor's current webhook and addresses.""",
    responses={
        "202": "resending: the deliveries",
        "403": "role",
        "404": "no such monitor or alert",
        "409": "nothing failed (delivered, or still being tried)",
    },
)
def monitor_alert_resend(request: AuthedHttpRequest, slug: str, alert_id: int) -> JsonResponse:
    alert = found_or_404(
        MonitorAlert.objects.select_related("run__monitor"),
        "alert",
        pk=alert_id,
        run__monitor__slug=slug,
        run__monitor__archived_at=None,
    )
    try:
        deliveries = alert_resend(alert=alert)
    except ResendRefused as exc:
        raise ApiError(str(exc), status=409) from None
    return JsonResponse(
        {
            "alert": alert.pk,
            "deliveries": [
                {
                    "delivery": str(d.delivery_id),
                    "channel": d.channel,
                    "target": d.target,
                    "status": d.status,
                    "resends": d.resends,
                }
                for d in deliveries
            ],
        },
        status=202,
    )
