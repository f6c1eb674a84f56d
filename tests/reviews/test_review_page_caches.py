"""The review page's shortcuts: one query for its data, cached masking/Markdown and answer grid.

None of them may change what a reviewer sees: a cache never serves one campaign's rubric or
words, or one text's rendering, where another would be rendered.
"""

import re
from unittest.mock import patch

from django.db import connection
from django.test import SimpleTestCase, TestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reviews.models import Assignment, ReviewerRemoval
from reviews.review import selectors
from tasks.blinding import masking
from tasks.blinding import render as blinding
from tasks.blinding import terms as identity_terms
from tasks.models import Campaign
from tests.factories import ContenderFactory, campaign_ready, personas

EXTRA = ("Claude Sonnet", "zz-model-9", "01.AI", "Acme Brain", "Kimi K2", "İnci")
PIECES = st.sampled_from(
    [*identity_terms.NAMES, *identity_terms.FAMILIES, *identity_terms.VENDORS, *EXTRA]
    + ["gpt-4o", "GPT 3.5", "o1-preview", "llama-3.1", "Phi-3", "Sonnet 3.5", "I'm", "by"]
    + ["claude", "CLAUDE", "Gemını", "ſonnet", "\u212aimi", "chat", "x", "_", "-", ".", "9"]
    + ["developed by", "trained by", "I am", "AI", "\u200b", "&#97;", "%61", "С", "由", "开发"]
)
TEXTS = st.lists(
    st.one_of(PIECES, st.sampled_from([" ", "\n", ", ", "é", "a", "1", "(", ")", "*", "|"])),
    max_size=25,
).map("".join)


class MaskingShortcutTests(SimpleTestCase):
    @settings(max_examples=400, deadline=None)
    @given(TEXTS, st.lists(st.sampled_from(EXTRA), max_size=3).map(tuple))
    def test_it_finds_what_it_finds_without_the_shortcuts(self, text, extra):
        # A text whose letters hold no name (or no self-description's words) skips those
        # patterns: the findings must be the same as when every pattern runs.
        terms = tuple(sorted(set(extra)))
        fast = masking.find(text, terms)
        with (
            patch.object(
                masking,
                "names_in",  # every built-in name's pattern runs, whatever the letters
                lambda letters: {k: frozenset(v) for k, v in masking.builtin_terms().items()},
            ),
            patch.object(masking, "campaign_triggers", lambda terms: frozenset({""})),
            patch.object(masking.self_description, "may_occur", lambda folded: True),
        ):
            assert masking.find(text, terms) == fast

    @settings(max_examples=300, deadline=None)
    @given(TEXTS, st.lists(st.sampled_from(EXTRA), max_size=3).map(tuple))
    def test_it_changes_nothing_outside_what_it_found(self, text, extra):
        terms = tuple(sorted(set(extra)))
        found = masking.find(text, terms)
        shown = masking.masked(text, found, "#")
        # Between the findings the text is the same, character for character.
        pieces, last = [], 0
        for f in found:
            pieces.append(text[last : f.start])
            last = f.end
        pieces.append(text[last:])
        rest = shown
        for piece in pieces:
            assert piece in rest
            rest = rest[rest.index(piece) + len(piece) :]
        assert (shown == text) == (not found)


# Lines of words, numbers and punctuation, some with Markdown meaning (lists, headings, breaks,
# emphasis, escapes, markup): the plain-text shortcut must take only texts the parser would
# render as one bare paragraph.
MD_WORDS = st.sampled_from(
    ["Hello", "é", "中文", "x1", "1.", "2)", "-", "+", "=", "#", ">", "*a*", "_b_", "`c`", "~~d~~"]
    + ["(a)", "it's", "50%", "a/b", "e@x", "$5", "ok!", "why?", "end.", "<b>", "&amp;", '"q"', "\\"]
)
MD_LINES = st.lists(st.lists(MD_WORDS, min_size=1, max_size=6), min_size=1, max_size=4)


