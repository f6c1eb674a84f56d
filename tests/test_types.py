"""Type hints on every view, service, selector and API module, checked by mypy with django-stubs.

The modules and the rules are `[tool.mypy]` in pyproject.toml; this runs the same check as
`.venv/bin/mypy` from the project folder. mypy keeps its incremental cache in .mypy_cache/, so
a run after a small change rechecks only what the change reaches."""

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parent.parent


def test_it_type_checks_views_services_selectors_and_apis(monkeypatch: pytest.MonkeyPatch):
    # `files` and `cache_dir` in the config are relative to the project folder.
    monkeypatch.chdir(ROOT)
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml")])
    assert status == 0, (
        f"mypy found type errors (run .venv/bin/mypy to see them):\n{stdout}{stderr}"
    )
    assert "no issues found" in stdout
