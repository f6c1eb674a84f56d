from io import StringIO

from django.test import TestCase

from tasks.demo import testsets as demo
from tasks.models import Task, TestSet
from tests.factories import UserFactory


class DemoTestSetTests(TestCase):
    def test_it_loads_the_support_demo_once_and_covers_every_tier_and_case_type(self):
        admin = UserFactory(username="admin", roles=["admin"])
        out = StringIO()
        first = demo.load({"users": {"admin": admin}}, out)
        second = demo.load({"users": {"admin": admin}}, out)
        assert first["testset"].pk == second["testset"].pk
        assert TestSet.objects.count() == 1 and "(already loaded)" in out.getvalue()
        ts = first["testset"]
        assert (ts.name, ts.version, ts.created_by) == ("support-demo", 1, admin)
        tasks = Task.objects.filter(testset=ts)
        assert tasks.count() >= 10
        assert set(tasks.values_list("tier", flat=True)) == {"base", "advanced", "boundary"}
        assert set(tasks.values_list("case_type", flat=True)) == {"typical", "edge", "failure"}
        assert 3 <= tasks.values("category").distinct().count() <= 4
        assert tasks.filter(messages__isnull=False).count() >= 2
        assert tasks.exclude(checks={}).exists() and tasks.exclude(reference="").exists()
