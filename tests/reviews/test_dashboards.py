"""Lead dashboards: who may see them, that they show the report's figures, CSV downloads."""

import csv
import io
import re

import pytest
from django.test import TestCase

from reviews.dashboards.selectors import PAGES, SECTION_PAGES, dashboard_page
from reviews.records import reviews_import
from reviews.report.campaign import campaign_report
from tests.factories import personas
from tests.reviews.test_records import (
    SECRET_NAMES,
    jsonl,
    make_campaign,
    pairwise_campaign,
    rec,
    sample_records,
)

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# The pages every campaign has (tool use and conversation need such tasks:
# tests/reviews/test_dashboards_agentic.py).
COMMON_PAGES = [(key, title) for key, title in PAGES if key not in SECTION_PAGES]


def page_urls(slug: str) -> list[str]:
    urls = [f"/campaigns/{slug}/dashboard/"]
    urls += [f"/campaigns/{slug}/dashboard/{key}/" for key, _ in COMMON_PAGES if key != "overview"]
    return urls


class DashboardTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = make_campaign()
        records = sample_records()
        records[0]["comment"] = "=cmd|' /C calc'!A0"
        for r in records:  # a judge whose name a spreadsheet would run as a formula
            if r["judge"] == "judge_2":
                r["judge"] = "@judge_2"
        reviews_import(campaign=cls.campaign, data=jsonl(*records), fmt="jsonl")
        cls.report = campaign_report(campaign=cls.campaign)

    def login(self, who: str) -> None:
        self.client.force_login(self.users[who])

    def test_it_shows_every_dashboard_to_leads_and_admins(self):
        for who in ("lead", "admin"):
            self.login(who)
            for url in page_urls("camp"):
                response = self.client.get(url)
                assert response.status_code == 200, (who, url)
                assert b"Download CSV" in response.content, url

    def test_it_denies_reviewers_arbiters_and_outsiders(self):
        urls = [
            *page_urls("camp"),
            "/campaigns/camp/dashboard/leaderboard/leaderboard.csv",
            "/campaigns/camp/reviews/download?format=jsonl",
        ]
        for who in ("reviewer_a", "arbiter", "outsider"):
            self.login(who)
            for url in urls:
                assert self.client.get(url).status_code == 403, (who, url)
                assert self.client.post(url).status_code == 403, (who, url)
        self.client.logout()
        for url in urls:
            response = self.client.get(url)
            assert response.status_code == 302 and response.url.startswith("/login/")

    def test_it_links_the_dashboards_from_the_campaign_page(self):
        self.login("lead")
        body = self.client.get("/campaigns/camp/").content.decode()
        assert 'href="/campaigns/camp/dashboard/"' in body
        assert 'href="/campaigns/camp/dashboard/leaderboard/"' in body

    def test_it_only_answers_get(self):
        self.login("lead")
        assert self.client.post("/campaigns/camp/dashboard/").status_code == 405

    def test_it_returns_404_for_unknown_campaigns_pages_and_tables(self):
        self.login("lead")
        assert self.client.get("/campaigns/nope/dashboard/").status_code == 404
        assert self.client.get("/campaigns/camp/dashboard/secrets/").status_code == 404
        assert self.client.get("/campaigns/camp/dashboard/leaderboard/nope.csv").status_code == 404

    def test_it_shows_the_report_figures_on_the_leaderboard(self):
        self.login("lead")
        body = self.client.get("/campaigns/camp/dashboard/leaderboard/").content.decode()
        top = self.report["leaderboard"][0]
        assert top["contender"] == SECRET_NAMES[0]
        assert f"{top['rating']:,.1f}" in body
        assert "<svg" in body and "<circle" in body
        assert "Rank rule" in body and "P(best)" in body
        assert " style=" not in body and "<script>" not in body

    def test_a_warning_shows_on_the_overview_and_the_pages_it_concerns_only(self):
        self.login("lead")
        stability = [w for w in self.report["warnings"] if w.startswith("stability:")]
        assert stability, self.report["warnings"]
        shown = {}
        for url in page_urls("camp"):
            body = self.client.get(url).content.decode()
            shown[url.split("/dashboard/")[1].strip("/") or "overview"] = stability[0][:40] in body
        assert {page for page, yes in shown.items() if yes} == {
            "overview",
            "leaderboard",
            "stability",
            "cost",
        }

    def test_it_counts_fully_reviewed_items_apart_from_those_with_a_final_outcome(self):
        self.login("lead")
        p = self.report["progress"]
        body = self.client.get("/campaigns/camp/dashboard/").content.decode()
        assert "Items fully reviewed" in body and "Items settled" not in body
        assert "items with a final outcome (agreed or resolved)" in body
        assert "dispute rate (disputed or resolved / fully reviewed)" in body  # its denominator
        assert f"of {p['settled']} fully reviewed: {p['disputed']} waiting" in body
        board = self.client.get("/campaigns/camp/dashboard/leaderboard/").content.decode()
        assert f"{self.report['rating']['n_items']} items with a final outcome" in board
        assert self.report["rating"]["n_items"] == p["agreed"] + p["resolved"]

    def test_it_words_its_figures_for_people(self):
        self.login("lead")
        reviewers = self.client.get("/campaigns/camp/dashboard/reviewers/").content.decode()
        assert "median time per item" in reviewers
        assert re.search(r">[\d,]+\.\d s</td>", reviewers), "seconds shown as seconds"
        assert self.report["position_bias"].get("reason") is None
        bias = self.client.get("/campaigns/camp/dashboard/bias/").content.decode()
        assert ">note</td>" not in bias  # no empty note row
        assert "against chance" in bias and "p-value below 0.05" in bias  # how to read it
        stability = self.client.get("/campaigns/camp/dashboard/stability/").content.decode()
        assert "pass^k: that all k pass" in stability

    def test_it_draws_agreement_bands_and_counts(self):
        self.login("lead")
        body = self.client.get("/campaigns/camp/dashboard/agreement/").content.decode()
        accuracy = self.report["agreement"]["accuracy"]
        band = accuracy["band"] or f"no band: {accuracy['ci_reason']}"
        assert band in body and f"{accuracy['alpha']:.3f}" in body
        assert "AC1 / AC2" in body and "judged on alpha" in body
        assert "0.667" in body and "0.800" in body
        assert f'<td class="num">{accuracy["n_units"]}</td>' in body

    def test_it_shows_what_each_figure_rests_on(self):
        self.login("lead")
        base = "/campaigns/camp/dashboard"
        cost = self.client.get(f"{base}/cost/").content.decode()
        assert "Pareto front" in cost and "quality floor" in cost
        stability = self.client.get(f"{base}/stability/").content.decode()
        assert "Pass rates per basis" in stability and "pending" in stability
        assert "Check and flag rates" in stability and "Wilson" in stability
        board = self.client.get(f"{base}/leaderboard/").content.decode()
        assert "How many more items?" in board and "test cases" in board
        capability = self.client.get(f"{base}/capability/").content.decode()
        assert "Case type x contender" in capability
        h2h = self.client.get(f"{base}/head-to-head/").content.decode()
        assert "paired win rate" in h2h and "Holm-adjusted" in h2h
        reviewers = self.client.get(f"{base}/reviewers/").content.decode()
        assert "mean offset ci95" not in reviewers and "interval over test cases" in reviewers
        overview = self.client.get(f"{base}/").content.decode()
        assert "test cases with a fully reviewed item" in overview
        rates = self.client.get(f"{base}/stability/rates.csv")
        assert rates.status_code == 200 and b"rate ci95 low" in b"".join(rates.streaming_content)

    def test_it_shows_capability_heatmaps(self):
        self.login("lead")
        body = self.client.get("/campaigns/camp/dashboard/capability/").content.decode()
        assert "Category x contender" in body and "Tier x contender" in body
        assert "heat-8" in body  # zeta's 0.81 quality
        assert "heat-3" in body  # omega's 0.375

    def test_it_shows_the_decision_weights(self):
        self.login("lead")
        body = self.client.get("/campaigns/camp/dashboard/cost/").content.decode()
        assert "w_quality = 0.7" in body and "w_stability = 0.3" in body
        # without stability for every contender the page says the weights do not apply
        assert self.report["decision"]["formula"] == "quality / normalized_cost"
        assert "do not apply" in body

    def test_it_compares_two_contenders_either_way_round(self):
        self.login("lead")
        zeta, omega = SECRET_NAMES
        body = self.client.get(
            f"/campaigns/camp/dashboard/head-to-head/?a={zeta}&b={omega}"
        ).content.decode()
        assert f"Tasks where {omega} regressed" in body and "T-1" in body
        assert "-0.438" in body
        partial = self.client.get(
            f"/campaigns/camp/dashboard/head-to-head/?a={omega}&b={zeta}", HTTP_HX_REQUEST="true"
        )
        text = partial.content.decode()
        assert "<html" not in text and 'id="comparison"' in text and "0.438" in text

    def test_it_says_why_a_choice_cannot_be_compared_instead_of_showing_another_pair(self):
        self.login("lead")
        zeta, omega = SECRET_NAMES
        url = "/campaigns/camp/dashboard/head-to-head/"
        same = self.client.get(f"{url}?a={zeta}&b={zeta}").content.decode()
        assert f"both {zeta}: pick two different contenders" in same
        assert "regressed" not in same
        unknown = self.client.get(f"{url}?a={zeta}&b=nobody").content.decode()
        assert "No contender named &#x27;nobody&#x27;" in unknown and "regressed" not in unknown
        for half in (f"?a={zeta}", "?a=&b="):  # one or both left empty
            body = self.client.get(url + half).content.decode()
            assert "Pick both contenders: a baseline and the one compared with it." in body
            assert "None" not in body and "regressed" not in body
        # the first visit, with nothing chosen, compares the first two
        assert "regressed" in self.client.get(url).content.decode()

    def test_it_downloads_every_table_as_escaped_csv(self):
        self.login("lead")
        for key, _ in COMMON_PAGES:
            url = "/campaigns/camp/dashboard/" + ("" if key == "overview" else f"{key}/")
            response = self.client.get(url)
            for table in response.context["tables"]:
                csv_response = self.client.get(f"/campaigns/camp/dashboard/{key}/{table.key}.csv")
                assert csv_response.status_code == 200
                assert (
                    csv_response["Content-Disposition"]
                    == f'attachment; filename="camp-{table.key}.csv"'
                )
                rows = list(
                    csv.reader(
                        io.StringIO(b"".join(csv_response.streaming_content).decode(), newline="")
                    )
                )
                assert rows[0] == table.csv_header() and len(rows) == len(table.rows) + 1
                assert not [
                    c for row in rows for c in row if c[:1] in TRIGGERS and not is_number(c)
                ]
                if table.key == "reviewers":
                    assert ["'@judge_2"] == [row[0] for row in rows if "judge_2" in row[0]]
                # an interval's ends are numbers a spreadsheet can use, not one text cell
                ends = [row[1] for row in rows if row[0].startswith("95% interval")]
                assert all(e == "" or is_number(e) for e in ends), ends

    def test_it_offers_unblinded_record_downloads_to_leads_only(self):
        self.login("lead")
        body = self.client.get("/campaigns/camp/dashboard/").content.decode()
        assert "unblind=1" in body
        response = self.client.get("/campaigns/camp/reviews/download?format=csv&unblind=1")
        text = b"".join(response.streaming_content).decode()
        assert SECRET_NAMES[0] in text and "'=cmd|' /C calc'!A0" in text
        self.login("admin")
        body = self.client.get("/campaigns/camp/dashboard/").content.decode()
        assert "unblind=1" not in body
        assert (
            self.client.get("/campaigns/camp/reviews/download?format=csv&unblind=1").status_code
            == 403
        )
        response = self.client.get("/campaigns/camp/reviews/download?format=jsonl")
        assert response.status_code == 200
        text = b"".join(response.streaming_content).decode()
        assert all(name not in text for name in SECRET_NAMES)


