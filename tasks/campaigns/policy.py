"""A campaign definition's ``review_policy``: a judge scores every review item first and people
review only the items its rules select, plus a random audit share (the review side applies it:
``reviews/policy/``).

```json
"review_policy": {"judge": "judge-a", "calibration": "panel-campaign",
                  "humans": ["judge_uncertain", "checks_failed", "tier:boundary", "case_type:edge"],
                  "audit_share": 0.1}
```

A judge settles items only where people have shown it agrees with them: it must be
`calibrated` on the campaign named by ``calibration`` for every rubric dimension of this
campaign (and for the preference when this campaign asks one), unless
``"allow_uncalibrated": true`` lets it in on purpose, which the campaign page and report then
repeat. A policy that names neither key lets the judge in the same way, said the same way; one
that sets ``"allow_uncalibrated": false`` must name its calibration. The verdicts are the review side's (tasks/review_side.py): tasks never imports reviews.

Read into ``weights["review_policy"]`` (beside the gates), every problem reported at once.
"""

from __future__ import annotations

from tasks import review_side
from tasks.campaigns.definition_reader import DefinitionReader
from tasks.models import Campaign, CaseType, Judge, Mode, TestSet, Tier

POLICY_KEYS = {"judge", "humans", "audit_share", "calibration", "allow_uncalibrated"}
# Rules without an argument; "tier:<tier>" and "case_type:<case type>" name one of the test
# set's tiers or case types.
PLAIN_RULES = ("judge_uncertain", "checks_failed")
NAMED_RULES = {"tier": ("tier", Tier), "case_type": ("case_type", CaseType)}
DEFAULT_AUDIT_SHARE = 0.1


def read_review_policy(
    data: dict,
    weights: dict,
    testset: TestSet | None,
    errors: list[str],
    *,
    asked: tuple[str, list[dict]],
) -> None:
    """Check ``data["review_policy"]`` and store the checked policy in
    ``weights["review_policy"]`` (absent or null: no policy, people review every item).
    ``asked``: the campaign's mode and rubric, which its judge must be calibrated for."""
    weights.pop("review_policy", None)
    policy = data.get("review_policy")
    if policy is None:
        return
    where = "review_policy."
    if not isinstance(policy, dict):
        errors.append(
            'review_policy: must be an object such as {"judge": "judge-a", "humans": '
            '["judge_uncertain"], "audit_share": 0.1}'
        )
        return
    r = DefinitionReader(errors)
    r.unknown(policy, POLICY_KEYS, where)
    judge = _judge_read(policy, r)
    humans = _rules_read(policy.get("humans", []), testset, errors)
    # Out of range or not a number: the reader records why (and the definition is refused).
    share = r.number(policy, "audit_share", where, default=DEFAULT_AUDIT_SHARE, lo=0, hi=1)
    trust = _calibration_read(policy, judge, asked, errors)
    if judge and humans is not None and share is not None and trust is not None:
        weights["review_policy"] = {
            "judge": judge,
            "humans": humans,
            "audit_share": float(share),
            **trust,
        }


def _calibration_read(
    policy: dict, judge: str, asked: tuple[str, list[dict]], errors: list[str]
) -> dict | None:
    """{"calibration": slug | None, "allow_uncalibrated": bool}, or None when the judge may
    not settle this campaign's items (each reason appended to `errors`)."""
    allow = policy.get("allow_uncalibrated", False)
    if not isinstance(allow, bool):
        errors.append("review_policy.allow_uncalibrated: must be true or false")
        return None
    slug = policy.get("calibration")
    if slug is None and (allow or "allow_uncalibrated" not in policy):
        # A policy naming neither (the definition's first form) lets the judge in unchecked:
        # the campaign page and report then say so, as for allow_uncalibrated.
        return {"calibration": None, "allow_uncalibrated": True}
    if not isinstance(slug, str) or not slug:
        errors.append(
            "review_policy.calibration: required (the slug of the campaign whose reviewers "
            'the judge was calibrated against), or "allow_uncalibrated": true to let an '
            "uncalibrated judge settle items"
        )
        return None
    source = Campaign.objects.exclude(kind=Campaign.Kind.MONITOR_RUN).filter(slug=slug).first()
    if source is None:
        errors.append(f"review_policy.calibration: no campaign {slug!r}")
        return None
    judge_row = Judge.objects.filter(name=judge).first()
    if judge_row is None:
        return None  # the judge's own error is reported
    verdicts = review_side.judge_verdicts(judge=judge_row, campaign=source)
    problems = calibration_refusals(verdicts, asked, allow=allow, names=(judge, slug))
    errors += problems
    return None if problems else {"calibration": slug, "allow_uncalibrated": allow}


