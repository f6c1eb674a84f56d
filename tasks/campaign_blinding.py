"""What a campaign's own texts tell reviewers about the contenders.

Reviewers and arbiters see the instructions, the rubric's texts and the test set's categories
masked like the outputs, and the campaign's name and the rubric's keys as written; the slug,
in every URL, is refused when it names a contender, a model or a vendor. These helpers find
the words in question for the campaign definition's checks and warnings (tasks/campaigns.py).
"""

from __future__ import annotations

from django.template.defaultfilters import pluralize

from reviews import blinding

from .models import Contender, TestSet


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
            hits = blinding.mask_identity(text or "", terms).hits
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


def category_warnings(testset: TestSet, terms: tuple[str, ...]) -> list[str]:
    """One warning for the test set's categories that name a model or a vendor: reviewers and
    arbiters see them masked (the leads' dashboards and exports as written)."""
    categories = testset.tasks.order_by("category").values_list("category", flat=True).distinct()
    named = [c for c in categories if quoted_identity_words(c, terms)]
    if not named:
        return []
    one = len(named) == 1
    return [
        f"testset: {'a category' if one else f'{len(named)} categories'} of {testset} "
        f"name{'s' if one else ''} a model, a vendor or a redacted term ({', '.join(named)}); "
        f"reviewers and arbiters see {blinding.MASK} in {'its' if one else 'their'} place"
    ]
