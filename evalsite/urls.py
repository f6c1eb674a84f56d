from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from evalsite import openapi, user_views, views
from evalsite.forms import NewPasswordForm
from reviews import urls as reviews_urls
from tasks import urls as tasks_urls

api_urlpatterns = [
    path("schema", openapi.schema_view, name="api_schema"),
    path("whoami", views.whoami, name="api_whoami"),
    path("users", views.users_api, name="api_users"),
    path("users/<str:username>", views.user_api, name="api_user_detail"),
    *tasks_urls.api_urlpatterns,
    *reviews_urls.api_urlpatterns,
    # Last: every other path under /api/v1/ answers in JSON too.
    re_path(r"^(?P<path>.*)$", openapi.not_found, name="api_not_found"),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "account/password/",
        auth_views.PasswordChangeView.as_view(form_class=NewPasswordForm),
        name="password_change",
    ),
    path(
        "account/password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("account/", user_views.account, name="account"),
    path("users/", user_views.user_list, name="user_list"),
    path("users/<int:user_id>/", user_views.user_edit, name="user_edit"),
    path(
        "users/<int:user_id>/password",
        user_views.user_password_reset,
        name="user_password_reset",
    ),
    path("users/<int:user_id>/tokens", user_views.user_tokens, name="user_tokens"),
    path("healthz", views.healthz, name="healthz"),
    path("api/v1/", include(api_urlpatterns)),
    path("", include(tasks_urls.urlpatterns)),
    path("", include(reviews_urls.urlpatterns)),
]

handler403 = "evalsite.views.error_403"
handler404 = "evalsite.views.error_404"
handler500 = "evalsite.views.error_500"
