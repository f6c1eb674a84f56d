"""Monitor pages: the list, a monitor (trend charts, alert banner and log, latest comparison),
a run (its comparison), a regressed task side by side; admins start runs and "review blind"."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, has_role, role_required
from tasks.campaigns.definition import DefinitionError
from tasks.generation.services import GenerationError
from tasks.monitors.alerts import ResendRefused, alert_resend
from tasks.monitors.cron import ScheduleError, fire_times, schedule_problem
from tasks.monitors.definition import (
    MonitorError,
    monitor_archive,
    monitor_create,
    monitor_definition,
    monitor_pause,
    monitor_update,
)
from tasks.monitors.forms import form_context, form_definition
from tasks.monitors.judging import judge_form_state
from tasks.monitors.models import MonitorAlert
from tasks.monitors.review import review_blind_create
from tasks.monitors.runs import monitor_run_progress, monitor_run_start
from tasks.monitors.selectors import (
    alert_log,
    monitor_get,
    monitor_list,
    run_get,
    run_page,
    schedule_facts,
    task_side_by_side,
    threshold_lines,
    trend_charts,
)


@require_http_methods(["GET"])
@role_required(ADMIN, LEAD)
def monitor_list_view(request: AuthedHttpRequest) -> HttpResponse:
    return render(
        request,
        "tasks/monitor_list.html",
        {"rows": monitor_list(), "is_admin": has_role(request.user, ADMIN)},
    )


@require_http_methods(["GET"])
@role_required(ADMIN, LEAD)
def monitor_detail_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    monitor = monitor_get(slug=slug)
    runs = list(monitor.runs.order_by("-number")[:50])
    latest_done = next((r for r in runs if r.status == "done"), None)
    return render(
        request,
        "tasks/monitor_detail.html",
        {
            "monitor": monitor,
            "runs": runs,
            "charts": trend_charts(monitor=monitor),
            "alerts": alert_log(monitor=monitor),
            # The banner: what the latest graded run crossed.
            "banner": list(latest_done.alerts.all()) if latest_done else [],
            "latest": latest_done,
            "schedule": schedule_facts(monitor=monitor),
            "thresholds": threshold_lines(monitor=monitor),
            "is_admin": has_role(request.user, ADMIN),
        },
    )


@require_POST
@role_required(ADMIN)
def monitor_pause_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Pause (paused=1) or resume (paused=0) the schedule."""
    monitor = monitor_get(slug=slug)
    paused = request.POST.get("paused") == "1"
    monitor_pause(monitor=monitor, paused=paused)
    messages.success(
        request, "Paused: the schedule starts nothing." if paused else "Resumed its schedule."
    )
    return redirect(reverse("monitor_detail", args=[slug]))


@require_POST
@role_required(ADMIN)
def monitor_delete_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    monitor = monitor_get(slug=slug)
    monitor_archive(monitor=monitor)
    messages.success(
        request,
        f"Deleted monitor {monitor.slug}; its runs are kept "
        f"(compare {monitor.slug}#N still reads them).",
    )
    return redirect(reverse("monitor_list"))


@require_http_methods(["GET"])
@role_required(ADMIN, LEAD)
def monitor_run_view(request: AuthedHttpRequest, slug: str, number: int) -> HttpResponse:
    """A run's page; while it generates, its body polls (htmx) and gets only that partial."""
    monitor = monitor_get(slug=slug)
    run = run_get(monitor=monitor, number=number)
    context = {
        "monitor": monitor,
        "run": run,
        "progress": monitor_run_progress(run),
        "is_admin": has_role(request.user, ADMIN),
        **run_page(run=run),
    }
    if request.htmx and request.htmx.target == "run-body":
        return render(request, "tasks/monitor_run.html#run-body", context)
    return render(request, "tasks/monitor_run.html", context)


@require_http_methods(["GET"])
@role_required(ADMIN, LEAD)
def monitor_task_view(
    request: AuthedHttpRequest, slug: str, number: int, task_id: str
) -> HttpResponse:
    monitor = monitor_get(slug=slug)
    run = run_get(monitor=monitor, number=number)
    return render(
        request,
        "tasks/monitor_task.html",
        {"monitor": monitor, "run": run, **task_side_by_side(run=run, task_id=task_id)},
    )


@require_POST
@role_required(ADMIN)
def monitor_run_start_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    monitor = monitor_get(slug=slug)
    try:
        run = monitor_run_start(monitor=monitor)
    except (MonitorError, GenerationError) as exc:
        messages.error(request, str(exc))
        return redirect(reverse("monitor_detail", args=[slug]))
    messages.success(request, f"Started run {run.number}.")
    return redirect(reverse("monitor_run", args=[slug, run.number]))


