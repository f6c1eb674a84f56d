"""What the providers really served: served model ids per contender, and the drift flag.

A contender asks for one model id; the endpoint answers with the model it actually used (a
dated snapshot, or a lighter model it routed some requests to). More than one served id for
one contender in a campaign or monitor run is flagged to admins and leads.
"""

from __future__ import annotations

from django.db.models import Count

from tasks.models import Generation


def served_models(*, campaign_id: int) -> dict[str, dict[str, int]]:
    """{contender name: {served model id: done generations}} ('' = the endpoint named none)."""
    rows = (
        Generation.objects.filter(campaign_id=campaign_id, status=Generation.Status.DONE)
        .values_list("contender__name", "served_model")
        .annotate(n=Count("pk"))
        .order_by("contender__name", "served_model")
    )
    out: dict[str, dict[str, int]] = {}
    for name, model, n in rows:
        out.setdefault(name, {})[model] = n
    return out


def served_model_drift(served: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The contenders that were served more than one (named) model."""
    return {name: models for name, models in served.items() if len([m for m in models if m]) > 1}
