"""Blinding: safe Markdown, identity masking + flagging, and the canary over every reviewer URL."""

import json
import re

from django.test import TestCase
from django.urls import reverse

from evalsite.models import ApiToken
from reviews.models import Arbitration, Assignment, ItemOutput, ReviewItem
from tasks.blinding import render as blinding
from tasks.models import Generation
from tests.factories import (
    CampaignFactory,
    ContenderFactory,
    GenerationFactory,
    TaskFactory,
    TestSetFactory,
    personas,
)

HTMX = {"HX-Request": "true"}


class MarkdownTests(TestCase):
    def test_it_escapes_raw_html_and_drops_dangerous_links_and_images(self):
        html = blinding.render_markdown(
            "<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n[x](javascript:alert(3)) "
            "![pixel](https://tracker.example/p.png) [ok](https://example.com)"
        )
        assert "<script" not in html and "&lt;script&gt;" in html
        assert "<img" not in html and "onerror=alert(2)&gt;" in html
        # An image is never loaded, but the reviewer sees that the answer had one.
        assert (
            '<a href="https://tracker.example/p.png" target="_blank" '
            'rel="noopener noreferrer nofollow">[image: pixel]</a>' in html
        )
        assert "[image: no description]" in blinding.render_markdown(
            "See ![](https://x.example/a.png)"
        )
        assert 'href="javascript' not in blinding.render_markdown("![x](javascript:alert(1))")
        assert "javascript:" not in html.replace("[x](javascript:alert(3))", "")
        assert 'href="javascript' not in html
        # A followed link opens a new tab: the item and its unsent scores stay in this one.
        assert (
            'href="https://example.com" target="_blank" rel="noopener noreferrer nofollow"' in html
        )

    def test_it_keeps_code_blocks_tables_and_lists(self):
        html = blinding.render_markdown(
            "```python\nif a < b:\n    print('<b>')\n```\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n\n- one\n- two"
        )
        assert "<pre><code>if a &lt; b:\n    print('&lt;b&gt;')\n</code></pre>" in html
        assert "<table>" in html and "<td>1</td>" in html and "style=" not in html
        assert "<ul>\n<li>one</li>" in html

    def test_it_shows_raw_html_in_prose_and_tables_as_text(self):
        html = blinding.render_markdown(
            "Wrap it in a <div>, then:\n\n| a | b |\n|---|---|\n| one<br>two | 2 |"
        )
        assert "Wrap it in a &lt;div&gt;, then:" in html
        assert "<td>one&lt;br&gt;two</td>" in html and "<br>" not in html


