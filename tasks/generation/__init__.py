"""Generation: answers from the contenders, stored once each, whatever the workers do.

Owns a campaign's generation rows, queueing, cancel, retry and the campaign's status
(services.py), one attempt at a row: claim, call, store (run.py, with its raw SQL claim in
sql.py, the lease heartbeat in lease_keeper.py and the per-process wake-ups in
claim_waits.py), the reconciler that finds work lost to a dead worker (reconcile.py), the
providers that talk to an endpoint (providers/), the tool loop and scripted conversations
(conversation.py), what is stored beside an answer (grading.py, served.py, prices.py,
sample_seed.py), and outputs brought from elsewhere or sent out (outputs_import.py,
outputs_export.py).

Where a stored row's review items open, the code says so: it calls tasks.review_side
(docs/decisions/0009). Its own Celery job and a monitor run's grading job are sent by
registered name (the job modules are entry points that import this package).

May import: tasks.models, tasks.review_side, tasks.checks, tasks.images, tasks.blinding,
evalsite. Never campaigns, monitors, jobs or reviews.
"""
