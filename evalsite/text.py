"""Counts written as words, for messages built in Python (templates use `pluralize`), and
costs written with the site's currency."""

from django.conf import settings


def counted(n: int, noun: str, plural: str = "") -> str:
    """ "1 review", "3 reviews"; `plural` for a noun that does not just take an s."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def money(value) -> str:
    """A cost as "0.00042 USD" (EVALSITE_CURRENCY): up to six decimals, trailing zeros dropped;
    "-" for none."""
    if value is None or value == "":
        return "-"
    try:
        amount = float(value)
    except (TypeError, ValueError):
        return str(value)
    shown = f"{amount:.6f}".rstrip("0").rstrip(".") if amount else "0"
    return f"{shown} {settings.EVALSITE_CURRENCY}"


def more_problems(n: int) -> str:
    """The line that ends a capped list of problems."""
    return f"... and {counted(n, 'more problem')}"
