"""Campaigns and contenders: the definition (definition.py, read through definition_reader.py;
the rubric, gates, thresholds, policy, rosters and per-turn scores each in their module; its
JSON Schema in definition_schema.py), the admin forms and rubric builder, the campaign's stage
(lifecycle.py), search, and the campaign pages and API (views.py, search_views.py, api.py,
selectors.py), with the held outputs' page and API (held_views.py, held_api.py). Starting and
cancelling generation is asked of tasks.generation; the review side through tasks.review_side.

May import: tasks.models, tasks.review_side, tasks.blinding, tasks.generation, tasks.checks,
evalsite. Imported by judges, monitors, demo and the entry points.
"""
