"""Benchmark: generation throughput on real Celery workers against an endpoint with fixed latency.

A local OpenAI-compatible endpoint (tests/fake_llm.py, streaming) answers every request after a
fixed 200 ms. One contender with a concurrency limit of 16 can therefore finish at most
16 / 0.2 s = 80 generations per second. The bench queues 2,000 generations (1,000 tasks x 2
samples, plus an imported second contender so review items are built as rows finish, as in
a real campaign) and times enqueue -> last row done on real worker processes over Redis and
PostgreSQL. Reported: throughput as a fraction of 80/s (target >= 85%), the largest number of
concurrent requests the endpoint saw (must be <= 16), latency/TTFT percentiles.

    createdb -h 127.0.0.1 -U postgres evalsite_bench   # once
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite_bench REDIS_URL=redis://127.0.0.1:6379/2 \\
        .venv/bin/python bench/generation.py [--pool threads|prefork] [--concurrency 20] [--workers 1]

The recommended worker shape is `--pool threads --concurrency 10 --workers 2`: the limit of 16
plus 2 spare threads per process, which wait at the claim for the next free slot.

`--tools 3`: every task is a tool task of 3 model calls (get_order, then refund, then the
answer; each call answered from the task's mocks, the transcript kept), so the endpoint-bound
rate is 16 / (3 x 0.2 s) = 26.7 generations/s, and the endpoint sees 3 calls per generation.

`--images 300`: 300 image tasks (a text part and a 640 x 400 PNG chart, one of 20, uploaded as
a zip through the real intake: decoded, re-encoded, stored) x 3 contenders (two
OpenAI-compatible, one Anthropic: image_url data URLs and base64 image blocks, every request
carrying its image), each limited to 16 / 3 = 5 concurrent calls so the three together are held
to the same endpoint: bound 3 x 5 / 0.2 s = 75 generations/s.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from evalsite.celery import app  # noqa: E402
from reviews.models import ReviewItem  # noqa: E402
from tasks.campaigns.definition import campaign_create  # noqa: E402
from tasks.generation.outputs_import import outputs_import  # noqa: E402
from tasks.generation.services import generation_enqueue  # noqa: E402
from tasks.models import Campaign, Contender, Generation, Task, TestSet  # noqa: E402
from tests.fake_llm import FakeLLM  # noqa: E402

LATENCY = 0.2
LIMIT = 16
MODEL = "m-endpoint"  # a model name the campaign's slug does not contain (slugs are not masked)
ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
TOOLS = [
    {"name": "get_order", "description": "Look an order up.", "parameters": ORDER},
    {"name": "refund", "description": "Refund an order.", "parameters": ORDER},
]
MOCKS = [
    {"tool": "get_order", "result": {"status": "delivered", "total": 42}},
    {"tool": "refund", "result": {"refunded": True}},
]


def fresh_testset(name: str, tasks: int, fields=lambda i: {}) -> TestSet:
    """Test set `name` of `tasks` tasks, after removing the campaigns, contenders and test set
    an earlier run named with that prefix (each run makes its own: the endpoint's port
    changes). `fields(i)`: task i's other fields."""
    for old in Campaign.objects.filter(slug__startswith=name):
        ReviewItem.objects.filter(campaign=old).delete()
        Generation.objects.filter(campaign=old).delete()
        old.delete()
    Contender.objects.filter(name__startswith=name).delete()
    TestSet.objects.filter(name=name).delete()
    ts = TestSet.objects.create(name=name, checksum="0" * 64, task_count=tasks)
    Task.objects.bulk_create(
        [
            Task(
                testset=ts,
                position=i,
                **{"external_id": f"T-{i}", "prompt": f"Question {i}?", **fields(i)},
            )
            for i in range(tasks)
        ]
    )
    return ts


def tool_script(steps: int):
    """The endpoint's replies for a tool task: a tool call per step, then the answer."""
    names = [TOOLS[i % len(TOOLS)]["name"] for i in range(steps - 1)]

    def reply(request):
        if request.step < steps:
            order = request.last_user.split()[-1].rstrip("?")
            return {
                "tool_calls": [{"name": names[request.step - 1], "arguments": {"order_id": order}}]
            }
        return f"Order {request.last_user.split()[-1].rstrip('?')} is refunded."

    return reply


