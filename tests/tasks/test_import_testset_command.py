import json
import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase, override_settings

from tasks.models import Task, TestSet

GOOD = [
    {
        "external_id": "T-1",
        "category": "billing",
        "tier": "base",
        "case_type": "typical",
        "prompt": "Charged twice?",
    },
    {
        "external_id": "T-2",
        "category": "billing",
        "tier": "advanced",
        "case_type": "edge",
        "prompt": "Refund in cash?",
    },
    {
        "external_id": "T-3",
        "category": "shipping",
        "tier": "boundary",
        "case_type": "failure",
        "prompt": "Ship to Mars?",
    },
]


class ImportTestsetCommandTests(TestCase):
    def setUp(self):
        import tempfile

        self.dir = Path(tempfile.mkdtemp())

    def write(self, name: str, content: str | bytes) -> str:
        path = self.dir / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return str(path)

    def run_cli(self, *argv: str) -> tuple[int, str, str]:
        """call_command, mapped to what `manage.py` would exit with (CommandError -> its returncode)."""
        out, err = StringIO(), StringIO()
        try:
            call_command(*argv, stdout=out, stderr=err)
        except CommandError as exc:
            err.write(f"CommandError: {exc}\n")
            return exc.returncode, out.getvalue(), err.getvalue()
        return 0, out.getvalue(), err.getvalue()

    def test_it_imports_and_prints_a_summary_with_exit_code_0(self):
        path = self.write("support.jsonl", "".join(json.dumps(r) + "\n" for r in GOOD))
        code, out, err = self.run_cli("import_testset", path, "--name", "support-v3")
        assert code == 0, err
        assert "Imported support-v3 v1: 3 tasks, 2 categories" in out
        assert "tier:      advanced 1, base 1, boundary 1" in out
        assert "category:  billing 2, shipping 1" in out
        assert TestSet.objects.get(name="support-v3").task_count == 3

    def test_it_counts_one_task_and_one_category_in_the_singular(self):
        path = self.write("one.jsonl", json.dumps(GOOD[0]) + "\n")
        code, out, err = self.run_cli("import_testset", path, "--name", "one")
        assert code == 0, err
        assert "Imported one v1: 1 task, 1 category, checksum" in out

    def test_it_says_when_the_content_is_identical_and_exits_0(self):
        path = self.write("support.jsonl", "".join(json.dumps(r) + "\n" for r in GOOD))
        call_command("import_testset", path, "--name", "s", stdout=StringIO())
        code, out, _ = self.run_cli("import_testset", path, "--name", "s")
        assert code == 0
        assert "support.jsonl is identical to s v1; nothing was imported." in out
        assert TestSet.objects.count() == 1

    def test_it_prints_every_row_error_on_stderr_and_exits_non_zero(self):
        csv = (
            "external_id,category,tier,case_type,prompt\n"
            "T-1,billing,base,typical,ok\n"
            "T-2,billing,expert,typical,bad tier\n"
            "T-1,billing,base,weird,dup and bad case\n"
        )
        path = self.write("set.csv", csv)
        code, out, err = self.run_cli("import_testset", path, "--name", "s")
        assert code == 1
        assert "line 3, field tier: unknown value 'expert'" in err
        assert "line 4, field case_type: unknown value 'weird'" in err
        assert "line 4, field external_id: duplicate 'T-1' (first used on line 2)" in err
        assert "set.csv: 3 problems; nothing was imported." in err
        assert "Imported" not in out
        assert not TestSet.objects.exists() and not Task.objects.exists()

    @override_settings(TESTSET_MAX_BYTES=100)
    def test_it_refuses_an_oversize_file_before_reading_it(self):
        path = self.write("big.jsonl", "".join(json.dumps(r) + "\n" for r in GOOD))
        with pytest.raises(CommandError, match="1 problem; nothing was imported"):
            call_command(
                "import_testset", path, "--name", "s", stdout=StringIO(), stderr=StringIO()
            )
        assert not TestSet.objects.exists()

    def test_it_reports_a_missing_file(self):
        code, _, err = self.run_cli("import_testset", str(self.dir / "nope.jsonl"), "--name", "s")
        assert code == 1 and "cannot read" in err and "No such file" in err

    def test_it_rejects_a_directory_with_one_line(self):
        code, out, err = self.run_cli("import_testset", str(self.dir), "--name", "s")
        assert (code, out) == (1, "")
        assert err == f"CommandError: cannot read {self.dir}: Is a directory\n"


def test_the_real_command_exits_0_on_success_and_1_with_row_errors_on_stderr(tmp_path):
    """The whole `python manage.py import_testset` process, on a fresh SQLite database."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env["EVALSITE_DATA_DIR"] = str(tmp_path / "data")

    def manage(*args):
        return subprocess.run(
            [sys.executable, str(root / "manage.py"), *args],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert manage("migrate", "-v0").returncode == 0
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in GOOD))
    ok = manage("import_testset", str(good), "--name", "support")
    assert ok.returncode == 0, ok.stderr
    assert "Imported support v1: 3 tasks, 2 categories" in ok.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(GOOD[0]) + "\n" + '{"external_id": "T-2", "tier": NaN}\n')
    failed = manage("import_testset", str(bad), "--name", "support")
    assert failed.returncode == 1
    assert "line 2, field (json): NaN is not valid JSON" in failed.stderr
    assert "bad.jsonl: 1 problem; nothing was imported." in failed.stderr
    again = manage("import_testset", str(good), "--name", "support")
    assert again.returncode == 0 and "identical to support v1" in again.stdout
