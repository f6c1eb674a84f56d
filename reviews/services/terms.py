"""The words masked for a campaign's reviewers, cached per process."""

from __future__ import annotations

import time

from tasks.models import Campaign

from .. import blinding

_TERMS_CACHE: dict[int, tuple[float, tuple, tuple[str, ...]]] = {}


TERMS_TTL_SECONDS = 30.0


def campaign_identity_terms(campaign: Campaign) -> tuple[str, ...]:
    """Words to mask for this campaign. Cached per process for a few seconds: every review
    page needs them, and a campaign's contenders do not change while it is reviewed."""
    now = time.monotonic()
    redact = tuple(campaign.redact or [])
    cached = _TERMS_CACHE.get(campaign.pk)
    if cached is not None and cached[1] == redact and now - cached[0] < TERMS_TTL_SECONDS:
        return cached[2]
    terms = blinding.identity_terms(
        redact=redact,
        contenders=campaign.contenders.values("name", "model", "version_label", "base_url"),
    )
    _TERMS_CACHE[campaign.pk] = (now, redact, terms)
    return terms
