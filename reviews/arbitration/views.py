"""Arbiter pages (queue, arbitration by token) and the lead's disputes view."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from evalsite.htmx import AuthedHttpRequest, wants_fragment
from evalsite.roles import ADMIN, ARBITER, LEAD, role_required
from evalsite.text import counted
from reviews.arbitration.selectors import (
    DisputeFilter,
    arbiter_counts,
    arbiter_queue,
    arbiter_resolved,
    arbitration_workspace,
    campaign_dispute_counts,
    campaign_disputes,
    dispute_rows,
)
from reviews.arbitration.services import (
    BAD_PREFERENCE,
    CHOOSE_PREFERENCE,
    LEASE_LAPSED,
    VALUE_REQUIRED,
    AlreadyResolved,
    ArbitrationGone,
    LeaseGone,
    ResolveInvalid,
    arbitration_claim_next,
    arbitration_heartbeat,
    arbitration_release,
    arbitration_resolve,
    arbitrations_requeue,
)
from reviews.comments import item_comments
from reviews.identity_reports.services import REPORTED, NothingToReport, arbiter_report
from reviews.models import FLAGS, Arbitration
from reviews.rubric import Rubric, label_map
from tasks.models import Campaign

PAGE = "reviews/arbitration.html"


def _mine(token: str, user: User) -> Arbitration:
    """The arbiter's own active arbitration, else 404 (someone else's, stale or unknown)."""
    arbitration = (
        Arbitration.objects.filter(token=token, arbiter=user, state=Arbitration.State.ACTIVE)
        .select_related("item__campaign")
        .first()
    )
    if arbitration is None or not arbitration.item.campaign.on_roster(user, ARBITER):
        raise Http404
    return arbitration


def _form_values(request: AuthedHttpRequest, labels: list[str], keys: list[str]) -> dict:
    """The POSTed form as the service's label-keyed shape; "" (keep) is left out."""
    scores: dict[str, dict] = {}
    for label in labels:
        for key in keys:
            raw = request.POST.get(f"score-{label}-{key}", "").strip()
            if raw:
                scores.setdefault(label, {})[key] = None if raw == "na" else raw
    flags = {
        label: [f for f in request.POST.getlist(f"flag-{label}") if f in FLAGS] for label in labels
    }
    return {
        "scores": scores,
        "preference": request.POST.get("preference", "").strip(),
        "flags": flags,
        "note": request.POST.get("note", ""),
    }


def _apply_submitted(ws: dict, values: dict) -> None:
    """Keep what the arbiter entered when the form comes back with errors."""
    for row in ws["grid"]:
        for cell in row["cells"]:
            given = values["scores"].get(cell["label"], {})
            if row["key"] in given:
                raw = given[row["key"]]
                cell["selected"] = "na" if raw is None else str(raw)
    if values["preference"]:
        ws["preference"]["selected"] = values["preference"]
    for row in ws["flag_rows"]:
        chosen = set(values["flags"].get(row["label"], []))
        for entry in row["flags"]:
            entry["checked"] = entry["flag"] in chosen


def _page_error(message: str, both_bad: str) -> str:
    """A service error in the page's words: its buttons' names, not the API's values."""
    if message in (CHOOSE_PREFERENCE, BAD_PREFERENCE):
        return f"choose an output, Tie or {both_bad}"
    if message == VALUE_REQUIRED:
        return "a value is required (disputed)"
    return message


def _field_key(reason: dict) -> str:
    """The error key of the field that settles a reason of the disagreement box."""
    if reason["part"] == "preference":
        return "preference"
    if reason["part"] == "flag":
        return f"flags.{reason['label']}"
    return f"scores.{reason['label']}.{reason['part']}"


def _error_list(ws: dict, errors: dict[str, str]) -> list[str]:
    """The errors, each under the name the form gives its field, in the order of the
    disagreement box (what the arbiter reads first), then in the form's order."""
    names = {
        f"scores.{cell['label']}.{row['key']}": f"Output {cell['label']}, {row['label']}"
        for row in ws["grid"]
        for cell in row["cells"]
    }
    names["preference"] = "Preference"
    names |= {f"flags.{row['label']}": f"Output {row['label']}, flags" for row in ws["flag_rows"]}
    names["note"] = "Note"
    box = [_field_key(d) for d in ws["disputed"]]
    order = dict.fromkeys([*box, *names, *errors])
    return [f"{names.get(key, key)}: {errors[key]}" for key in order if key in errors]


