"""CSV export that is safe to open in a spreadsheet, streamed row by row.

Cells are attacker-influenced (LLM outputs, uploaded prompts). A text cell starting with
=, +, -, @, TAB or CR would run as a formula in Excel/LibreOffice/Sheets, so it gets a
leading apostrophe (OWASP "CSV injection"); so does one starting with their full-width forms
(＝ ＋ － ＠), which spreadsheets in CJK locales read as the ASCII ones. Numbers are written as
numbers.
"""

import csv
import re
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def escape_cell(value):
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_lines(header: Iterable[str], rows: Iterable[Iterable]) -> Iterator[str]:
    """Yield the CSV text of the header and each escaped row, one line at a time."""
    writer = csv.writer(_Echo())
    yield writer.writerow([escape_cell(h) for h in header])
    for row in rows:
        yield writer.writerow([escape_cell(v) for v in row])


def csv_response(
    filename: str, header: Iterable[str], rows: Iterable[Iterable]
) -> StreamingHttpResponse:
    """A streamed CSV download; `rows` should itself be lazy (e.g. a queryset .iterator())."""
    response = StreamingHttpResponse(
        csv_lines(header, rows), content_type="text/csv; charset=utf-8"
    )
    safe_name = re.sub(r"[^A-Za-z0-9._-]", "_", filename)
    response["Content-Disposition"] = f'attachment; filename="{safe_name}"'
    return response
