"""Targeted human review: a campaign's ``review_policy`` (tasks/campaigns/policy.py checks it).

A judge scores every review item first; people review only the items its rules select
(rules.py), and the judge settles the rest with its combined answer (services.py). What the
campaign page shows of it is in selectors.py. See docs/judges.md "Targeted human review".
"""
