"""Benchmark: the review hot path of an older checkout against this one, A/B in the same run.

bench/review_load.py's loop (claim -> review page -> submit, over HTTP against gunicorn, on
PostgreSQL) run on two codes in turn: the old one (--old-root, another git worktree of the
project with its own .venv) and the new one (this checkout). Each code gets its own freshly
built database, `<--database-url>_old` and `<--database-url>_new`, migrated and filled by that
code's own Python (the schemas differ between versions), and its own gunicorn, started with its
own .venv/bin/gunicorn from its own directory; before anything runs, the bench asks each
code's Python, in the server's environment, where it imports `evalsite`, `reviews` and `tasks`
from, and refuses to run if that is not the expected root (an editable install maps the
packages to one folder: the wrong venv would quietly serve the other code). Both servers
share --redis-url: on this path only sessions live there, under random keys.

Both servers stay up, one idle while the other is measured. The machine's speed drifts, so
the runs alternate, round by round, in the order old new, new old, old new, ... (a drift in
one direction favours neither code), with the same reviewers, item counts and durations:

- saturation: --rounds rounds per code of --duration / --rounds seconds each, every reviewer
  back to back; a --ceiling-duration window of the trivial `/healthz?quick` (always on the new
  code's server) before, between and after them, to show how the machine moved;
- steady load: --paced-rounds rounds per code of --paced-duration / --paced-rounds seconds at
  --paced-rate reviews/s, for the latency per step at that load.

Afterwards the invariants are checked on both databases. It prints, per code, reviews/s at
saturation per round and their mean, p50/p95 per step at saturation, p95 per step at the steady
load, the submits' statuses and the violations; then the ratio new/old with the per-round
ratios (round i of the new code against round i of the old), and the budget: new keeps >= 70%
of the old code's reviews/s, 0 violations, p95 per step < 150 ms at the steady load.

    git worktree add --detach ../evalsite-old e60b53c   # then its own .venv (see README)
    .venv/bin/python bench/review_ab.py --old-root ../evalsite-old \\
        --database-url postgres://postgres@127.0.0.1:5432/evalsite_bench_ab \\
        --redis-url redis://127.0.0.1:6379/13

The other options are bench/review_load.py's (--items, --reviewers, --duration, --rounds, ...).
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import review_load as rl

BUDGET_RATIO = 0.70  # the new code keeps at least this share of the old code's reviews/s
BUDGET_P95_MS = 150  # p95 per step at the steady load, for the new code
PROBE = (
    "import json, evalsite, reviews, tasks; "
    "print(json.dumps({m.__name__: m.__file__ for m in (evalsite, reviews, tasks)}))"
)


@dataclass
class Code:
    """One checkout under test: its root, its database, its server, and its runs' figures."""

    name: str
    root: Path
    database_url: str
    env: dict
    port: int = field(default_factory=rl.free_port)
    commit: str = ""
    slug: str = ""
    users: list = field(default_factory=list)
    cookies: dict = field(default_factory=dict)
    server: subprocess.Popen | None = None
    rounds: list[dict] = field(default_factory=list)
    paced: list[dict] = field(default_factory=list)
    brackets: list[float] = field(default_factory=list)  # the ceiling around each round


def describe(root: Path) -> str:
    """The checkout's commit, and whether its tracked files differ from it."""
    head = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return f"{head[:72]}{' (with uncommitted changes)' if dirty else ''}"


def check_imports(code: Code, modules: dict[str, str], who: str) -> None:
    """Refuse to go on unless every module came from the code's own root."""
    print(f"{code.name}: {who} imports (expected under {code.root}):", flush=True)
    for name, path in modules.items():
        print(f"    {name}: {path}")
    wrong = {n: p for n, p in modules.items() if not Path(p).resolve().is_relative_to(code.root)}
    if wrong:
        raise SystemExit(f"{code.name}: {who} imports {wrong} from outside {code.root}; refusing")


def probe(code: Code) -> None:
    """What the server will import: the code's Python, from its root, in the server's env."""
    out = subprocess.run(
        [str(code.root / ".venv/bin/python"), "-c", PROBE],
        cwd=code.root,
        env=code.env,
        capture_output=True,
        text=True,
        check=True,
    )
    check_imports(code, json.loads(out.stdout), "the server's Python")