def _as_shown(html: str) -> str:
    """HTML as a browser shows it: markdown-it writes <s> and pulldown-cmark <del> (both struck
    through); whitespace at a line's end, at the end of a code block, and before a block tag
    is not shown."""
    html = html.replace("<del>", "<s>").replace("</del>", "</s>")
    html = re.sub(r"[ \t]+\n", "\n", html)
    html = re.sub(r"\s+</code></pre>", "</code></pre>", html)
    return re.sub(
        r"\s+(</?(?:p|ul|ol|li|h\d|pre|blockquote|table|thead|tbody|tr|th|td|hr)\b)", r"\1", html
    )


# A backslash, two spaces and a line end: a literal backslash and a hard line break in
# CommonMark and pulldown-cmark, where markdown-it-py leaves out the break: one of the two
# differences the property tests found (the other: FastMarkdownTests).
_BACKSLASH_BREAK = re.compile(r"\\ {2,}\n")


def _markdown_it(text: str) -> str:
    return blinding._sanitizer.clean(blinding._md.render(text))


class PlainTextMarkdownTests(SimpleTestCase):
    @settings(max_examples=600, deadline=None)
    @given(MD_LINES, st.sampled_from([" ", "  "]), st.sampled_from(["", " ", "  "]))
    def test_the_plain_text_shortcut_renders_what_the_parser_renders(self, lines, gap, end):
        text = "\n".join(gap.join(words) + end for words in lines)
        sanitized = _markdown_it(text)
        blinding._render_markdown.cache_clear()
        if blinding._PLAIN_TEXT.fullmatch(text):
            assert blinding.render_markdown(text) == sanitized
        else:  # the fast renderer's, see FastMarkdownTests
            assume(not _BACKSLASH_BREAK.search(text))
            assert _as_shown(blinding.render_markdown(text)) == _as_shown(sanitized)

    def test_it_takes_the_shortcut_for_plain_lines_only(self):
        assert blinding._PLAIN_TEXT.fullmatch("Ticket 7: draft a reply (short, friendly).\nThanks!")
        for text in ["1. one", "Hi\n\nthere", "Hi  \nthere", "a_b", "x < y", " Hi", "Hi\n- a", ""]:
            assert not blinding._PLAIN_TEXT.fullmatch(text), text


ANSWERS = [
    '## Steps\n\n1. Open **Settings** > *Security*.\n2. Click [Reset](https://example.com/r "Reset").\n'
    "   - then `confirm`\n   - wait ~~an hour~~ a minute\n3. Done.\n\n---\n\n> Note: if a < b,\n> call us.",
    "```python\nif a < b and c & d:\n    print('x')\n```\n\n~~~\nplain fence\n~~~\n\n    indented code",
    "| Plan | Price |\n|:-----|------:|\n| Basic | $5 |\n| **Pro** | `$10` |\n\nLine one  \nline two\\\n"
    "line three &amp; &copy; &#35; \\*not emphasis\\*",
    "Setext\n======\n\n3. three\n4. four\n\n* a\n\n  para in item\n* b\n\n[ref] and [x][ref].\n\n"
    "[ref]: https://example.com/ref\n\nMail tom@example.com or see https://example.com/docs.",
    "x ```py then `a` and `b` and ``c ` d``; ***both*** and _em_ and __strong__.",
]


