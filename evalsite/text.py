"""Counts written as words, for messages built in Python (templates use `pluralize`)."""


def counted(n: int, noun: str, plural: str = "") -> str:
    """ "1 review", "3 reviews"; `plural` for a noun that does not just take an s."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def more_problems(n: int) -> str:
    """The line that ends a capped list of problems."""
    return f"... and {counted(n, 'more problem')}"
