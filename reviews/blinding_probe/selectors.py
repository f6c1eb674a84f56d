"""The probe's question for a reviewer (blinded but for the names it asks about) and its
figures for admins and leads (with the identity reports, the report's `blinding` key and the
campaign page's lines: reviews/identity_reports/selectors.py)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Count, F, Q

from reviews.models import BlindingGuess
from reviews.stats.blinding import MIN_GUESSES, bang_index, verdict
from tasks.blinding import render as blinding
from tasks.blinding.campaign_texts import campaign_identity_terms
from tasks.blinding.hold import output_shown
from tasks.models import Campaign, Generation


def pending_probe(*, campaign: Campaign, reviewer: User) -> BlindingGuess | None:
    """The reviewer's unanswered question in this campaign (no query when it asks none)."""
    if not (campaign.blinding_probe or {}).get("every"):
        return None
    return (
        BlindingGuess.objects.filter(campaign=campaign, reviewer=reviewer, answered_at__isnull=True)
        .order_by("pk")
        .first()
    )


def probe_question(*, probe: BlindingGuess, campaign: Campaign) -> dict:
    """What the question shows: the answer as the review showed it (masked), and the names to
    choose from in alphabetical order, with no label anywhere."""
    generation = Generation.objects.only("output", "identity_masks", "transcript", "reasoning").get(
        item_outputs__pk=probe.output_id
    )
    text, html, _ = blinding.render_output(
        output_shown(generation), campaign_identity_terms(campaign)
    )
    return {
        "token": probe.token,
        "text": text,
        "html": html,
        "choices": sorted(campaign.contenders.values_list("name", flat=True)),
    }


def probe_figures(*, campaign: Campaign) -> dict:
    """{contender: {"guesses", "correct", "chance", "bang_index": {"value", "ci95"}, "reason"}}
    over the answered questions about each contender's answers."""
    names = dict(campaign.contenders.values_list("pk", "name"))
    rows = (
        BlindingGuess.objects.filter(campaign=campaign, answered_at__isnull=False)
        .values("contender_id")
        .annotate(n=Count("pk"), correct=Count("pk", filter=Q(guessed_id=F("contender_id"))))
    )
    counts = {r["contender_id"]: (r["n"], r["correct"]) for r in rows}
    figures = {}
    for pk, name in sorted(names.items(), key=lambda kv: kv[1]):
        n, correct = counts.get(pk, (0, 0))
        index = bang_index(correct=correct, n=n, choices=len(names))
        figures[name] = {
            "guesses": n,
            "correct": correct,
            "chance": 1 / len(names) if names else None,
            "bang_index": {"value": index["value"], "ci95": index["ci95"]},
            "reason": index["reason"],
        }
    return figures


def probe_sentence(figures: dict) -> str:
    """Whether reviewers could tell, in plain words, from `probe_figures`."""
    verdicts = {
        name: verdict({"value": f["bang_index"]["value"], "ci95": f["bang_index"]["ci95"]})
        for name, f in figures.items()
    }
    total = sum(f["guesses"] for f in figures.values())
    if not figures or all(v == "too_few" for v in verdicts.values()):
        return (
            f"Blinding probe: {total} guess{'es' if total != 1 else ''} so far; each contender "
            f"needs {MIN_GUESSES} before we can say whether reviewers could tell who wrote an "
            "answer."
        )
    told = [n for n, v in verdicts.items() if v == "could_tell"]
    if told:
        parts = [
            f"{n} ({figures[n]['correct']} of {figures[n]['guesses']} named correctly, "
            f"chance {figures[n]['chance']:.0%})"
            for n in told
        ]
        return (
            "Reviewers could tell who wrote some answers: they recognised "
            + ", ".join(parts)
            + " more often than chance. Blinding did not fully hold for "
            + ("that contender." if len(told) == 1 else "those contenders.")
        )
    misled = [n for n, v in verdicts.items() if v == "misled"]
    if misled:
        return (
            "Reviewers named the wrong contender for " + ", ".join(misled) + " more often than "
            "chance: its answers were taken for another's. Nobody was recognised, but the "
            "guesses were not random either."
        )
    return (
        "Reviewers could not tell the contenders apart: their guesses of who wrote an answer "
        f"were no better than chance ({total} guesses). Blinding held."
    )
