"""Statistics of the report: pure functions on pandas/numpy (agreement, Bradley-Terry,
bootstrap, stability, calibration, ...), testable on hand-built frames, and `clean`
(rounding.py), which makes figures fit for JSON.

May import: reviews.rubric (a rubric's dimensions), tasks.generation.transcripts (the stored
transcripts' shape) and numpy, pandas, scipy; no ORM, no I/O.
"""
