import json
import threading

import pytest
from django.db import connection
from django.test import TestCase, TransactionTestCase

from tasks.intake import services
from tasks.intake.services import TestSetFrozen
from tasks.models import Campaign, Task, TestSet

ROWS = [
    {
        "external_id": "T-1",
        "category": "billing",
        "tier": "base",
        "case_type": "typical",
        "prompt": "Charged twice?",
        "metadata": {"ticket": 1},
    },
    {
        "external_id": "T-2",
        "category": "shipping",
        "tier": "boundary",
        "case_type": "failure",
        "messages": [{"role": "user", "content": "Where is it?"}],
        "checks": {"max_chars": 100},
    },
]


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


class VersioningTests(TestCase):
    def test_it_makes_a_new_version_for_the_same_name(self):
        first = services.testset_import(name="support", data=jsonl(ROWS), filename="a.jsonl")
        changed = [ROWS[0], {**ROWS[1], "tier": "advanced"}]
        second = services.testset_import(name="support", data=jsonl(changed), filename="b.jsonl")
        assert (first.testset.version, second.testset.version) == (1, 2)
        assert first.created and second.created
        assert second.message == "imported support v2: 2 tasks in 2 categories"
        assert second.testset.tasks.get(external_id="T-2").tier == "advanced"
        assert first.testset.tasks.get(external_id="T-2").tier == "boundary"
        assert second.testset.source_filename == "b.jsonl" and second.testset.task_count == 2

    def test_it_recognises_identical_content_and_writes_nothing(self):
        first = services.testset_import(name="support", data=jsonl(ROWS), filename="a.jsonl")
        services.testset_import(name="support", data=jsonl([ROWS[0]]), filename="b.jsonl")
        # Same tasks, different formatting and key order: identical to v1, not a v3.
        reformatted = (
            b"\xef\xbb\xbf"
            + "\r\n".join(json.dumps(dict(reversed(r.items())), indent=None) for r in ROWS).encode()
        )
        again = services.testset_import(name="support", data=reformatted, filename="c.jsonl")
        assert not again.created and again.testset.pk == first.testset.pk
        assert again.message == "identical to support v1; nothing was imported"
        assert TestSet.objects.filter(name="support").count() == 2
        assert Task.objects.count() == 3
        # Another name with the same content is a separate test set.
        other = services.testset_import(name="support-copy", data=jsonl(ROWS))
        assert other.created and other.testset.version == 1

    def test_it_stores_tasks_in_file_order_with_json_fields_intact(self):
        rows = [{**ROWS[0], "external_id": f"T-{i:03d}"} for i in range(30, 0, -1)] + [ROWS[1]]
        result = services.testset_import(name="order", data=jsonl(rows))
        stored = list(
            result.testset.tasks.order_by("position").values_list(
                "external_id", "position", "metadata"
            )
        )
        assert [s[0] for s in stored] == [r["external_id"] for r in rows]
        assert [s[1] for s in stored] == list(range(31)) and stored[0][2] == {"ticket": 1}
        last = result.testset.tasks.get(external_id="T-2")
        assert last.messages == [{"role": "user", "content": "Where is it?"}] and last.checks == {
            "max_chars": 100
        }
        assert Task.objects.filter(testset=result.testset, messages__isnull=True).count() == 30

    def test_it_rejects_a_bad_name_without_writing(self):
        with pytest.raises(services.TestSetImportError) as caught:
            services.testset_import(name="bad name/../x", data=jsonl(ROWS))
        assert caught.value.errors[0].startswith("name: use letters, digits")
        assert TestSet.objects.count() == 0


class DeleteTests(TestCase):
    def test_it_deletes_a_test_set_no_campaign_uses(self):
        ts = services.testset_import(name="support", data=jsonl(ROWS)).testset
        services.testset_delete(testset=ts)
        assert not TestSet.objects.exists() and not Task.objects.exists()

    def test_it_refuses_to_delete_a_frozen_test_set(self):
        ts = services.testset_import(name="support", data=jsonl(ROWS)).testset
        ts.freeze()
        with pytest.raises(TestSetFrozen):
            services.testset_delete(testset=ts)
        assert TestSet.objects.get(pk=ts.pk).frozen and Task.objects.filter(testset=ts).count() == 2

    def test_it_refuses_to_delete_a_test_set_a_campaign_uses_even_if_not_flagged(self):
        ts = services.testset_import(name="support", data=jsonl(ROWS)).testset
        Campaign.objects.create(slug="c1", name="C1", testset=ts)
        with pytest.raises(TestSetFrozen):
            services.testset_delete(testset=ts)
        assert TestSet.objects.filter(pk=ts.pk).exists()


@pytest.mark.postgres
class ConcurrentImportTests(TransactionTestCase):
    """Two uploads of one name at once: both land, as v1 and v2, never a duplicate version."""

    def test_it_gives_concurrent_imports_distinct_versions(self):
        barrier = threading.Barrier(3)
        results, failures = [], []

        def run(i: int) -> None:
            try:
                barrier.wait()
                rows = [{**ROWS[0], "prompt": f"variant {i}"}]
                results.append(
                    services.testset_import(name="race", data=jsonl(rows)).testset.version
                )
            except Exception as exc:  # noqa: BLE001 - reported below
                failures.append(repr(exc))
            finally:
                connection.close()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        assert sorted(results) == [1, 2, 3]
        assert sorted(TestSet.objects.filter(name="race").values_list("version", flat=True)) == [
            1,
            2,
            3,
        ]
        assert Task.objects.filter(testset__name="race").count() == 3