@pytest.mark.django_db
def test_it_reuses_the_cached_report_until_the_data_changes(django_assert_max_num_queries):
    from reviews.report.cache import campaign_report_cached, report_fingerprint

    campaign = make_campaign()
    records = sample_records()
    reviews_import(campaign=campaign, data=jsonl(*records[:4]), fmt="jsonl")
    before = report_fingerprint(campaign)
    first = campaign_report_cached(campaign)
    with django_assert_max_num_queries(6):
        assert campaign_report_cached(campaign) == first
    reviews_import(campaign=campaign, data=jsonl(*records), fmt="jsonl")
    assert report_fingerprint(campaign) != before
    assert campaign_report_cached(campaign)["progress"]["reviews_done"] == 8


class EmptyAndPairwiseDashboardTests(TestCase):
    """Too little data shows as 'no data', never a crash; pairwise campaigns work end to end."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.empty = make_campaign(slug="empty")

    def test_it_renders_every_page_and_table_of_an_empty_campaign(self):
        self.client.force_login(self.users["lead"])
        for url in page_urls("empty"):
            response = self.client.get(url)
            assert response.status_code == 200, url
            for table in response.context["tables"]:
                page = response.context["page"]
                assert (
                    self.client.get(
                        f"/campaigns/empty/dashboard/{page}/{table.key}.csv"
                    ).status_code
                    == 200
                )

    def test_the_no_final_outcome_warning_stays_off_the_pages_that_do_not_need_one(self):
        self.client.force_login(self.users["lead"])
        shown = set()
        for url in page_urls("empty"):
            body = self.client.get(url).content.decode()
            assert "are null" not in body, url  # the report's word, not the page's
            if "no item has a final outcome yet" in body:
                shown.add(url.split("/dashboard/")[1].strip("/") or "overview")
        assert shown == {
            "overview",
            "leaderboard",
            "capability",
            "head-to-head",
            "reviewers",
            "cost",
        }

    def test_its_empty_tables_say_what_is_missing_not_just_no_data(self):
        self.client.force_login(self.users["lead"])
        base = "/campaigns/empty/dashboard"
        assert "No disputed item so far." in self.client.get(f"{base}/").content.decode()
        assert "No review yet." in self.client.get(f"{base}/reviewers/").content.decode()
        capability = self.client.get(f"{base}/capability/").content.decode()
        assert "No item has a final outcome yet" in capability
        h2h = self.client.get(f"{base}/head-to-head/")
        a, b = h2h.context["a"], h2h.context["b"]
        assert f"No task where {b} scored lower than {a}." in h2h.content.decode()

    def test_it_handles_a_pairwise_campaign_with_three_contenders(self):
        from tasks.models import Contender

        names = ["p-one", "p-two", "p-three"]
        contenders = [Contender.objects.create(name=n, provider="imported") for n in names]
        campaign = make_campaign(slug="pairs", contenders=contenders, n_tasks=3)
        campaign.mode, campaign.rubric = "pairwise", []
        campaign.save()
        records = []
        for i, (a, b) in enumerate(
            [("p-one", "p-two"), ("p-two", "p-three"), ("p-one", "p-three")], start=1
        ):
            for judge in ("j1", "j2"):
                records.append(
                    {
                        "task_id": f"T-{i}",
                        "candidates": ["A", "B"],
                        "judge": judge,
                        "models": {"A": a, "B": b},
                        "scores": {},
                        "preference": "A",
                    }
                )
        reviews_import(campaign=campaign, data=jsonl(*records), fmt="jsonl")
        pair_keys = set(campaign.items.values_list("pair_key", flat=True))
        assert len(pair_keys) == 3 and "" not in pair_keys
        self.client.force_login(self.users["lead"])
        for url in page_urls("pairs"):
            assert self.client.get(url).status_code == 200, url
        body = self.client.get("/campaigns/pairs/dashboard/leaderboard/").content.decode()
        assert all(name in body for name in names)
        # the preferences alone rate the contenders: this mode collects no scores
        report = campaign_report(campaign=campaign, n_boot=50)
        board = {row["contender"]: row for row in report["leaderboard"]}
        assert report["rating"]["n_battles"] == 3
        assert (board["p-one"]["wins"], board["p-one"]["losses"]) == (2, 0)
        assert (board["p-three"]["wins"], board["p-three"]["losses"]) == (0, 2)
        assert board["p-one"]["rating"] > board["p-two"]["rating"] > board["p-three"]["rating"]
        exported = b"".join(
            self.client.get(
                "/campaigns/pairs/reviews/download?format=jsonl&unblind=1"
            ).streaming_content
        )
        assert len(exported.splitlines()) == 6


class RatingNoteTests(TestCase):
    """The sentence under the leaderboard chart: groups that never met, unrated contenders,
    and no empty bootstrap count."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()

    def page(self, slug: str) -> str:
        self.client.force_login(self.users["lead"])
        return self.client.get(f"/campaigns/{slug}/dashboard/leaderboard/").content.decode()

    def test_a_contender_never_compared_is_named_and_the_others_are_rated(self):
        alpha, beta, broken = "acme-alpha", "acme-beta", "acme-broken"
        pairwise_campaign(
            "acme", [alpha, beta, broken], [(alpha, beta), (alpha, beta), (beta, alpha)]
        )
        body = self.page("acme")
        assert (
            "3 pairwise outcomes from 3 items with a final outcome (3 from preferences, "
            "0 from final scores)." in body
        )
        assert "No intervals and no ranks: too few items (n=3)." in body
        assert f"Not rated: {broken} (no comparisons: none of its outputs was compared" in body
        assert "never met" not in body
        rows = {
            r[1]: r
            for r in self.client.get("/campaigns/acme/dashboard/leaderboard/")
            .context["tables"][0]
            .rows
        }
        assert rows[alpha][0] is None and rows[broken][0] is None  # three items: no ranks

    def test_groups_that_never_met_are_named_and_the_sentence_keeps_its_sense(self):
        pairwise_campaign(
            "split", ["g-a", "g-b", "g-c", "g-d", "g-none"], [("g-a", "g-b"), ("g-c", "g-d")]
        )
        body = self.page("split")
        assert "(2 from preferences, 0 from final scores)." in body
        assert "bootstrap rounds" not in body
        assert "these groups never met" in body
        assert "Groups that never met: [g-a, g-b] and [g-c, g-d]." in body
        assert "Not rated: g-none (" in body

    def test_with_no_outcome_yet_the_reason_reads_as_a_sentence(self):
        make_campaign(slug="fresh")
        body = self.page("fresh")
        assert "<strong>No pairwise outcomes yet (no item has a final outcome).</strong>" in body


class ImportPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        cls.campaign = make_campaign()

    def upload(self, data: bytes, name="records.jsonl", **headers):
        from django.core.files.uploadedfile import SimpleUploadedFile

        return self.client.post(
            "/campaigns/camp/reviews/import", {"file": SimpleUploadedFile(name, data)}, **headers
        )

    def test_it_imports_a_file_from_the_overview_page(self):
        from reviews.models import Review

        self.client.force_login(self.users["admin"])
        page = self.client.get("/campaigns/camp/dashboard/").content.decode()
        assert 'action="/campaigns/camp/reviews/import"' in page
        response = self.upload(jsonl(*sample_records()))
        assert response.status_code == 302 and response.url == "/campaigns/camp/dashboard/"
        assert Review.objects.count() == 8
        followed = self.client.get(response.url).content.decode()
        assert "Imported 8 reviews and 0 arbitrations from records.jsonl" in followed
        # htmx: a client-side redirect instead of a 302.
        response = self.upload(jsonl(*sample_records()), HTTP_HX_REQUEST="true")
        assert (
            response.status_code == 200 and response["HX-Redirect"] == "/campaigns/camp/dashboard/"
        )
        assert Review.objects.count() == 8

    def test_it_lists_the_problems_and_imports_nothing(self):
        from reviews.models import Review

        self.client.force_login(self.users["lead"])
        bad = jsonl(rec(), rec(task="T-99"))
        response = self.upload(bad, HTTP_HX_REQUEST="true")
        body = response.content.decode()
        assert response.status_code == 200 and "<html" not in body
        assert "Nothing was imported from records.jsonl" in body
        assert "line 2, field task_id: &#x27;T-99&#x27; is not in test set" in body
        response = self.upload(bad)
        assert response.status_code == 200 and "Nothing was imported" in response.content.decode()
        assert Review.objects.count() == 0

    def test_it_denies_other_roles(self):
        for who in ("reviewer_a", "arbiter", "outsider"):
            self.client.force_login(self.users[who])
            assert self.upload(jsonl(rec())).status_code == 403


