"""Writes for contenders beyond the form's create and edit: duplicate one."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from .models import Contender

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
