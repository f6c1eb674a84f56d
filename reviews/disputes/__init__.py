"""Disputes: the rules that settle an item from its reviews and store its final outcome
(rules.py: `settle` pure, `item_settle` in the submit of the k-th review, `items_settle` for a
record import in bulk), with the settle's one raw read (sql.py).

The review loop, arbitration, review policies, judges and the record import all settle through
here, so the rules live in one place below them.

May import: reviews.models, reviews.rubric, tasks.models, evalsite.
"""