def _workspace_context(
    arbitration: Arbitration,
    campaign: Campaign,
    *,
    errors: dict[str, str] | None = None,
    values: dict | None = None,
) -> dict:
    ws = arbitration_workspace(arbitration=arbitration)
    # Worded as on the review page: "All bad" when more than two outputs are shown.
    names = {"tie": "Tie", "both_bad": "Both bad" if len(arbitration.order) == 2 else "All bad"}
    errors = {k: _page_error(v, names["both_bad"]) for k, v in (errors or {}).items()}
    anchors = {d["key"]: {a["value"]: a["text"] for a in d["anchors"]} for d in ws["rubric"]}
    for row in ws["grid"]:
        for cell in row["cells"]:
            cell["selected"] = ""
            cell["error"] = errors.get(f"scores.{cell['label']}.{row['key']}", "")
    pref = ws["preference"]
    pref["selected"] = pref["agreed"]
    pref["error"] = errors.get("preference", "")
    for row in ws["flag_rows"]:
        row["error"] = errors.get(f"flags.{row['label']}", "")
    if values:
        _apply_submitted(ws, values)
    for row in ws["grid"]:
        for cell in row["cells"]:
            options = (
                [] if cell["disputed"] else [{"value": "", "text": f"keep {cell['agreed_text']}"}]
            )
            options += [
                {"value": str(v), "text": str(v), "anchor": anchors[row["key"]].get(v, "")}
                for v in cell["choices"]
            ]
            if cell["na"]:
                options.append({"value": "na", "text": "N/A"})
            for o in options:
                o["checked"] = _same(o["value"], cell["selected"])
            cell["options"] = options
    # The review page's keys: a digit picks the n-th choice.
    pref["options"] = [
        {
            "value": c,
            "text": names.get(c, f"Output {c}"),
            "key": n,
            "checked": c == pref["selected"],
        }
        for n, c in enumerate(pref["choices"], start=1)
    ]
    ws["comments"] = item_comments(item=arbitration.item, for_arbiter=arbitration.arbiter)
    return {
        "ws": ws,
        "errors": errors,
        "error_list": _error_list(ws, errors),
        "note": (values or {}).get("note", ""),
        "note_error": errors.get("note", ""),
        # Heartbeat three times per lease, at most once a minute (as the review page does).
        "heartbeat_ms": min(60_000, max(1, campaign.lease_minutes) * 20_000),
    }


def _same(option: str, selected: str) -> bool:
    if option == selected:
        return True
    try:
        return float(option) == float(selected)
    except ValueError:
        return False


@never_cache  # live counts: Back must not show them from before the last resolve
@role_required(ARBITER)
@require_GET
def arbiter_home(request: AuthedHttpRequest) -> HttpResponse:
    context = {
        "campaigns": arbiter_queue(arbiter=request.user),
        "resolved": arbiter_resolved(arbiter=request.user),
    }
    return render(request, "reviews/arbiter_home.html", context)


