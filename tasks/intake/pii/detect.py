"""Which spans of a text are personal data, by kind.

The recognizers are maintained ones: Presidio's pattern recognizers (emails; phone numbers
through Google's phonenumbers; card numbers with their Luhn check; IBANs with their check
digits; national ids with their own checksums where the format has one) and pyap for postal
addresses (US, Canada, UK). Nothing here is a pattern of our own: the cheap tests below only
skip a recognizer on a text that cannot hold what it looks for (no '@', too few digits).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from dataclasses import dataclass

KIND_LABELS = {
    "email": "email address",
    "phone": "phone number",
    "card": "card number",
    "iban": "IBAN",
    "national_id": "national id",
    "address": "postal address",
}
# Below this a Presidio pattern is a guess without context (e.g. any 9 digits as an SSN).
MIN_SCORE = 0.4
ADDRESS_SCORE = 0.6  # pyap gives no score; a full street address is a strong match
ADDRESS_COUNTRIES = ("US", "CA", "GB")

_DIGITS = re.compile(r"\d")
# An address starts with a house number followed by a word: pyap's rules are slow, so a text
# without that shape is not handed to them.
_ADDRESS_START = re.compile(r"\d+[A-Za-z]?\s+[^\W\d]")
_SEPARATORS = re.compile(r"[\s,]+")
_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015"

_load_lock = threading.Lock()


@dataclass(frozen=True)
class Found:
    kind: str  # a key of KIND_LABELS
    start: int
    end: int
    text: str
    score: float


def pii_find(text: str) -> list[Found]:
    """The personal data in `text`, non-overlapping, in order of position."""
    if not text or (not _DIGITS.search(text) and "@" not in text):
        return []
    candidates = [*_presidio_found(text), *_addresses_found(text)]
    # The strongest reading of a span wins (an SSN also reads as a phone number, an IBAN's
    # digits as a card number): by score, then length.
    candidates.sort(key=lambda f: (-f.score, -(f.end - f.start), f.start))
    kept: list[Found] = []
    for found in candidates:
        if all(found.end <= k.start or found.start >= k.end for k in kept):
            kept.append(found)
    return sorted(kept, key=lambda f: f.start)


def _presidio_found(text: str) -> list[Found]:
    digits = len(_DIGITS.findall(text))
    out = []
    for kind, recognizer, min_digits in _recognizers():
        if digits < min_digits or (kind == "email" and "@" not in text):
            continue
        for result in recognizer.analyze(text, recognizer.supported_entities, None):
            if result.score >= MIN_SCORE:
                span = text[result.start : result.end]
                out.append(Found(kind, result.start, result.end, span, result.score))
    return out


def _addresses_found(text: str) -> list[Found]:
    if not _ADDRESS_START.search(text):
        return []
    import pyap

    out = []
    for country in ADDRESS_COUNTRIES:
        for address in pyap.parse(text, country=country):
            span = _original_span(text, address.full_address)
            if span is not None:
                out.append(Found("address", *span, text[span[0] : span[1]], ADDRESS_SCORE))
    return out


def _original_span(text: str, normalized: str) -> tuple[int, int] | None:
    """Where pyap's address (read from a whitespace- and dash-normalized copy) is in `text`."""
    words = [w for w in _SEPARATORS.split(normalized) if w]
    if not words:
        return None
    parts = [re.sub("-", f"[{_DASHES}]", re.escape(w)) for w in words]
    match = re.search(r"[\s,]+".join(parts), text)
    return (match.start(), match.end()) if match else None


@functools.cache
def _offline_domains():
    import tldextract

    # The bundled public-suffix snapshot only: an upload never makes a network call.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@functools.cache
def _recognizers() -> tuple:
    """(kind, recognizer, fewest digits it needs) for each recognizer, built once: importing
    Presidio loads spaCy (about 2 s), which only an intake needs."""
    with _load_lock:
        return _build_recognizers()


def _build_recognizers() -> tuple:
    # Presidio logs every recognizer it builds at INFO; an import need not repeat that.
    logging.getLogger("presidio-analyzer").setLevel(logging.WARNING)
    from presidio_analyzer.predefined_recognizers import (
        CaSinRecognizer,
        CreditCardRecognizer,
        EmailRecognizer,
        EsNieRecognizer,
        EsNifRecognizer,
        FiPersonalIdentityCodeRecognizer,
        IbanRecognizer,
        InAadhaarRecognizer,
        ItFiscalCodeRecognizer,
        NhsRecognizer,
        PhoneRecognizer,
        PlPeselRecognizer,
        SePersonnummerRecognizer,
        SgFinRecognizer,
        UkNinoRecognizer,
        UsSsnRecognizer,
    )

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return _offline_domains()(pattern_text).fqdn != ""

    national = (
        UsSsnRecognizer,
        UkNinoRecognizer,
        NhsRecognizer,
        CaSinRecognizer,
        EsNifRecognizer,
        EsNieRecognizer,
        ItFiscalCodeRecognizer,
        PlPeselRecognizer,
        FiPersonalIdentityCodeRecognizer,
        SePersonnummerRecognizer,
        SgFinRecognizer,
        InAadhaarRecognizer,
    )
    # Country recognizers are declared for their own language; the text's language is not
    # known here, so each is built for one language tag and run on every text.
    return (
        ("email", OfflineEmailRecognizer(), 0),
        ("phone", PhoneRecognizer(), 7),
        ("card", CreditCardRecognizer(), 12),
        ("iban", IbanRecognizer(), 8),
        *(("national_id", r(supported_language="en"), 4) for r in national),
    )
