"""The answer each dashboard tab opens with: a few sentences read off the campaign report.

A tab leads with what a lead came for (who is ahead, whether the reviewers agree, which
contender is steadier or cheaper), then its chart, then the tables. Every sentence carries the
interval of the figure it names, or says why there is none; nothing is computed here that the
report does not hold.
"""

from __future__ import annotations

from reviews.dashboards.tables import display

NO_INTERVAL = "too few test cases"


def interval_text(ci, kind: str = "num", reason: str | None = None) -> str:
    """' (95% interval 0.41 – 0.60)', or ' (no interval: too few items (n=7))': said right
    after the figure it belongs to."""
    low, high = ci if isinstance(ci, list | tuple) and len(ci) == 2 else (None, None)
    if low is not None and high is not None:
        return f" (95% interval {display(low, kind)} – {display(high, kind)})"
    # A contender that never lost (never won) has one side only: a bound.
    if low is not None:
        return f" (95% interval ≥ {display(low, kind)})"
    if high is not None:
        return f" (95% interval ≤ {display(high, kind)})"
    return f" (no interval: {reason or NO_INTERVAL})"


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def leader_sentence(report: dict) -> str:
    """Who is ahead on rating, and how sure: one rank 1, a shared rank 1, or no ranks yet."""
    rated = [r for r in report["leaderboard"] if r.get("rating") is not None]
    rating = report["rating"]
    if not rated:
        return f"No contender is rated yet: {rating.get('reason') or 'no final outcome yet'}."
    first = [r["contender"] for r in rated if r.get("rank") == 1]
    if len(first) == 1:
        top = next(r for r in rated if r["contender"] == first[0])
        return (
            f"Ahead: {top['contender']}, rating {top['rating']:.0f}"
            f"{interval_text(top['ci95'])}, the only contender ranked 1."
        )
    if first:
        return f"No clear leader: {_names(first)} share rank 1 (their 95% intervals overlap)."
    top = max(rated, key=lambda r: r["rating"])
    why = (rating.get("ci_reason") or NO_INTERVAL).rpartition(": ")[2]
    return f"Highest rating so far: {top['contender']} ({top['rating']:.0f}); no rank yet: {why}."


def overview_summary(report: dict) -> list[str]:
    p = report["progress"]
    final = p["agreed"] + p["resolved"]
    return [
        f"{p['items']:,} items: {final:,} with a final outcome ({p['agreed']:,} agreed, "
        f"{p['resolved']:,} resolved by an arbiter), {p['disputed']:,} waiting for an arbiter, "
        f"{p['open']:,} still open.",
        leader_sentence(report),
    ]


def agreement_summary(report: dict) -> list[str]:
    measured = {d: a for d, a in report["agreement"].items() if a.get("alpha") is not None}
    if not measured:
        return ["No agreement yet: no answer was rated by two or more reviewers."]
    bands: dict[str, list[str]] = {}
    for dim, a in measured.items():
        bands.setdefault(a.get("band") or "no band yet (no interval)", []).append(dim)
    low_dim, low = min(measured.items(), key=lambda kv: kv[1]["alpha"])
    said = "; ".join(f"{band}: {_names(dims)}" for band, dims in sorted(bands.items()))
    return [
        f"Alpha per dimension, by reliability band: {said}.",
        f"Lowest: {low_dim}, alpha {display(low['alpha'], 'num')}"
        f"{interval_text(low.get('ci95'), reason=low.get('ci_reason'))}.",
    ]


def reviewers_summary(report: dict) -> list[str]:
    people = report["reviewers"]
    if not people:
        return ["No review yet."]
    reviews = sum(r.get("reviews") or 0 for r in people.values())
    said = [f"{len(people)} reviewer{'s' * (len(people) != 1)}, {reviews:,} reviews."]
    offsets = {n: r for n, r in people.items() if r.get("mean_offset") is not None}
    if offsets:
        name, r = max(offsets.items(), key=lambda kv: abs(kv[1]["mean_offset"]))
        said.append(
            f"Furthest from the final scores: {name}, mean offset "
            f"{r['mean_offset']:+.3f}{interval_text(r.get('mean_offset_ci95'), reason=r.get('offset_ci_reason'))}."
        )
    return said


