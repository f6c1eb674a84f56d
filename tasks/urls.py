from django.urls import path

from tasks.campaigns import api as campaign_api
from tasks.campaigns import held_api, held_views, rubric_builder, search_views
from tasks.campaigns import views as campaign_views
from tasks.images import views as image_views
from tasks.intake import api as testset_api
from tasks.intake import views as testset_views
from tasks.judges import api as judge_api
from tasks.judges import views as judge_views
from tasks.monitors import api as monitor_api
from tasks.monitors import views as monitor_views

urlpatterns: list = []
api_urlpatterns: list = []

# Test sets.

urlpatterns += [
    path("testsets/", testset_views.testset_list, name="testset_list"),
    path("testsets/upload/", testset_views.testset_upload, name="testset_upload"),
    path(
        "testsets/upload/example.<str:fmt>",
        testset_views.testset_example,
        name="testset_example",
    ),
    path(
        "testsets/<str:name>/v<int:version>/", testset_views.testset_detail, name="testset_detail"
    ),
    path(
        "testsets/<str:name>/v<int:version>/download.<str:fmt>",
        testset_views.testset_download,
        name="testset_download",
    ),
    path(
        "testsets/<str:name>/v<int:version>/delete",
        testset_views.testset_remove,
        name="testset_delete",
    ),
]
urlpatterns += [
    path("task-images/<str:image>", image_views.task_image, name="task_image"),
]
api_urlpatterns += [
    path("testsets", testset_api.testsets, name="api_testsets"),
    path("testsets/<str:name>", testset_api.testset_detail, name="api_testset_detail"),
    path("testsets/<str:name>/tasks", testset_api.testset_tasks, name="api_testset_tasks"),
]

# Contenders, campaigns and generation.

urlpatterns += [
    path("contenders/", campaign_views.contender_list_view, name="contender_list"),
    path("contenders/<int:pk>/edit/", campaign_views.contender_edit, name="contender_edit"),
    path(
        "contenders/<int:pk>/test",
        campaign_views.contender_test_view,
        name="contender_test",
    ),
    path(
        "contenders/<int:pk>/duplicate",
        campaign_views.contender_duplicate_view,
        name="contender_duplicate",
    ),
    path("campaigns/", campaign_views.campaign_list_view, name="campaign_list"),
    path("campaigns/new/", campaign_views.campaign_new, name="campaign_new"),
    # The new-campaign form's rubric builder: its actions and its live preview.
    path(
        "campaigns/new/rubric/builder",
        rubric_builder.rubric_builder_view,
        name="campaign_rubric_builder",
    ),
    path(
        "campaigns/new/rubric/preview",
        rubric_builder.rubric_preview_view,
        name="campaign_rubric_preview",
    ),
    path("campaigns/<slug:slug>/", campaign_views.campaign_detail, name="campaign_detail"),
    path(
        "campaigns/<slug:slug>/generate", campaign_views.campaign_generate, name="campaign_generate"
    ),
    path("campaigns/<slug:slug>/cancel", campaign_views.campaign_cancel, name="campaign_cancel"),
    path("campaigns/<slug:slug>/close", campaign_views.campaign_close_view, name="campaign_close"),
    path(
        "campaigns/<slug:slug>/reopen", campaign_views.campaign_reopen_view, name="campaign_reopen"
    ),
    path(
        "campaigns/<slug:slug>/instructions",
        campaign_views.campaign_instructions,
        name="campaign_instructions",
    ),
    path(
        "campaigns/<slug:slug>/rosters",
        campaign_views.campaign_rosters,
        name="campaign_rosters",
    ),
    path(
        "campaigns/<slug:slug>/retry-failed",
        campaign_views.campaign_retry_failed,
        name="campaign_retry_failed",
    ),
    path(
        "campaigns/<slug:slug>/search/", search_views.campaign_search_view, name="campaign_search"
    ),
    path(
        "campaigns/<slug:slug>/generations/retry",
        campaign_views.campaign_retry_selected,
        name="campaign_retry_selected",
    ),
    path(
        "campaigns/<slug:slug>/outputs",
        campaign_views.campaign_import_outputs,
        name="campaign_import_outputs",
    ),
    path(
        "campaigns/<slug:slug>/generations/",
        campaign_views.campaign_outputs_view,
        name="campaign_outputs",
    ),
    path("campaigns/<slug:slug>/held/", held_views.campaign_held, name="campaign_held"),
    path(
        "campaigns/<slug:slug>/held/approve",
        held_views.campaign_held_approve,
        name="campaign_held_approve",
    ),
    path(
        "campaigns/<slug:slug>/held/<int:output_id>/mask",
        held_views.campaign_held_mask,
        name="campaign_held_mask",
    ),
    path(
        "campaigns/<slug:slug>/generations/<int:output_id>/identity",
        campaign_views.campaign_output_identity,
        name="campaign_output_identity",
    ),
    path(
        "campaigns/<slug:slug>/generations/<int:output_id>/approve-identity",
        campaign_views.campaign_output_approve,
        name="campaign_output_approve",
    ),
]
api_urlpatterns += [
    path("campaigns", campaign_api.campaigns, name="api_campaigns"),
    path("campaigns/<slug:slug>", campaign_api.campaign_detail, name="api_campaign_detail"),
    path(
        "campaigns/<slug:slug>/generate",
        campaign_api.campaign_generate,
        name="api_campaign_generate",
    ),
    path("campaigns/<slug:slug>/cancel", campaign_api.campaign_cancel, name="api_campaign_cancel"),
    path(
        "campaigns/<slug:slug>/retry-failed",
        campaign_api.campaign_retry_failed,
        name="api_campaign_retry_failed",
    ),
    path(
        "campaigns/<slug:slug>/outputs", campaign_api.campaign_outputs, name="api_campaign_outputs"
    ),
    path(
        "campaigns/<slug:slug>/held-outputs",
        held_api.campaign_held_outputs_view,
        name="api_campaign_held_outputs",
    ),
    path(
        "campaigns/<slug:slug>/held-outputs/approve",
        held_api.campaign_held_outputs_approve,
        name="api_campaign_held_outputs_approve",
    ),
    path(
        "campaigns/<slug:slug>/outputs/<int:output_id>/approve-identity",
        held_api.campaign_output_approve_identity,
        name="api_campaign_output_approve_identity",
    ),
]