def setup(fake: FakeLLM, tasks: int, samples: int, steps: int) -> Campaign:
    tools = {"tools": TOOLS, "tool_mocks": MOCKS, "max_steps": steps} if steps else {}
    checks = {"max_chars": 200}
    if steps:
        checks["tool_calls"] = {"called": ["get_order"], "valid_args": True}
    fresh_testset(
        "bench-gen",
        tasks,
        lambda i: {
            "external_id": f"B-{i}",
            "category": f"cat-{i % 5}",
            "checks": checks,
            "prompt": f"Please refund order A-{i}?" if steps else f"Question {i}?",
            **tools,
        },
    )
    campaign, _ = campaign_create(
        definition={
            "slug": f"bench-gen-{int(time.time())}",
            "testset": "bench-gen",
            "samples_per_task": samples,
            "mode": "both",
            "rubric": [{"key": "accuracy"}],
            "contenders": [
                {
                    "name": f"bench-gen-endpoint-{fake.base_url.rsplit(':', 1)[1].split('/')[0]}",
                    "provider": "openai",
                    "base_url": fake.base_url,
                    "model": MODEL,
                    "max_concurrency": LIMIT,
                    "params": {"max_tokens": 64, "seed": 1},
                    "price_in_per_mtok": 0.1,
                    "price_out_per_mtok": 0.4,
                },
                {"name": f"bench-gen-imported-{int(time.time())}", "provider": "imported"},
            ],
        }
    )
    imported = campaign.contenders.get(provider="imported")
    lines = "\n".join(
        f'{{"task_id": "B-{i}", "sample": 0, "output": "imported answer {i}"}}'
        for i in range(tasks)
    )
    outputs_import(campaign=campaign, contender_name=imported.name, raw=lines.encode())
    return campaign


IMAGE_LIMIT = LIMIT // 3  # per contender: three contenders share the endpoint's 16
IMAGE_MODELS = ("m-vision-1", "m-vision-2", "m-vision-3")


def chart_png(n: int) -> bytes:
    """A bar chart (640 x 400): what a chart question shows the model."""
    import io

    from PIL import Image, ImageDraw

    image = Image.new("RGB", (640, 400), "white")
    draw = ImageDraw.Draw(image)
    for bar in range(6):
        height = 40 + (n * 37 + bar * 53) % 300
        draw.rectangle([40 + bar * 95, 380 - height, 110 + bar * 95, 380], fill=(30, 90, 200))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def setup_images(fake: FakeLLM, tasks: int) -> Campaign:
    import io
    import json
    import zipfile

    from tasks.intake.services import testset_import

    for old in Campaign.objects.filter(slug__startswith="bench-img"):
        ReviewItem.objects.filter(campaign=old).delete()
        Generation.objects.filter(campaign=old).delete()
        old.delete()
    Contender.objects.filter(name__startswith="bench-img").delete()
    TestSet.objects.filter(name="bench-img").delete()
    rows = [
        {
            "external_id": f"I-{i}",
            "category": f"chart-{i % 5}",
            "tier": "base",
            "case_type": "typical",
            "checks": {"max_chars": 200},
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"Chart {i}: which bar is tallest?"},
                        {"type": "image", "path": f"charts/{i % 20}.png"},
                    ],
                }
            ],
        }
        for i in range(tasks)
    ]
    bundle = io.BytesIO()
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("tasks.jsonl", "\n".join(json.dumps(r) for r in rows))
        for n in range(20):
            archive.writestr(f"charts/{n}.png", chart_png(n))
    started = time.monotonic()
    testset_import(name="bench-img", data=bundle.getvalue(), filename="bench-img.zip")
    print(f"intake of {tasks} image tasks (20 charts): {time.monotonic() - started:.1f} s")
    stamp = int(time.time())
    contenders = [
        {
            "name": f"bench-img-{n}-{stamp}",
            "provider": "anthropic" if n == 2 else "openai",
            "base_url": fake.base_url,
            "model": model,
            "max_concurrency": IMAGE_LIMIT,
            "params": {"max_tokens": 64},
            "price_in_per_mtok": 0.1,
            "price_out_per_mtok": 0.4,
        }
        for n, model in enumerate(IMAGE_MODELS)
    ]
    campaign, _ = campaign_create(
        definition={
            "slug": f"bench-img-{stamp}",
            "testset": "bench-img",
            "mode": "both",
            "rubric": [{"key": "accuracy"}],
            "contenders": contenders,
        }
    )
    return campaign


