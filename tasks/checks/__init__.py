"""Automatic checks on an output: JSON Schema, regex, length, must_include, the reference
answer and tool calls (docs/testsets.md, "Checks").

automatic.py runs a task's checks on one output (the entry point), json_schema.py holds the
validator and the pattern engine, reference.py and tools.py the two checks with rules of
their own. Pure functions over texts and transcripts: imports no model and nothing of the
app but tasks.generation.transcripts' readers.
"""