class MaskingTests(TestCase):
    def test_it_masks_builtin_model_and_vendor_names(self):
        masked = blinding.mask_identity(
            "I am ChatGPT, built on GPT-4o. Claude 3.5 and Llama-3.1-70B agree."
        )
        assert (
            masked.text == "I am [redacted], built on [redacted]. [redacted] and [redacted] agree."
        )
        assert masked.hits == 4

    def test_it_masks_a_models_tier_and_size_with_its_family_name(self):
        # "[redacted] Sonnet" or "[redacted]-V3" would still say which model wrote it.
        for text in (
            "I am Claude 3.5 Sonnet.",
            "I am Claude Opus 4.1.",
            "I am Gemini 1.5 Pro.",
            "I am Gemini 2.5 Flash.",
            "I am DeepSeek-V3.",
            "I am DeepSeek-R1.",
            "I am Kimi K2.",
            "I am GPT-4o mini.",
            "I am Llama 3.1 70B Instruct.",
            "I am Mistral Large 2.",
            "I am ＧＰＴ－４ｏ ｍｉｎｉ.",
        ):
            assert blinding.mask_identity(text) == blinding.Masked("I am [redacted].", 1), text
        # What follows that is not part of a model's name stays, and so do other words.
        for text, shown in (
            ("Claude 2 answered in 5 seconds.", "[redacted] answered in 5 seconds."),
            ("Ask GPT-4 and 5 others.", "Ask [redacted] and 5 others."),
            ("Shakespeare's Sonnet 18, in Delphi 7.", "Shakespeare's Sonnet 18, in Delphi 7."),
        ):
            assert blinding.mask_identity(text).text == shown

    def test_it_masks_self_identification_but_not_ordinary_use_of_by(self):
        masked = blinding.mask_identity(
            "As an AI developed by Google, I can't. The bridge was built by Contoso."
        )
        assert (
            masked.text
            == "As an AI developed by [redacted], I can't. The bridge was built by Contoso."
        )
        # Only the maker goes, never the words after it: the answer keeps its meaning.
        text = "As an AI developed by OpenAI I cannot see your account."
        assert blinding.mask_identity(text).text == (
            "As an AI developed by [redacted] I cannot see your account."
        )
        for text, shown in (
            ("I was trained by Google DeepMind.", "I was trained by [redacted]."),
            ("I'm a language model from Meta AI.", "I'm a language model from [redacted]."),
            (
                "This assistant was built by Contoso Labs.",
                "This assistant was built by [redacted].",
            ),
        ):
            assert blinding.mask_identity(text).text == shown

    def test_it_masks_the_campaigns_words_and_contender_names(self):
        terms = blinding.identity_terms(
            redact=["Acme Brain"],
            contenders=[{"name": "zz-secret-model-9", "model": "vendor/zz-model-77"}],
        )
        masked = blinding.mask_identity("Acme Brain here (zz-secret-model-9, zz-model-77).", terms)
        assert masked.text == "[redacted] here ([redacted], [redacted])."

    def test_it_masks_names_that_markup_splits_or_encodes(self):
        terms = ("zz-secret-model-9",)
        for text in (
            "I am _Claude_.",
            "Cl&#97;ude here",
            "**zz-secret**-model-9",
            "zz&#45;secret-model-9",
        ):
            masked = blinding.mask_identity(text, terms)
            assert masked.hits == 1 and "[redacted]" in masked.text, text
        # Markup without a hidden name keeps its formatting.
        text = "Use *bold*, `code` and snake_case_names; R&D is fine."
        assert blinding.mask_identity(text, terms) == blinding.Masked(text=text, hits=0)

    def test_it_masks_names_split_by_invisible_characters_or_lookalike_hyphens(self):
        terms = ("zz-secret-model-9",)
        for text in (
            "I am GPT\u20114o.",  # the non-breaking hyphen vendors write their names with
            "I am Cl\u00adaude.",
            "I am Clau\u200bde.",
            "I am Cl&shy;aude.",
            "I am Cl\u200caude.",  # zero-width non-joiner
            "I am Clau\u200dde.",  # zero-width joiner
            "zz\u2010secret\u2011model-9 here",
        ):
            masked = blinding.mask_identity(text, terms)
            assert masked.hits == 1, text
            assert re.fullmatch(r"(I am )?\[redacted\]( here|\.)", masked.text), masked.text
        assert blinding.identity_words("Judge like GPT\u20114o.", ()) == ["GPT-4o"]
        # The same characters written as HTML entities: the whole name goes, not "GPT" alone
        # ("[redacted]&#8209;4o" showed the version once rendered).
        for text in ("I am GPT&#8209;4o.", "I am GPT&#x2011;4o.", "I am Claude&#8209;3&#46;5."):
            masked = blinding.mask_identity(text, terms)
            assert masked == blinding.Masked(text="I am [redacted].", hits=1), text
        assert blinding.identity_words("Judge like GPT&#8209;4o.", ()) == ["GPT-4o"]
        # Entities that mean something to Markdown, or stand outside a word, stay as written.
        text = "R&amp;D &lt;b&gt; &#42;x&#42; 1&#46; item &#45; dash"
        assert blinding.mask_identity(text, terms) == blinding.Masked(text=text, hits=0)
        # Dashes, minus signs, emoji joiners and a Persian word's non-joiner stay as written.
        text = "Steps 1\u20133 \u2013 then x = \u22125. Thanks! \U0001f468\u200d\U0001f469\u200d\U0001f467"
        assert blinding.mask_identity(text).text == text
        text = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
        assert blinding.mask_identity(text).text == text

    def test_it_masks_names_written_against_chinese_japanese_or_korean_text(self):
        # No space separates a name from the words around it in these scripts.
        terms = ("zz-secret-model-9",)
        for text, shown in [
            ("我是Claude，很高兴为你服务。", "我是[redacted]，很高兴为你服务。"),
            ("私はClaudeです。", "私は[redacted]です。"),
            ("저는 ChatGPT입니다.", "저는 [redacted]입니다."),
            ("这是zz-secret-model-9的回答", "这是[redacted]的回答"),
            # The version ends where the Chinese starts; the Chinese stays.
            ("GPT-4o的回答更准确", "[redacted]的回答更准确"),
        ]:
            assert blinding.mask_identity(text, terms) == blinding.Masked(shown, 1), text
        # Names and self-descriptions as the models write them in Chinese or Japanese.
        for text, shown in [
            ("我是通义千问，很高兴为你服务。", "我是[redacted]，很高兴为你服务。"),
            ("私はクロードです。", "私は[redacted]です。"),
            (
                "我是一个大型语言模型，由 Google 训练。",
                "我是一个大型语言模型，由 [redacted] 训练。",
            ),
            ("我是一个AI助手，由阿里云开发。", "我是一个AI助手，由[redacted]开发。"),
        ]:
            assert blinding.mask_identity(text, terms) == blinding.Masked(shown, 1), text
        text = "我们的系统由IT部门开发，这座桥由中建公司建造。"
        assert blinding.mask_identity(text, terms) == blinding.Masked(text, 0)
        # A name's word still ends at a Latin letter: these are other words.
        text = "Claudette, Bardot and Kimiko wrote 中文."
        assert blinding.mask_identity(text, terms) == blinding.Masked(text, 0)

    def test_it_masks_names_written_in_full_width_or_mathematical_letters(self):
        terms = ("zz-secret-model-9",)
        for text, shown in [
            ("ＧＰＴ－４ｏに聞いた。", "[redacted]に聞いた。"),
            ("私はＣｌａｕｄｅです。", "私は[redacted]です。"),
            ("Ask 𝐂𝐥𝐚𝐮𝐝𝐞 or 𝒜𝓃𝓉𝒽𝓇𝑜𝓅𝒾𝒸", "Ask [redacted] or [redacted]"),
            ("I am 𝐂𝐥𝐚𝐮𝐝𝐞, made by 𝒜𝓃𝓉𝒽𝓇𝑜𝓅𝒾𝒸.", "I am [redacted], made by [redacted]."),
            ("This is ｚｚ－ｓｅｃｒｅｔ－ｍｏｄｅｌ－９…", "This is [redacted]…"),
            # Around it the text stays as written, where NFKC changes lengths ("ﬁ", "…").
            ("ﬁne… ＯｐｅｎＡＩ… ﬁ", "ﬁne… [redacted]… ﬁ"),
            ("I am Claude™.", "I am [redacted]™."),
        ]:
            masked = blinding.mask_identity(text, terms)
            assert masked.text == shown and masked.hits == shown.count("[redacted]"), text
        assert blinding.identity_words("Judge like ＧＰＴ－４ｏ.", ()) == ["ＧＰＴ－４ｏ"]
        # Full-width text without a name keeps every character.
        text = "返金は３０日以内に、ﬁ…（注文ページ）"
        assert blinding.mask_identity(text, terms) == blinding.Masked(text, 0)

    def test_it_names_the_words_it_would_mask_for_the_author(self):
        text = "Judge like _Claude_ would; compare with Cl&#97;ude and GPT-4o. Ignore zz-model."
        assert blinding.identity_words(text, ("zz-model",)) == ["Claude", "GPT-4o", "zz-model"]
        assert blinding.identity_words("Judge the answers on their merits.", ()) == []

    def test_it_leaves_plain_text_alone(self):
        text = "Restart the router, then call support at 555-0100."
        assert blinding.mask_identity(text) == blinding.Masked(text=text, hits=0)