# Monitors: scheduled golden-set runs, comparisons, alerts.

urlpatterns += [
    path("monitors/", monitor_views.monitor_list_view, name="monitor_list"),
    # Before monitors/<slug>/: "new" and "schedule" are not slugs of monitors here.
    path("monitors/new/", monitor_views.monitor_create_view, name="monitor_new"),
    path(
        "monitors/schedule-preview",
        monitor_views.monitor_schedule_preview_view,
        name="monitor_schedule_preview",
    ),
    path(
        "monitors/judge-preview",
        monitor_views.monitor_judge_preview_view,
        name="monitor_judge_preview",
    ),
    path("monitors/<slug:slug>/edit", monitor_views.monitor_edit_view, name="monitor_edit"),
    path("monitors/<slug:slug>/", monitor_views.monitor_detail_view, name="monitor_detail"),
    path("monitors/<slug:slug>/pause", monitor_views.monitor_pause_view, name="monitor_pause"),
    path("monitors/<slug:slug>/delete", monitor_views.monitor_delete_view, name="monitor_delete"),
    path(
        "monitors/<slug:slug>/alerts/<int:alert_id>/resend",
        monitor_views.monitor_alert_resend_view,
        name="monitor_alert_resend",
    ),
    path(
        "monitors/<slug:slug>/run", monitor_views.monitor_run_start_view, name="monitor_run_start"
    ),
    path(
        "monitors/<slug:slug>/runs/<int:number>/",
        monitor_views.monitor_run_view,
        name="monitor_run",
    ),
    path(
        "monitors/<slug:slug>/runs/<int:number>/review-blind",
        monitor_views.monitor_review_blind_view,
        name="monitor_review_blind",
    ),
    path(
        "monitors/<slug:slug>/runs/<int:number>/tasks/<str:task_id>/",
        monitor_views.monitor_task_view,
        name="monitor_task",
    ),
]
api_urlpatterns += [
    path("monitors", monitor_api.monitors, name="api_monitors"),
    path("monitors/<slug:slug>", monitor_api.monitor_detail, name="api_monitor_detail"),
    path("monitors/<slug:slug>/runs", monitor_api.monitor_runs, name="api_monitor_runs"),
    path(
        "monitors/<slug:slug>/alerts/<int:alert_id>/resend",
        monitor_api.monitor_alert_resend,
        name="api_monitor_alert_resend",
    ),
    path(
        "monitors/<slug:slug>/runs/<int:number>",
        monitor_api.monitor_run_detail,
        name="api_monitor_run_detail",
    ),
]

# Judges (docs/judges.md): their definitions; judging a campaign is in reviews/urls.py.

urlpatterns += [
    path("judges/", judge_views.judge_list_view, name="judge_list"),
    path("judges/<str:name>/", judge_views.judge_detail_view, name="judge_detail"),
]
api_urlpatterns += [
    path("judges", judge_api.judges, name="api_judges"),
    path("judges/<str:name>", judge_api.judge_detail, name="api_judge_detail"),
]
