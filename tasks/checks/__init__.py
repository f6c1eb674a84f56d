"""Automatic checks on an output: JSON Schema, regex, length, must_include, the reference
answer and tool calls (docs/testsets.md, "Checks").

automatic.py runs a task's checks on one output (the entry point), json_schema.py holds the
validator and the pattern engine, reference.py and tools.py the two checks with rules of
their own, transcripts.py the readers of a stored transcript (its turns, steps and calls) that
the checks, generation, monitors and the review side's statistics share. Pure functions over
texts and transcripts.

May import: nothing of the app (no model, no other package); evalsite only.
"""
