"""Double assignment: claim, lease, heartbeat, submit, skip, release (docs/reviewing.md).

The guarantee "each item gets exactly k distinct reviewers" rests on three things, in this
order of importance (docs/decisions/0003-claims-count-on-the-item-row.md):

1. Database constraints: UNIQUE(item, reviewer), UNIQUE(item, slot) over live assignments,
   CHECK(0 <= slot < k) and CHECK(live_count <= k). Whatever the code does, the database
   refuses a third reviewer on a k=2 item.
2. A counter on the item row (`live_count` = active + submitted), changed in the same
   transaction as the assignment row, and the claim's row lock on the item (claim.py).
3. Lock order, to stay deadlock-free (leases.py).

One module per concern: claim, leases (expiry, heartbeat, skip, release), submit, correct
(a submitted review changed before its item settles), answers
(a submit's parsing), standing (who may review), order (presented order), readiness (items
opening as outputs arrive), sql (the loop's raw reads); selectors.py and history.py read for
the reviewer's pages and API (views.py, api.py), assignment_views.py the lead's assignments
page. Every name other modules use is importable from `reviews.review`; the masking words of
a campaign are `tasks.blinding.campaign_texts.campaign_identity_terms`.

May import: reviews.models, reviews.rubric, reviews.disputes (the settle in the k-th submit),
reviews.policy (the state an item opens in), reviews.blinding_probe (the question after a
submit), the blinded screen (reviews.screen, reviews.transcript_shown), tasks.models,
tasks.blinding, tasks.campaigns (rosters), evalsite. Never reviews.arbitration,
reviews.identity_reports, reviews.judges or reviews.report: they build on the loop.
"""

from reviews.review.answers import SUBMIT_FIELDS, review_payload_parse
from reviews.review.claim import (
    CLAIM_ATTEMPTS,
    Claim,
    ClaimBusy,
    ClaimContext,
    NotReviewable,
    assignment_claim_next,
    candidates,
    claim_context,
)
from reviews.review.correct import CorrectResult, review_correct, settled_message
from reviews.review.leases import (
    BLOCKING,
    HEARTBEAT_CAP_LEASES,
    LEASE_LAPSED,
    LIVE,
    SKIP_REASONS,
    LeaseGone,
    assignment_expire_stale,
    assignment_heartbeat,
    assignment_release,
    assignment_release_unfinishable,
    assignment_skip,
    assignment_state_message,
    assignment_sweep_expired,
    item_leases_release,
    lease_extended,
    reviewer_leases_release,
    stale_leases_q,
)
from reviews.review.order import SHUFFLE_SPACE, presented_order, shuffle_offset
from reviews.review.standing import (
    REVIEWABLE,
    barred_message,
    reviewer_barred_message,
    reviewer_may_review,
    reviewer_remove_from_campaign,
    reviewer_removed,
    reviewer_restore_to_campaign,
)
from reviews.review.submit import (
    SUBMIT_KEY_MAX,
    SubmitResult,
    assignment_submit,
    reviewer_assignment,
)

__all__ = [
    "BLOCKING",
    "CLAIM_ATTEMPTS",
    "HEARTBEAT_CAP_LEASES",
    "LEASE_LAPSED",
    "LIVE",
    "REVIEWABLE",
    "SHUFFLE_SPACE",
    "SKIP_REASONS",
    "SUBMIT_FIELDS",
    "SUBMIT_KEY_MAX",
    "Claim",
    "ClaimContext",
    "CorrectResult",
    "ClaimBusy",
    "LeaseGone",
    "NotReviewable",
    "SubmitResult",
    "assignment_claim_next",
    "candidates",
    "claim_context",
    "assignment_expire_stale",
    "assignment_heartbeat",
    "assignment_release",
    "assignment_release_unfinishable",
    "assignment_skip",
    "assignment_state_message",
    "assignment_submit",
    "assignment_sweep_expired",
    "item_leases_release",
    "barred_message",
    "lease_extended",
    "presented_order",
    "review_correct",
    "review_payload_parse",
    "reviewer_barred_message",
    "reviewer_leases_release",
    "reviewer_assignment",
    "reviewer_may_review",
    "reviewer_remove_from_campaign",
    "reviewer_removed",
    "reviewer_restore_to_campaign",
    "settled_message",
    "shuffle_offset",
    "stale_leases_q",
]