def calibration_refusals(
    verdicts: dict, asked: tuple[str, list[dict]], *, allow: bool, names: tuple[str, str]
) -> list[str]:
    """Why the judge may not settle a campaign of this mode and rubric (pure): a dimension
    the calibration campaign's rubric lacks, a preference it never asked for, or (unless
    ``allow``) a verdict other than calibrated, each in words."""
    judge, slug = names
    mode, rubric = asked
    keys = [d["key"] for d in rubric or [] if isinstance(d, dict) and d.get("key")]
    problems = [
        f"review_policy.calibration: {slug}'s rubric has no dimension {key!r} (it has "
        f"{', '.join(verdicts['rubric']) or 'none'}), so {judge} was never checked on it"
        for key in keys
        if key not in verdicts["rubric"]
    ]
    wants_preference = mode != Mode.RUBRIC
    if wants_preference and verdicts["preference"] is None:
        problems.append(
            f"review_policy.calibration: {slug} asks reviewers no preference, so {judge}'s "
            "preference was never checked; name a campaign in pairwise or both mode"
        )
    if problems or allow:
        return problems
    found = [(key, verdicts["dimensions"].get(key) or {}) for key in keys]
    if wants_preference:
        found.append(("the preference", verdicts["preference"]))
    return [
        f"review_policy.judge: {judge} is not calibrated on {slug} for {what} "
        f"({v.get('verdict') or 'not judged'}: {v.get('reason') or 'no judgement of it'}); "
        'judge that campaign and settle more items, or set "allow_uncalibrated": true to let '
        "it settle items anyway (the campaign page and report will say so)"
        for what, v in found
        if v.get("verdict") != "calibrated"
    ]


def _judge_read(policy: dict, r: DefinitionReader) -> str:
    name = r.string(policy, "judge", "review_policy.", max_len=100, required=True)
    if name and not Judge.objects.filter(name=name).exists():
        known = sorted(Judge.objects.values_list("name", flat=True))
        r.errors.append(
            f"review_policy.judge: there is no judge named {name!r}"
            + (f"; the judges are {', '.join(known)}" if known else "; create one first")
        )
        return ""
    return name


def _rules_read(rules, testset: TestSet | None, errors: list[str]) -> list[str] | None:
    """The rules that send an item to people, each checked; None when one is wrong."""
    if not isinstance(rules, list) or not all(isinstance(rule, str) for rule in rules):
        errors.append("review_policy.humans: must be a list of rules (text)")
        return None
    ok = True
    for rule in rules:
        problem = _rule_problem(rule, testset)
        if problem:
            errors.append(f"review_policy.humans: {problem}")
            ok = False
    return list(dict.fromkeys(rules)) if ok else None


def _rule_problem(rule: str, testset: TestSet | None) -> str:
    """Why ``rule`` is not a rule of this test set ('' when it is)."""
    if rule in PLAIN_RULES:
        return ""
    kind, _, value = rule.partition(":")
    if kind not in NAMED_RULES or not value:
        return (
            f"{rule!r} is not a rule; the rules are {', '.join(PLAIN_RULES)}, "
            "tier:<tier> and case_type:<case type>"
        )
    field, choices = NAMED_RULES[kind]
    if value not in choices.values:
        return f"{rule!r}: {value!r} is not a {field}; the {field}s are {', '.join(choices.values)}"
    if testset is None:
        return ""  # the test set's own error is reported
    present = sorted(set(testset.tasks.values_list(field, flat=True)))
    if value not in present:
        return (
            f"{rule!r}: {testset} has no task with {field} {value!r} (it has "
            f"{', '.join(present) or 'no tasks'}), so the rule would select nothing"
        )
    return ""
