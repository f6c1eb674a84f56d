"""The campaign report: one JSON-able dict with every figure (docs/report.md).

campaign.py reads the campaign into DataFrames in a few bulk reads and is the entry point
(`campaign_report`); build.py assembles the sections, each pure (frames in, dicts out):
outcomes.py (final outcomes), figures.py, slices.py, agentic.py, usage.py, gates.py, with
basis.py saying whose outcomes a figure stands on. api.py serves it.

May import: reviews.models, reviews.stats, reviews.judges and reviews.policy (their
selectors), reviews.blinding_probe, tasks.models, tasks.generation (prices), evalsite.
"""
