"""The masking engine: what a reviewer may see of a model's output (docs/blinding.md).

- render.py: the entry point every screen uses: `render_output`, `mask_identity`,
  `check_identity` (mask, then safe Markdown).
- masking.py: finding a model's identity in a text and masking exactly what was found;
  skeleton.py the normalized view it matches on; terms.py the curated names,
  catalog.py the names from the maintained model dataset, languages.py and
  self_description.py self-descriptions in many languages, suspects.py the wider net that
  holds an output for an admin.
- hold.py and views.py: outputs held for an admin's look, and the held-outputs page.
- campaign_texts.py: what a campaign's own texts say about its contenders.

May import: tasks.models and evalsite. Never the campaigns, generation or review code that
calls it.
"""
