"""Review records: export and import in the team's record format (docs/records.md).

One record = one judge's review of one item. Candidates are labelled A, B, ... (then AA, AB,
...: reviews/rubric.py `labels`) in the order that judge was shown them (A =
presented_order[0]), so position bias survives a round trip. Resolved arbitrations follow the
reviews as records with `"arbitration": true` (judge = the arbiter, comment = the note).

- format.py: the record's keys, limits, and RecordError / RecordImportError.
- export.py: streaming JSONL and CSV export (blind unless `unblind=True`, for leads).
- parse.py: bytes -> (line, raw record) pairs, JSONL or CSV.
- check.py: each record against the campaign, its rubric and the rest of the file.
- write.py: all-or-nothing storage, idempotent, and the replay of arbitration records.

Import is all-or-nothing: every problem comes back in one run as "line L, field F: message"
and nothing is kept if any line has one.

May import: reviews.models, reviews.rubric, reviews.disputes (settle imported items),
reviews.review (item rotations), reviews.arbitration (replaying resolutions), tasks.models,
tasks.blinding, evalsite. Imported by reviews.dashboards (downloads) and the URLconf.
"""

from reviews.records.export import (
    csv_columns,
    csv_max_candidates,
    export_filename,
    records_csv,
    records_export,
    records_iter,
    records_jsonl,
)
from reviews.records.format import (
    CSV_FIXED,
    FORMATS,
    JSONL_KEYS,
    MAX_ERRORS,
    RecordError,
    RecordImportError,
    max_import_bytes,
    too_big_problem,
)
from reviews.records.parse import detect_format
from reviews.records.write import ImportSummary, reviews_import

__all__ = [
    "CSV_FIXED",
    "FORMATS",
    "JSONL_KEYS",
    "MAX_ERRORS",
    "ImportSummary",
    "RecordError",
    "RecordImportError",
    "csv_columns",
    "csv_max_candidates",
    "detect_format",
    "export_filename",
    "max_import_bytes",
    "records_csv",
    "records_export",
    "records_iter",
    "records_jsonl",
    "reviews_import",
    "too_big_problem",
]
