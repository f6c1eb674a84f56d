"""The masking engine: what a reviewer may see of a model's output (docs/blinding.md).

Public entry points, the only names other packages import:
- render.py: `render_output`, `mask_identity`, `check_identity`, `identity_terms`,
  `identity_words`, `redact_problem`, `render_markdown`, `labels` and `MASK` (mask, then safe
  Markdown, for every screen);
- campaign_texts.py: a campaign's masking words and its texts as reviewers see them
  (`campaign_identity_terms`, `blinding_terms`, `instructions_shown`, `words_shown`, the
  definition's refusals and warnings);
- hold.py: outputs held for an admin's look and their approval (`output_shown`,
  `generation_identity_approve`, `generations_identity_approve`, the hand masks).
- parts.py: the texts of an output reviewers read, each named by its part (the answer, a
  transcript step's text, a tool's result ...): what the hold scans and a hand mask names
  (`shown_texts`, `mask_part`, `part_label`, `ANSWER`).

Inside: masking.py finds a model's identity in a text and masks exactly what was found, with
the name patterns of patterns.py over skeleton.py's normalized view; terms.py the curated
names, catalog.py the names from the maintained model dataset, languages.py and
self_description.py self-descriptions in many languages, suspects.py the wider net that holds
an output for an admin.

May import: tasks.models, tasks.review_side (a hold's approval opens review items) and
evalsite. Never the campaigns, generation or review code that calls it.
"""
