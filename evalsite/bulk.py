"""Bulk writes of many rows' changed fields, for the import paths
(docs/decisions/0004-raw-sql-only-where-correctness-needs-it.md).

`rows_update` sends one parametrized `UPDATE ... WHERE id = %s` per row as a single
executemany (psycopg pipelines it; SQLite runs it in process). The ORM's `bulk_update` builds a
CASE expression per field and row and spends seconds per thousand rows compiling it; an
`update()` per row costs a round trip each. Values go through each field's own
`get_db_prep_save`, so JSON, dates and decimals are stored exactly as the ORM stores them
(tests/evalsite/test_bulk.py holds it to the ORM's `update()`).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import Model


def rows_update(
    model: type[Model],
    changes: Sequence[tuple[int, dict]],
    *,
    unless: tuple[str, object] | None = None,
) -> int:
    """Set each (primary key, {field name: value}) pair's fields on its row; every pair names
    the same fields. With `unless=(field, value)` a row whose field holds that value is left
    alone (a conditional UPDATE, as `.exclude(field=value).update(...)`). Returns the rows
    written."""
    if not changes:
        return 0
    meta = model._meta
    fields = [meta.get_field(name) for name in changes[0][1]]
    quote = connection.ops.quote_name
    sql = (
        f"UPDATE {quote(meta.db_table)} SET "
        + ", ".join(f"{quote(f.column)} = %s" for f in fields)
        + f" WHERE {quote(meta.pk.column)} = %s"
    )
    guard: list = []
    if unless is not None:
        field = meta.get_field(unless[0])
        sql += f" AND {quote(field.column)} <> %s"
        guard = [field.get_db_prep_save(unless[1], connection)]
    rows = [
        [*(f.get_db_prep_save(values[f.name], connection) for f in fields), pk, *guard]
        for pk, values in changes
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)
        return cursor.rowcount  # summed over the rows by both drivers