class FastMarkdownTests(SimpleTestCase):
    """pulldown-cmark renders what markdown-it-py renders, as shown, wherever it is used."""

    def test_it_renders_answers_as_markdown_it_does(self):
        for text in ANSWERS:
            assert not blinding._FAST_MAY_DIFFER.search(text), text
            blinding._render_markdown.cache_clear()
            assert _as_shown(blinding.render_markdown(text)) == _as_shown(_markdown_it(text))

    # Closed fences are in ANSWERS: an unclosed one in a list item is malformed input on which
    # the two parsers disagree (tight or loose list). Derandomized so that no CI run depends on
    # a new draw from two independent parsers.
    @settings(max_examples=500, deadline=None, derandomize=True)
    @given(
        st.lists(
            st.lists(
                st.one_of(
                    MD_WORDS, st.sampled_from(["**s**", "[l](https://x.y)", "`x < y`", "~~z~~"])
                ),
                min_size=1,
                max_size=6,
            ),
            min_size=1,
            max_size=5,
        ),
        st.sampled_from([" ", "  "]),
        st.sampled_from(["", " ", "  "]),
        st.sampled_from(["\n", "\n\n"]),
    )
    def test_it_renders_what_markdown_it_renders(self, lines, gap, end, sep):
        text = sep.join(gap.join(words) + end for words in lines)
        assume(not _BACKSLASH_BREAK.search(text))
        blinding._render_markdown.cache_clear()
        assert _as_shown(blinding.render_markdown(text)) == _as_shown(_markdown_it(text))

    def test_it_leaves_raw_html_unsafe_links_and_single_tildes_to_markdown_it(self):
        for text in [
            "Use <br> or </div>; <!-- c --> <?php ?> <!DOCTYPE html> <https://auto.link>",
            "[x](javascript:alert(1)) [y](DATA:text/html,hi) [z](file:///etc/passwd)",
            "about ~5~ minutes",
        ]:
            assert blinding._FAST_MAY_DIFFER.search(text), text
            blinding._render_markdown.cache_clear()
            assert blinding.render_markdown(text) == _markdown_it(text)
        for text in ["a < b", "x ~~y~~", "~~~\nfence\n~~~", "javascript is fine"]:
            assert not blinding._FAST_MAY_DIFFER.search(text), text


