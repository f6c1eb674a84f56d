"""Write: store checked records, all or nothing, and replay the arbitration records.

Importing the same file twice changes nothing: a judge's review of an item that is already
stored and identical is skipped, a different one is an error. Each item that received reviews
is settled by the dispute rules. Arbitration records are replayed through the arbitration
module's own `resolution_build`, so an export imported into an empty campaign reproduces the
same final outcomes and report.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.db.models.functions import Lower
from django.utils import timezone

from evalsite.bulk import rows_update
from reviews.arbitration.services import (
    Resolution,
    ResolveInvalid,
    note_checked,
    resolution_build,
)
from reviews.disputes.rules import items_settle
from reviews.models import (
    Arbitration,
    Assignment,
    ItemOutput,
    Preference,
    Review,
    ReviewItem,
    Score,
)
from reviews.records.check import Record, records_check, review_signature
from reviews.records.format import (
    FORMATS,
    RecordError,
    RecordImportError,
    max_import_bytes,
    too_big_problem,
)
from reviews.records.parse import decode, detect_format, parse_csv, parse_jsonl
from reviews.review.readiness import item_rotations
from reviews.review.readiness import pair_key as readiness_pair_key
from tasks.models import Campaign, Generation


@dataclass
class ImportSummary:
    records: int = 0
    reviews_created: int = 0
    reviews_unchanged: int = 0
    items_created: int = 0
    judges_created: list[str] = field(default_factory=list)
    items_settled: int = 0
    arbitrations_created: int = 0
    arbitrations_unchanged: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def reviews_import(
    *, campaign: Campaign, data: bytes, fmt: str | None = None, filename: str = ""
) -> ImportSummary:
    """Parse, check and store review records; all or nothing. Raises RecordImportError."""
    if len(data) > max_import_bytes():
        raise RecordImportError([RecordError(0, "(file)", too_big_problem())])
    fmt = fmt or detect_format(filename, data)
    if fmt not in FORMATS:
        raise RecordImportError(
            [RecordError(0, "(file)", f"unknown format {fmt!r}; use jsonl or csv")]
        )
    text = decode(data)
    errors: list[RecordError] = []
    parsed = parse_jsonl(text, errors) if fmt == "jsonl" else parse_csv(text, errors)
    records, tasks, contenders = records_check(
        campaign=campaign, parsed=parsed, text=text, errors=errors
    )
    try:
        with transaction.atomic():
            # _write checks the records against what is stored too and raises every problem,
            # these above and its own, before it writes anything.
            summary = _write(
                _Import(campaign, records, tasks, contenders, errors), raw_lines=dict(parsed)
            )
    except IntegrityError:
        # Another import (or the review engine) wrote the same rows meanwhile; nothing of
        # this one was kept, and running it again is safe (the import is idempotent).
        raise RecordImportError(
            [
                RecordError(
                    0,
                    "(file)",
                    "the campaign changed while importing; nothing was imported, try again",
                )
            ]
        ) from None
    return summary


@dataclass
class _Import:
    """One import: the campaign, the file's checked records with the tasks and contenders they
    name, and every problem found so far."""

    campaign: Campaign
    records: list[Record]
    tasks: dict  # task external id -> Task
    contenders: dict  # contender name -> Contender
    errors: list[RecordError]


@dataclass
class _Stored:
    """The campaign's items as a file names them, and the reviews already stored."""

    existing: dict[tuple, ReviewItem]  # (task external id, sample, contender names) -> item
    outputs_by_item: dict[int, dict[str, int]]  # item -> contender name -> ItemOutput id
    users: dict  # judge name -> user
    signatures: dict[tuple[int, int], tuple]  # (item id, user id) -> review signature
    in_review: set[int]  # items a reviewer holds an active assignment on


def _stored(campaign: Campaign, contenders: dict, judge_names: list[str]) -> _Stored:
    contender_name = {c.pk: c.name for c in contenders.values()}
    outputs_by_item: dict[int, dict[str, int]] = defaultdict(dict)
    items = {i.pk: i for i in ReviewItem.objects.filter(campaign=campaign).select_related("task")}
    for output_id, item_id, contender_id in ItemOutput.objects.filter(
        item__campaign=campaign
    ).values_list("id", "item_id", "generation__contender_id"):
        outputs_by_item[item_id][contender_name.get(contender_id, f"#{contender_id}")] = output_id
    existing = {
        (item.task.external_id, item.sample_index, frozenset(outputs_by_item[item.pk])): item
        for item in items.values()
    }
    users = {u.username: u for u in get_user_model().objects.filter(username__in=judge_names)}
    # Reviews already stored, for idempotency.
    item_ids = [i.pk for i in existing.values()]
    signatures = _stored_signatures(item_ids, outputs_by_item) if item_ids else {}
    in_review = set(
        Assignment.objects.filter(item__campaign=campaign, state=Assignment.State.ACTIVE)
        .values_list("item_id", flat=True)
        .distinct()
    )
    return _Stored(existing, outputs_by_item, users, signatures, in_review)


