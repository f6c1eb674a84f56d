"""A campaign definition's ``review_policy``: a judge scores every review item first and people
review only the items its rules select, plus a random audit share (the review side applies it:
``reviews/policy/``).

```json
"review_policy": {"judge": "judge-a",
                  "humans": ["judge_uncertain", "checks_failed", "tier:boundary", "case_type:edge"],
                  "audit_share": 0.1}
```

Read into ``weights["review_policy"]`` (beside the gates), every problem reported at once.
"""

from __future__ import annotations

from tasks.campaigns.definition_reader import DefinitionReader
from tasks.models import CaseType, Judge, TestSet, Tier

POLICY_KEYS = {"judge", "humans", "audit_share"}
# Rules without an argument; "tier:<tier>" and "case_type:<case type>" name one of the test
# set's tiers or case types.
PLAIN_RULES = ("judge_uncertain", "checks_failed")
NAMED_RULES = {"tier": ("tier", Tier), "case_type": ("case_type", CaseType)}
DEFAULT_AUDIT_SHARE = 0.1


def read_review_policy(
    data: dict, weights: dict, testset: TestSet | None, errors: list[str]
) -> None:
    """Check ``data["review_policy"]`` and store the checked policy in
    ``weights["review_policy"]`` (absent or null: no policy, people review every item)."""
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
    if judge and humans is not None and share is not None:
        weights["review_policy"] = {"judge": judge, "humans": humans, "audit_share": float(share)}


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
