"""Generation: answers from the contenders, stored once each, whatever the workers do.

Owns the claim / call / store cycle of a Generation row (services.py, with its raw SQL claim in
sql.py and the lease heartbeat in lease_keeper.py, the per-process wake-ups in
claim_waits.py), the reconciler that finds work lost to a dead worker (reconcile.py), the
providers that talk to an endpoint (providers/), the tool loop and scripted conversations
(conversation.py), what is stored beside an answer (grading.py, transcripts.py, served.py,
prices.py, sample_seed.py), and outputs brought from elsewhere or sent out (outputs_import.py,
outputs_export.py).

May import: tasks.models, tasks.checks, tasks.images, tasks.blinding, evalsite. The review
side learns of finished work through tasks.signals; never imports reviews.
"""
