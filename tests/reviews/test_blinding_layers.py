"""The detection layers behind blinding.mask_identity and blinding.check_identity: names from
the maintained model data, ambiguity deciding between masking and holding, self-descriptions
in the languages table, the hold's wider net, and bounds on bad input.
"""

import json
import re

from django.test import SimpleTestCase
from genai_prices import types
from genai_prices.data import providers

from tasks.blinding import catalog as catalog_module
from tasks.blinding import render as blinding
from tasks.blinding.languages import LANGUAGES
from tasks.blinding.suspects import MAX_CHECK_CHARS
from tests.reviews.blinding_corpus_gen import SELF


def reasons(text: str, terms=()) -> set[str]:
    return {h.reason for h in blinding.check_identity(text, terms).holds}


def chat_model_ids():
    """The dataset's model ids of providers whose own rule says which ids are theirs by a
    family's name ("claude", "gemini", "grok", "kimi", "deepseek", "GLM-" ...)."""
    for provider in providers:
        match = provider.model_match
        clauses = match.or_ if isinstance(match, types.ClauseOr) else [match]
        keys = [
            getattr(c, "contains", None) or getattr(c, "starts_with", None)
            for c in clauses
            if isinstance(c, types.ClauseContains | types.ClauseStartsWith)
        ]
        # the short and generic ones are speech, embedding or tool ids ("tts-", "jev-",
        # "voyage-", "eleven_", "composer-") or a weak product word ("command-light")
        generic = {"tts", "jev", "voyage", "eleven", "composer", "command"}
        keys = [
            k for k in keys if k.strip("-_").isalpha() and k.strip("-_").casefold() not in generic
        ]
        for model in provider.models:
            if any(k.casefold() in model.id.casefold() for k in keys):
                yield model.id


class NamesFromDataTests(SimpleTestCase):
    def test_every_chat_model_id_of_the_dataset_is_masked_whole(self):
        ids = list(chat_model_ids())
        assert len(ids) >= 200, len(ids)
        left = []
        for model_id in ids:
            for text in (f"I'm {model_id}.", f"Answer from `{model_id}`"):
                masked = blinding.mask_identity(text).text
                name = model_id.rsplit("/", 1)[-1]
                words = [w for w in re.split(r"[-_.:/@]+", name.casefold()) if len(w) >= 3]
                if any(w in masked.casefold() for w in words):
                    left.append((text, masked))
        assert left == []

    def test_a_family_only_the_dataset_knows_is_masked_with_its_size_and_tier(self):
        # not in the project's own list (tasks/blinding/terms.py): from genai-prices
        for text in ("I'm Molmo 72B.", "Sarvam-M answered this.", "Voxtral Mini 3B here."):
            masked = blinding.mask_identity(text)
            assert masked.hits and not re.search(r"molmo|sarvam|voxtral|72b|3b", masked.text, re.I)

    def test_names_from_the_dataset_are_matched_as_written(self):
        # ids run words together ("typesafe", "openchat", "scaledown"): written apart they
        # are words
        for text in (
            "Use a type-safe wrapper.",
            "Open chat with support.",
            "Scale down the cluster at night.",
            "Add an alias for the command.",
        ):
            assert blinding.mask_identity(text).text == text
        assert blinding.mask_identity("Served by OpenChat 3.5.").text == "Served by [redacted]."

    def test_the_derived_names_are_built_once_and_kept_in_a_file(self):
        built = catalog_module.catalog()
        path = catalog_module.cache_file()
        assert path.exists()
        kept = catalog_module.Catalog(
            **{k: tuple(v) for k, v in json.loads(path.read_text()).items()}
        )
        assert kept == built
        assert "qwen" not in built.certain  # the project's own list has it: not twice
        assert {"molmo", "sarvam", "voxtral"} <= set(built.certain)
        assert {"maverick", "scout", "flash"} <= set(built.qualifiers)


class AmbiguousNameTests(SimpleTestCase):
    def test_an_ordinary_sentence_is_never_changed_but_may_be_held(self):
        for text in (
            "Dear Claude, your order has shipped.",
            "A llama is a South American camelid.",
            "Fit a Gamma GLM with a log link.",
            "The mistral is a cold wind.",
            "Claude Monet painted water lilies.",
        ):
            checked = blinding.check_identity(text)
            assert (checked.text, checked.hits) == (text, 0), checked
        assert reasons("Dear Claude, your order has shipped.") == {"possible model name"}
        assert reasons("A llama is a South American camelid.") == set()  # not written as a name

    def test_in_a_models_context_the_name_is_masked_with_what_follows(self):
        for text, shown in (
            ("I'm Claude, an AI assistant.", "I'm [redacted], an AI assistant."),
            ("Claude-7 here.", "[redacted] here."),
            ("Llama Maverick answered.", "[redacted] answered."),
            ("Use Llama-4-Scout-17B-16E-Instruct.", "Use [redacted]."),
            ("claude-opus-4-1@20250805 wrote it", "[redacted] wrote it"),
            ("Google's Gemini is fast.", "[redacted] is fast."),
            ("This was generated with Gemma.", "This was generated with [redacted]."),
            ("Soy Grok, un asistente de IA.", "Soy [redacted], un asistente de IA."),
        ):
            assert blinding.mask_identity(text).text == shown, text

    def test_a_product_word_needs_more_than_a_number(self):
        # "Nova 5" phones, "Titan 3" blenders, "Falcon 9" rockets: held, not changed
        for text in ("The Nova 5 case fits.", "The Titan 3 blender.", "The Falcon 9 landed."):
            assert blinding.mask_identity(text).text == text
        assert blinding.mask_identity("IBM Granite 3.3 8B answered.").text == "[redacted] answered."

    def test_a_contenders_word_that_is_also_ordinary_counts_only_in_context(self):
        terms = blinding.identity_terms(
            redact=["Brent"],
            contenders=[{"name": "Orchid Pilot 7B", "model": "orchidlabs/orchid-pilot-7b"}],
        )
        for text in ("Brent oil prices rose 4%.", "The orchid bloomed in March."):
            assert blinding.mask_identity(text, terms).text == text
        assert reasons("Brent oil prices rose 4%.", terms) == {"possible contender name"}
        for text in ("I'm Orchid, an AI assistant.", "orchidpilot here", "OrchidLabs made me"):
            assert "rchid" not in blinding.mask_identity(text, terms).text, text
        # a word cut from a contender's name counts in a model's context and holds nothing
        # elsewhere: an answer signed by a company the contender is named after stays
        assert blinding.check_identity("Ask Orchid about it.", terms).holds == ()

    def test_texts_no_admin_approves_mask_a_possible_name(self):
        # a rubric label, an instruction, a reviewer's comment: nothing holds them
        assert blinding.mask_identity("As good as Claude?", strict=True).text == (
            "As good as [redacted]?"
        )
        assert blinding.mask_identity("As good as Claude?").text == "As good as Claude?"


