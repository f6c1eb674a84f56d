"""A contender's price table, and the cost of one call at it.

A price table is what `Contender.pricing` holds (Decimal rates as strings, per million tokens):

    {"source": "definition" | "genai-prices 0.2.5", "provider": "...", "model": "...",
     "input": "3", "output": "15", "cache_read": "0.3", "cache_write": "3.75",
     "reasoning": null, "tiers": [{"above_input_tokens": 200000, "input": "6", ...}]}

It comes from the definition when the definition gives any price, else from the maintained
price data of the `genai-prices` package, matched by provider and model id (the data's version
is kept with the table, so a report says which prices it used). Tables are frozen on the
contender when it is created: an upgrade of the data never changes the cost of answers
already stored.

The cost of one call: the tier is the highest whose threshold the call's prompt (every input
token, cached or not) is above, as price lists bill long context: every token of that call at
the tier's rates. Rates the table leaves out fall back: cache reads and writes to the input
rate, reasoning to the output rate (providers bill reasoning as output unless they say
otherwise), a tier's missing rate to the base one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

RATES = ("input", "output", "cache_read", "cache_write", "reasoning")
# The definition's names of the rates (per million tokens).
DEFINITION_RATES = {
    "price_in_per_mtok": "input",
    "price_out_per_mtok": "output",
    "cache_read_per_mtok": "cache_read",
    "cache_write_per_mtok": "cache_write",
    "reasoning_per_mtok": "reasoning",
}
# genai-prices' names of the same rates.
DATA_RATES = {
    "input_mtok": "input",
    "output_mtok": "output",
    "cache_read_mtok": "cache_read",
    "cache_write_mtok": "cache_write",
}
QUANTUM = Decimal("0.00000001")
# The providers' own API addresses: a contender on them is matched by provider id; any other
# base_url is matched by its address (OpenRouter, Groq, a Gemini OpenAI-compatible URL, ...).
OFFICIAL_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com/v1",
}


@dataclass
class Usage:
    """One call's tokens as evalsite stores them: `input_tokens` counts every prompt token,
    cached or not (the cache reads and writes are parts of it); `output_tokens` every output
    token, reasoning included (`reasoning_tokens` is a part of it)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    def known(self) -> bool:
        return self.input_tokens is not None or self.output_tokens is not None


def data_version() -> str:
    """The price data's version as a report names it."""
    import genai_prices

    return f"genai-prices {genai_prices.__version__}"


def flat_table(price_in, price_out) -> dict:
    """The table of a contender with only the two flat prices (the form, older rows)."""
    return {"source": "definition", "input": str(price_in), "output": str(price_out)}


def table_of(contender) -> dict:
    return contender.pricing or flat_table(
        contender.price_in_per_mtok, contender.price_out_per_mtok
    )


def data_lookup(*, provider: str, model: str, base_url: str = "", provider_id: str = "") -> dict:
    """The price table the price data holds for this provider and model, or {} when it holds
    none (an unknown model, or an endpoint the data does not know, such as a local server)."""
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    url = (base_url or "").rstrip("/")
    if provider_id:
        where = {"provider_id": provider_id, "provider_api_url": None}
    elif not url or url == OFFICIAL_URLS.get(provider):
        where = {"provider_id": provider, "provider_api_url": None}
    else:
        where = {"provider_id": None, "provider_api_url": url}
    try:
        found_provider, found = snapshot.find_provider_model(
            model, None, where["provider_id"], where["provider_api_url"]
        )
    except LookupError:  # genai-prices raises LookupError (and subclasses) for a miss
        return {}
    prices = found.get_prices(datetime.now(UTC))
    table = {
        "source": data_version(),
        "provider": found_provider.id,
        "model": found.id,
        "tiers": [],
    }
    tiers: dict[int, dict] = {}
    for key, rate in DATA_RATES.items():
        value = getattr(prices, key, None)
        if value is None:
            continue
        if hasattr(value, "tiers"):  # TieredPrices: a base and thresholds
            table[rate] = str(value.base)
            for tier in value.tiers:
                tiers.setdefault(int(tier.start), {"above_input_tokens": int(tier.start)})[rate] = (
                    str(tier.price)
                )
        else:
            table[rate] = str(value)
    table["tiers"] = [tiers[start] for start in sorted(tiers)]
    return table