def test_the_leaderboard_reads_down_by_rank_then_rating():
    """Overlapping intervals share a rank, so a higher rating can rank lower: rows go 1, 1, 2."""
    row = {"wins": 0, "losses": 0, "ties": 0, "quality": None, "stability": None}
    row |= {"pass_at_1": None, "cost_per_task": None, "decision_score": None, "scores": {}}
    report = {
        "leaderboard": [
            {**row, "contender": "wide-high", "rating": 1100.0, "ci95": [900, 1300], "rank": 1},
            {**row, "contender": "narrow-mid", "rating": 1050.0, "ci95": [1040, 1060], "rank": 2},
            {**row, "contender": "wide-low", "rating": 850.0, "ci95": [500, 1200], "rank": 1},
        ],
        "rating": {},
        "warnings": [],
    }
    table = dashboard_page(report, "leaderboard")["tables"][0]
    assert [(r[0], r[1]) for r in table.rows] == [
        (1, "wide-high"),
        (1, "wide-low"),
        (2, "narrow-mid"),
    ]
    assert "share a rank" in table.note


def test_the_pareto_chart_joins_the_front_cheapest_first():
    from reviews.dashboards.extras import pareto_chart

    rows = [
        {"contender": "dear-good", "quality": 0.9, "cost_per_task": 0.03, "pareto": True},
        {"contender": "cheap-ok", "quality": 0.7, "cost_per_task": 0.01, "pareto": True},
        {"contender": "dear-bad", "quality": 0.5, "cost_per_task": 0.02, "pareto": False},
        {"contender": "unknown", "quality": None, "cost_per_task": 0.01, "pareto": False},
    ]
    chart = pareto_chart({"leaderboard": rows})
    assert [p["label"] for p in chart.points] == ["dear-good", "cheap-ok", "dear-bad"]
    cheap, dear = (
        next(p for p in chart.points if p["label"] == n) for n in ("cheap-ok", "dear-good")
    )
    assert chart.front == f"{cheap['x']},{cheap['y']} {dear['x']},{dear['y']}"
    assert dear["y"] < cheap["y"]  # better quality is higher on the page


