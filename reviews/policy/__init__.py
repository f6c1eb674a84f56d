"""Targeted human review: a campaign's ``review_policy`` (tasks/campaigns/policy.py checks it).

A judge scores every review item first; people review only the items its rules select
(rules.py), and the judge settles the rest with its combined answer (services.py). What the
campaign page shows of it is in selectors.py. See docs/judges.md "Targeted human review".

May import: reviews.models, reviews.rubric, reviews.stats, reviews.disputes (the rules that
combine a judge's answers), tasks.models. Imported by reviews.review (the state an item opens
in), reviews.judges (routing) and reviews.report (its summary).
"""
