"""The raw SQL of test-set intake (docs/decisions/0004-raw-sql-only-where-correctness-needs-it.md):
the test-set import's bulk insert.

`tasks_insert` writes a test set's tasks with COPY (PostgreSQL) or one executemany (SQLite):
bulk_create builds and compiles a model instance per task, which costs twice the CPU of the
whole import and puts a 10,000-task import over its one-second budget (the ADR has the
figures). tests/tasks/test_sql.py holds it to its ORM twin.
"""

from __future__ import annotations

import json

from django.db import connection
from django.db.models import JSONField

from tasks.models import Task, TestSet

INSERT_BATCH = 2000


def tasks_insert(*, testset: TestSet, tasks: list[dict]) -> None:
    """Insert a test set's validated `tasks` (in file order) fast: COPY on PostgreSQL,
    executemany on SQLite, bulk_create elsewhere (its ORM twin). Columns come from the model;
    fields the intake does not know get their model default."""
    fields = [f for f in Task._meta.concrete_fields if not f.primary_key]
    columns = [connection.ops.quote_name(f.column) for f in fields]
    dumps = json.dumps

    def value(f, i: int, task: dict):
        if f.name == "testset":
            return testset.pk
        if f.name == "position":
            return i
        v = task[f.name] if f.name in task else f.get_default()
        if isinstance(f, JSONField):
            return None if v is None else dumps(v)
        return v

    rows = [tuple(value(f, i, task) for f in fields) for i, task in enumerate(tasks)]
    table = connection.ops.quote_name(Task._meta.db_table)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # The Django wrapper's .cursor is psycopg's own cursor, in the same transaction.
            with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
    elif connection.vendor == "sqlite":
        placeholders = ", ".join(["%s"] * len(columns))
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})", rows
            )
    else:
        Task.objects.bulk_create(
            (Task(testset=testset, position=i, **task) for i, task in enumerate(tasks)),
            batch_size=INSERT_BATCH,
        )
