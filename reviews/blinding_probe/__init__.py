"""The blinding probe (docs/blinding.md, "Measuring whether blinding held").

A campaign with `"blinding_probe": {"every": N}` asks each reviewer, after every Nth item they
review, which contender wrote one answer of that item, picked at random. The question shows
that answer masked, as the review showed it, and the contenders' names in alphabetical order:
never a label, so nothing ties a name to the A, B, ... of any item. Until it is answered the
reviewer gets no next item on the page; the API's submit answer carries the question.

services.py writes (asks, records the answer), selectors.py reads (the question and the
figures, on reviews.stats.blinding).

May import: reviews.models, reviews.stats (blinding), tasks.models, tasks.blinding; the
review loop (reviews.review) imports it, so it imports neither the loop nor the identity
reports (which read its figures).
"""
