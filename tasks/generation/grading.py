"""What is stored beside an answer, generated or imported: its transcript with each turn's
checks, the task's checks, and the identity findings (docs/tools.md, "Checks and masking").
"""

from __future__ import annotations

from tasks.blinding.hold import identity_fields, shown_to_reviewers
from tasks.blinding.parts import scanned
from tasks.checks.automatic import normalize, run_checks, turn_checks_run
from tasks.models import Campaign, Generation


def graded_fields(
    *,
    generation: Generation,
    campaign: Campaign,
    output: str,
    transcript: list,
    reasoning: str = "",
) -> dict:
    """What is stored beside an answer (generated or imported) for the row `generation`: its
    transcript with each turn's checks, the task's checks (on the answer, and tool_calls on
    the transcript), and the identity findings over everything the transcript shows, tool
    arguments and results included, and the reasoning where the campaign shows it (held only
    if reviewers will be shown the row)."""
    task, single_turn = generation.task, generation.single_turn
    # The reference is read (a deferred column on the hot path) only when a check uses it.
    specs = [normalize(task.checks), *(normalize(c) for c in (task.turn_checks or {}).values())]
    reference = task.reference if any("reference" in spec for spec in specs) else None
    if transcript:  # turn checks judge the multi-turn regime only
        turn_checks = {} if single_turn else task.turn_checks
        transcript = turn_checks_run(transcript, turn_checks, tools=task.tools, reference=reference)
    check_results, checks_passed = run_checks(
        output, task.checks, transcript=transcript, tools=task.tools, reference=reference
    )
    # Every text reviewers read, as they read it: the answer, the reasoning where the campaign
    # shows it (a reasoning model often names itself there) and every text of the transcript.
    shown = scanned(
        output=output,
        transcript=transcript,
        reasoning=reasoning,
        show_reasoning=campaign.show_reasoning,
    )
    return {
        "transcript": transcript or [],
        "check_results": check_results,
        "checks_passed": checks_passed,
        # What masking hides, and whether the items wait for an admin (identity_hold).
        **identity_fields(
            parts=shown,
            campaign=campaign,
            reviewed=shown_to_reviewers(
                campaign=campaign, sample_index=generation.sample_index, single_turn=single_turn
            ),
        ),
    }
