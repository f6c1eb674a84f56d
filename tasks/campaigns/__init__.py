"""Campaigns and contenders: the definition (definition.py, read through definition_reader.py;
gates, thresholds, policy, rosters and per-turn scores each in their module), the admin forms
and rubric builder, the campaign's stage (lifecycle.py), search, and the campaign pages and
API (views.py, search_views.py, api.py, selectors.py). Starting and cancelling generation is
asked of tasks.generation.

May import: tasks.models, tasks.blinding, tasks.generation, tasks.checks, evalsite.
"""
