"""The tasks app: test sets and their test cases, contenders, campaigns, generation, monitors.

One package per subsystem; the packages import one way (tests/test_layers.py fails on a cycle,
function-level imports included):

    models, review_side            the rows (judges' and monitors' models register here) and
                                   the port to the review side (docs/decisions/0009)
    checks, images, blinding       pure checks and transcripts; images; the masking engine
    intake, generation             test-set intake; the generation of outputs
    campaigns                      campaign definitions, pages and API
    judges, monitors               judges' definitions; monitors and their runs
    demo                           the demo data

A package imports only packages on its own line or above it in this list. The entry points
(urls.py, jobs.py, apps.py, deploy_checks.py, management commands, and evalsite/celery.py's
worker hooks) may import any package; nothing imports them. `tasks` never imports `reviews`
(docs/decisions/0007).
"""