@require_POST
@role_required(ADMIN)
def monitor_review_blind_view(request: AuthedHttpRequest, slug: str, number: int) -> HttpResponse:
    monitor = monitor_get(slug=slug)
    run = run_get(monitor=monitor, number=number)
    try:
        campaign = review_blind_create(
            run=run, contender=request.POST.get("contender", ""), user=request.user
        )
    except MonitorError as exc:
        messages.error(request, str(exc))
        return redirect(reverse("monitor_run", args=[slug, number]))
    messages.success(request, f"Created campaign {campaign.slug} from the regressed tasks.")
    return redirect(reverse("campaign_detail", args=[campaign.slug]))


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def monitor_create_view(request: AuthedHttpRequest) -> HttpResponse:
    definition = {"baseline": "first", "samples_per_task": 1, "thresholds": [], "alerts": {}}
    errors: list[str] = []
    if request.method == "POST":
        definition = form_definition(request.POST)
        try:
            monitor = monitor_create(definition=definition, user=request.user)
        except DefinitionError as exc:
            errors = exc.errors
        else:
            messages.success(request, f"Created monitor {monitor.slug}.")
            return redirect(reverse("monitor_detail", args=[monitor.slug]))
    return render(
        request,
        "tasks/monitor_form.html",
        {
            "monitor": None,
            "errors": errors,
            **form_context(definition),
            **_preview(definition),
            **_judge_state(definition),
        },
    )


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def monitor_edit_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    monitor = monitor_get(slug=slug)
    definition = monitor_definition(monitor)
    errors: list[str] = []
    if request.method == "POST":
        definition = {**definition, **form_definition(request.POST, slug=monitor.slug)}
        try:
            monitor_update(monitor=monitor, changes=definition)
        except DefinitionError as exc:
            errors = exc.errors
        else:
            messages.success(request, f"Saved monitor {monitor.slug}.")
            return redirect(reverse("monitor_detail", args=[monitor.slug]))
    return render(
        request,
        "tasks/monitor_form.html",
        {
            "monitor": monitor,
            "errors": errors,
            **form_context(definition),
            **_preview(definition),
            **_judge_state(definition),
        },
    )


@require_http_methods(["GET"])
@role_required(ADMIN)
def monitor_schedule_preview_view(request: AuthedHttpRequest) -> HttpResponse:
    """The schedule field's note (htmx, as the admin types): the next three due times, or why
    the expression cannot be used."""
    preview = _preview({"schedule": request.GET.get("schedule", "")})
    return render(request, "tasks/monitor_form.html#schedule-preview", preview)


@require_http_methods(["GET"])
@role_required(ADMIN)
def monitor_judge_preview_view(request: AuthedHttpRequest) -> HttpResponse:
    """The judge field's note (htmx, as the admin chooses): the judge's calibration on the
    chosen campaign, dimension by dimension, and the refusal in words when it falls short."""
    definition = {
        "judge": request.GET.get("judge", ""),
        "calibration": request.GET.get("calibration", ""),
        "allow_uncalibrated": request.GET.get("allow_uncalibrated") == "on",
    }
    return render(request, "tasks/monitor_form.html#judge-state", _judge_state(definition))


def _judge_state(definition: dict) -> dict:
    return {
        "judge_state": judge_form_state(
            judge=definition.get("judge") or "",
            calibration=definition.get("calibration") or "",
            allow=bool(definition.get("allow_uncalibrated")),
        )
    }


def _preview(definition: dict) -> dict:
    schedule = (definition.get("schedule") or "").strip()
    if not schedule:
        return {"preview": {"empty": True}}
    problem = schedule_problem(schedule)
    if problem:
        return {"preview": {"problem": problem}}
    try:
        return {"preview": {"times": fire_times(schedule)}}
    except ScheduleError as exc:
        return {"preview": {"problem": str(exc)}}


@require_POST
@role_required(ADMIN)
def monitor_alert_resend_view(request: AuthedHttpRequest, slug: str, alert_id: int) -> HttpResponse:
    monitor = monitor_get(slug=slug)
    alert = get_object_or_404(MonitorAlert, pk=alert_id, run__monitor=monitor)
    try:
        deliveries = alert_resend(alert=alert)
    except ResendRefused as exc:
        messages.error(request, f"Not resent: {exc}.")
    else:
        channels = " and ".join(d.channel for d in deliveries)
        messages.success(request, f"Resending the alert's {channels} (the same delivery id).")
    return redirect(reverse("monitor_detail", args=[slug]) + "#alert-log")
