"""Model instances read and written with SQL written once, for the review loop's hot path.

Every claim, page and submit used to spend more CPU building its ORM queries than the
database spent running them. Here the SQL text is built once per model (and vendor) and cached;
column lists come from the models' own fields and values go through the ORM's own
converters and preparation, so the instances are exactly what the ORM would have returned and
written. Use it where a request runs on every reviewed item, and the ORM everywhere else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Field, Model
from django.utils import timezone


@cache
def fields_of(model: type[Model], only: frozenset[str] | None = None) -> tuple[Field, ...]:
    """The concrete fields of `model` (all, or those whose attname is in `only`), in model
    order: Model.from_db expects its values in that order."""
    return tuple(f for f in model._meta.concrete_fields if only is None or f.attname in only)


def columns(alias: str, model: type[Model], only: frozenset[str] | None = None) -> str:
    qn = connection.ops.quote_name
    return ", ".join(f"{alias}.{qn(f.column)}" for f in fields_of(model, only))


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


_WORD = re.compile(r"[a-z_]+")


def literal(*values: str) -> str:
    """Code constants (a model's states) written into the SQL text, comma-separated, instead
    of sent as parameters. PostgreSQL then plans a prepared statement for them once: given a
    state as a parameter, it re-plans the statement on every run whenever the statistics make
    a plan for that state look cheaper than the generic one. Never for values from outside."""
    for value in values:
        if not _WORD.fullmatch(value):
            raise ValueError(f"not a code constant: {value!r}")
    return ", ".join(f"'{value}'" for value in values)


@lru_cache(maxsize=512)
def _converters(model: type[Model], only: frozenset[str] | None, conn) -> tuple:
    """(attnames, [(column, converters)]) of `model` on `conn`, cached per connection object
    (Django keeps one per thread)."""
    fields = fields_of(model, only)
    converted = []
    for field in fields:
        col = field.get_col(model._meta.db_table)
        converted.append((col, (*conn.ops.get_db_converters(col), *col.get_db_converters(conn))))
    return [f.attname for f in fields], converted


def instance(model: type[Model], values: Sequence, only: frozenset[str] | None = None) -> Model:
    """A `model` instance from raw column values (as `columns` listed them), converted as the
    ORM converts them. Fields not in `only` are deferred, as with QuerySet.only()."""
    db = connections[DEFAULT_DB_ALIAS]  # the thread's connection object (not the proxy)
    attnames, cols = _converters(model, only, db)
    converted = []
    for (col, converters), value in zip(cols, values, strict=True):
        for convert in converters:
            value = convert(value, col, db)
        converted.append(value)
    return model.from_db(db.alias, attnames, converted)


def instances(row: Sequence, *models: type[Model]) -> list[Model]:
    """One instance per model from a row that lists `columns(..., model)` of each in turn."""
    found, start = [], 0
    for model in models:
        width = len(fields_of(model))
        found.append(instance(model, row[start : start + width]))
        start += width
    return found


@cache
def _insert_sql(
    model: type[Model], db_now: tuple[str, ...], vendor: str, on_conflict: str, source: str
) -> tuple[str, list[Field], list[str]]:
    """The INSERT of every non-pk column, RETURNING the pk (and on PostgreSQL the columns
    that take the database clock), and the fields whose values are parameters."""
    qn = connection.ops.quote_name
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    clock = [f for f in fields if f.attname in db_now] if vendor == "postgresql" else []
    values = ", ".join("STATEMENT_TIMESTAMP()" if f in clock else "%s" for f in fields)
    rows = f"SELECT {values} FROM {source}" if source else f"VALUES ({values})"
    returning = ", ".join(qn(f.column) for f in [model._meta.pk, *clock])
    sql = (
        f"INSERT INTO {table(model)} ({', '.join(qn(f.column) for f in fields)}) "
        f"{rows} {on_conflict} RETURNING {returning}"
    )
    return sql, [f for f in fields if f not in clock], [f.attname for f in clock]


def insert_sql(
    obj: Model, *, db_now: Iterable[str] = (), on_conflict: str = "", source: str = ""
) -> tuple[str, list, list[str]]:
    """`insert`'s statement for `obj` without running it: (SQL, parameters, the attnames that
    take the database clock, RETURNED after the pk). With `source` (a table or WITH query's
    name) it inserts one row per row of `source` (`INSERT ... SELECT ... FROM source`), so a
    WITH clause can decide whether the row is written at all. Run it, then `inserted`."""
    db_now = tuple(sorted(db_now))
    sql, fields, clock = _insert_sql(type(obj), db_now, connection.vendor, on_conflict, source)
    params = []
    for field in fields:
        value = timezone.now() if field.attname in db_now else field.pre_save(obj, add=True)
        setattr(obj, field.attname, value)
        params.append(field.get_db_prep_save(value, connection))
    return sql, params, clock


def inserted(obj: Model, returned: Sequence, clock: Sequence[str]) -> Model:
    """Mark `obj` saved, from what `insert_sql`'s RETURNING gave: its pk, then the clock values."""
    obj.pk, *clock_values = returned
    for attname, value in zip(clock, clock_values, strict=True):
        setattr(obj, attname, value)
    obj._state.adding, obj._state.db = False, connection.alias
    return obj