def _write(job: _Import, *, raw_lines: dict[int, dict]) -> ImportSummary:
    """Check the records against the stored reviews, store them, check the arbitration
    records against the disputes they make, and raise every problem (`errors` included), so
    that nothing is kept unless no line has one. Records whose task or models are unknown are
    in `errors` already; they match no stored item and are checked like new ones."""
    campaign, records, errors = job.campaign, job.records, job.errors
    summary = ImportSummary(records=len(records))
    arbitration_records = [r for r in records if r.arbitration]
    judge_names = sorted({r.judge for r in records})
    stored = _stored(campaign, job.contenders, judge_names)
    twins = _case_twins(records, stored.users, errors)
    judge_names = [name for name in judge_names if name not in twins]
    to_create = _reviews_to_create(
        [r for r in records if not r.arbitration], stored, summary, errors
    )
    bad_lines = {e.line for e in errors}
    arbitration_records = [r for r in arbitration_records if r.line not in bad_lines]
    if errors and not arbitration_records:
        raise RecordImportError(errors)
    # The arbitration rules need the items settled by the file's reviews, so the clean review
    # lines are written even when some line has a problem (all of it is rolled back then):
    # one run lists the arbitration records' problems with the review lines'.
    unsettled = _unsettled_tasks(bad_lines, raw_lines)
    to_create = [rec for rec in to_create if rec.line not in bad_lines]
    _judges_create(judge_names, stored.users, summary)
    now = timezone.now()
    new_items = _items_create(job, to_create, stored, now, summary)
    items_by_key = {**stored.existing, **new_items}
    _reviews_create(to_create, items_by_key, stored, now, summary)
    if arbitration_records:
        replay = _Replay(items_by_key, stored, now, summary, errors)
        _write_arbitrations(arbitration_records, replay, unsettled)
    if errors:
        raise RecordImportError(errors)
    return summary


def _reviews_to_create(
    records: list[Record], stored: _Stored, summary: ImportSummary, errors: list[RecordError]
) -> list[Record]:
    """The review records to write: not stored yet, on an item that may take them."""
    out = []
    for rec in records:
        item = stored.existing.get(rec.item_key)
        if item is not None:
            problem = _review_conflict(rec, item, stored, summary)
            if problem is None:
                continue  # stored already, identical
            if problem:
                errors.append(RecordError(rec.line, *problem))
                continue
        out.append(rec)
    return out


def _review_conflict(rec: Record, item: ReviewItem, stored: _Stored, summary) -> tuple | None:
    """(field, message) if `rec` cannot be added to the stored `item`; () if it can; None if
    the same review is stored already (counted as unchanged)."""
    by_label = rec.models
    user = stored.users.get(rec.judge)  # a new judge has no stored review
    if user is not None and (item.pk, user.pk) in stored.signatures:
        signature = review_signature(
            scores={by_label[label]: dims for label, dims in rec.scores.items()},
            preference=by_label.get(rec.preference, rec.preference) if rec.preference else None,
            flags={by_label[label]: f for label, f in rec.flags.items()},
            comment=rec.comment,
            order=[by_label[label] for label in rec.labels],
        )
        if stored.signatures[(item.pk, user.pk)] == signature:
            summary.reviews_unchanged += 1
            return None
        return ("judge", f"{rec.judge} already has a different review of this item")
    if item.state == ReviewItem.State.RESOLVED:
        return ("task_id", "this item was already arbitrated; new reviews cannot be added")
    if item.live_count or item.pk in stored.in_review:
        return (
            "task_id",
            "this item is being reviewed on the site; import into a campaign without live review",
        )
    return ()


