"""Test-set intake: JSONL, CSV or a zip with images -> validated tasks, all-or-nothing, versioned.

parse.py reads the bytes into task dicts with every problem by line; checks.py and
conversation.py read a task's checks, tools and scripted turns; upload_help.py says what the
upload page explains of the format; pii/ finds personal data; pending.py keeps an upload
between "validate" and "confirm"; services.py imports (with its bulk insert in sql.py) and
deletes test sets, selectors.py reads them for the pages and the API (api.py, views.py,
forms.py).

May import: tasks.models, tasks.checks, tasks.images, evalsite.
"""
