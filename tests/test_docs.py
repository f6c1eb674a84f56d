"""The documents a newcomer reads: every relative link works, and the README starts as CI expects."""

import re
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
