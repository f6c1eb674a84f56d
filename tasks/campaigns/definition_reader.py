"""Small typed readers for definitions (campaigns, monitors, score_turns) that record each
problem as a "where.key: message" string instead of raising, so every problem is reported."""

from __future__ import annotations


class DefinitionReader:
    def __init__(self, errors: list[str]):
        self.errors = errors

    def integer(self, data: dict, key: str, where: str, default=None, lo=None, hi=None):
        value = data.get(key, default)
        if value is None:
            self._null(key, where, default, "an integer")
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.errors.append(f"{where}{key}: must be an integer")
            return default
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
            self.errors.append(f"{where}{key}: must be {bounds}")
        return value

    def number(self, data: dict, key: str, where: str, default=None, lo=None, hi=None):
        value = data.get(key, default)
        if value is None:
            self._null(key, where, default, "a number")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.errors.append(f"{where}{key}: must be a number")
            return default
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
            self.errors.append(f"{where}{key}: must be {bounds}")
        return value

    def string(
        self,
        data: dict,
        key: str,
        where: str,
        default: str = "",
        max_len: int = 200,
        required=False,
    ):
        value = data.get(key, default)
        if value is None:
            value = default
        if not isinstance(value, str):
            self.errors.append(f"{where}{key}: must be a string")
            return default
        if required and not value.strip():
            self.errors.append(f"{where}{key}: required")
        if len(value) > max_len:
            self.errors.append(f"{where}{key}: longer than {max_len} characters")
        return value.strip() if max_len <= 1000 else value

    def boolean(self, data: dict, key: str, where: str, default: bool):
        value = data.get(key, default)
        if not isinstance(value, bool):
            self.errors.append(f"{where}{key}: must be true or false")
            return default
        return value

    def _null(self, key: str, where: str, default, what: str) -> None:
        # An explicit null where the value has a default (YAML's `overlap:` with nothing after
        # it) was taken and stored: a 500 for overlap, and for a scale's min every later
        # review of the campaign. It stays None here, so cross-checks skip it (the campaign
        # form passes a field that failed its own checks as None; this error is then dropped).
        if default is not None:
            self.errors.append(
                f"{where}{key}: must be {what}, not null (leave it out for {default})"
            )

    def unknown(self, data: dict, allowed: set, where: str):
        for key in sorted(set(data) - allowed):
            self.errors.append(f"{where}{key}: unknown field")
