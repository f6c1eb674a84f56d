from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"

    def ready(self) -> None:
        from tasks import deploy_checks  # noqa: F401 - registers the system checks