def _case_twins(records: list[Record], users: dict, errors: list[RecordError]) -> set[str]:
    """Judge names that differ only in case from a user (or from a judge earlier in the
    file): user names ignore case, so such a judge cannot be created. Each of its records gets
    that reason (it used to fail on the unique index as "the campaign changed")."""
    first: dict[str, str] = {}
    for rec in records:
        first.setdefault(rec.judge.lower(), rec.judge)
    stored = get_user_model().objects.annotate(lower=Lower("username"))
    for username in stored.filter(lower__in=list(first)).values_list("username", flat=True):
        first[username.lower()] = username  # a stored user's spelling wins
    twins = {r.judge for r in records if r.judge not in users and first[r.judge.lower()] != r.judge}
    for rec in records:
        if rec.judge in twins:
            known = first[rec.judge.lower()]
            errors.append(
                RecordError(
                    rec.line,
                    "judge",
                    f"{rec.judge!r} differs only in case from {known!r} (user names ignore "
                    f"case): write it as {known!r}",
                )
            )
    return twins


def _judges_create(judge_names: list[str], users: dict, summary: ImportSummary) -> None:
    """Unknown judges become inactive users without a password."""
    User = get_user_model()
    for name in judge_names:
        if name not in users:
            user = User(username=name, is_active=False)
            user.set_unusable_password()
            user.save()
            users[name] = user
            summary.judges_created.append(name)


def _items_create(job: _Import, to_create, stored: _Stored, now, summary) -> dict:
    """Items and their outputs for records of items not stored yet (with imported-style
    generations where none exist yet). Returns {item key: new item}."""
    campaign, tasks, contenders = job.campaign, job.tasks, job.contenders
    generations = {
        (g.task_id, g.contender_id, g.sample_index): g
        for g in Generation.objects.filter(campaign=campaign)
    }
    fresh = list(dict.fromkeys(r.item_key for r in to_create if r.item_key not in stored.existing))
    sizes = [len(key[2]) for key in fresh]
    rotations = dict(zip(fresh, item_rotations(campaign_id=campaign.pk, sizes=sizes), strict=True))
    new_items: dict[tuple, ReviewItem] = {}
    chosen: dict[tuple, list] = {}
    for key in fresh:
        task_id, sample, names = key
        chosen[key] = [contenders[n] for n in sorted(names)]
        # The generation side's key, so review_items_sync later finds the same item.
        pair_key = (
            ""
            if len(chosen[key]) == len(contenders)
            else readiness_pair_key(campaign.pk, tuple(c.pk for c in chosen[key]))
        )
        new_items[key] = ReviewItem(
            campaign=campaign,
            task=tasks[task_id],
            sample_index=sample,
            pair_key=pair_key,
            overlap=campaign.overlap,
            ready=True,
            state=ReviewItem.State.OPEN,
            imported=True,
            shuffle_key=secrets.randbelow(2**31),
            rotation=rotations[key],
        )
    # bulk_create sets primary keys on PostgreSQL and SQLite >= 3.35.
    ReviewItem.objects.bulk_create(new_items.values(), batch_size=1000)
    _item_outputs_create(new_items, chosen, generations, stored, now)
    summary.items_created += len(new_items)
    return new_items


def _item_outputs_create(new_items: dict, chosen: dict, generations: dict, stored: _Stored, now):
    """The new items' outputs, on the campaign's generations or, where it has none for that
    task, contender and sample, on placeholder `done` ones."""
    slots = [
        (key, contender, (item.task_id, contender.pk, key[1]))
        for key, item in new_items.items()
        for contender in chosen[key]
    ]
    placeholders: dict[tuple, Generation] = {}
    for key, _, slot in slots:
        if slot not in generations and slot not in placeholders:
            task_id, contender_id, sample = slot
            placeholders[slot] = Generation(
                campaign_id=new_items[key].campaign_id,
                task_id=task_id,
                contender_id=contender_id,
                sample_index=sample,
                status=Generation.Status.DONE,
                finished_at=now,
            )
    Generation.objects.bulk_create(placeholders.values(), batch_size=1000)
    generations.update(placeholders)
    outputs = [
        ItemOutput(item=new_items[key], generation=generations[slot]) for key, _, slot in slots
    ]
    ItemOutput.objects.bulk_create(outputs, batch_size=1000)
    for (key, contender, _), out in zip(slots, outputs, strict=True):
        stored.outputs_by_item[new_items[key].pk][contender.name] = out.pk


