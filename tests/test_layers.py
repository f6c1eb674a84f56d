"""The apps' one direction (docs/decisions/0007): `reviews` may import `tasks`, and no module of
`tasks` imports `reviews`, at module level or inside a function, nor reaches its models by
name. What tasks needs of the review side goes through tasks/signals.py and
tasks/review_side.py."""

import ast
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def reviews_imports(path: Path, root: Path = ROOT) -> list[str]:
    """file:line for each import of reviews in one module, and each lookup of a reviews model
    or module by name: apps.get_model("reviews", ...), import_module("reviews...")."""
    found = []
    where = path.relative_to(root)
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args:
            first = node.args[0]
            names = [first.value] if isinstance(first, ast.Constant) else []
            names = [n for n in names if isinstance(n, str) and _by_name(node)]
        else:
            continue
        for name in names:
            if name == "reviews" or name.startswith("reviews."):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def _by_name(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in {"get_model", "get_app_config", "import_module", "__import__"}


def test_no_module_of_tasks_imports_reviews():
    modules = [p for p in sorted((ROOT / "tasks").rglob("*.py")) if "migrations" not in p.parts]
    assert len(modules) > 50  # the walk found the app
    found = [hit for path in modules for hit in reviews_imports(path)]
    assert not found, "tasks must not import reviews (docs/decisions/0007):\n" + "\n".join(found)


def test_the_check_sees_every_form(tmp_path):
    module = tmp_path / "probe.py"
    module.write_text(
        "import reviews\n"
        "import reviews.models as m\n"
        "from reviews.readiness import review_items_sync\n"
        "from reviews import services\n"
        "def f():\n"
        "    from reviews.models import ReviewItem\n"
        "    apps.get_model('reviews', 'ReviewItem')\n"
        "    apps.get_model('reviews.ReviewItem')\n"
        "    importlib.import_module('reviews.services')\n"
        "from .reviews_like import x\n"  # a relative import of tasks' own module is fine
        "import reviewsx\n"
    )
    hits = reviews_imports(module, tmp_path)
    assert [h.split(":")[1] for h in hits] == ["1", "2", "3", "4", "6", "7", "8", "9"]


def test_reviews_fills_the_port_and_receives_the_signals():
    from tasks import review_side, signals

    declared = set(inspect.signature(review_side.register).parameters)
    assert set(review_side._registered) == declared
    assert all(callable(getattr(review_side, name)) for name in declared)  # each declared
    assert signals.outputs_changed.has_listeners() and signals.generation_finished.has_listeners()


def test_the_port_says_so_when_reviews_has_not_filled_it(monkeypatch):
    from tasks import review_side

    monkeypatch.setattr(review_side, "_registered", {})
    with pytest.raises(review_side.ReviewSideMissing, match=r"ReviewsConfig\.ready"):
        review_side.review_items_open_for(generation_id=1)