def leaderboard_summary(report: dict) -> list[str]:
    said = [leader_sentence(report)]
    quality = [r for r in report["leaderboard"] if r.get("quality") is not None]
    if quality:
        best = max(quality, key=lambda r: r["quality"])
        said.append(
            f"Best quality: {best['contender']}, {display(best['quality'], 'num')}"
            f"{interval_text(best.get('quality_ci95'), reason=best.get('quality_reason'))}."
        )
    return said


def capability_summary(report: dict) -> list[str]:
    by_category = report["quality"]["by_category"]
    best: dict[str, tuple[str, float]] = {}
    for contender, groups in by_category.items():
        for group, cell in groups.items():
            mean = (cell or {}).get("mean")
            if mean is not None and (group not in best or mean > best[group][1]):
                best[group] = (contender, mean)
    if not best:
        return ["No item has a final outcome yet (agreed, or resolved by an arbiter)."]
    said = ", ".join(f"{g}: {c} ({m:.2f})" for g, (c, m) in sorted(best.items()))
    return [f"Best per category (mean final quality, 0-1): {said}."]


def stability_summary(report: dict) -> list[str]:
    measured = {c: s for c, s in report["stability"].items() if s.get("stability") is not None}
    if not measured:
        return ["No stability yet: it needs tasks with two or more settled samples."]
    name, s = max(measured.items(), key=lambda kv: kv[1]["stability"])
    said = [
        f"Steadiest over samples: {name}, stability {display(s['stability'], 'num')}"
        f"{interval_text(s.get('stability_ci95'), reason=s.get('ci_reason'))}."
    ]
    passes = {c: s["pass_at_1"] for c, s in report["stability"].items() if s.get("pass_at_1")}
    if passes:
        top = max(passes, key=passes.get)
        said.append(f"Highest pass@1: {top}, {display(passes[top], 'pct')}.")
    flaky = sum(len(t) for t in (report.get("flaky_tasks") or {}).values())
    said.append(f"{flaky} flaky task{'s' * (flaky != 1)} (samples that disagree).")
    return said


def cost_summary(report: dict) -> list[str]:
    lb = report["leaderboard"]
    said = [_decision_sentence(lb, report["decision"])]
    front = report["decision"].get("pareto_front") or []
    if front:
        said.append(f"On the cost-quality Pareto front: {_names(front)}.")
    costed = [r for r in lb if r.get("cost_per_task") is not None]
    if costed:
        cheap = min(costed, key=lambda r: r["cost_per_task"])
        said.append(
            f"Cheapest: {cheap['contender']}, {display(cheap['cost_per_task'], 'money')} per task."
        )
    return said


def _decision_sentence(lb: list[dict], decision: dict) -> str:
    """The best decision score among the contenders it may rank (above the quality floor,
    passing every gate), and how sure."""
    scored = [r for r in lb if r.get("decision_score") is not None]
    if not scored:
        return "No decision score yet: it needs quality, stability and cost per contender."
    eligible = [r for r in scored if not r.get("below_floor") and r.get("gates_pass") is not False]
    if not eligible:
        return (
            f"No contender reaches the quality floor ({decision.get('min_quality')}) and passes "
            "every gate: none is ranked on decision score."
        )
    best = max(eligible, key=lambda r: r["decision_score"])
    if best.get("decision_rank") == 1:
        return f"Best decision score: {best['contender']}{_decision(best)}."
    return f"Highest decision score so far: {best['contender']}{_decision(best)}; no rank yet."


def _decision(row: dict) -> str:
    return f", {display(row['decision_score'], 'num')}" + interval_text(
        row.get("decision_ci95"), reason=row.get("decision_reason")
    )


