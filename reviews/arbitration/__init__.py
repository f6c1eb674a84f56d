"""Arbitration: claiming, resolving and releasing a disputed item (services.py), the arbiter's
blinded workspace and the lead's list (selectors.py), the arbiter's pages and JSON API
(views.py, api.py), and the review side of a roster change, reviewers' leases and arbiters'
disputes alike (rosters.py). The dispute rules themselves are reviews.disputes.

May import: reviews.models, reviews.rubric, reviews.disputes, reviews.review (leases),
reviews.identity_reports (the arbiter's report), reviews.comments, the blinded screen
(reviews.screen, reviews.transcript_shown), tasks.models, tasks.blinding, evalsite.
Imported by reviews.items and reviews.records, never by the review loop.
"""
