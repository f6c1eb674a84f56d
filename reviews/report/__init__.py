"""The campaign report: one JSON-able dict with every figure (docs/report.md).

campaign.py reads the campaign into DataFrames in a few bulk reads and is the entry point
(`campaign_report`); build.py assembles the sections, each pure (frames in, dicts out):
outcomes.py (final outcomes), figures.py, slices.py, agentic.py, usage.py, gates.py, with
basis.py saying whose outcomes a figure stands on. cache.py keeps the report of each state of
a campaign (the dashboards read it there). api.py serves it.

May import: reviews.models, reviews.rubric, reviews.stats, reviews.judges and reviews.policy
(their figures), reviews.identity_reports (the `blinding` key), tasks.models,
tasks.generation (served models), evalsite. Imported by reviews.dashboards and reviews.jobs.
"""
