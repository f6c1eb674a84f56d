"""The apps' one direction (docs/decisions/0007): `reviews` may import `tasks`, and no module of
`tasks` imports `reviews`, at module level or inside a function, nor reaches its models by
name. What tasks needs of the review side goes through tasks/review_side.py."""

import ast
import importlib.util
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
        "from reviews.review.readiness import review_items_sync\n"
        "from reviews import services\n"
        "def f():\n"
        "    from reviews.models import ReviewItem\n"
        "    apps.get_model('reviews', 'ReviewItem')\n"
        "    apps.get_model('reviews.ReviewItem')\n"
        "    importlib.import_module('reviews.review')\n"
        "from .reviews_like import x\n"  # a relative import of tasks' own module is fine
        "import reviewsx\n"
    )
    hits = reviews_imports(module, tmp_path)
    assert [h.split(":")[1] for h in hits] == ["1", "2", "3", "4", "6", "7", "8", "9"]


def test_reviews_fills_the_port():
    from tasks import review_side

    declared = set(inspect.signature(review_side.register).parameters)
    assert set(review_side._registered) == declared
    assert all(callable(getattr(review_side, name)) for name in declared)  # each declared


def test_the_port_says_so_when_reviews_has_not_filled_it(monkeypatch):
    from tasks import review_side

    monkeypatch.setattr(review_side, "_registered", {})
    with pytest.raises(review_side.ReviewSideMissing, match=r"ReviewsConfig\.ready"):
        review_side.review_items_open_for(generation_id=1)


# -- packages: one direction between them ---------------------------------------------------------

# The apps whose packages must form a DAG (adding one is one line). A package is a directory of
# an app (tasks/generation); the app's top-level modules are a unit each (tasks/jobs.py), and
# every `models` module belongs to the app's models. The walk is bench/code_shape.py's.
ACYCLIC_APPS = ("tasks", "reviews")


def code_shape():
    spec = importlib.util.spec_from_file_location("code_shape", ROOT / "bench" / "code_shape.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def package_cycles(root: Path = ROOT, apps: tuple[str, ...] = ACYCLIC_APPS) -> list[list[str]]:
    """Each import cycle (module- and function-level imports alike) that passes through a
    package of `apps`, over the whole project's graph (a cycle through evalsite counts)."""
    shape = code_shape()
    cycles = shape.strongly_connected(shape.package_graph(root))
    return [c for c in cycles if any(unit.split(".")[0] in apps for unit in c)]


def test_no_import_cycle_between_packages():
    graph = code_shape().package_graph(ROOT)
    # The walk saw the packages and their edges, those inside functions too.
    assert "tasks.generation" in graph["tasks.campaigns"]
    assert {"reviews.review", "reviews.disputes", "reviews.report"} <= set(graph)
    assert "reviews.disputes" in graph["reviews.review"]
    cycles = package_cycles()
    assert not cycles, "import cycles between packages (docs/architecture.md):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


@pytest.mark.parametrize("app", ["tasks", "reviews", "evalsite"])
def test_no_private_name_crosses_modules_of_an_app(app):
    """The app code's own modules (tests may reach into a module they test)."""
    modules = [p for p in project_modules() if p.parts[len(ROOT.parts)] == app]
    assert ROOT / app / "__init__.py" in modules and len(modules) > 20  # the walk found it
    found = [
        hit
        for other in ("tasks", "reviews", "evalsite")
        for hit in private_imports_from(other, modules)
    ]
    assert not found, f"import public names across modules of {app}:\n" + "\n".join(found)


def test_the_cycle_check_sees_function_level_imports(tmp_path):
    for app in ("tasks", "reviews", "evalsite"):
        (tmp_path / app).mkdir()
    for package in ("low", "high"):
        (tmp_path / "tasks" / package).mkdir()
        (tmp_path / "tasks" / package / "__init__.py").write_text("")
    (tmp_path / "tasks" / "high" / "views.py").write_text("from tasks.low.rows import Row\n")
    (tmp_path / "tasks" / "low" / "rows.py").write_text(
        "class Row: pass\ndef f():\n    from tasks.high import views\n"
    )
    assert package_cycles(tmp_path) == [["tasks.high", "tasks.low"]]
    (tmp_path / "tasks" / "low" / "rows.py").write_text("class Row: pass\n")
    assert package_cycles(tmp_path) == []


# -- the monitors package ------------------------------------------------------------------------

MONITORS = ROOT / "tasks" / "monitors"
MODULES = {f"tasks.monitors.{p.stem}" for p in MONITORS.glob("*.py") if p.stem != "__init__"}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = ROOT) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) for every import of one module, those inside
    functions too; relative imports resolved against the module's package."""
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.append((node.lineno, module, [alias.name for alias in node.names]))
    return found