def build(code: Code, items: int, reviewers: int, redis_url: str) -> None:
    """Recreate the code's database and build the campaign in it with the code's own Python
    (its migrations, its models): this script again, as a child with --build-child."""
    rl.recreate_database(code.database_url)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [
                str(code.root / ".venv/bin/python"),
                str(Path(__file__).resolve()),
                "--build-child",
                out.name,
                "--database-url",
                code.database_url,
                "--redis-url",
                redis_url,
                "--items",
                str(items),
                "--reviewers",
                str(reviewers),
            ],
            cwd=code.root,
            env=code.env,
            check=True,
        )
        built = json.loads(Path(out.name).read_text())
    check_imports(code, built["modules"], "the build")
    code.slug, code.users = built["slug"], [tuple(u) for u in built["users"]]


def build_child(args) -> None:
    """In the child: migrate and fill the database with the code found in the cwd."""
    rl.setup_django(rl.site_env(args.database_url, args.redis_url), root=Path.cwd())
    import evalsite
    import reviews
    import tasks

    slug, users = rl.build(args.items, args.reviewers)
    modules = {m.__name__: m.__file__ for m in (evalsite, reviews, tasks)}
    Path(args.build_child).write_text(
        json.dumps({"slug": slug, "users": users, "modules": modules})
    )


def ceiling(new: Code, seconds: float, ceilings: list[float], ceiling_lat: list[float]) -> None:
    """One window of /healthz?quick on the new code's server: how fast the machine is now."""
    rl.use_server(new.port, new.server)
    rate, lat = rl.run_ceiling(len(new.users), seconds)
    ceilings.append(rate)
    ceiling_lat += lat


def alternate(codes: list[Code], rounds: int) -> list[tuple[Code, int]]:
    """(code, round) in the order old new, new old, old new, ..."""
    order = []
    for n in range(rounds):
        pair = codes if n % 2 == 0 else codes[::-1]
        order += [(code, n) for code in pair]
    return order


def run_all(codes: list[Code], args) -> list[float]:
    """The saturation rounds with ceiling windows between them, then the steady rounds; the
    ceilings, in the order measured."""
    old, new = codes
    ceilings: list[float] = []
    ceiling_lat: list[float] = []
    window = args.ceiling_duration
    if window:
        ceiling(new, window, ceilings, ceiling_lat)
    for code, n in alternate(codes, args.rounds):
        rl.use_server(code.port, code.server)
        print(f"saturation round {n + 1}: {code.name}", flush=True)
        run = rl.run_reviews(code.slug, code.users, code.cookies, args.duration / args.rounds)
        code.rounds.append(run)
        if window:
            ceiling(new, window, ceilings, ceiling_lat)
            code.brackets.append((ceilings[-2] + ceilings[-1]) / 2)
    if args.paced_rate:
        for code, n in alternate(codes, args.paced_rounds):
            rl.use_server(code.port, code.server)
            print(f"steady round {n + 1}: {code.name}", flush=True)
            seconds = args.paced_duration / args.paced_rounds
            run = rl.run_reviews(code.slug, code.users, code.cookies, seconds, args.paced_rate)
            code.paced.append(run)
    return ceilings


def start(codes: list[Code], args) -> None:
    """Each code's server on its own port, and its reviewers logged in there."""
    for code in codes:
        code.server = rl.start_server(
            code.env, args.workers, args.threads, args.app, root=code.root, port=code.port
        )
        rl.use_server(code.port, code.server)
        code.cookies = rl.log_in_all(code.users)


def stop(codes: list[Code]) -> None:
    for code in codes:
        if code.server:
            os.killpg(code.server.pid, signal.SIGTERM)
            code.server.wait(30)


def rate(run: dict) -> float:
    return run["completed"] / run["elapsed"]


def p95s(steps: dict) -> str:
    return " / ".join(f"{rl.pct(v, 95) * 1000:.0f}" for v in steps.values())


def p50_p95(steps: dict) -> str:
    return ", ".join(
        f"{statistics.median(v) * 1000:.0f} / {rl.pct(v, 95) * 1000:.0f}" for v in steps.values()
    )


def statuses(runs: list[dict]) -> dict:
    out: dict = {}
    for run in runs:
        for status, n in run["statuses"].items():
            out[status] = out.get(status, 0) + n
    return dict(sorted(out.items()))