@role_required(ARBITER)
@require_POST
def arbitration_next(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Claim (or resume) the next disputed item of a campaign (one on the arbiter's roster:
    another is a 404, as a campaign that does not exist)."""
    campaign = get_object_or_404(Campaign.objects.visible_to(request.user, ARBITER), slug=slug)
    arbitration = arbitration_claim_next(campaign=campaign, arbiter=request.user)
    if arbitration is None:
        if request.htmx:
            counts = arbiter_counts(campaign=campaign, arbiter=request.user)
            return render(request, f"{PAGE}#empty", {"campaign": campaign, "counts": counts})
        messages.info(request, f"No disputed items left for you in {campaign.name}.")
        return redirect("arbiter_home")
    url = reverse("arbitration_page", args=[arbitration.token])
    if request.htmx:
        response = render(request, f"{PAGE}#workspace", _workspace_context(arbitration, campaign))
        response["HX-Replace-Url"] = url
        return response
    return redirect(url)


@role_required(ARBITER)
@require_GET
def arbitration_page(request: AuthedHttpRequest, token: str) -> HttpResponse:
    try:
        arbitration = _mine(token, request.user)
    except Http404:
        # A link kept from earlier (Back, a bookmark) says what became of it, as a review's does.
        resolved = Arbitration.objects.filter(
            token=token, arbiter=request.user, state=Arbitration.State.RESOLVED
        ).exists()
        return _gone(request, RESOLVED if resolved else ArbitrationGone.message, resolved)
    template = f"{PAGE}#workspace" if request.htmx else PAGE
    return render(request, template, _workspace_context(arbitration, arbitration.item.campaign))


@role_required(ARBITER)
@require_POST
def arbitration_resolve_view(request: AuthedHttpRequest, token: str) -> HttpResponse:
    arbitration = (
        Arbitration.objects.filter(token=token, arbiter=request.user)
        .select_related("item__campaign")
        .first()
    )
    if arbitration is None or not arbitration.item.campaign.on_roster(request.user, ARBITER):
        return _gone(request)
    campaign = arbitration.item.campaign
    keys = Rubric.for_item(arbitration.item).keys  # per-turn scores (score_turns) included
    values = _form_values(request, list(label_map(arbitration.order)), keys)
    try:
        arbitration, _ = arbitration_resolve(token=token, arbiter=request.user, **values)
    except ArbitrationGone:
        return _gone(request)
    except AlreadyResolved:
        # Another tab resolved it first: say the values on this one were not saved.
        return _gone(request, AlreadyResolved.message, resolved=True)
    except ResolveInvalid as exc:
        context = _workspace_context(arbitration, campaign, errors=exc.errors, values=values)
        template = f"{PAGE}#workspace" if request.htmx else PAGE
        return render(request, template, context)
    counts = arbiter_counts(campaign=campaign, arbiter=request.user)
    if request.htmx:
        return render(request, f"{PAGE}#done", {"campaign": campaign, "counts": counts})
    messages.success(request, "Dispute resolved.")
    return redirect("arbiter_home")


@role_required(ARBITER)
@require_POST
def arbitration_release_view(request: AuthedHttpRequest, token: str) -> HttpResponse:
    try:
        arbitration_release(token=token, arbiter=request.user)
    except ArbitrationGone:
        return _gone(request)
    # Says what the service did: the dispute is open to every arbiter again, this one included
    # (it keeps its place, oldest first), and the values on the page were never sent.
    messages.success(request, HANDED_BACK)
    if request.htmx:
        return HttpResponseClientRedirect(reverse("arbiter_home"))
    return redirect("arbiter_home")


@role_required(ARBITER)
@require_POST
def arbitration_report_identity_view(request: AuthedHttpRequest, token: str) -> HttpResponse:
    """ "This answer reveals the model": the dispute waits, out of every queue, for an admin."""
    try:
        arbiter_report(token=token, arbiter=request.user, note=request.POST.get("note", ""))
    except NothingToReport:
        return _gone(request)
    messages.success(request, REPORTED)
    if request.htmx:
        return HttpResponseClientRedirect(reverse("arbiter_home"))
    return redirect("arbiter_home")


@role_required(ARBITER)
@require_POST
def arbitration_heartbeat_view(request: AuthedHttpRequest, token: str) -> JsonResponse:
    """Keep the lease while the page is open: the new expiry, or a "gone" answer to show."""
    try:
        expires = arbitration_heartbeat(token=token, arbiter=request.user)
    except ArbitrationGone:
        # JSON rather than the HTML 404 page: the holder's own tab gets this once a release or
        # another arbiter's claim rotated the token, and must say so. A token that was never
        # theirs gets the very same answer, which confirms nothing.
        return JsonResponse({"ok": False, "message": ArbitrationGone.message}, status=404)
    except LeaseGone as gone:
        return JsonResponse({"ok": False, "message": str(gone)}, status=409)
    if expires is None:
        return JsonResponse({"ok": False, "message": LEASE_LAPSED}, status=409)
    return JsonResponse({"ok": True, "lease_expires_at": expires.isoformat()})


HANDED_BACK = (
    "Handed back: the dispute is in the arbitration queue again, for any arbiter (you too); "
    "nothing you chose on it was saved."
)
RESOLVED = "You resolved this dispute: your decision is saved. Nothing more to do here."


def _gone(
    request: AuthedHttpRequest, message: str = ArbitrationGone.message, resolved: bool = False
) -> HttpResponse:
    # 200 for htmx (htmx 2 does not swap 4xx), 404 for a plain request (200 once resolved).
    context = {"message": message, "resolved": resolved}
    if request.htmx:
        return render(request, f"{PAGE}#gone", context)
    status = 200 if resolved else 404
    return render(request, "reviews/arbitration_gone.html", context, status=status)


@role_required(LEAD, ADMIN)
@require_POST
def campaign_disputes_requeue(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Bulk: the ticked disputes in progress back to the arbitration queue."""
    campaign = get_object_or_404(Campaign, slug=slug)
    ids = [int(v) for v in request.POST.getlist("ids") if v.isdigit()]
    n = arbitrations_requeue(campaign=campaign, item_ids=ids)
    if n:
        messages.success(request, f"{counted(n, 'dispute')} handed back to the queue.")
    else:
        messages.warning(request, "Nothing handed back: tick disputes that are in progress.")
    url = reverse("campaign_disputes", args=[slug]) + "?status=in_progress"
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@role_required(LEAD, ADMIN)
@require_GET
def campaign_disputes_view(request: AuthedHttpRequest, slug: str) -> HttpResponse:
    """Disputes with reasons, status, arbiter and note; filter by dimension, reviewer, status."""
    campaign = get_object_or_404(Campaign, slug=slug)
    filters = DisputeFilter(
        dimension=request.GET.get("dimension", "").strip(),
        reviewer=request.GET.get("reviewer", "").strip(),
        status=request.GET.get("status", "").strip()
        if request.GET.get("status") in ("open", "in_progress", "resolved")
        else "",
    )
    if request.htmx and request.GET.get("summary"):
        # The small section the campaign page loads lazily.
        counts = campaign_dispute_counts(campaign=campaign)
        return render(
            request, "reviews/disputes.html#summary", {"campaign": campaign, "counts": counts}
        )
    data = campaign_disputes(campaign=campaign, filters=filters)
    page = Paginator(data["queryset"], 50).get_page(request.GET.get("page"))
    rows = dispute_rows(arbitrations=list(page.object_list), now=data["now"])
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "campaign": campaign,
        "filters": filters,
        "page": page,
        "rows": rows,
        "counts": data["counts"],
        "by_dimension": data["by_dimension"],
        "dimensions": data["dimensions"],
        "reviewers": data["reviewers"],
        "matching": page.paginator.count,
        "query": query.urlencode(),
    }
    template = (
        "reviews/disputes.html#results" if wants_fragment(request) else "reviews/disputes.html"
    )
    return render(request, template, context)