class BlindingCacheTests(SimpleTestCase):
    def test_it_masks_the_same_text_by_each_campaigns_own_words(self):
        text = "Hi, zz-model-9 and Acme Brain here."
        assert (
            blinding.mask_identity(text, ("zz-model-9",)).text
            == "Hi, [redacted] and Acme Brain here."
        )
        assert (
            blinding.mask_identity(text, ("Acme Brain",)).text
            == "Hi, zz-model-9 and [redacted] here."
        )
        assert blinding.mask_identity(text).hits == 0
        # The rendered output follows the masking it was given.
        assert "zz-model-9" not in blinding.render_output(text, ("zz-model-9",))[1]
        assert "zz-model-9" in blinding.render_output(text, ("Acme Brain",))[1]

    def test_it_renders_long_texts_the_same_way_without_caching_them(self):
        long = "**" + "word " * (blinding.CACHE_MAX_CHARS // 5) + "end** and ChatGPT"
        text, html, hits = blinding.render_output(long, ())
        assert hits == 1 and text.endswith("** and [redacted]")
        assert html.startswith("<p><strong>word word") and html.endswith("and [redacted]</p>\n")


class ReviewPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.reviewer = cls.users["reviewer_a"]
        cls.campaign = campaign_ready(items=3, overlap=1)

    def setUp(self):
        self.client.force_login(self.reviewer)

    def claim(self, campaign):
        self.client.post(reverse("review_next", args=[campaign.slug]))
        return Assignment.objects.get(
            reviewer=self.reviewer, item__campaign=campaign, state="active"
        )

    def page(self, campaign, assignment, **kwargs):
        return self.client.get(
            reverse("review_page", args=[campaign.slug, assignment.token]), **kwargs
        )

    def test_it_reads_the_page_in_two_queries(self):
        # The assignment with its campaign and the reviewer's standing, then the item's task
        # and outputs (reviews/review/sql.py).
        assignment = self.claim(self.campaign)
        with self.assertNumQueries(2):
            page = selectors.review_page_data(
                slug=self.campaign.slug, token=assignment.token, reviewer=self.reviewer
            )
        assert page.assignment == assignment and page.assignment.order == assignment.order
        assert page.assignment.lease_expires_at == assignment.lease_expires_at
        assert page.campaign.rubric == self.campaign.rubric and page.may_review
        assert set(page.generations) == set(assignment.order) and page.done == 0
        with CaptureQueriesContext(connection) as cold:
            self.page(self.campaign, assignment)
        with CaptureQueriesContext(connection) as queries:
            response = self.page(self.campaign, assignment)
        assert response.status_code == 200
        # The first page of a campaign in a process also reads its contenders' names to mask
        # (kept for TERMS_TTL_SECONDS); after that: session, user with roles, the page's two
        # queries, the reviewer's progress ("Item n of N": one COUNT), and nothing deferred is
        # loaded later.
        assert len(cold) == len(queries) + 1, [q["sql"] for q in cold]
        assert len(queries) <= 5, [q["sql"] for q in queries]

    def test_it_counts_the_reviewers_submitted_items(self):
        assignment = self.claim(self.campaign)
        Assignment.objects.filter(pk=assignment.pk).update(state="submitted")
        assignment = self.claim(self.campaign)
        page = selectors.review_page_data(
            slug=self.campaign.slug, token=assignment.token, reviewer=self.reviewer
        )
        assert page.done == 1
        assert b"<strong data-done>1</strong>" in self.page(self.campaign, assignment).content

    def test_it_refuses_wrong_slug_other_reviewer_removed_and_closed(self):
        assignment = self.claim(self.campaign)
        other = campaign_ready(items=1, overlap=1)
        url = reverse("review_page", args=[other.slug, assignment.token])
        assert self.client.get(url).status_code == 404
        self.client.force_login(self.users["reviewer_b"])
        assert self.page(self.campaign, assignment).status_code == 404
        self.client.force_login(self.reviewer)
        # The reviewer's own link says why it no longer opens (403), and offers no next item.
        ReviewerRemoval.objects.create(campaign=self.campaign, reviewer=self.reviewer)
        removed = self.page(self.campaign, assignment)
        assert removed.status_code == 403 and b"removed you from this campaign" in removed.content
        assert b"Next item" not in removed.content
        ReviewerRemoval.objects.all().delete()
        Campaign.objects.filter(pk=self.campaign.pk).update(status="closed")
        closed = self.page(self.campaign, assignment)
        assert closed.status_code == 403 and b"not open for review any more" in closed.content
        Campaign.objects.filter(pk=self.campaign.pk).update(status="reviewing")
        assert self.page(self.campaign, assignment).status_code == 200

    def test_it_shows_each_campaign_its_own_rubric_and_the_new_one_after_a_change(self):
        other = campaign_ready(
            items=1,
            overlap=1,
            rubric=[
                {"key": "tone", "label": "Warmth", "min": 1, "max": 3, "anchors": {"3": "kind"}}
            ],
        )
        mine = self.page(self.campaign, self.claim(self.campaign)).content.decode()
        theirs = self.page(other, self.claim(other)).content.decode()
        assert 'name="score-A-accuracy"' in mine and "Warmth" not in mine
        assert 'name="score-A-tone"' in theirs and "accuracy" not in theirs
        assert 'value="4"' not in theirs and "kind" in theirs
        Campaign.objects.filter(pk=other.pk).update(
            rubric=[{"key": "tone", "label": "Politeness", "min": 1, "max": 4}]
        )
        changed = self.page(other, Assignment.objects.get(item__campaign=other)).content.decode()
        assert "Politeness" in changed and "Warmth" not in changed and 'value="4"' in changed

    def test_it_shows_what_was_entered_not_a_cached_blank_grid(self):
        assignment = self.claim(self.campaign)
        self.page(self.campaign, assignment)  # the blank grid is now cached
        response = self.client.post(
            reverse("review_submit", args=[self.campaign.slug, assignment.token]),
            {"submit_key": "k", "score-A-accuracy": "4", "comment": "so far"},
            headers={"HX-Request": "true"},
        )
        html = response.content.decode()
        assert 'name="score-A-accuracy" value="4" checked' in html and "so far" in html
        assert 'name="score-B-accuracy" value="4">' in html and "has-error" in html
        blank = self.page(self.campaign, assignment).content.decode()
        assert " checked" not in blank and "has-error" not in blank

    def test_it_masks_each_campaigns_words_in_the_same_text(self):
        text = "Answer from zz-alpha-model and yy-beta-model."
        first = campaign_ready(
            items=1,
            overlap=1,
            outputs=[text, "Plain."],
            contenders=[ContenderFactory(name="zz-alpha-model"), ContenderFactory()],
        )
        second = campaign_ready(
            items=1,
            overlap=1,
            outputs=[text, "Plain."],
            contenders=[ContenderFactory(name="yy-beta-model"), ContenderFactory()],
        )
        one = self.page(first, self.claim(first)).content.decode()
        two = self.page(second, self.claim(second)).content.decode()
        assert "zz-alpha-model" not in one and "yy-beta-model" in one
        assert "yy-beta-model" not in two and "zz-alpha-model" in two