def _reviews_create(to_create, items_by_key, stored: _Stored, now, summary) -> None:
    """The reviews and their scores, then each item they touched is settled."""
    touched: dict[int, ReviewItem] = {}
    reviews: list[Review] = []
    scores: list[tuple[int, int, str, float | None]] = []  # (review index, output, dim, value)
    for rec in to_create:
        item = items_by_key[rec.item_key]
        outputs = stored.outputs_by_item[item.pk]
        out_of = {label: outputs[rec.models[label]] for label in rec.labels}
        preferred, preference = None, rec.preference or ""
        if rec.preference in out_of:
            preference, preferred = Preference.OUTPUT, out_of[rec.preference]
        reviews.append(
            Review(
                item=item,
                reviewer=stored.users[rec.judge],
                preference=preference,
                preferred_output_id=preferred,
                flags={str(out_of[label]): f for label, f in rec.flags.items() if f},
                comment=rec.comment,
                seconds_spent=rec.seconds,
                submitted_at=rec.submitted_at or now,
                presented_order=[out_of[label] for label in rec.labels],
            )
        )
        scores += [
            (len(reviews) - 1, out_of[label], dim, value)
            for label, dims in rec.scores.items()
            for dim, value in dims.items()
        ]
        touched[item.pk] = item
    # bulk_create sets primary keys on PostgreSQL and SQLite >= 3.35.
    Review.objects.bulk_create(reviews, batch_size=1000)
    summary.reviews_created = len(reviews)
    Score.objects.bulk_create(
        [Score(review=reviews[i], output_id=o, dimension=d, value=v) for i, o, d, v in scores],
        batch_size=2000,
    )
    _items_settle(touched.values(), summary)


def _items_settle(items: Iterable[ReviewItem], summary: ImportSummary) -> None:
    """Count each touched item's reviews and settle them all (in bulk: one import may touch
    tens of thousands of items)."""
    items = list(items)
    counts = dict(
        Review.objects.filter(item__in=items)
        .values("item_id")
        .annotate(n=Count("pk"))
        .values_list("item_id", "n")
    )
    for item in items:
        item.submitted_count = counts.get(item.pk, 0)
        # An item still waiting for the campaign's own generations is reviewed and settled
        # now: it counts as ready, like an item the import creates (a generation finishing
        # later opens waiting items only, so it leaves this one settled).
        item.ready = True
    rows_update(
        ReviewItem, [(i.pk, {"submitted_count": i.submitted_count, "ready": True}) for i in items]
    )
    summary.items_settled += len(items)
    items_settle(items)


def _unsettled_tasks(bad_lines: set[int], raw_lines: dict[int, dict]) -> set[str] | None:
    """The tasks with a review line that has a problem: their items' disputes are unknown
    until it is fixed. None when such a line names no task (bad JSON, say): any may be."""
    tasks = set()
    for line in bad_lines:
        raw = raw_lines.get(line)
        if raw is not None and raw.get("arbitration") is True:
            continue  # an arbitration record settles no item
        task_id = raw.get("task_id") if raw is not None else None
        if not isinstance(task_id, str):
            return None
        tasks.add(task_id)
    return tasks


@dataclass
class _Replay:
    """What replaying the arbitration records works on: the items the file's reviews are on
    (stored or just created), their outputs and the judges, the import's time, its summary
    and its problems."""

    items_by_key: dict[tuple, ReviewItem]
    stored: _Stored
    now: datetime
    summary: ImportSummary
    errors: list[RecordError]


@dataclass(frozen=True)
class _Decision:
    """One arbitration record, its arbiter and its labels mapped to the item's outputs."""

    rec: Record
    arbiter: object
    out_of: dict


def _write_arbitrations(records: list[Record], replay: _Replay, unsettled: set[str] | None) -> None:
    """Replay arbiters' decisions through the arbitration rules (`resolution_build`): the same
    validation as the arbitration page, and the same final outcome as the original. Problems
    go to `errors`; a record of an `unsettled` task (None: every task) is checked only where
    its item's reviews do not matter, so their problems are not echoed as its own."""
    errors = replay.errors
    for rec in records:
        if unsettled is None or rec.task_id in unsettled:
            _text, problem = note_checked(rec.comment)
            if problem:
                errors.append(RecordError(rec.line, "comment", problem))
            continue
        item = replay.items_by_key.get(rec.item_key)
        if item is None:
            errors.append(RecordError(rec.line, "task_id", "no reviews of this item to arbitrate"))
            continue
        item.refresh_from_db()
        outputs = replay.stored.outputs_by_item[item.pk]
        decision = _Decision(
            rec=rec,
            arbiter=replay.stored.users[rec.judge],
            out_of={label: outputs[rec.models[label]] for label in rec.labels},
        )
        arbitration = Arbitration.objects.filter(item=item).first()
        if item.state == ReviewItem.State.RESOLVED and arbitration is not None:
            _arbitration_again(decision, arbitration, replay)
            continue
        problem = _arbitration_refused(rec, item, arbitration, decision.arbiter)
        if problem is not None:
            errors.append(problem)
            continue
        if _arbitration_resolve(decision, item, arbitration, replay):
            replay.summary.arbitrations_created += 1


