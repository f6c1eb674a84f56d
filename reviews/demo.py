"""Demo step for the reviews app: reviews, disputes and arbitrations on the demo campaign.

`manage.py demo` runs `tasks.demo.testsets.load` (which creates the demo campaign with its outputs) and
then this `load(context, stdout)`. Two demo reviewers work through the real services (claim,
submit with the API payload shape, the dispute rules inside submit), the demo arbiter resolves
some of the disputes through the real arbitration services, and the rest is left for people:
items nobody finished (reviewer1 and reviewer2 each still have a queue), and open disputes for
the arbiter. Enough is reviewed that every dashboard shows real figures.

The simulated reviewers are deterministic (a fixed seed): each contender has a skill and a
per-category strength, the first reviewer of an item scores near that truth, the second stays
within each dimension's allowed gap of the first - except on every few items, where they
disagree by more than the gap, which is what makes a dispute.

Idempotent: a campaign that already has reviews is left alone.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

from django.db.models import Count

from evalsite.text import counted
from reviews.arbitration.services import arbitration_claim_next, arbitration_resolve
from reviews.disputes.rules import disputed_cells
from reviews.models import Arbitration, Assignment, ItemOutput, Review, ReviewItem, Score
from reviews.review import NotReviewable, assignment_claim_next, assignment_submit
from reviews.rubric import Dimension, Rubric, label_map
from tasks.blinding import render as blinding
from tasks.models import Campaign

DEMO_CAMPAIGN = "support-demo"
SEED = 20261130
SETTLED_SHARE = 0.7  # share of items both demo reviewers finish; the rest stays for people
DISPUTE_EVERY = (1, 3)  # settled item i is disputed when i % 5 is one of these (about 40%)
TIER_BASE = {"base": 4.2, "advanced": 3.6, "boundary": 3.0}
COMMENTS = [
    "",
    "",
    "",
    "Clear and polite.",
    "Leaves out a step the customer needs.",
    "Too long for a support reply.",
    "Good, but invents a policy detail.",
    "Asks for information the customer already gave.",
]


class _Truth:
    """Deterministic 'true' quality per contender, category and task for the simulation."""

    def __init__(self, campaign: Campaign):
        rng = random.Random(f"{SEED}:{campaign.slug}")
        names = sorted(campaign.contenders.values_list("name", flat=True))
        skills = [0.35, 0.05, -0.25, 0.2, -0.1, -0.4][: len(names)] or [0.0]
        rng.shuffle(skills)
        self.skill = dict(zip(names, skills, strict=False))
        self.strength: dict[tuple[str, str], float] = {}

    def score(
        self, contender: str, category: str, tier: str, dim: Dimension, task_key: str
    ) -> float:
        key = (contender, category)
        if key not in self.strength:
            # Keyed, not drawn in claim order: the same truth whatever order items are reviewed in.
            self.strength[key] = random.Random(f"{SEED}:strength:{contender}:{category}").uniform(
                -0.8, 0.8
            )
        local = random.Random(f"{SEED}:{task_key}:{contender}:{dim.key}")
        lo, hi = float(dim.min), float(dim.max)
        centre = TIER_BASE.get(tier, 3.6) + self.skill.get(contender, 0.0) + self.strength[key]
        value = centre + local.gauss(0, 0.8)
        # Map the 1-5 model onto the dimension's own scale.
        scaled = lo + (value - 1) / 4 * (hi - lo)
        return float(min(hi, max(lo, round(scaled))))


def _outputs_by_id(item: ReviewItem) -> dict[int, dict]:
    return {
        o.pk: {"contender": o.generation.contender.name, "task": item.task}
        for o in ItemOutput.objects.filter(item=item).select_related("generation__contender")
    }


def _first_review(
    item: ReviewItem, order: list[int], campaign: Campaign, truth: _Truth, rng: random.Random
) -> dict:
    wants_scores, wants_preference = campaign.wants()
    labels = blinding.labels(len(order))
    rubric = Rubric.for_item(item)  # a conversation's per-turn scores too
    info = _outputs_by_id(item)
    task = item.task
    scores, totals, flags = {}, {}, {}
    for label, output in zip(labels, order, strict=True):
        contender = info[output]["contender"]
        per_dim = {}
        for dim in rubric:
            value = truth.score(
                contender, task.category, task.tier, dim, f"{task.external_id}:{item.sample_index}"
            )
            per_dim[dim.key] = value
        if wants_scores:
            scores[label] = per_dim
        totals[label] = (
            sum(per_dim.values()) + truth.skill.get(contender, 0.0) + rng.uniform(-1.0, 1.0)
        )
        low = [d for d in rubric if per_dim.get(d.key) == d.min]
        if low and rng.random() < 0.5:
            flags[label] = ["hallucination"]
    payload = {
        "scores": scores,
        "flags": flags,
        "comment": rng.choice(COMMENTS),
        "seconds_spent": rng.randint(45, 240),
    }
    if wants_preference:
        best = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
        payload["preference"] = (
            "tie" if len(best) > 1 and abs(best[0][1] - best[1][1]) < 0.2 else best[0][0]
        )
    return payload


def _second_review(
    item: ReviewItem, order: list[int], first: Review, dispute: bool, rng: random.Random
) -> dict:
    """Anchored on the first review: within every allowed gap, or deliberately beyond one."""
    wants_scores, wants_preference = item.campaign.wants()
    labels = blinding.labels(len(order))
    label_of = dict(zip(order, labels, strict=True))
    given: dict[int, dict[str, float | None]] = defaultdict(dict)
    for score in Score.objects.filter(review=first):
        given[score.output_id][score.dimension] = score.value
    scores: dict[str, dict] = {}
    disputed_done = False
    target = rng.choice(order) if dispute else None
    rubric = Rubric.for_item(item)  # a conversation's per-turn scores too
    target_dim = rng.choice(rubric.dimensions) if dispute and rubric else None
    for output in order:
        label = label_of[output]
        if not wants_scores:
            break
        scores[label] = {}
        for dim in rubric:
            lo, hi, gap = float(dim.min), float(dim.max), dim.max_gap
            value = given[output].get(dim.key)
            # The middle point of the scale: a whole number, as ordinal scores must be.
            value = float((lo + hi) // 2) if value is None else value
            if output == target and dim == target_dim:
                opposite = lo if value - lo >= hi - value else hi
                if abs(opposite - value) > gap:
                    value, disputed_done = opposite, True
            else:
                step = min(1.0, math.floor(gap))
                value = min(hi, max(lo, value + rng.choice([-step, 0.0, 0.0, step])))
            scores[label][dim.key] = value
    flags = {
        label_of[int(o)]: list(f) for o, f in (first.flags or {}).items() if int(o) in label_of
    }
    payload = {
        "scores": scores,
        "flags": flags,
        "comment": rng.choice(COMMENTS),
        "seconds_spent": rng.randint(40, 200),
    }
    if wants_preference:
        if first.preference == "output" and first.preferred_output_id in label_of:
            preference = label_of[first.preferred_output_id]
        else:
            preference = first.preference or "tie"
        if dispute and not disputed_done:
            others = [label for label in labels if label != preference]
            preference = rng.choice(others)
        payload["preference"] = preference
    return payload


def _simulate_reviews(campaign: Campaign, reviewers: list, stdout) -> dict:
    truth = _Truth(campaign)
    ready = ReviewItem.objects.filter(campaign=campaign, ready=True).count()
    target = max(1, round(ready * SETTLED_SHARE))
    settled_order = 0
    submitted = 0
    for _round in range(4 * ready + 4):
        progressed = stop = False
        for reviewer in reviewers:
            settled = ReviewItem.objects.filter(
                campaign=campaign, state__in=["agreed", "disputed", "resolved"]
            ).count()
            if settled >= target:
                stop = True
                break
            claim = assignment_claim_next(campaign=campaign, reviewer=reviewer)
            if claim is None:
                continue
            assignment: Assignment = claim.assignment
            item = ReviewItem.objects.select_related("task", "campaign").get(pk=assignment.item_id)
            first = Review.objects.filter(item=item).order_by("submitted_at", "pk").first()
            if first is None:
                item_rng = random.Random(
                    f"{SEED}:first:{item.task.external_id}:{item.sample_index}:{item.pair_key}"
                )
                payload = _first_review(item, assignment.order, campaign, truth, item_rng)
            else:
                dispute = settled_order % 5 in DISPUTE_EVERY
                settled_order += 1
                item_rng = random.Random(
                    f"{SEED}:second:{item.task.external_id}:{item.sample_index}:{item.pair_key}"
                )
                payload = _second_review(item, assignment.order, first, dispute, item_rng)
            result = assignment_submit(
                token=assignment.token,
                reviewer=reviewer,
                key=f"demo-{assignment.token}",
                data=payload,
            )
            if not result.ok:
                raise RuntimeError(f"demo review was refused: {result.message} {result.errors}")
            submitted += 1
            progressed = True
        if stop or not progressed:
            break
    return {"submitted": submitted}


def _resolve_some(campaign: Campaign, arbiter, rng: random.Random) -> int:
    disputed = Arbitration.objects.filter(
        item__campaign=campaign, state=Arbitration.State.OPEN
    ).count()
    if disputed < 2:
        return 0
    to_resolve = disputed - max(1, disputed // 3)
    resolved = 0
    for _ in range(to_resolve):
        arbitration = arbitration_claim_next(campaign=campaign, arbiter=arbiter)
        if arbitration is None:
            break
        item = arbitration.item
        labels = label_map(arbitration.order)
        label_of = {output: label for label, output in labels.items()}
        cells = disputed_cells(item.dispute_reasons or [])
        values: dict[str, list[float]] = defaultdict(list)
        for score in Score.objects.filter(review__item=item):
            if score.value is not None:
                values[(score.dimension, str(score.output_id))].append(score.value)
        scores: dict[str, dict] = defaultdict(dict)
        flags: dict[str, list[str]] = {}
        preference = None
        for part, output in sorted(cells, key=lambda c: (c[0], c[1] or "")):
            if part == "preference":
                preference = rng.choice([*labels, "tie"])
            elif part.startswith("flag:"):
                flags[label_of[output]] = [part[5:]]
            else:
                given = values.get((part, output)) or [3.0]
                # The arbiter reads both outputs and settles nearer the lower score.
                scores[label_of[output]][part] = float(math.floor(sum(given) / len(given)))
        arbitration_resolve(
            token=arbitration.token,
            arbiter=arbiter,
            scores=dict(scores),
            preference=preference,
            flags=flags or None,
            note="Demo arbiter: compared both answers with the reference and settled the gap.",
        )
        resolved += 1
    return resolved


def load(context: dict, stdout) -> dict:
    campaign = context.get("campaign") or Campaign.objects.filter(slug=DEMO_CAMPAIGN).first()
    if campaign is None:
        stdout.write("Demo reviews: no demo campaign yet, skipped.")
        return {}
    if Review.objects.filter(item__campaign=campaign).exists():
        stdout.write(f"Demo reviews on {campaign.slug}: already present, left as they are.")
        return {}
    users = context.get("users") or {}
    reviewers = [users[name] for name in ("reviewer1", "reviewer2") if name in users]
    arbiter = users.get("arbiter")
    if len(reviewers) < 2 or arbiter is None:
        stdout.write("Demo reviews: the demo reviewers and arbiter are missing, skipped.")
        return {}
    try:
        done = _simulate_reviews(campaign, reviewers, stdout)
    except NotReviewable:
        stdout.write(
            f"Demo reviews: campaign {campaign.slug} is not open for review ({campaign.status}), skipped."
        )
        return {}
    resolved = _resolve_some(campaign, arbiter, random.Random(SEED + 1))
    states = dict(
        ReviewItem.objects.filter(campaign=campaign)
        .values_list("state")
        .annotate(n=Count("id"))
        .order_by("state")
    )
    stdout.write(
        f"Demo reviews on {campaign.slug}: {done['submitted']} reviews by reviewer1/reviewer2, "
        f"{counted(resolved, 'dispute')} resolved by the arbiter; items: "
        + ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
    )
    return {"demo_reviews": done["submitted"], "demo_arbitrations": resolved}