def test_a_contender_below_the_quality_floor_is_listed_after_the_ranked_ones():
    from reviews.dashboards.pages import cost_section

    def row(name, quality, decision, below):
        return {
            "contender": name,
            "quality": quality,
            "stability": None,
            "normalized_cost": 1.0,
            "decision_score": decision,
            "decision_ci95": None,
            "decision_rank": None,
            "below_floor": below,
            "pareto": True,
            "cost_per_task": 0.01,
        }

    report = {
        "leaderboard": [row("good", 0.9, 0.3, False), row("cheap-bad", 0.2, 0.9, True)],
        "decision": {
            "w_quality": 0.7,
            "w_stability": 0.3,
            "formula": "quality",
            "min_quality": 0.6,
        },
    }
    decision = next(t for t in cost_section(report)["tables"] if t.key == "decision")
    assert [r[0] for r in decision.rows] == ["good", "cheap-bad"]
    assert decision.rows[1][7] == "below floor"


def test_an_interval_cell_says_why_it_is_missing_and_shows_an_open_side():
    from reviews.dashboards.tables import display

    assert display("too few items (n=7)", "ci") == "too few items (n=7)"
    assert display([1610.0, None], "ci") == "≥ 1,610.0"
    assert display([None, 820.0], "ci") == "≤ 820.0"
    assert display([0.25, 0.75], "ci") == "0.250 – 0.750"
    assert display(None, "ci") == "–"