def _arbitration_again(decision: _Decision, arbitration: Arbitration, replay: _Replay) -> None:
    """A record of an item already resolved: unchanged when the same arbiter decided the same
    values, else an error."""
    rec, arbiter, out_of = decision.rec, decision.arbiter, decision.out_of
    if arbitration.arbiter_id == arbiter.pk and arbitration.has_values(
        scores={out_of[label]: dims for label, dims in rec.scores.items()},
        preference=str(out_of.get(rec.preference, rec.preference)) if rec.preference else None,
        flags={out_of[label]: f for label, f in rec.flags.items()},
        note=rec.comment,
    ):
        replay.summary.arbitrations_unchanged += 1
    else:
        replay.errors.append(
            RecordError(rec.line, "arbitration", "this item was already arbitrated differently")
        )


def _arbitration_refused(
    rec: Record, item: ReviewItem, arbitration: Arbitration | None, arbiter
) -> RecordError | None:
    """Why the record cannot arbitrate this item: it is not disputed, or the arbiter reviewed
    it. None when it can."""
    if item.state != ReviewItem.State.DISPUTED or arbitration is None:
        return RecordError(
            rec.line, "arbitration", "the reviews of this item agree: nothing to arbitrate"
        )
    if Review.objects.filter(item=item, reviewer=arbiter).exists():
        return RecordError(
            rec.line, "judge", f"{rec.judge} reviewed this item and cannot arbitrate it"
        )
    return None


def _arbitration_resolve(
    decision: _Decision, item: ReviewItem, arbitration: Arbitration, replay: _Replay
) -> bool:
    """Resolve the item's arbitration with the record's decision, as the arbitration page
    would. False (problems in the replay's `errors`) when the rules refuse it."""
    rec, out_of = decision.rec, decision.out_of
    arbitration.order = [out_of[label] for label in rec.labels]
    try:
        final, values = resolution_build(
            arbitration=arbitration,
            resolution=Resolution(
                scores=rec.scores,
                preference=rec.preference,
                flags=rec.flags or None,
                note=rec.comment,
            ),
        )
    except ResolveInvalid as exc:
        for where, message in exc.errors.items():
            replay.errors.append(
                RecordError(rec.line, "comment" if where == "note" else where, message)
            )
        return False
    note = values.pop("note")
    Arbitration.objects.filter(pk=arbitration.pk).update(
        state=Arbitration.State.RESOLVED,
        arbiter=decision.arbiter,
        order=arbitration.order,
        final_values=values,
        note=note,
        resolved_at=rec.submitted_at or replay.now,
        lease_expires_at=None,
    )
    ReviewItem.objects.filter(pk=item.pk).update(final=final, state=ReviewItem.State.RESOLVED)
    return True


def _stored_signatures(item_ids: Iterable[int], outputs_by_item: dict) -> dict:
    name_of_output = {o: name for outs in outputs_by_item.values() for name, o in outs.items()}
    reviews = {r.pk: r for r in Review.objects.filter(item_id__in=item_ids)}
    scores: dict[int, dict] = defaultdict(lambda: defaultdict(dict))
    for review_id, output_id, dim, value in Score.objects.filter(review_id__in=reviews).values_list(
        "review_id", "output_id", "dimension", "value"
    ):
        scores[review_id][name_of_output.get(output_id)][dim] = value
    out = {}
    for r in reviews.values():
        preference = (
            name_of_output.get(r.preferred_output_id)
            if r.preference == Preference.OUTPUT
            else r.preference
        )
        out[(r.item_id, r.reviewer_id)] = review_signature(
            scores=scores.get(r.pk, {}),
            preference=preference or None,
            flags={name_of_output.get(int(o)): f for o, f in (r.flags or {}).items()},
            comment=r.comment,
            order=[name_of_output.get(int(o)) for o in r.presented_order],
        )
    return out
