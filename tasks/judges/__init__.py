"""Judges: model configurations that score review items the way a reviewer would.

This package owns what a judge *is* and how it is asked: the `Judge` row and its definition
file (models.py, definition.py), the answer it must give (answer.py: the JSON Schema of its
structured output and the strict reading of an answer), the messages it is sent (prompt.py)
and the admin pages and API for judges. It sits in `tasks`, the lower layer: it imports
`tasks` and never `reviews`. Judging a campaign needs the blinded review screen and the
people's final outcomes, which live in `reviews`; that part is `reviews/judges/`
(docs/decisions/0008-judges-in-two-packages.md).

May import: tasks.models, tasks.campaigns (a contender's definition and its readers), evalsite.
"""