def figures(code: Code) -> dict:
    """What the table shows of one code."""
    sat = rl.merge_runs(code.rounds)
    paced = rl.merge_runs(code.paced) if code.paced else None
    runs = [*code.rounds, *code.paced]
    for run in filter(None, (sat, paced)):
        if not all(run["steps"].values()):
            raise SystemExit(f"{code.name}: no requests completed: {run['errors'][:3]}")
    per_round = [rate(r) for r in code.rounds]
    review_requests = [sum(len(v) for v in r["steps"].values()) / r["elapsed"] for r in code.rounds]
    return {
        "per_round": per_round,
        "mean": statistics.mean(per_round),
        "sat": sat,
        "paced": paced,
        # No ceiling windows (--ceiling-duration 0): no brackets, no ratios.
        "vs_ceiling": [q / c for q, c in zip(review_requests, code.brackets, strict=False)],
        "statuses": statuses(runs),
        "errors": [e for r in runs for e in r["errors"]],
        "retried": sum(r["retried"] for r in runs),
        "gunicorn_ms": sat["cpu"]["gunicorn (Django)"] / sat["completed"] * 1000,
        "postgres_ms": sat["cpu"]["PostgreSQL"] / sat["completed"] * 1000,
    }


def print_table(codes: list[Code], figs: dict[str, dict], args) -> None:
    rows = [
        ("reviews/s at saturation, mean of rounds", lambda f: f"{f['mean']:.1f}"),
        ("reviews/s per round", lambda f: " ".join(f"{r:.1f}" for r in f["per_round"])),
        (
            "reviews in the saturation rounds",
            lambda f: f"{f['sat']['completed']} in {f['sat']['elapsed']:.1f} s",
        ),
        ("p50 / p95 claim, page, submit at saturation (ms)", lambda f: p50_p95(f["sat"]["steps"])),
        (
            "review requests vs /healthz, per round",
            lambda f: " ".join(f"{r:.0%}" for r in f["vs_ceiling"]),
        ),
        ("gunicorn CPU per review at saturation (ms)", lambda f: f"{f['gunicorn_ms']:.1f}"),
        ("PostgreSQL CPU per review (all databases, ms)", lambda f: f"{f['postgres_ms']:.1f}"),
    ]
    if args.paced_rate:
        rows += [
            (
                f"p95 claim / page / submit at a steady {args.paced_rate:g}/s (ms)",
                lambda f: p95s(f["paced"]["steps"]),
            ),
            ("reviews/s achieved at the steady load", lambda f: f"{rate(f['paced']):.1f}"),
        ]
    rows += [
        ("submit statuses (all runs)", lambda f: str(f["statuses"])),
        ("client errors / resent requests", lambda f: f"{len(f['errors'])} / {f['retried']}"),
        ("items fully reviewed (k=2)", lambda f: str(f["full"])),
        ("invariant violations", lambda f: str(len(f["problems"]))),
    ]
    print(f"| | {' | '.join(f'{c.name} ({c.commit.split()[0]})' for c in codes)} |")
    print("|---|" + "---|" * len(codes))
    for label, cell in rows:
        print(f"| {label} | {' | '.join(cell(figs[c.name]) for c in codes)} |")


def print_verdict(figs: dict[str, dict], args) -> None:
    """The ratio new/old, and each budget line met or not."""
    old, new = figs["old"], figs["new"]
    ratio = new["mean"] / old["mean"]
    per_round = [n / o for n, o in zip(new["per_round"], old["per_round"], strict=True)]
    print()
    print(
        f"new/old reviews/s at saturation: {ratio:.1%} (means of the rounds); per round "
        f"{' '.join(f'{r:.0%}' for r in per_round)} (median {statistics.median(per_round):.0%}); "
        f"all reviews over all seconds: {rate(new['sat']) / rate(old['sat']):.1%}"
    )
    lines = [
        (
            f"new keeps >= {BUDGET_RATIO:.0%} of old's reviews/s at saturation",
            ratio >= BUDGET_RATIO,
            f"{ratio:.0%}",
        ),
        (
            "0 invariant violations",
            not old["problems"] and not new["problems"],
            f"old {len(old['problems'])}, new {len(new['problems'])}",
        ),
    ]
    if args.paced_rate:
        worst = max(rl.pct(v, 95) for v in new["paced"]["steps"].values()) * 1000
        lines.append(
            (
                f"new p95 per step < {BUDGET_P95_MS} ms at a steady {args.paced_rate:g} reviews/s",
                worst < BUDGET_P95_MS,
                f"claim / page / submit {p95s(new['paced']['steps'])} ms",
            )
        )
    print()
    for text, met, value in lines:
        print(f"budget: {text}: {'met' if met else 'NOT met'} ({value})")
    for name, f in figs.items():
        for problem in f["problems"]:
            print(f"    {name}: {problem}")
        for error in f["errors"][:5]:
            print(f"    {name}: {error}")


