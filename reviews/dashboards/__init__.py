"""Lead dashboards: screen-shaped reads of the campaign report (selectors.py, pages.py,
agentic.py, extras.py), the summary each tab opens with (summary.py), the tables and
interval charts they draw (tables.py), and the pages and CSV downloads (views.py). Reads the
report (reviews.report, its cache in reviews/report/cache.py); writes nothing of its own.

May import: reviews.report, reviews.records (downloads and uploads), tasks.models, evalsite.
Nothing in reviews imports it but the URLconf.
"""
