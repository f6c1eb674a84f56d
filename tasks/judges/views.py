"""Judge pages: the list and one judge's definition (admins and leads)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from evalsite.htmx import AuthedHttpRequest
from evalsite.roles import ADMIN, LEAD, role_required
from tasks.judges.models import Judge


@require_GET
@role_required(ADMIN, LEAD)
def judge_list_view(request: AuthedHttpRequest) -> HttpResponse:
    return render(request, "tasks/judge_list.html", {"judges": Judge.objects.order_by("name")})


@require_GET
@role_required(ADMIN, LEAD)
def judge_detail_view(request: AuthedHttpRequest, name: str) -> HttpResponse:
    judge = get_object_or_404(Judge, name=name)
    return render(request, "tasks/judge_detail.html", {"judge": judge})
