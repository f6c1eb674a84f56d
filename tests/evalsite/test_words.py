from evalsite.templatetags.words import words
from evalsite.text import counted, more_problems


def test_counts_read_as_words():
    assert counted(1, "review") == "1 review"
    assert [counted(n, "open lease") for n in (0, 2)] == ["0 open leases", "2 open leases"]
    assert counted(3, "query", "queries") == "3 queries"
    assert more_problems(1) == "... and 1 more problem"
    assert more_problems(25) == "... and 25 more problems"
    assert words("long_context_summary") == "long context summary"
