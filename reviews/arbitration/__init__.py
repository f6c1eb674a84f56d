"""Arbitration: the dispute rules and final outcomes (disputes.py), claiming, resolving and
releasing a disputed item (services.py), the arbiter's blinded workspace and the lead's list
(selectors.py), and the arbiter's pages and JSON API (views.py, api.py).

May import: reviews.models, reviews.review (leases), reviews.identity_reports,
reviews.comments, the blinded screen (reviews.screen), tasks.models, tasks.blinding, evalsite.
"""