class SelfDescriptionTests(SimpleTestCase):
    def test_the_table_covers_thirty_languages_and_the_corpus_every_one(self):
        codes = {language.code for language in LANGUAGES}
        assert len(codes) >= 30
        assert codes == set(SELF)  # each language has sentences in the generated corpus

    def test_the_maker_is_masked_in_each_languages_word_order(self):
        for text, maker in (
            ("Ich bin ein großes Sprachmodell, trainiert von Google.", "Google"),
            ("Soy un asistente de IA desarrollado por Amazon.", "Amazon"),
            ("Ben Google tarafından eğitildim.", "Google"),
            ("मैं Google द्वारा प्रशिक्षित एक मॉडल हूँ।", "Google"),
            ("ฉันเป็นโมเดลที่พัฒนาโดย Google", "Google"),
            ("أنا نموذج لغوي تم تطويري بواسطة جوجل.", "جوجل"),
            ("Google trained me.", "Google"),
            ("My developer is Google.", "Google"),
            ("I'm built on Meta's model.", "Meta"),
        ):
            assert maker not in blinding.mask_identity(text).text, text

    def test_a_company_that_built_something_else_stays(self):
        for text in (
            "The bridge was built by Contoso in 1932.",
            "Die Brücke wurde 1932 von Fabrikam gebaut.",
            "El puente fue construido por Contoso en 1932.",
            "我们的系统由IT部门开发。",
        ):
            assert blinding.mask_identity(text).text == text


class WiderNetTests(SimpleTestCase):
    def test_each_suspect_holds_the_output_with_its_reason_and_place(self):
        for text, word, reason in (
            ("Hi, Q w e n here.", "Q w e n", "spaced model name"),
            ("Use a G L M for it.", "G L M", "spaced model name"),
            ("Ꮶimi wrote this.", "Ꮶimi", "look-alike letters"),
            ("ᗪeepSeek wrote this.", "ᗪeepSeek", "look-alike letters"),
            ("Antrhopic made it.", "Antrhopic", "resembles a model name"),
            ("I am Zorblax, an AI assistant.", "Zorblax", "product-like name beside an AI word"),
            (
                "As an AI, I can't open your Google account.",
                "Google",
                "vendor name in first-person context",
            ),
        ):
            checked = blinding.check_identity(text)
            assert checked.text == text
            found = [(h.text, h.reason) for h in checked.holds]
            assert (word, reason) in found, (text, found)
            hold = next(h for h in checked.holds if h.reason == reason)
            assert text[hold.start : hold.end] == word

    def test_chat_template_tokens_and_provider_ids_are_masked_whole(self):
        for token in (
            "<|eot_id|>",
            "<|im_start|>",
            "[INST]",
            "<｜end▁of▁sentence｜>",
            "chatcmpl-9xKf3LmQ2pRtZ8vW",
            "toolu_01A09q90qw90lq917835lq9",
            "fp_3bc1b5746c",
            "<think>",
        ):
            assert blinding.mask_identity(f"Done {token} ok").text == "Done [redacted] ok", token

    def test_ordinary_support_answers_are_rarely_held(self):
        for text in (
            "Your refund of $42.10 reaches you in 3-5 days.",
            "Our AI assistant is available 24/7 in the chat window.",
            "The model number is printed under the battery cover.",
            "You can pay with Apple Pay or Google Pay.",
        ):
            assert reasons(text) == set(), text


class BadInputTests(SimpleTestCase):
    def test_a_text_too_long_to_check_is_masked_and_held_as_such(self):
        filler = "Your parcel is on its way and arrives on Monday. " * (MAX_CHECK_CHARS // 40)
        text = f"{filler}I am Claude, made by Anthropic. {filler}"
        checked = blinding.check_identity(text)
        assert "too long to check" in {h.reason for h in checked.holds}
        assert "Anthropic" not in checked.text and "Claude" not in checked.text

    def test_a_redact_list_beyond_the_limit_is_refused_with_the_limit_named(self):
        words = [f"word{i}" for i in range(blinding.MAX_REDACT_WORDS)]
        assert blinding.redact_problem(words) is None
        problem = blinding.redact_problem([*words, "one-more"])
        assert problem and "1,001 words" in problem and "limit of 1,000" in problem
        long = "x" * (blinding.MAX_REDACT_WORD_CHARS + 1)
        assert "limit of 200" in blinding.redact_problem([long])