def start_workers(n: int, pool: str, concurrency: int, prefetch: int) -> list[subprocess.Popen]:
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "LOG_LEVEL": "WARNING",
    }
    procs = []
    for i in range(n):
        args = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "evalsite",
            "worker",
            "--pool",
            pool,
            "--concurrency",
            str(concurrency),
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--prefetch-multiplier",
            str(prefetch),
            "-n",
            f"bench{i}@%h",
        ]
        procs.append(
            subprocess.Popen(
                args,
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
    # Wait until every worker answers a ping.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=1.0) or []
        if len(replies) >= n:
            return procs
    raise SystemExit("workers did not come up")


def stop_workers(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each worker's process group (start_workers makes one each), then wait."""
    for proc in procs:
        os.killpg(proc.pid, 15)
    for proc in procs:
        proc.wait(30)


def session_cpu_seconds(sessions: set[int]) -> float:
    """CPU time used so far by every process in the given sessions (the workers and their children)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) in sessions:  # field 6 of stat: the session id
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def pct(values: list[int], p: float) -> int:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--pool", default="threads", choices=["threads", "prefork"])
    parser.add_argument(
        "--concurrency", type=int, default=20, help="worker slots per worker process"
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--latency", type=float, default=LATENCY, help="endpoint latency in seconds"
    )
    parser.add_argument("--prefetch", type=int, default=1, help="worker --prefetch-multiplier")
    parser.add_argument(
        "--tools",
        type=int,
        default=0,
        metavar="STEPS",
        help="tool tasks of STEPS model calls each (STEPS - 1 tool calls, then the answer)",
    )
    parser.add_argument(
        "--images",
        type=int,
        default=0,
        metavar="TASKS",
        help="TASKS image tasks x 3 contenders sharing the endpoint (see the module's text)",
    )
    args = parser.parse_args()
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise SystemExit("set DATABASE_URL (PostgreSQL) and REDIS_URL")
    call_command("migrate", verbosity=0)
    app.control.purge()
    fake = FakeLLM(latency=args.latency)
    # Answers that name no model: one that did would be held for an admin (identity hold).
    models = IMAGE_MODELS if args.images else (MODEL,)
    for model in models:
        fake.rewrite(model, lambda answer, m=model: answer.replace(f"{m} answers", "The answer"))
    if args.tools:
        fake.respond(MODEL, tool_script(args.tools))
    if args.images:
        campaign = setup_images(fake, args.images)
    else:
        campaign = setup(fake, args.tasks, args.samples, args.tools)
    target = campaign.generations.exclude(contender__provider="imported")
    total = target.count()
    procs = start_workers(args.workers, args.pool, args.concurrency, args.prefetch)
    sessions = {proc.pid for proc in procs}
    try:
        cpu_before = session_cpu_seconds(sessions)
        own_before = time.process_time()  # this process: the endpoint emulator (and polling)
        load_before = os.getloadavg()[0]
        started = time.monotonic()
        generation_enqueue(campaign=campaign)
        while True:
            finished = target.filter(status__in=["done", "failed"]).count()
            if finished >= total:
                break
            if time.monotonic() - started > 600:
                raise SystemExit(f"gave up: {finished}/{total} after 600 s")
            time.sleep(0.25)
        elapsed = time.monotonic() - started
        worker_cpu = session_cpu_seconds(sessions) - cpu_before
        endpoint_cpu = time.process_time() - own_before
        load_after = os.getloadavg()[0]
    finally:
        stop_workers(procs)
        fake.close()
    done = target.filter(status="done")
    latencies = list(done.values_list("latency_ms", flat=True))
    ttfts = list(done.values_list("ttft_ms", flat=True))
    calls = max(args.tools, 1)  # model calls per generation
    limit = IMAGE_LIMIT * len(IMAGE_MODELS) if args.images else LIMIT
    bound = limit / (args.latency * calls) if args.latency else float("inf")
    rate = total / elapsed
    print(
        f"pool={args.pool} workers={args.workers} x concurrency={args.concurrency} "
        f"prefetch={args.prefetch}; "
        f"{total} generations ({done.count()} done, {target.filter(status='failed').count()} failed)"
    )
    print(
        f"elapsed {elapsed:.1f} s -> {rate:.1f}/s = {rate / bound:.1%} of the {bound:.0f}/s endpoint bound"
    )
    if args.images:
        seen = [
            sum(1 for part in c["body"]["messages"][0]["content"] if part["type"] != "text")
            for c in fake.calls
        ]
        print(
            f"image requests: {sum(seen)} images in {len(seen)} calls; most concurrent per "
            f"contender {', '.join(str(fake.max_active[m]) for m in IMAGE_MODELS)} (limit "
            f"{IMAGE_LIMIT} each); answers naming the image "
            f"{done.filter(output__endswith='[1 image]').count()} of {done.count()}"
        )
    print(
        f"endpoint saw at most {max(fake.max_active[m] for m in models)} concurrent requests "
        f"per contender (limit {limit if not args.images else IMAGE_LIMIT}); "
        f"provider calls {len(fake.calls)} ({calls} per generation: {total * calls} expected); "
        f"retries {sum(target.values_list('retries', flat=True))}"
    )
    if args.tools:
        steps = [
            sum(len(t["steps"]) for t in tr) for tr in done.values_list("transcript", flat=True)
        ]
        passed = done.filter(checks_passed=True).count()
        print(
            f"tool tasks: {args.tools} model calls each; steps per transcript "
            f"{min(steps)}-{max(steps)}; checks passed {passed} of {done.count()}"
        )
    print(
        f"latency ms p50 {pct(latencies, 50)} p95 {pct(latencies, 95)} max {max(latencies)}; "
        f"TTFT ms p50 {pct(ttfts, 50)} mean {statistics.mean(ttfts):.0f}"
    )
    print(
        f"worker CPU {worker_cpu:.1f} s = {worker_cpu / total * 1000:.1f} ms per generation "
        f"(endpoint emulator {endpoint_cpu / total * 1000:.1f} ms); "
        f"machine load average {load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} cores"
    )
    print(
        f"review items ready: {campaign.items.filter(ready=True).count()} of {campaign.items.count()}"
    )


if __name__ == "__main__":
    main()
