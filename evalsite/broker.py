"""The broker as the health check and the reconcilers ask it: how many messages wait.

Not in evalsite/celery.py: that module is the worker's entry point (its hooks import the
generation package), and nothing may import an entry point. The app is Celery's current one,
the evalsite app (evalsite/__init__.py creates it in every process), as `shared_task` finds it.
"""

from celery import current_app


def broker_queued(timeout: float = 1.0) -> int:
    """Messages waiting in the default queue, from a new connection that gives up after about
    `timeout` seconds (kombu.exceptions.OperationalError). For /healthz and the reconcilers."""
    app = current_app
    options = {
        **app.conf.broker_transport_options,
        "socket_connect_timeout": timeout,
        "socket_timeout": timeout,
        "max_retries": 0,
    }
    with app.connection_for_read(transport_options=options) as conn:
        return conn.default_channel.queue_declare(app.conf.task_default_queue).message_count
