"""Contenders beyond the form's create and edit: duplicate one, test its endpoint."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction

from tasks.generation import providers
from tasks.models import Contender

NAME_MAX = Contender._meta.get_field("name").max_length
# Every setting of the configuration (what a campaign definition gives), not its identity.
COPIED = tuple(
    f.name
    for f in Contender._meta.concrete_fields
    if not f.primary_key and f.name not in ("name", "created_at")
)


def copy_name(name: str, n: int) -> str:
    """ "<name> (copy)", then "(copy 2)", ..., the name cut to keep it within NAME_MAX."""
    suffix = " (copy)" if n == 1 else f" (copy {n})"
    return name[: NAME_MAX - len(suffix)] + suffix


def contender_duplicate(*, contender: Contender) -> Contender:
    """A new contender with `contender`'s configuration, named "<name> (copy)" (or the first
    "(copy n)" free): not used by any campaign, so every field can be changed. The way to a
    changed configuration of a contender whose outputs fix it."""
    values = {field: getattr(contender, field) for field in COPIED}
    for n in range(1, 1000):
        name = copy_name(contender.name, n)
        if Contender.objects.filter(name=name).exists():
            continue
        try:
            with transaction.atomic():
                return Contender.objects.create(name=name, **values)
        except IntegrityError:  # taken meanwhile: the next number
            continue
    raise RuntimeError(f"no free copy name for {contender.name!r}")


# One short question and a short answer: enough to show the endpoint, the key and the model
# name work, for a fraction of a cent.
PROBE = [{"role": "user", "content": "Reply with the single word OK."}]
PROBE_TOKENS = 16


@dataclass(frozen=True)
class ConnectionCheck:
    ok: bool
    message: str  # what happened, in words
    status: int | None = None  # the HTTP status, when the endpoint answered one
    served_model: str = ""  # the model the endpoint says answered
    latency_ms: int | None = None
    answer: str = ""


def contender_connection_test(*, contender: Contender) -> ConnectionCheck:
    """Send one short request to `contender`'s endpoint with its own settings (its answer
    capped at a few tokens) and say what came back. Nothing is stored."""
    if contender.provider == "imported":
        return ConnectionCheck(
            False, "An imported contender has no endpoint: its outputs come from a file."
        )
    probe = copy.copy(contender)
    params = dict(contender.params or {})
    # The cap under the name the contender already uses (newer OpenAI models refuse max_tokens).
    cap = "max_completion_tokens" if "max_completion_tokens" in params else "max_tokens"
    probe.params = {**params, cap: PROBE_TOKENS}
    started = time.monotonic()
    try:
        result = providers.generate(probe, PROBE)
    except providers.ProviderError as exc:
        return ConnectionCheck(
            False,
            _in_words(exc, contender),
            status=exc.status,
            latency_ms=int((time.monotonic() - started) * 1000),
        )
    served = result.served_model or ""
    note = "" if not served or served == contender.model else f" (asked for {contender.model})"
    return ConnectionCheck(
        True,
        f"Connected: {served or contender.model} answered in {result.latency_ms} ms{note}.",
        status=200,
        served_model=served,
        latency_ms=result.latency_ms,
        answer=result.text[:200],
    )


def _in_words(exc: providers.ProviderError, contender: Contender) -> str:
    """The failure as an admin can act on it, with the endpoint's own words after it."""
    host = urlsplit(contender.base_url or "").netloc or contender.base_url or "the endpoint"
    status = exc.status
    if status in (401, 403):
        hint = f"{host} refused the key ({status}): check {contender.api_key_env or 'the key'}"
    elif status == 404:
        hint = f"{host} has no such path or model ({status}): check the base URL and model"
    elif status == 429:
        hint = f"{host} is rate limiting or out of quota (429)"
    elif status is not None and status >= 500:
        hint = f"{host} failed on its side ({status})"
    elif status is not None:
        hint = f"{host} refused the request ({status}): check the parameters"
    elif exc.message.startswith("timeout"):
        hint = f"{host} did not answer in time"
    elif exc.message.startswith("connection error"):
        hint = f"Could not connect to {host}: is the base URL right and the server up?"
    else:
        hint = "The call failed"
    return f"{hint}. {exc.message}"