def _decimal(value) -> Decimal | None:
    if value is None:
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def rates_for(table: dict, input_tokens: int) -> dict[str, Decimal]:
    """Every rate of the table for a call whose prompt has `input_tokens` tokens."""
    base = {rate: _decimal(table.get(rate)) for rate in RATES}
    chosen = dict(base)
    for tier in sorted(table.get("tiers") or [], key=lambda t: t["above_input_tokens"]):
        if input_tokens > tier["above_input_tokens"]:
            chosen = {rate: _decimal(tier.get(rate)) or base[rate] for rate in RATES}
    rates = {"input": chosen["input"] or Decimal(0), "output": chosen["output"] or Decimal(0)}
    rates["cache_read"] = (
        chosen["cache_read"] if chosen["cache_read"] is not None else rates["input"]
    )
    rates["cache_write"] = (
        chosen["cache_write"] if chosen["cache_write"] is not None else rates["input"]
    )
    rates["reasoning"] = chosen["reasoning"] if chosen["reasoning"] is not None else rates["output"]
    return rates


def call_costs(table: dict, usage: Usage) -> tuple[Decimal | None, Decimal | None]:
    """(the cost of one call, the part of it spent on reasoning), in the table's currency;
    (None, None) when the provider reported no tokens (an unknown cost, not a free one)."""
    if not usage.known():
        return None, None
    prompt = usage.input_tokens or 0
    read, write = usage.cache_read_tokens or 0, usage.cache_write_tokens or 0
    output, reasoning = usage.output_tokens or 0, usage.reasoning_tokens or 0
    rates = rates_for(table, prompt)
    total = (
        max(prompt - read - write, 0) * rates["input"]
        + read * rates["cache_read"]
        + write * rates["cache_write"]
        + max(output - reasoning, 0) * rates["output"]
        + reasoning * rates["reasoning"]
    )
    spent = reasoning * rates["reasoning"]
    million = Decimal(1_000_000)
    reasoning_cost = (
        (spent / million).quantize(QUANTUM) if usage.reasoning_tokens is not None else None
    )
    return (total / million).quantize(QUANTUM), reasoning_cost


# What a definition's `prices` object may hold.
PRICES_KEYS = {
    "provider",
    "model",
    "cache_read_per_mtok",
    "cache_write_per_mtok",
    "reasoning_per_mtok",
    "tiers",
}
TIER_KEYS = {"above_input_tokens", *DEFINITION_RATES}
MAX_PRICE = 999_999
MAX_TIER_TOKENS = 100_000_000


def _rates_read(raw: dict, where: str, reader, keys) -> dict:
    out = {}
    for key in keys:
        value = reader.number(raw, key, where, lo=0, hi=MAX_PRICE)
        if value is not None and not isinstance(value, bool):
            # As written, without a float's trailing ".0" (3.0 and 3 are the same price).
            out[DEFINITION_RATES[key]] = format(_decimal(value).normalize(), "f")
    return out


