"""Admin/lead pages for contenders, campaigns and generation progress."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, has_role, role_required
from evalsite.text import counted
from tasks import review_side
from tasks.blinding.campaign_texts import campaign_identity_terms, instructions_shown
from tasks.blinding.hold import IdentityNotHeld, generation_identity_approve
from tasks.blinding.render import render_markdown
from tasks.campaigns import rubric_builder
from tasks.campaigns.contenders import contender_connection_test, contender_duplicate
from tasks.campaigns.definition import DefinitionError, campaign_create, campaign_instructions_set
from tasks.campaigns.forms import (
    CampaignForm,
    ContenderForm,
    InstructionsForm,
    OutputsUploadForm,
    RosterForm,
)
from tasks.campaigns.lifecycle import (
    LABELS,
    STAGES,
    campaign_close,
    campaign_lifecycle,
    campaign_reopen,
)
from tasks.campaigns.rosters import campaign_rosters_set, roster_summary
from tasks.campaigns.selectors import (
    OUTPUT_FILTERS,
    campaign_check_failures,
    campaign_failure_summary,
    campaign_failures,
    campaign_get,
    campaign_items_summary,
    campaign_list,
    campaign_outputs,
    campaign_progress,
    contender_list,
    failed_checks,
    finding_rows,
    format_eta,
    identity_review,
)
from tasks.generation.outputs_import import outputs_import
from tasks.generation.providers.imported import ImportErrors
from tasks.generation.served import served_model_drift, served_models
from tasks.generation.services import (
    GenerationError,
    generation_cancel,
    generation_enqueue,
    generation_retry_failed,
)
from tasks.models import Campaign, Contender, Generation, Provider

PROGRESS_TARGET = "generation-progress"


def _redirect(request: AuthedHttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def contender_list_view(request: AuthedHttpRequest) -> HttpResponse:
    """The contenders table and the "new contender" form (htmx: errors re-render the form)."""
    form = ContenderForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        contender = Contender.objects.create(**form.spec)
        messages.success(request, f"Contender {contender.name} created.")
        return _redirect(request, reverse("contender_list"))
    context = {"contenders": contender_list(), "form": form}
    if request.htmx and request.method == "POST":
        return render(request, "tasks/contender_list.html#contender-form", context)
    return render(request, "tasks/contender_list.html", context)


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def contender_edit(request: AuthedHttpRequest, pk: int) -> HttpResponse:
    contender = get_object_or_404(Contender, pk=pk)
    # Outputs already generated belong to the configuration that made them.
    locked = contender.generations.filter(status=Generation.Status.DONE).exists()
    form = ContenderForm(request.POST or None, instance=contender)
    if locked:
        for field in form.fields.values():
            field.disabled = True  # shown read-only; a POST cannot change it either
        if request.method == "POST":
            form.add_error(None, "This contender's configuration is fixed: nothing was saved.")
    if request.method == "POST" and not locked and form.is_valid():
        Contender.objects.filter(pk=contender.pk).update(**form.spec)
        messages.success(request, f"Contender {form.spec['name']} saved.")
        return _redirect(request, reverse("contender_list"))
    context = {"contender": contender, "form": form, "locked": locked}
    if request.htmx and request.method == "POST":
        return render(request, "tasks/contender_edit.html#contender-form", context)
    return render(request, "tasks/contender_edit.html", context)


@require_POST
@role_required(ADMIN)
def contender_test_view(request: AuthedHttpRequest, pk: int) -> HttpResponse:
    """One short call to the contender's endpoint: status, served model, latency, or the error
    in words (POST: it spends a few tokens)."""
    contender = get_object_or_404(Contender, pk=pk)
    check = contender_connection_test(contender=contender)
    context = {"contender": contender, "check": check}
    if request.htmx:
        return render(request, "tasks/contender_edit.html#connection", context)
    (messages.success if check.ok else messages.error)(request, check.message)
    return redirect(reverse("contender_edit", args=[pk]))


@require_POST
@role_required(ADMIN)
def contender_duplicate_view(request: AuthedHttpRequest, pk: int) -> HttpResponse:
    """Copy a contender (a locked one's configuration can only change this way) and open the
    copy's edit form."""
    copy = contender_duplicate(contender=get_object_or_404(Contender, pk=pk))
    messages.success(request, f"Copied as {copy.name}: change what differs, rename it and save.")
    return _redirect(request, reverse("contender_edit", args=[copy.pk]))


def _instructions_preview(campaign: Campaign) -> str | None:
    """The instructions as reviewers see them: masked (None without any)."""
    shown = instructions_shown(campaign, campaign_identity_terms(campaign))
    return shown["html"] if shown else None


@require_http_methods(["GET"])
@role_required(ADMIN, LEAD)
def campaign_list_view(request: AuthedHttpRequest) -> HttpResponse:
    campaigns = campaign_list()
    for campaign in campaigns:
        campaign.lifecycle = campaign_lifecycle(campaign)
    return render(
        request,
        "tasks/campaign_list.html",
        {"campaigns": campaigns, "can_create": has_role(request.user, ADMIN)},
    )


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def campaign_new(request: AuthedHttpRequest) -> HttpResponse:
    # ?testset=<id>: "New campaign from this set" on a test set's page.
    chosen = request.GET.get("testset", "")
    initial = {"testset": int(chosen)} if chosen.isdigit() else {}
    form = CampaignForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            campaign, warnings = campaign_create(definition=form.valid, user=request.user)
        except DefinitionError as exc:  # e.g. the slug was taken since the form checked it
            form.add_definition_errors(exc.errors)
        else:
            for warning in warnings:
                messages.warning(request, warning)
            messages.success(request, f"Campaign {campaign.slug} created.")
            return _redirect(request, reverse("campaign_detail", args=[campaign.slug]))
    context = {"form": form, "builder": rubric_builder.form_builder(request, form)}
    if request.htmx and request.method == "POST":
        return render(request, "tasks/campaign_form.html#campaign-form", context)
    return render(request, "tasks/campaign_form.html", context)


def _stages(campaign: Campaign) -> list[tuple[str, str]]:
    closed = [("closed", "Closed")] if campaign.status == Campaign.Status.CLOSED else []
    return [(s, LABELS[s]) for s in STAGES[:5]] + closed


def _detail_context(request: AuthedHttpRequest, campaign: Campaign) -> dict:
    progress = campaign_progress(campaign=campaign)
    for row in [*progress["contenders"], progress["totals"]]:
        row["eta"] = format_eta(row["eta_seconds"])
    is_admin = has_role(request.user, ADMIN)
    imported = [
        c.name for c in campaign.contenders.filter(provider=Provider.IMPORTED).order_by("name")
    ]
    return {
        "campaign": campaign,
        "lifecycle": campaign_lifecycle(campaign),
        "stages": _stages(campaign),
        "progress": progress,
        # Admins and leads only (the view's role check): which contender was served more
        # than one model, with the counts.
        "served_drift": served_model_drift(served_models(campaign_id=campaign.pk)),
        "is_admin": is_admin,
        "poll_target": PROGRESS_TARGET,
        "lease_seconds": settings.GENERATION_LEASE_SECONDS,  # how long before a row stalls
        # The last worker flips generating -> reviewing just after its row is done: keep
        # polling for a minute after the last output while the status read above says
        # generating, so the header badge the poll refreshes never stays at "Generating" (and
        # a campaign left generating by failures is not polled for ever).
        "polling": progress["active"]
        or (
            campaign.status == Campaign.Status.GENERATING and progress["totals"]["recent_done"] > 0
        ),
        "items": campaign_items_summary(campaign=campaign),
        # Identity reports and, where the campaign asks it, whether reviewers could tell.
        "blinding": review_side.blinding_summary(campaign=campaign),
        # Provider error text: admins only. Check results: admins and leads.
        "failures": campaign_failures(campaign=campaign) if is_admin else [],
        "failure_summary": campaign_failure_summary(campaign=campaign) if is_admin else [],
        "check_failures": campaign_check_failures(campaign=campaign),
        "check_failures_total": sum(c["checks_fail"] for c in progress["contenders"]),
        "imported_contenders": imported,
        "upload_form": OutputsUploadForm(contenders=imported) if is_admin and imported else None,
        "max_attempts": settings.GENERATION_MAX_ATTEMPTS,
        "instructions_form": InstructionsForm(initial={"instructions": campaign.instructions})
        if is_admin
        else None,
        "instructions_html": _instructions_preview(campaign),
        "rosters": roster_summary(campaign),
        "roster_form": RosterForm.of(campaign) if is_admin else None,
    }


@require_http_methods(["GET"])
@role_required(ADMIN, LEAD)
def campaign_detail(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """The campaign page; an htmx poll of the progress region gets only that partial, with the
    header's status badge and review-item counts swapped out of band."""
    campaign = campaign_get(slug=slug)
    context = _detail_context(request, campaign)
    if request.htmx and request.htmx.target == PROGRESS_TARGET:
        context["oob"] = True
        return render(request, "tasks/campaign_detail.html#progress", context)
    return render(request, "tasks/campaign_detail.html", context)


def _campaign_action(
    request: AuthedHttpRequest, slug: str, action: Callable[[Campaign], str]
) -> HttpResponse:
    campaign = campaign_get(slug=slug)
    try:
        message = action(campaign)
    except GenerationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, message)
    return _redirect(request, reverse("campaign_detail", args=[campaign.slug]))


def _generate(campaign: Campaign) -> str:
    if queued := generation_enqueue(campaign=campaign):
        return f"Queued {counted(queued, 'generation')}."
    if not campaign.contenders.exclude(provider=Provider.IMPORTED).exists():
        return (
            "Nothing to generate: every contender of this campaign is imported. "
            "Upload their outputs under Import outputs."
        )
    return "Nothing to queue: every generation is already queued, running or done."


def _cancel(campaign: Campaign) -> str:
    if cancelled := generation_cancel(campaign=campaign):
        return f"Cancelled {counted(cancelled, 'generation')}; Generate queues them again."
    return "Nothing was queued or running, so nothing was cancelled."


def _retry_failed(campaign: Campaign) -> str:
    if queued := generation_retry_failed(campaign=campaign):
        return f"Queued {counted(queued, 'failed generation')} again, each with a fresh set of attempts."
    return "No generation has failed: nothing to retry."


@role_required(ADMIN)
@require_POST
def campaign_instructions(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Save the reviewers' instructions; htmx gets the section back with what was saved."""
    campaign = campaign_get(slug=slug)
    form = InstructionsForm(request.POST)
    warning = None
    if form.is_valid():
        warning = campaign_instructions_set(
            campaign=campaign, text=form.cleaned_data["instructions"]
        )
        if not request.htmx:
            messages.success(request, "Instructions saved.")
            if warning:
                messages.warning(request, warning)
            return redirect("campaign_detail", slug=campaign.slug)
    if not request.htmx:  # invalid, without JavaScript: the whole page with the errors
        context = {**_detail_context(request, campaign), "instructions_form": form}
        return render(request, "tasks/campaign_detail.html", context)
    context = {
        "campaign": campaign,
        "is_admin": True,
        "instructions_form": form,
        "instructions_html": _instructions_preview(campaign),
        "saved": form.is_valid(),
        "warning": warning,
    }
    return render(request, "tasks/campaign_detail.html#instructions", context)


def _returned_note(returned: dict) -> str:
    parts = []
    if returned["leases"]:
        parts.append(counted(returned["leases"], "open review"))
    if returned["disputes"]:
        parts.append(counted(returned["disputes"], "claimed dispute"))
    if not parts:
        return ""
    return f" {' and '.join(parts)} of people taken off went back to the queue."


@role_required(ADMIN)
@require_POST
def campaign_rosters(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Save who may review and arbitrate (also while the campaign runs); the work of people
    taken off goes back to the queues. htmx gets the section back, and the stage's warnings."""
    campaign = campaign_get(slug=slug)
    form = RosterForm(request.POST)
    note = None
    if form.is_valid():
        returned = campaign_rosters_set(campaign=campaign, rosters=form.rosters, by=request.user)
        note = f"Rosters saved.{_returned_note(returned)}"
        if not request.htmx:
            messages.success(request, note)
            for warning in form.warnings:
                messages.warning(request, warning)
            return redirect("campaign_detail", slug=campaign.slug)
        warnings, form = form.warnings, RosterForm.of(campaign)
    elif not request.htmx:  # invalid, without JavaScript: the whole page with the errors
        context = {**_detail_context(request, campaign), "roster_form": form}
        return render(request, "tasks/campaign_detail.html", context)
    else:
        warnings = []
    context = {
        "campaign": campaign,
        "is_admin": True,
        "roster_form": form,
        "rosters": roster_summary(campaign),
        "roster_note": note,
        "roster_warnings": warnings,
        # The header's stage and its warnings ("no reviewers on the roster"), swapped too.
        "lifecycle": campaign_lifecycle(campaign),
        "stages": _stages(campaign),
        "oob": True,
    }
    return render(request, "tasks/campaign_detail.html#rosters", context)


@require_POST
@role_required(ADMIN)
def campaign_generate(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    return _campaign_action(request, slug, _generate)


@require_POST
@role_required(ADMIN)
def campaign_cancel(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    return _campaign_action(request, slug, _cancel)


@require_POST
@role_required(ADMIN)
def campaign_retry_failed(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    return _campaign_action(request, slug, _retry_failed)


@require_POST
@role_required(ADMIN)
def campaign_retry_selected(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Bulk action of the outputs list: retry the failed generations ticked on it."""
    campaign = campaign_get(slug=slug)
    ids = [int(v) for v in request.POST.getlist("ids") if v.isdigit()]
    if not ids:
        messages.warning(request, "Tick the failed outputs to retry first.")
    else:
        try:
            n = generation_retry_failed(campaign=campaign, ids=ids)
        except GenerationError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{counted(n, 'failed generation')} queued again.")
    back = reverse("campaign_outputs", args=[slug]) + "?only=failed"
    return _redirect(request, back)


def _close(campaign: Campaign) -> str:
    campaign_close(campaign=campaign)
    return "Campaign closed: reviewers and arbiters can no longer take its items."


def _reopen(campaign: Campaign) -> str:
    campaign_reopen(campaign=campaign)
    return "Campaign reopened for review."


@require_POST
@role_required(ADMIN)
def campaign_close_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    return _campaign_action(request, slug, _close)


@require_POST
@role_required(ADMIN)
def campaign_reopen_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    return _campaign_action(request, slug, _reopen)


@require_http_methods(["GET"])
@role_required(ADMIN, LEAD)
def campaign_outputs_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Read the generated outputs, filtered (failed checks, self-identifying, failed) and paged.
    Texts render through the reviewers' Markdown pipeline (unmasked: leads see identities)."""
    campaign = campaign_get(slug=slug)
    only = request.GET.get("only", "")
    if only not in OUTPUT_FILTERS:
        only = ""
    contender = request.GET.get("contender", "")
    page = Paginator(
        campaign_outputs(campaign=campaign, only=only, contender=contender), 25
    ).get_page(request.GET.get("page"))
    for gen in page:
        gen.html = render_markdown(gen.output)
        gen.failed_checks = failed_checks(gen.check_results)
        gen.findings = finding_rows(gen.identity_findings)
    return render(
        request,
        "tasks/campaign_outputs.html",
        {
            "campaign": campaign,
            "page": page,
            "only": only,
            "filters": [(key, label) for key, (label, _) in OUTPUT_FILTERS.items()],
            "contender": contender,
            "contenders": list(campaign.contenders.order_by("name").values_list("name", flat=True)),
            "is_admin": has_role(request.user, ADMIN),
        },
    )


@require_POST
@role_required(ADMIN)
def campaign_import_outputs(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_get(slug=slug)
    context = _detail_context(request, campaign)
    form = OutputsUploadForm(request.POST, request.FILES, contenders=context["imported_contenders"])
    if form.is_valid():
        try:
            result = outputs_import(
                campaign=campaign,
                contender_name=form.cleaned_data["contender"],
                raw=form.cleaned_data["file"].read(),
            )
        except ImportErrors as exc:
            for error in exc.errors:
                form.add_error("file", error)
        else:
            messages.success(
                request,
                f"Imported {counted(result['stored'], 'output')} ({result['unchanged']} unchanged, "
                f"{result['missing']} still missing); "
                f"{counted(result['items_ready'], 'review item')} became ready.",
            )
            return _redirect(request, reverse("campaign_detail", args=[campaign.slug]))
    context["upload_form"] = form
    if request.htmx:
        return render(request, "tasks/campaign_detail.html#upload-form", context)
    return render(request, "tasks/campaign_detail.html", context)


@require_http_methods(["GET"])
@role_required(ADMIN, LEAD)
def campaign_output_identity(request: AuthedHttpRequest, slug: str, output_id: int) -> HttpResponse:
    """One self-identifying output side by side: the original with what was found marked, and
    the masked text as reviewers see it; admins approve a held one here (leads only read)."""
    campaign = campaign_get(slug=slug)
    context = {
        **identity_review(campaign=campaign, pk=output_id),
        "campaign": campaign,
        "is_admin": has_role(request.user, ADMIN),
    }
    return render(request, "tasks/campaign_output_identity.html", context)


@require_POST
@role_required(ADMIN)
def campaign_output_approve(request: AuthedHttpRequest, slug: str, output_id: int) -> HttpResponse:
    """Approve a held output's masked view: its items open for reviewers if all else is ready.
    htmx gets the decision region back; without JavaScript, the page again with a message."""
    campaign = campaign_get(slug=slug)
    context = {
        **identity_review(campaign=campaign, pk=output_id),
        "campaign": campaign,
        "is_admin": True,
    }
    try:
        opened = generation_identity_approve(generation=context["generation"], user=request.user)
    except IdentityNotHeld as exc:
        note, opened = str(exc), None
    else:
        note = (
            f"Approved: reviewers see the masked view; {counted(opened, 'review item')} "
            "opened for review."
        )
        context["generation"].refresh_from_db()
    if not request.htmx:
        (messages.success if opened is not None else messages.info)(request, note)
        return redirect("campaign_output_identity", slug=campaign.slug, output_id=output_id)
    context["note"] = note
    return render(request, "tasks/campaign_output_identity.html#decision", context)
