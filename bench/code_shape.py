"""The shape of the code: app lines, modules, functions by length and parameter count, private
names imported across modules, and import cycles between packages (module-level and
function-level imports alike).

    python bench/code_shape.py [ROOT]        # ROOT defaults to the checkout this file is in

A package is a directory under tasks/ or reviews/ (tasks/generation, reviews/report, ...);
the modules directly in an app form one unit per module, and every `models` module
belongs to its app's models (Django registers them through the app's models.py). Migrations and management commands
are left out of the graph (commands are entry points: they may import anything).
"""

from __future__ import annotations

import ast
import sys
from collections import Counter, defaultdict
from pathlib import Path

APPS = ("tasks", "reviews", "evalsite")


def app_modules(root: Path) -> list[Path]:
    return [
        p for app in APPS for p in sorted((root / app).rglob("*.py")) if "migrations" not in p.parts
    ]


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(root: Path, path: Path) -> str:
    return ".".join(path.relative_to(root).parent.parts)


def unit_of(root: Path, module: str) -> str | None:
    parts = module.split(".")
    if parts[0] not in APPS:
        return None
    if "models" in parts[1:]:  # every models module (and what it defines) is the app's models
        return f"{parts[0]}.models"
    if len(parts) >= 2 and (root / parts[0] / parts[1]).is_dir() and parts[1] != "management":
        return ".".join(parts[:2])
    return module if len(parts) <= 2 else ".".join(parts[:2])


def is_module(root: Path, dotted: str) -> bool:
    """`from package import name` imports a module only where `name` is one (a class named in
    `from tasks.judges.models import Judge` is not the unit tasks.judges)."""
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported(node: ast.AST, here: str) -> list[tuple[str, list[str]]]:
    """(module, names) of one import statement; `here` is the importing module's package, for
    relative imports."""
    if isinstance(node, ast.ImportFrom):
        base = here.split(".")[: len(here.split(".")) - node.level + 1] if node.level else []
        module = ".".join([*base, *([node.module] if node.module else [])])
        return [(module, [a.name for a in node.names])] if module else []
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names]
    return []


def functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
            names = [p.arg for p in params if p.arg not in ("self", "cls")]
            yield node, len(names), node.end_lineno - node.lineno + 1


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def package_graph(root: Path) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in app_modules(root):
        if "management" in path.parts:
            continue
        source = unit_of(root, module_name(root, path))
        for node in ast.walk(ast.parse(path.read_text())):
            for module, names in imported(node, package_of(root, path)):
                submodules = [f"{module}.{n}" for n in names if is_module(root, f"{module}.{n}")]
                for target in [module, *submodules]:
                    unit = unit_of(root, target)
                    if unit and unit != source and unit != target.split(".")[0]:
                        graph[source].add(unit)
    return graph


def private_imports(root: Path) -> list[str]:
    found = []
    for path in app_modules(root):
        for node in ast.walk(ast.parse(path.read_text())):
            for module, names in imported(node, package_of(root, path)):
                if module.split(".")[0] in APPS:
                    found += [f"{module}.{n}" for n in names if n.startswith("_")]
    return found


def shape(root: Path) -> dict:
    modules = app_modules(root)
    lines = {p: len(p.read_text().splitlines()) for p in modules}
    funcs = [f for p in modules for f in functions(ast.parse(p.read_text()))]
    return {
        "app lines": sum(lines.values()),
        "modules": len(modules),
        "top-level modules in tasks/ and reviews/": sum(
            1 for p in modules if p.parent.name in ("tasks", "reviews")
        ),
        "modules over 600 lines": sorted(
            str(p.relative_to(root)) for p, n in lines.items() if n > 600
        ),
        "functions": len(funcs),
        "functions over 50 lines": sum(1 for _, _, n in funcs if n > 50),
        "functions with 6+ parameters": sum(1 for _, k, _ in funcs if k >= 6),
        "parameters histogram": dict(sorted(Counter(min(k, 8) for _, k, _ in funcs).items())),
        "private names imported across modules": private_imports(root),
        "package import cycles": strongly_connected(package_graph(root)),
    }


def main() -> None:
    root = (
        Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    )
    for key, value in shape(root).items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"    {item}")
        else:
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