def suffixed(url: str, suffix: str) -> str:
    parsed = urlparse(url)
    return parsed._replace(path=parsed.path + suffix).geturl()


def main() -> None:
    parser = rl.make_parser(__doc__)
    parser.add_argument(
        "--old-root",
        type=Path,
        help="the old code: a checkout of the project (git worktree) with its own .venv",
    )
    parser.add_argument(
        "--paced-rounds",
        type=int,
        default=2,
        help="the steady load per code is cut into this many rounds, alternating like the others",
    )
    parser.add_argument("--build-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_child:
        build_child(args)
        return
    if not args.old_root:
        parser.error("--old-root is required (bench/review_load.py runs one code alone)")
    if args.statements:
        parser.error("--statements: run bench/review_load.py on one code for that")
    codes = [
        Code("old", args.old_root.resolve(), suffixed(args.database_url, "_old"), {}),
        Code("new", rl.ROOT, suffixed(args.database_url, "_new"), {}),
    ]
    if codes[0].root == codes[1].root:
        parser.error("--old-root is this checkout")
    for code in codes:
        if not (code.root / ".venv/bin/gunicorn").exists():
            parser.error(f"{code.root} has no .venv/bin/gunicorn")
        code.env = rl.site_env(code.database_url, args.redis_url)
        code.commit = describe(code.root)
        print(f"{code.name}: {code.root} at {code.commit}; database {code.database_url}")
        probe(code)
    load_before = os.getloadavg()
    for code in codes:
        build(code, args.items, args.reviewers, args.redis_url)
    stop_analyzer = threading.Event()
    try:
        start(codes, args)
        if args.analyze_every:
            for code in codes:
                rl.analyzer(code.database_url, args.analyze_every, stop_analyzer)
        ceilings = run_all(codes, args)
    finally:
        stop_analyzer.set()
        stop(codes)
    report(codes, ceilings, load_before, args)


def report(codes: list[Code], ceilings: list[float], load_before: tuple, args) -> None:
    figs = {}
    for code in codes:
        figs[code.name] = figures(code)
        figs[code.name]["problems"], figs[code.name]["full"] = rl.invariants(code.database_url)
    load_after = os.getloadavg()
    print()
    print(
        f"machine: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} / "
        f"{load_before[1]:.1f} / {load_before[2]:.1f} before, {load_after[0]:.1f} / "
        f"{load_after[1]:.1f} / {load_after[2]:.1f} after; gunicorn {args.workers} workers x "
        f"{args.threads} threads per code; {args.reviewers} reviewers; {args.items} ready items, "
        f"k=2, per code; PostgreSQL {psycopg.connect(codes[1].database_url).info.server_version}; "
        f"sessions {'in Redis + PostgreSQL' if args.redis_url else 'in PostgreSQL'}"
    )
    print(
        f"saturation: {args.rounds} rounds per code of {args.duration / args.rounds:g} s, "
        "alternating old new, new old, ...; "
        + (
            f"steady: {args.paced_rounds} rounds per code of "
            f"{args.paced_duration / args.paced_rounds:g} s at {args.paced_rate:g} reviews/s"
            if args.paced_rate
            else "no steady load"
        )
    )
    if ceilings:
        print(
            f"/healthz?quick ceiling (new code's server), {args.ceiling_duration:g} s windows "
            f"before, between and after the saturation rounds (req/s): "
            + " ".join(f"{c:.0f}" for c in ceilings)
        )
    print()
    print_table(codes, figs, args)
    print_verdict(figs, args)
    if any(f["problems"] or f["errors"] for f in figs.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