def insert(
    obj: Model,
    *,
    db_now: Iterable[str] = (),
    on_conflict: str = "",
    conflict_params=(),
    with_: tuple[str, Sequence] = ("", ()),
) -> Model:
    """INSERT `obj` (a new, unsaved instance) and set its primary key, as `obj.save()` would.

    The fields named in `db_now` take the database clock in the INSERT itself (PostgreSQL's
    statement time; SQLite has no shared clock: the web process's). `on_conflict` is an
    `ON CONFLICT ...` clause (PostgreSQL and SQLite) with `conflict_params`: after a DO UPDATE
    the pk is the existing row's (its other values are not read back), and when the clause
    leaves no row (DO NOTHING, or DO UPDATE ... WHERE false) the pk stays None. No signals are
    sent and no validation is run: use it only for models nothing listens to.

    `with_` = (a `WITH name AS (UPDATE ...)` clause, its parameters): PostgreSQL runs that
    statement in the same round trip, and both or neither take effect.
    """
    sql, params, clock = insert_sql(obj, db_now=db_now, on_conflict=on_conflict)
    with_sql, with_params = with_
    with connection.cursor() as cursor:
        cursor.execute(
            f"{with_sql} {sql}" if with_sql else sql, [*with_params, *params, *conflict_params]
        )
        row = cursor.fetchone()
    return obj if row is None else inserted(obj, row, clock)


def insert_rows_sql(
    model: type[Model], attnames: Sequence[str], rows: Sequence[Sequence], *, first_from: str = ""
) -> tuple[str, list]:
    """The INSERT of many rows of `attnames` values in one statement, and its parameters,
    prepared as the ORM prepares them (for `insert_rows`, or a WITH clause on PostgreSQL).

    With `first_from` (a WITH query's column, "review.id") the first attname takes that
    column's value and `rows` leave it out: the rows are written once per row of that query,
    and not at all when it has none."""
    fields = [model._meta.get_field(name) for name in attnames]
    given = fields[1:] if first_from else fields
    params = [
        field.get_db_prep_save(value, connection)
        for row in rows
        for field, value in zip(given, row, strict=True)
    ]
    qn = connection.ops.quote_name
    into = f"INSERT INTO {table(model)} ({', '.join(qn(f.column) for f in fields)})"
    if not first_from:
        one = f"({', '.join(['%s'] * len(fields))})"
        return f"{into} VALUES {', '.join([one] * len(rows))}", params
    # Typed: the parameters of a bare VALUES list would otherwise be read as text.
    one = "(" + ", ".join(f"CAST(%s AS {f.db_type(connection)})" for f in given) + ")"
    source = first_from.split(".")[0]
    return (
        f"{into} SELECT {first_from}, v.* FROM {source}, (VALUES {', '.join([one] * len(rows))}) v",
        params,
    )


def insert_rows(model: type[Model], attnames: Sequence[str], rows: Sequence[Sequence]) -> None:
    """INSERT many rows of `attnames` values in one statement (a few rows: one per score of a
    review), prepared as the ORM prepares them. No instances, no signals."""
    if not rows:
        return
    with connection.cursor() as cursor:
        cursor.execute(*insert_rows_sql(model, attnames, rows))