def bias_summary(report: dict) -> list[str]:
    b = report["position_bias"]
    if b.get("first_position_win_rate") is None:
        return [f"No position bias measured yet: {b.get('reason') or 'no decisive judgement'}."]
    verdict = (
        "reviewers favour or avoid the first position"
        if (b.get("p_value") or 1) < 0.05
        else "no evidence that position sways the reviewers"
    )
    return [
        f"The output shown first won {display(b['first_position_win_rate'], 'pct')} of "
        f"{b['n']:,} decisive judgements{interval_text(b.get('ci95'), 'pct')}, against "
        f"{display(b.get('expected'), 'pct')} by chance (p = {display(b.get('p_value'), 'num')}): "
        f"{verdict}."
    ]


def head_to_head_summary(pair: dict | None) -> list[str]:
    if not pair:
        return []
    if pair.get("mean_diff") is None:
        return [f"{pair['b']} against {pair['a']}: {pair.get('reason') or 'no shared test case'}."]
    return [
        f"{pair['b']} against {pair['a']}: mean quality difference "
        f"{pair['mean_diff']:+.3f} over {pair['n_tasks']:,} test cases"
        f"{interval_text(pair.get('ci95'), reason=pair.get('ci_reason'))}; better on "
        f"{pair['wins']:,}, worse on {pair['losses']:,}, tied on {pair['ties']:,}."
    ]


def tools_summary(report: dict) -> list[str]:
    tools = report.get("tools") or {}
    rated = {n: t["tool_call_accuracy"] for n, t in tools.items() if _rate(t, "tool_call_accuracy")}
    if not rated:
        return ["No tool call is checked yet."]
    name, acc = max(rated.items(), key=lambda kv: kv[1]["rate"])
    said = [
        f"Most accurate tool calls: {name}, {display(acc['rate'], 'pct')} of {acc['n']:,} "
        f"samples{interval_text(acc.get('ci95'), 'pct', acc.get('reason'))}."
    ]
    recovering = {
        n: t["error_recovery_rate"] for n, t in tools.items() if _rate(t, "error_recovery_rate")
    }
    if recovering:
        name, rec = min(recovering.items(), key=lambda kv: kv[1]["rate"])
        said.append(
            f"Weakest recovery from a tool error: {name}, {display(rec['rate'], 'pct')} of "
            f"{rec['n']:,}{interval_text(rec.get('ci95'), 'pct', rec.get('reason'))}."
        )
    return said


def _rate(entry: dict, key: str) -> bool:
    return (entry.get(key) or {}).get("rate") is not None


def conversation_summary(report: dict) -> list[str]:
    conv = report.get("conversation") or {}
    decays = {
        n: c["decay"] for n, c in conv.items() if (c.get("decay") or {}).get("value") is not None
    }
    if not decays:
        return [
            "No turn is scored yet: the curve appears once turn checks have run or people have scored turns."
        ]
    name, d = min(decays.items(), key=lambda kv: kv[1]["value"])
    if d["value"] >= 0:
        return [
            "No contender loses quality over the conversation: the smallest decay from the "
            f"first scored turn to the last is {name}'s, {d['value']:+.3f}"
            f"{interval_text(d.get('ci95'), reason=d.get('reason'))}."
        ]
    return [
        f"Largest loss over the conversation: {name}, {d['value']:+.3f} from turn "
        f"{d['first_turn']} to turn {d['last_turn']}{interval_text(d.get('ci95'), reason=d.get('reason'))}."
    ]


SUMMARIES = {
    "overview": overview_summary,
    "agreement": agreement_summary,
    "reviewers": reviewers_summary,
    "leaderboard": leaderboard_summary,
    "capability": capability_summary,
    "stability": stability_summary,
    "cost": cost_summary,
    "bias": bias_summary,
    "tools": tools_summary,
    "conversation": conversation_summary,
}
