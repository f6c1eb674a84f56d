"""What a campaign's own texts tell reviewers about the contenders.

Reviewers and arbiters see the instructions, the rubric's texts and the test set's categories
masked like the outputs, and the campaign's name and the rubric's keys as written; the slug,
in every URL, is refused when it names a contender, a model or a vendor. These helpers find
the words in question for the campaign definition's checks and warnings (tasks/campaigns/definition.py),
and give the words masked for a campaign (cached per process) and its texts as reviewers and
arbiters see them.
"""

from __future__ import annotations

import time

from django.template.defaultfilters import pluralize

from tasks.blinding import render as blinding
from tasks.models import Campaign, Contender, TestSet

_TERMS_CACHE: dict[int, tuple[float, tuple, tuple[str, ...]]] = {}


TERMS_TTL_SECONDS = 30.0


def campaign_identity_terms(campaign: Campaign) -> tuple[str, ...]:
    """Words to mask for this campaign. Cached per process for a few seconds: every review
    page needs them, and a campaign's contenders do not change while it is reviewed."""
    now = time.monotonic()
    redact = tuple(campaign.redact or [])
    cached = _TERMS_CACHE.get(campaign.pk)
    if cached is not None and cached[1] == redact and now - cached[0] < TERMS_TTL_SECONDS:
        return cached[2]
    terms = blinding.identity_terms(
        redact=redact,
        contenders=campaign.contenders.values("name", "model", "version_label", "base_url"),
    )
    _TERMS_CACHE[campaign.pk] = (now, redact, terms)
    return terms


def text_shown(text: str, terms: tuple[str, ...], *, html: bool = True) -> dict:
    """Text of the campaign or its test set (instructions, a task's messages, its reference)
    as reviewers and arbiters see it: masked like the outputs, as an admin naming a contender
    there, or a logged conversation whose assistant says who it is, must not unblind the
    campaign."""
    if not html:
        return {"text": blinding.mask_identity(text, terms, strict=True).text, "html": None}
    # strict: no admin approves these texts before reviewers read them, so a possible model
    # name ("As good as Claude?") is masked rather than held
    masked, rendered, _ = blinding.render_output(text, terms, strict=True)
    return {"text": masked, "html": rendered}


def reasoning_shown(reasoning: str, terms: tuple[str, ...], *, html: bool = True) -> dict | None:
    """A model's reasoning as reviewers and arbiters see it, where the campaign shows it:
    masked and rendered exactly as its answer is (a reasoning model often says who it is in
    its reasoning); None when it gave none."""
    return text_shown(reasoning, terms, html=html) if reasoning else None


def words_shown(text: str, terms: tuple[str, ...]) -> str:
    """A short plain text of the campaign or its test set (a rubric label, an anchor, a task's
    category, a reviewer's comment) as reviewers and arbiters see it: text_shown's text."""
    return text_shown(text, terms, html=False)["text"] if text else text


def instructions_shown(campaign: Campaign, terms: tuple[str, ...], *, html: bool = True):
    """The campaign's instructions as reviewers and arbiters see them (None without any)."""
    if not campaign.instructions:
        return None
    return text_shown(campaign.instructions, terms, html=html)


def blinding_terms(*, redact, contenders) -> tuple[str, ...]:
    """The words masked for a campaign with these redaction words and contenders, as
    `campaign_identity_terms` will have them. `contenders` as specs ({"name", "model", ...}) or
    rows; a spec naming an existing contender counts its model and endpoint."""
    known = {
        c["name"]: c
        for c in Contender.objects.filter(name__in=[c.get("name") for c in contenders]).values(
            "name", "model", "version_label", "base_url"
        )
    }
    return blinding.identity_terms(
        redact=redact, contenders=[{**known.get(c.get("name"), {}), **c} for c in contenders]
    )


def quoted_identity_words(text: str, terms: tuple[str, ...]) -> str:
    """The words of `text` that masking would hide, quoted for a message ("" for none). An
    identifier's _ is read as a space too: "openai_eval" names OpenAI as much as "openai-eval"."""
    found = {}
    for variant in dict.fromkeys((text, text.replace("_", " "))):
        for word in blinding.identity_words(variant, terms):
            found.setdefault(word.casefold(), word)
    return ", ".join(f"“{w}”" for w in found.values())


# Texts that reviewers and arbiters see masked, and those they see as written.
_MASKED = {"instructions", "rubric"}


def blinding_warnings(
    texts: dict[str, str], *, redact, contenders, terms: tuple[str, ...] | None = None
) -> list[str]:
    """Which of a campaign's texts that reviewers read name a contender, a model or a vendor.
    The instructions and the rubric's labels, descriptions and anchors are masked on their
    pages as the outputs are; the name and the rubric's keys (form field names, the API) are
    shown as written, so those only warn. (The slug is refused: see the definition's check.)
    `contenders` as for `blinding_terms`."""
    if not any(texts.values()):
        return []
    if terms is None:
        terms = blinding_terms(redact=redact, contenders=contenders)
    warnings = []
    for where, text in texts.items():
        if where in _MASKED:
            hits = blinding.mask_identity(text or "", terms, strict=True).hits
            if not hits:
                continue
            words = ", ".join(f"“{w}”" for w in blinding.identity_words(text, terms))
            warnings.append(
                f"{where}: {hits} word{pluralize(hits)} name{pluralize(hits, 's,')} a model, "
                f"a vendor or a redacted term ({words}); reviewers and arbiters see "
                f"{blinding.MASK} in {'its' if hits == 1 else 'their'} place"
            )
        elif named := quoted_identity_words(text or "", terms):
            warnings.append(
                f"{where}: names a model, a vendor or a redacted term ({named}), and reviewers "
                "see it as written: a neutral wording keeps the review blind"
            )
    return warnings


REFUSED = (
    "names a model, a vendor or a redacted term ({words}); reviewers read it, so it would "
    "tell them who wrote the answers: choose a neutral wording"
)


def blinding_refusals(texts: dict[str, str], *, terms: tuple[str, ...]) -> list[str]:
    """One error per text reviewers read (a campaign's name, rubric, instructions, keyed by
    where it is) that names a contender, a model or a vendor, with the words found."""
    return [
        f"{where}: " + REFUSED.format(words=named)
        for where, text in texts.items()
        if text and (named := quoted_identity_words(text, terms))
    ]


def category_refusals(testset: TestSet, terms: tuple[str, ...]) -> list[str]:
    """One error per category of the test set that names a model or a vendor: reviewers and
    arbiters read the category above every task."""
    categories = testset.tasks.order_by("category").values_list("category", flat=True).distinct()
    return [
        f"testset: category {category!r} of {testset} " + REFUSED.format(words=named)
        for category in categories
        if (named := quoted_identity_words(category, terms))
    ]
