"""Judging a campaign: judgements of review items by a judge, and its calibration.

Owns the `Judgement` rows (models.py), the judge's blinded view of an item (screen.py, built
from the reviewer's own screen), the judging run on the generation machinery (services.py:
rows, claim with a lease under the judge's concurrency limit, call, strict answer, store;
jobs.py; the reconciler), the calibration against the people's final outcomes
(calibration.py, on the pure statistics of reviews/stats/calibration.py), and the pages and
API of a campaign's judges, what monitors ask of judges (monitoring.py, through
tasks/review_side.py) and the demo's judge and judged monitor run (demo.py, demo_monitor.py).
Nothing in `tasks` imports it (docs/decisions/0008-judges-in-two-packages.md).

May import: `tasks` (tasks/judges/ for the judge itself, the generation machinery),
reviews.models, reviews.rubric, reviews.stats, reviews.disputes, reviews.policy,
reviews.review (the reviewer's screen, opening items), reviews.screen, evalsite. Never
reviews.report: the report reads the judges' figures (calibration.py), not the reverse.
"""