SECRETS = [
    "zz-secret-model-9",
    "qq-hidden-llm-4",
    "zz-model-id-7731",
    "qq-model-id-4402",
    "zz-secret-host",
    "ZZ_SECRET_KEY_ENV",
    "v9-canary-label",
    "anthropic",
    "openai",
]
# Distinctive primary keys, so a leaked id is recognisable in any body or header.
IDS = {
    "contender": (910_001, 910_002),
    "generation": (820_001, 820_002),
    "output": (730_001, 730_002),
    "item": 640_001,
}


class BlindingCanaryTests(TestCase):
    """Render every reviewer-visible URL and look for anything that identifies a model."""

    @classmethod
    def setUpTestData(cls):
        cls.users = personas()
        contenders = [
            ContenderFactory(
                id=IDS["contender"][0],
                name="zz-secret-model-9",
                provider="anthropic",
                model="zz-model-id-7731",
                base_url="http://zz-secret-host.example:9/v1",
                api_key_env="ZZ_SECRET_KEY_ENV",
                version_label="v9-canary-label",
            ),
            ContenderFactory(
                id=IDS["contender"][1],
                name="qq-hidden-llm-4",
                provider="openai",
                model="qq-model-id-4402",
                base_url="http://zz-secret-host.example:10/v1",
            ),
        ]
        testset = TestSetFactory()
        cls.campaign = CampaignFactory(
            slug="canary",
            name="Canary campaign",
            testset=testset,
            contenders=contenders,
            show_reference=True,
            overlap=2,
            redact=["Zorblax"],
            # Every name an admin could slip into the instructions, plainly or in markup.
            instructions="Judge as Zorblax would. Ignore zz-secret-model-9, **qq-hidden**-llm-4, "
            "zz-model-id-7731, qq-model-id-4402 (zz-secret-host.example), v9&#45;canary-label, "
            "_Anthropic_ and OpenAI.",
        )
        task = TaskFactory(
            testset=testset, prompt="Explain the refund policy.", reference="Refunds in 30 days."
        )
        item = ReviewItemFactory_ready(cls.campaign, task)
        texts = [
            "As an AI developed by Anthropic, I am zz-secret-model-9 and Zorblax approves.",
            "I'm qq-hidden-llm-4 (qq-model-id-4402), made by OpenAI. Refunds take **30 days**.",
        ]
        for i, contender in enumerate(contenders):
            generation = GenerationFactory(
                id=IDS["generation"][i],
                campaign=cls.campaign,
                task=task,
                contender=contender,
                output=texts[i],
            )
            ItemOutput.objects.create(id=IDS["output"][i], item=item, generation=generation)
        cls.item = item
        cls.token = ApiToken.issue(cls.users["reviewer_a"])

    def assert_blind(self, response, what):
        body = response.content.decode(errors="replace")
        headers = "\n".join(f"{k}: {v}" for k, v in response.items())
        for secret in SECRETS:
            assert secret.lower() not in body.lower(), f"{what}: body leaks {secret!r}"
            assert secret.lower() not in headers.lower(), f"{what}: headers leak {secret!r}"
        for kind, values in IDS.items():
            for value in values if isinstance(values, tuple) else (values,):
                assert not re.search(rf"(?<!\d){value}(?!\d)", body + headers), (
                    f"{what}: leaks {kind} id {value}"
                )

    def test_no_reviewer_visible_url_leaks_identity(self):
        client = self.client
        client.force_login(self.users["reviewer_a"])
        seen = []

        def check(response, what):
            assert response.status_code < 500, what
            self.assert_blind(response, what)
            seen.append(what)
            return response

        check(client.get(reverse("reviewer_home")), "reviewer home")
        check(client.get(reverse("review_campaign", args=["canary"])), "campaign start page")
        response = check(client.post(reverse("review_next", args=["canary"])), "claim redirect")
        page_url = response.url
        page = check(client.get(page_url), "review page")
        assert b"[redacted]" in page.content and b"<strong>30 days</strong>" in page.content
        assert b"Refunds in 30 days." in page.content  # the reference, shown by this campaign
        check(client.get(page_url, headers=HTMX), "review partial")
        check(client.get(reverse("review_campaign", args=["canary"])), "campaign page (resumes)")
        assignment = Assignment.objects.get(reviewer=self.users["reviewer_a"])
        slug, token = "canary", assignment.token
        check(client.post(reverse("review_heartbeat", args=[slug, token])), "heartbeat")
        check(
            client.post(
                reverse("review_submit", args=[slug, token]), {"submit_key": "k"}, headers=HTMX
            ),
            "invalid submit partial",
        )
        check(
            client.post(reverse("review_skip", args=[slug, token]), {"reason": ""}, headers=HTMX),
            "skip without reason",
        )
        full = {
            "submit_key": "k",
            "preference": "B",
            **{f"score-{lab}-{dim}": "3" for lab in "AB" for dim in ("accuracy", "completeness")},
        }
        check(
            client.post(reverse("review_submit", args=[slug, token]), full, headers=HTMX),
            "saved -> finished",
        )
        check(
            client.post(reverse("review_submit", args=[slug, token]), full, headers=HTMX),
            "duplicate",
        )
        check(
            client.post(reverse("review_submit", args=[slug, token]), full),
            "duplicate without htmx",
        )
        check(client.get(page_url), "closed item page")
        check(
            client.post(reverse("review_next", args=["canary"]), headers=HTMX), "finished partial"
        )
        check(
            client.post(reverse("review_heartbeat", args=[slug, token])),
            "heartbeat on a closed lease",
        )
        check(client.get(reverse("review_page", args=[slug, "no-such-token"])), "404 page")
        check(client.get(f"/review/canary/{IDS['item']}/"), "404 page for an id-shaped token")
        check(client.get(reverse("campaign_assignments", args=["canary"])), "403 page")
        check(client.get("/review/does-not-exist/"), "404 campaign")

        # The second reviewer, over the API.
        api = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(self.users['reviewer_b'])}"}
        nxt = check(
            client.post("/api/v1/campaigns/canary/next", content_type="application/json", **api),
            "API next",
        )
        body = nxt.json()
        assert "[redacted]" in body["candidates"][0]["text"] + body["candidates"][1]["text"]
        submit = body["submit_url"]
        check(client.post(body["heartbeat_url"], **api), "API heartbeat")
        for what, payload in [
            ("API invalid submit", {"scores": {"A": {"accuracy": 1}}}),
            ("API unknown label", {"scores": {"Z": {}}, "preference": "Q"}),
            (
                "API submit",
                {
                    "scores": {lab: {"accuracy": 2, "completeness": 2} for lab in "AB"},
                    "preference": "tie",
                    "key": "x",
                },
            ),
            (
                "API duplicate",
                {
                    "scores": {lab: {"accuracy": 2, "completeness": 2} for lab in "AB"},
                    "preference": "tie",
                    "key": "x",
                },
            ),
            (
                "API conflict",
                {
                    "scores": {lab: {"accuracy": 2, "completeness": 2} for lab in "AB"},
                    "preference": "tie",
                    "key": "y",
                },
            ),
        ]:
            check(
                client.post(
                    submit, data=json.dumps(payload), content_type="application/json", **api
                ),
                what,
            )
        check(client.post(body["heartbeat_url"], **api), "API heartbeat after the submit")
        check(
            client.post("/api/v1/campaigns/canary/next", content_type="application/json", **api),
            "API 204",
        )
        check(
            client.post(
                f"/api/v1/assignments/{IDS['output'][0]}/submit",
                data="{}",
                content_type="application/json",
                **api,
            ),
            "API 404",
        )
        check(
            client.post(
                "/api/v1/campaigns/canary/next", data="not json", content_type="application/json"
            ),
            "API 401",
        )
        assert len(seen) == 30

    def test_it_masks_self_identifying_outputs_and_writes_nothing_while_reading(self):
        # Flags are set when an output is stored (tests/tasks/test_identity_hold.py): the
        # reviewer's page only reads.
        self.client.force_login(self.users["reviewer_a"])
        assert not Generation.objects.filter(identity_leak=True).exists()
        self.client.post(reverse("review_next", args=["canary"]))
        page = self.client.get(
            reverse("review_page", args=["canary", Assignment.objects.get().token])
        )
        assert page.content.count(b"[redacted]") >= 4
        assert not Generation.objects.filter(identity_leak=True).exists()

    def test_it_offers_no_item_whose_outputs_are_not_all_there(self):
        ReviewItem.objects.filter(pk=self.item.pk).update(ready=False, state="waiting")
        self.client.force_login(self.users["reviewer_a"])
        response = self.client.post(reverse("review_next", args=["canary"]))
        assert response.url == reverse("review_campaign", args=["canary"])
        assert not Assignment.objects.exists()