def private_imports_from(package: str, paths: list[Path], root: Path = ROOT) -> list[str]:
    """file:line for each `_private` name a module imports from another module of `package`
    (a `from package import _module` counts too)."""
    found = []
    for path in paths:
        own = module_name(path, root)
        for line, module, names in imports_of(path, root):
            if module != package and not module.startswith(package + "."):
                continue
            for name in names:
                if name.startswith("_") and not name.startswith("__") and module != own:
                    found.append(f"{path.relative_to(root)}:{line}: {name} from {module}")
    return found


def project_modules() -> list[Path]:
    """Every module of the project: apps, tests, bench, scripts (not the venv, not migrations)."""
    tops = [d for d in ROOT.iterdir() if d.is_dir() and not d.name.startswith((".", "node_"))]
    paths = list(ROOT.glob("*.py")) + [p for top in tops for p in top.rglob("*.py")]
    return sorted(p for p in paths if "migrations" not in p.parts)


def test_no_module_of_monitors_imports_reviews():
    modules = sorted(MONITORS.glob("*.py"))
    assert len(modules) > 15  # the walk found the package
    found = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in modules
        for line, module, _ in imports_of(path)
        if module == "reviews" or module.startswith("reviews.")
    ]
    assert not found, "tasks.monitors must not import reviews:\n" + "\n".join(found)


def test_no_private_name_of_monitors_is_imported_elsewhere():
    modules = project_modules()
    assert MONITORS / "alerts.py" in modules and ROOT / "tasks" / "urls.py" in modules
    found = private_imports_from("tasks.monitors", modules)
    assert not found, "import public names of tasks.monitors only:\n" + "\n".join(found)


def test_the_monitors_package_has_no_import_cycle():
    graph: dict[str, set[str]] = {}
    for path in MONITORS.glob("*.py"):
        edges = graph.setdefault(module_name(path), set())
        for _, module, names in imports_of(path):  # `from . import x` names module x
            edges.update(m for m in [module, *(f"{module}.{n}" for n in names)] if m in MODULES)
    order: list[str] = []
    visiting: list[str] = []

    def visit(node: str) -> None:
        assert node not in visiting, "import cycle: " + " -> ".join(visiting + [node])
        if node in order:
            return
        visiting.append(node)
        for child in sorted(graph[node]):
            visit(child)
        visiting.pop()
        order.append(node)

    for node in sorted(graph):
        visit(node)
    assert "tasks.monitors.runs" in graph["tasks.monitors.grading"]  # the walk saw the edges


def test_the_package_checks_see_every_form(tmp_path):
    package = tmp_path / "tasks" / "monitors"
    package.mkdir(parents=True)
    (package / "a.py").write_text(
        "from .b import _hidden\n"
        "def f():\n"
        "    from ...reviews import models\n"
        "    import reviews.review\n"
        "from . import _module\n"
        "from .b import public\n"
    )
    (package / "b.py").write_text("def _own(): pass\nfrom .b import _own\n")
    outside = tmp_path / "tasks" / "views.py"
    outside.write_text("from .monitors.a import _x\nfrom tasks.monitors import b\n")
    paths = [package / "a.py", package / "b.py", outside]
    hits = private_imports_from("tasks.monitors", paths, tmp_path)
    assert [h.split(":")[:2] for h in hits] == [
        ["tasks/monitors/a.py", "1"],
        ["tasks/monitors/a.py", "5"],
        ["tasks/views.py", "1"],
    ]
    reviews = [m for _, m, _ in imports_of(package / "a.py", tmp_path) if m.startswith("reviews")]
    assert reviews == ["reviews", "reviews.review"]


def test_alerts_queue_a_delivery_under_the_delivery_jobs_registered_name():
    # alerts.py sends the job by name (importing jobs.py would close a circle): a name that
    # drifted from the job's would queue messages no worker runs.
    from evalsite.celery import app
    from tasks.monitors import alerts, jobs

    app.loader.import_default_modules()  # autodiscovery, as a worker does at start
    assert alerts.ALERT_DELIVER_JOB == jobs.alert_deliver_job.name == "tasks.alert_deliver"
    assert app.tasks[alerts.ALERT_DELIVER_JOB].run is jobs.alert_deliver_job.run


def test_generation_sends_its_jobs_under_their_registered_names():
    # The generation services send the generation job and the monitor-run grading job by
    # registered name (the job modules import the services; decision 0009).
    from evalsite.celery import app
    from tasks import jobs as generation_jobs
    from tasks.generation import services
    from tasks.monitors import jobs as monitor_jobs

    app.loader.import_default_modules()  # autodiscovery, as a worker does at start
    assert services.GENERATION_RUN_JOB == generation_jobs.generation_run_job.name
    assert services.MONITOR_RUN_FINISH_JOB == monitor_jobs.monitor_run_finish_job.name
    # (== : a bound job's run is a new bound method at each access)
    assert app.tasks[services.GENERATION_RUN_JOB].run == generation_jobs.generation_run_job.run
    assert app.tasks[services.MONITOR_RUN_FINISH_JOB].run == monitor_jobs.monitor_run_finish_job.run
