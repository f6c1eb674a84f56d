"""The data and the detection layers of identity masking that are not the curated names'
patterns: the names derived from a maintained dataset of LLM providers and models
(catalog), self-descriptions in many languages (languages), and the wider net that holds an
output for an admin's look (suspects). The entry points stay tasks.blinding.render
(mask_identity, check_identity, render_output)."""