def _tiers_read(raw, where: str, reader) -> list[dict]:
    """The tiers by prompt length; a tier beginning where another begins overlaps it."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        reader.errors.append(f"{where}tiers: must be a list")
        return []
    tiers, starts = [], {}
    for i, tier in enumerate(raw):
        w = f"{where}tiers[{i}]."
        if not isinstance(tier, dict):
            reader.errors.append(f"{where}tiers[{i}]: must be an object")
            continue
        reader.unknown(tier, TIER_KEYS, w)
        start = reader.integer(tier, "above_input_tokens", w, lo=0, hi=MAX_TIER_TOKENS)
        if start is None:
            if "above_input_tokens" not in tier:
                reader.errors.append(f"{w}above_input_tokens: required")
            continue
        if start in starts:
            reader.errors.append(
                f"{w}above_input_tokens: overlaps tiers[{starts[start]}] (both apply above "
                f"{start} prompt tokens)"
            )
            continue
        starts[start] = i
        rates = _rates_read(tier, w, reader, DEFINITION_RATES)
        if not rates:
            reader.errors.append(f"{w}: give at least one price of the tier")
        tiers.append({"above_input_tokens": start, **rates})
    return sorted(tiers, key=lambda t: t["above_input_tokens"])


def pricing_read(raw: dict, where: str, reader) -> dict:
    """A contender definition's price table: its own prices when it gives any, else the price
    data's for its provider and model ({} when the data has none: costs 0; an error when the
    definition named the data's provider to match).
    `where` ends with a dot; problems go to `reader.errors`."""
    prices = raw.get("prices")
    if prices is None:
        prices = {}
    if not isinstance(prices, dict):
        reader.errors.append(f"{where}prices: must be an object")
        prices = {}
    pw = where + "prices."
    reader.unknown(prices, PRICES_KEYS, pw)
    own = _rates_read(raw, where, reader, ("price_in_per_mtok", "price_out_per_mtok"))
    own.update(
        _rates_read(
            prices,
            pw,
            reader,
            ("cache_read_per_mtok", "cache_write_per_mtok", "reasoning_per_mtok"),
        )
    )
    tiers = _tiers_read(prices.get("tiers"), pw, reader)
    match = {k: reader.string(prices, k, pw, max_len=200) for k in ("provider", "model")}
    if own or tiers:
        for key in ("provider", "model"):
            if match[key]:
                reader.errors.append(
                    f"{pw}{key}: names the price data to match, but this contender gives its "
                    "own prices: leave out one or the other"
                )
        own.setdefault("input", "0")
        own.setdefault("output", "0")
        return {"source": "definition", **own, "tiers": tiers}
    model = match["model"] or raw.get("model") or ""
    provider = raw.get("provider") or ""
    if provider == "imported" and not match["provider"] or not isinstance(model, str) or not model:
        return {}
    # No match (a local server, an unknown model): no table, costs at 0 like a contender
    # without prices, and the report says the price data had none.
    table = data_lookup(
        provider=provider,
        model=model,
        base_url=raw.get("base_url") or "",
        provider_id=match["provider"],
    )
    if not table and match["provider"]:
        reader.errors.append(
            f"{pw}provider: the price data ({data_version()}) has no prices for model "
            f"{model!r} at provider {match['provider']!r}"
        )
    return table


def _canonical(table: dict) -> tuple:
    def rates(entry: dict) -> tuple:
        return tuple(_decimal(entry.get(rate)) for rate in RATES)

    tiers = sorted(table.get("tiers") or [], key=lambda t: t["above_input_tokens"])
    base = rates(table)
    # A left-out base input or output is 0, as the flat prices always were.
    base = (base[0] or Decimal(0), base[1] or Decimal(0), *base[2:])
    return base, tuple((t["above_input_tokens"], rates(t)) for t in tiers)


def same_prices(a: dict, b: dict) -> bool:
    """Whether two price tables bill every call the same (whatever their sources)."""
    return _canonical(a) == _canonical(b)


def definition_prices(contender) -> dict | None:
    """A contender's `prices` as a definition gives them: its rates beyond the two flat
    prices and its tiers, or the price data it was matched in; None when there is nothing."""
    table = contender.pricing or {}
    if table.get("source", "definition") != "definition":
        return {"provider": table.get("provider", ""), "model": table.get("model", "")}
    names = {rate: key for key, rate in DEFINITION_RATES.items()}
    out = {
        names[rate]: float(table[rate])
        for rate in ("cache_read", "cache_write", "reasoning")
        if table.get(rate) is not None
    }
    tiers = [
        {
            "above_input_tokens": tier["above_input_tokens"],
            **{names[r]: float(tier[r]) for r in RATES if tier.get(r) is not None},
        }
        for tier in table.get("tiers") or []
    ]
    if tiers:
        out["tiers"] = tiers
    return out or None


def from_data(contender) -> bool:
    """Whether the contender's prices were read from the price data."""
    return (contender.pricing or {}).get("source", "definition") != "definition"
