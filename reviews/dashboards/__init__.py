"""Lead dashboards: screen-shaped reads of the campaign report (selectors.py, pages.py,
agentic.py, extras.py), the tables and interval charts they draw (tables.py), and the pages
and CSV downloads (views.py). Reads the report; writes nothing.

May import: reviews.report, reviews.records (downloads), reviews.models, tasks.models,
evalsite.
"""
