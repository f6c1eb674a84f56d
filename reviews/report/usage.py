"""The report's `usage` section: each contender's throughput, its tokens' parts (reasoning,
cached reads and writes), its reasoning cost, and the prices its costs were computed with
(where they came from: the definition, or the price data and its version)."""

from __future__ import annotations

import pandas as pd

from reviews.stats import usage
from tasks.generation.prices import DEFINITION_RATES, RATES, flat_table
from tasks.models import Generation


def prices_shown(pricing: dict | None, price_in: float, price_out: float) -> dict:
    """A contender's price table as the report gives it: its source and every rate per
    million tokens, by the definition's names."""
    table = pricing or flat_table(price_in, price_out)
    if not pricing and not price_in and not price_out:
        # Neither given nor found in the price data: its costs are 0, and the report says so.
        table = {**table, "source": "none"}
    names = {rate: key for key, rate in DEFINITION_RATES.items()}

    def rates(entry: dict) -> dict:
        return {names[r]: float(entry[r]) for r in RATES if entry.get(r) is not None}

    shown = {"source": table.get("source", "definition"), **rates(table)}
    if table.get("provider"):
        shown["matched"] = {"provider": table["provider"], "model": table.get("model", "")}
    shown["tiers"] = [
        {"above_input_tokens": t["above_input_tokens"], **rates(t)}
        for t in table.get("tiers") or []
    ]
    return shown


def usage_section(f, gens: pd.DataFrame, names: list[str]) -> dict:
    """{contender: {tokens_per_s, n_timed, reasoning_tokens, cache_read_tokens,
    cache_write_tokens, reasoning_cost_per_task, prices}} for every contender."""
    done = gens[gens["status"] == Generation.Status.DONE]
    figures = usage.usage_figures(done) if len(done) else {}
    contenders = f.contenders.set_index("name")
    out = {}
    for name in names:
        row = contenders.loc[name]
        empty = {"tokens_per_s": None, "n_timed": 0, "reasoning_cost_per_task": None}
        out[name] = {
            **empty,
            **dict.fromkeys(usage.PARTS),
            **figures.get(name, {}),
            "prices": prices_shown(row.get("pricing"), row["price_in"], row["price_out"]),
        }
    return out
