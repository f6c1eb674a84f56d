import csv
import io

from evalsite.csvsafe import csv_lines, escape_cell


def test_it_prefixes_every_formula_trigger_with_an_apostrophe():
    for cell in ("=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx", '=HYPERLINK("http://x")'):
        assert escape_cell(cell) == "'" + cell
    for cell in ("plain", " =not at start", "", "'already quoted", 'say "=" later'):
        assert escape_cell(cell) == cell


def test_it_escapes_the_full_width_formula_triggers_too():
    # ＝ ＋ － ＠ (U+FF1D, U+FF0B, U+FF0D, U+FF20) start a formula in a CJK-locale spreadsheet
    for cell in ("\uff1d1+1", "\uff0b1", "\uff0d2", "\uff20SUM(A1)"):
        assert escape_cell(cell) == "'" + cell
    rows = list(csv.reader(io.StringIO("".join(csv_lines(["a"], [["\uff1dcmd"]])))))
    assert rows == [["a"], ["'\uff1dcmd"]]
    assert escape_cell("a\uff1d") == "a\uff1d"


def test_it_leaves_numbers_and_empty_values_alone():
    assert escape_cell(-3) == -3 and escape_cell(-0.5) == -0.5 and escape_cell(None) is None


def test_it_streams_one_escaped_line_per_row_that_reads_back():
    lines = list(csv_lines(["a", "b"], iter([["=cmd", "x,y\nz"], [-1, "@me"]])))
    assert len(lines) == 3
    rows = list(csv.reader(io.StringIO("".join(lines))))
    assert rows == [["a", "b"], ["'=cmd", "x,y\nz"], ["-1", "'@me"]]
