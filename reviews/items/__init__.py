"""The item page: one task of a campaign drilled into for leads and admins (names shown), and
blinded for its arbiter: outcomes, disagreements by dimension, what the arbiter set, comments.

May import: reviews.models, reviews.arbitration (dispute rules), reviews.comments, the
blinded screen (reviews.screen), tasks.models, tasks.blinding, evalsite.
"""
