"""The item page: one task of a campaign drilled into for leads and admins (names shown), and
blinded for its arbiter: outcomes, disagreements by dimension, what the arbiter set, comments.

May import: reviews.models, reviews.rubric, reviews.disputes (disputed cells),
reviews.arbitration (the arbiter's workspace), reviews.comments, the blinded screen
(reviews.screen, reviews.transcript_shown), tasks.models, tasks.blinding, tasks.campaigns,
evalsite. Nothing in reviews imports it but the URLconf.
"""
