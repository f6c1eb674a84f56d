"""The documents a newcomer reads: every relative link works, and the README starts as CI expects.

Comments, docstrings and docs say things themselves: a newcomer has neither the product's own
documents outside this repository nor its issue tracker.
"""

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")


def anchors(path: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, -1 on repeats."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_it_has_no_broken_relative_links():
    broken = []
    for doc in DOCS:
        for target in LINK.findall(CODE.sub("", FENCE.sub("", doc.read_text()))):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            if not dest.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_it_starts_the_readme_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    start = text.index("\n## Start\n")
    block = FENCE.search(text, start).group(0).splitlines()[1:-1]
    commands = [line.split("#")[0].strip() for line in block if line.strip()]
    assert commands == ["./dev run", "./dev test"]


def test_it_cites_no_file_outside_the_repository():
    outside = re.compile(r"\b(SPEC|STYLE|STATS|RELIABILITY)\.md\b")
    hits = []
    for folder in ("evalsite", "reviews", "tasks", "tests", "bench", "docs"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".md", ".html"} and path != Path(__file__):
                hits += [f"{path.relative_to(ROOT)}" for _ in outside.finditer(path.read_text())]
    hits += ["README.md" for _ in outside.finditer((ROOT / "README.md").read_text())]
    assert not hits, sorted(set(hits))


# A product document outside the repository, or an issue by its number.
CITATION = re.compile(
    r"\bSPEC\b|\bSTATS\.md\b|\bRELIABILITY\b|\.\./shared\b"
    r"|(?i:\bissues?\s+#?\d+|\(#\d+\)|\b(?:see|fixes|closes)\s+#\d+)"
)
CODE_FOLDERS = ("tasks", "reviews", "evalsite", "bench", "tests")


def prose_of(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a Python module, each with its line number."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    prose = [(tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                prose.append((node.body[0].lineno, docstring))
    return prose


def citations_in(path: Path) -> list[str]:
    """Where a file cites an outside document or an issue: in a Python module's comments and
    docstrings (its code and test data may say what they like), anywhere in any other file."""
    text = path.read_text()
    if not CITATION.search(text):
        return []
    prose = prose_of(text) if path.suffix == ".py" else [(1, text)]
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [f"{where}:{line}: {m.group(0)}" for line, s in prose for m in CITATION.finditer(s)]


def test_it_cites_no_issue_or_outside_document_in_code():
    paths = [p for folder in CODE_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    paths += sorted(ROOT.glob("*.py"))
    paths += [p for p in sorted((ROOT / "templates").rglob("*")) if p.suffix == ".html"]
    paths += [p for p in sorted((ROOT / "static").rglob("*")) if p.suffix in {".js", ".css"}]
    hits = [hit for path in paths for hit in citations_in(path)]
    assert not hits, "\n".join(hits)


def test_it_cites_no_issue_or_outside_document_in_the_docs():
    hits = [hit for doc in DOCS if doc.name != "CHANGELOG.md" for hit in citations_in(doc)]
    assert not hits, "\n".join(hits)


def test_the_citation_check_sees_comments_and_docstrings_only(tmp_path):
    module = tmp_path / "cited.py"
    module.write_text(
        '"""Dispute rules (SPEC workflow 5)."""\n'
        "spec = {'issue': 25}  # the ORM work of issue 23\n"
        "def settle():\n"
        '    """Fixed in (#31)."""\n'
        '    return "issue 7 stays: test data"\n'
    )
    assert [hit.split(": ", 1)[1] for hit in citations_in(module)] == [
        "issue 23",
        "SPEC",
        "(#31)",
    ]


def test_it_keeps_the_benchmarks_page_to_current_figures():
    lines = (ROOT / "docs" / "benchmarks.md").read_text().splitlines()
    assert len(lines) <= 400, f"docs/benchmarks.md has {len(lines)} lines; history goes to git"


# A module a document names by its path: a file (`tasks/monitors/alerts.py`) or a package
# (`reviews/review/`), not "reviews/s" nor a template's path (`templates/reviews/...`).
MODULE_PATH = re.compile(
    r"(?<![\w/.-])((?:tasks|reviews|evalsite)/(?:[\w-]+/)*(?:[\w-]+\.py\b|[\w-]+/))"
)
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The lab notebook records every pass with the module names of its day.
HISTORY = {"benchmarks-history.md"}


def module_paths_in(text: str) -> set[str]:
    return {m.group(1) for m in MODULE_PATH.finditer(text)}


def test_it_names_only_modules_that_exist():
    missing = [
        f"{doc.relative_to(ROOT)}: {path}"
        for doc in GUIDES
        if doc.name not in HISTORY
        for path in sorted(module_paths_in(doc.read_text()))
        if not (ROOT / path).exists()
    ]
    assert not missing, "no such module:\n" + "\n".join(missing)


def test_it_names_modules_by_names_that_exist():
    """A module named without its folder (`build.py`) is still some module of the repository."""
    tops = [d for d in ROOT.iterdir() if d.is_dir() and not d.name.startswith((".", "node_"))]
    names = {p.name for p in ROOT.glob("*.py")} | {p.name for d in tops for p in d.rglob("*.py")}
    bare = re.compile(r"(?<![\w/.*-])([\w-]+\.py)\b")
    missing = [
        f"{doc.relative_to(ROOT)}: {name}"
        for doc in GUIDES
        if doc.name not in HISTORY
        for name in sorted(set(bare.findall(doc.read_text())))
        if name not in names
    ]
    assert not missing, "no module of that name:\n" + "\n".join(missing)


def test_the_module_check_sees_files_and_packages():
    text = (
        "`tasks/monitors/alerts.py` -> reviews/review/ (reviews/review/claim.py); 96 reviews/s,"
        " templates/reviews/review.html, tasks/demo/demo_data/x.jsonl, evalsite/x.pyc"
    )
    assert module_paths_in(text) == {
        "tasks/monitors/alerts.py",
        "reviews/review/",
        "reviews/review/claim.py",
        "tasks/demo/demo_data/",
    }


def test_every_guide_names_the_code_it_describes():
    """Each page of docs/ says under its title which packages it describes ("Code: ...");
    architecture.md is the map of all of them."""
    unnamed = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        head = doc.read_text().split("\n## ", 1)[0]
        if doc.name != "architecture.md" and not re.search(r"^Code: .*`", head, re.M):
            unnamed.append(doc.name)
    assert not unnamed, "no 'Code:' line under the title: " + ", ".join(unnamed)
