"""The reviews app: where it plugs into tasks (docs/decisions/0007).

`reviews` imports `tasks`, never the other way round. What tasks asks of the review side
(tasks/review_side.py: opening review items, counts, a preview) is registered here, once, when
Django starts (docs/decisions/0009-cross-app-workflows.md); what the review side then does when
outputs land, step by step, is in reviews/workflows.py.
"""

from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"

    def ready(self) -> None:
        from reviews import workflows
        from reviews.arbitration import rosters
        from reviews.identity_reports.selectors import blinding_summary
        from reviews.judges.monitoring import (
            judge_output_scores,
            judge_outputs,
            judge_preferences,
            judge_verdicts,
        )
        from reviews.review import readiness, views
        from tasks import review_side

        review_side.register(
            review_items_sync=workflows.items_sync,
            review_items_open_for=workflows.items_open_for,
            review_item_progress=readiness.review_item_progress,
            review_item_states=readiness.review_item_states,
            roster_changed=rosters.roster_changed,
            answers_preview_html=views.answers_preview_html,
            blinding_summary=blinding_summary,
            judge_verdicts=judge_verdicts,
            judge_output_scores=judge_output_scores,
            judge_outputs=judge_outputs,
            judge_preferences=judge_preferences,
        )
