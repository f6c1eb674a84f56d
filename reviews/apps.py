"""The reviews app: where it plugs into tasks (docs/decisions/0007).

`reviews` imports `tasks`, never the other way round. What tasks announces (tasks/signals.py)
is received here, and what tasks asks of the review side (tasks/review_side.py) is registered
here, once, when Django starts.
"""

from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"

    def ready(self) -> None:
        from reviews.blinding_probe.selectors import blinding_summary
        from reviews.judges.monitoring import judge_output_scores, judge_outputs, judge_verdicts
        from reviews.review import readiness, rosters, views
        from tasks import review_side, signals

        signals.outputs_changed.connect(
            readiness.outputs_changed_received, dispatch_uid="reviews.outputs_changed"
        )
        signals.generation_finished.connect(
            readiness.generation_finished_received, dispatch_uid="reviews.generation_finished"
        )
        review_side.register(
            review_items_sync=readiness.review_items_sync,
            review_items_open_for=readiness.review_items_open_for,
            review_item_progress=readiness.review_item_progress,
            review_item_states=readiness.review_item_states,
            roster_changed=rosters.roster_changed,
            answers_preview_html=views.answers_preview_html,
            blinding_summary=blinding_summary,
            judge_verdicts=judge_verdicts,
            judge_output_scores=judge_output_scores,
            judge_outputs=judge_outputs,
        )
