"""A parsed test set's personal data, by line and field, and its consistently masked copy."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tasks.intake.pii.detect import KIND_LABELS, Found, pii_find

# What an import does with personal data: refuse the file (the default), mask every finding,
# or keep the texts as they are (recorded with who chose it).
PII_CHOICES = ("refuse", "mask", "keep")
# Labels and enum fields cannot hold personal data worth a finding; every other string of a
# task (prompt, messages, reference, turns, metadata, checks, tools, mocks) is read.
SKIPPED_FIELDS = frozenset({"external_id", "category", "tier", "case_type", "max_steps"})
PLACEHOLDER_NAMES = {
    "email": "EMAIL",
    "phone": "PHONE",
    "card": "CARD",
    "iban": "IBAN",
    "national_id": "NATIONAL_ID",
    "address": "ADDRESS",
}
_NOT_ALNUM = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class PiiFinding:
    line: int
    field: str  # the value's path in the task: prompt, messages[1].content, metadata.email
    kind: str
    text: str
    placeholder: str  # what masking writes instead, the same for the same value in the set

    @property
    def label(self) -> str:
        return KIND_LABELS[self.kind]

    @property
    def hint(self) -> str:
        """The value with its middle hidden, for logs and API answers that outlive the upload."""
        if len(self.text) <= 6:
            return "…"
        return f"{self.text[:2]}…{self.text[-2:]}"

    def problem(self) -> str:
        return f"personal data: {self.label} {self.hint!r} (mask it or keep it)"


@dataclass
class PiiScan:
    findings: list[PiiFinding] = field(default_factory=list)
    # Per task: the spans found in each of its texts, by path, for masking.
    spans: list[dict[str, list[tuple[Found, str]]]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.findings)

    def by_kind(self) -> list[tuple[str, int]]:
        counts: dict[str, int] = {}
        for finding in self.findings:
            counts[finding.label] = counts.get(finding.label, 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def masked(self, tasks: list[dict]) -> list[dict]:
        """`tasks` with every finding replaced by its placeholder (new dicts; the input stays)."""
        out = []
        for task, spans in zip(tasks, self.spans, strict=True):
            if not spans:
                out.append(task)
                continue
            out.append(_task_masked(task, spans))
        return out


def _task_masked(task: dict, spans: dict[str, list[tuple[Found, str]]]) -> dict:
    def mask(path: str, text: str) -> str:
        return _masked(text, spans.get(path))

    return {
        key: value if key in SKIPPED_FIELDS else _rebuilt(value, key, mask)
        for key, value in task.items()
    }


def testset_pii_scan(tasks: list[dict], lines: list[int]) -> PiiScan:
    """Every piece of personal data in `tasks` (validated, normalized), by the file line each
    task came from. The same value gets the same placeholder wherever it appears."""
    scan = PiiScan()
    placeholders: dict[tuple[str, str], str] = {}
    per_kind: dict[str, int] = {}
    seen_texts: dict[str, list[Found]] = {}  # a system message repeated in every task is read once
    for task, line in zip(tasks, lines, strict=True):
        spans: dict[str, list[tuple[Found, str]]] = {}
        for path, text in _task_texts(task):
            found = seen_texts.get(text)
            if found is None:
                found = seen_texts[text] = pii_find(text)
            for item in found:
                key = (item.kind, _normal(item))
                if key not in placeholders:
                    per_kind[item.kind] = per_kind.get(item.kind, 0) + 1
                    placeholders[key] = f"<{PLACEHOLDER_NAMES[item.kind]}_{per_kind[item.kind]}>"
                placeholder = placeholders[key]
                spans.setdefault(path, []).append((item, placeholder))
                scan.findings.append(PiiFinding(line, path, item.kind, item.text, placeholder))
        scan.spans.append(spans)
    return scan


def _normal(found: Found) -> str:
    """The value as compared for placeholders: an email's case, a number's spacing and
    an address's line breaks do not make it another value."""
    if found.kind in ("email", "address"):
        return " ".join(_NOT_ALNUM.split(found.text.casefold()))
    return _NOT_ALNUM.sub("", found.text).upper()


def _task_texts(task: dict) -> Iterator[tuple[str, str]]:
    for key, value in task.items():
        if key not in SKIPPED_FIELDS:
            yield from _leaves(value, key)


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")


def _rebuilt(value: Any, path: str, fn: Callable[[str, str], str]) -> Any:
    if isinstance(value, str):
        return fn(path, value)
    if isinstance(value, dict):
        return {key: _rebuilt(item, f"{path}.{key}", fn) for key, item in value.items()}
    if isinstance(value, list):
        return [_rebuilt(item, f"{path}[{index}]", fn) for index, item in enumerate(value)]
    return value


def _masked(text: str, spans: list[tuple[Found, str]] | None) -> str:
    if not spans:
        return text
    parts, at = [], 0
    for found, placeholder in sorted(spans, key=lambda s: s[0].start):
        parts.append(text[at : found.start])
        parts.append(placeholder)
        at = found.end
    parts.append(text[at:])
    return "".join(parts)