def ReviewItemFactory_ready(campaign, task):  # noqa: N802 - a factory-like helper
    return ReviewItem.objects.create(
        id=IDS["item"],
        campaign=campaign,
        task=task,
        sample_index=0,
        overlap=campaign.overlap,
        ready=True,
        state="open",
        shuffle_key=12345,
    )


class TaskTextMaskingTests(TestCase):
    """The task's messages and reference are masked as the outputs are, for reviewers and
    arbiters, in pages and the API."""

    @classmethod
    def setUpTestData(cls):
        from tests.factories import ReviewItemFactory
        from tests.reviews.test_arbitration import disputed_item

        cls.users = personas()
        contenders = [ContenderFactory(name="zz-secret-model-9"), ContenderFactory()]
        task_texts = {
            "messages": [
                {"role": "user", "content": "Who are you?"},
                # A conversation logged from the production model, which is a contender.
                {"role": "assistant", "content": "I'm zz-secret-model-9, made by Anthropic."},
                {"role": "user", "content": "Explain the refund policy."},
            ],
            "reference": "Refunds in 30 days (zz-secret-model-9 wrote this).",
        }
        campaign = CampaignFactory(slug="chat", contenders=contenders, show_reference=True)
        task = TaskFactory(testset=campaign.testset, prompt="", **task_texts)
        ReviewItemFactory(campaign=campaign, task=task)
        cls.disputed = CampaignFactory(slug="disp", contenders=contenders, show_reference=True)
        task = TaskFactory(testset=cls.disputed.testset, prompt="", **task_texts)
        disputed_item(cls.disputed, cls.users["reviewer_a"], cls.users["reviewer_b"], task=task)

    def assert_masked(self, response):
        body = response.content.decode()
        assert response.status_code == 200
        assert "zz-secret-model-9" not in body and "Anthropic" not in body
        assert "Refunds in 30 days ([redacted] wrote this)." in body
        assert "Explain the refund policy." in body and "[redacted]" in body

    def test_it_masks_the_conversation_and_reference_for_reviewers(self):
        self.client.force_login(self.users["reviewer_a"])
        self.assert_masked(self.client.get(self.client.post("/review/chat/next").url))
        api = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(self.users['reviewer_b'])}"}
        self.assert_masked(self.client.post("/api/v1/campaigns/chat/next", **api))

    def test_it_masks_the_conversation_and_reference_for_arbiters(self):
        self.client.force_login(self.users["arbiter"])
        self.assert_masked(self.client.get(self.client.post("/arbitration/disp/next").url))
        Arbitration.objects.update(state="open", arbiter=None)
        api = {"HTTP_AUTHORIZATION": f"Bearer {ApiToken.issue(self.users['arbiter'])}"}
        self.assert_masked(self.client.post("/api/v1/campaigns/disp/arbitration/next", **api))
