"""Hand-built campaign frames with tool and conversation tasks, for the report's ``tools`` and
``conversation`` sections (pure: no database). Every figure the tests assert is computed by
hand in docs/statistics.md ("Tool use", "Conversations") or in the test's comments."""

from __future__ import annotations

import pandas as pd

from reviews.report.campaign import CampaignFrames
from tasks.generation.conversation import NOT_AN_OBJECT

RUBRIC = [{"key": "accuracy", "min": 1, "max": 5, "level": "ordinal", "max_gap": 1}]


def call(id_, name="get_order", *, valid=True, unknown=False):
    return {
        "id": id_,
        "name": name,
        "arguments": {"order_id": "A-17"} if valid else None,
        "raw": '{"order_id": "A-17"}' if valid else "{order_id: A-17",
        "valid": valid,
        "unknown": unknown,
    }


def result(id_, name="get_order", *, error="", unmocked=False):
    return {
        "id": id_,
        "name": name,
        "result": None if error else {"status": "shipped"},
        "error": error,
        "unmocked": unmocked,
    }


def step(calls=(), results=(), text=""):
    return {
        "text": text,
        "tool_calls": list(calls),
        "tool_results": list(results),
        "latency_ms": 100,
        "ttft_ms": 20,
        "input_tokens": 50,
        "output_tokens": 10,
        "finish_reason": "tool_calls" if calls else "stop",
    }


def one_turn(*steps_):
    return [
        {
            "turn": 1,
            "user": None,
            "steps": list(steps_),
            "answer": steps_[-1]["text"],
            "finish_reason": "stop",
            "checks_passed": None,
        }
    ]


def conversation(passes: list[bool | None]):
    """One turn per entry; a bool is that turn's checks_passed (None: no turn checks)."""
    return [
        {
            "turn": n,
            "user": f"user message {n}",
            "steps": [step(text=f"answer {n}")],
            "answer": f"answer {n}",
            "finish_reason": "stop",
            **(
                {"checks": {"must_include": {"passed": p}}, "checks_passed": p}
                if p is not None
                else {"checks_passed": None}
            ),
        }
        for n, p in enumerate(passes, start=1)
    ]


class Builder:
    """Accumulates tasks and generations; ``frames()`` gives CampaignFrames."""

    def __init__(self, contenders: list[str]):
        self.contenders = pd.DataFrame(
            {
                "id": range(1, len(contenders) + 1),
                "name": contenders,
                "price_in": 1.0,
                "price_out": 2.0,
            }
        )
        self.ids = dict(zip(contenders, self.contenders["id"], strict=True))
        self.tasks: list[dict] = []
        self.gens: list[dict] = []
        self.items: list[dict] = []
        self.outputs: list[dict] = []

    def task(self, external_id: str, *, tools=0, turns=0, single_turn=False) -> int:
        tid = len(self.tasks) + 1
        self.tasks.append(
            {
                "id": tid,
                "external_id": external_id,
                "category": "support",
                "tier": "base",
                "case_type": "typical",
                "tools": tools,
                "turns": turns,
                "single_turn": single_turn,
            }
        )
        return tid

    def gen(
        self,
        task: int,
        contender: str,
        sample: int,
        *,
        transcript=None,
        checks: dict | None = None,
        latency_ms: float = 500.0,
        single_turn: bool = False,
        status: str = "done",
    ) -> int:
        gid = len(self.gens) + 1
        checks = checks or {}
        self.gens.append(
            {
                "id": gid,
                "task": task,
                "contender": self.ids[contender],
                "sample": sample,
                "status": status,
                "cost": None,
                "input_tokens": 100.0,
                "output_tokens": 20.0,
                "latency_ms": latency_ms,
                "ttft_ms": 50.0,
                "checks_passed": all(checks.values()) if checks else None,
                "check_results": {k: {"passed": v} for k, v in checks.items()},
                "single_turn": single_turn,
                "transcript": transcript or [],
            }
        )
        return gid

    def settled_item(self, task: int, sample: int, scores: dict[int, dict]) -> None:
        """An agreed item of these generations with these final scores ({generation: dims})."""
        iid = len(self.items) + 1
        final = {}
        for gid, dims in scores.items():
            oid = len(self.outputs) + 1
            self.outputs.append({"id": oid, "item": iid, "generation": gid})
            final[str(oid)] = dims
        self.items.append(
            {
                "id": iid,
                "task": task,
                "sample": sample,
                "state": "agreed",
                "ready": True,
                "final": {"scores": final, "preference": None},
                "dispute_reasons": [],
            }
        )

    def frames(self) -> CampaignFrames:
        gens = pd.DataFrame(self.gens)
        for col in ("cost", "input_tokens", "output_tokens", "latency_ms", "ttft_ms"):
            gens[col] = pd.to_numeric(gens[col], errors="coerce").astype(float)
        return CampaignFrames(
            contenders=self.contenders,
            tasks=pd.DataFrame(self.tasks),
            generations=gens,
            items=pd.DataFrame(
                self.items,
                columns=["id", "task", "sample", "state", "ready", "final", "dispute_reasons"],
            ),
            outputs=pd.DataFrame(self.outputs, columns=["id", "item", "generation"]),
            reviews=pd.DataFrame(
                columns=[
                    "id",
                    "item",
                    "reviewer",
                    "preference",
                    "preferred_output",
                    "seconds",
                    "presented_order",
                ]
            ),
            scores=pd.DataFrame(columns=["review", "output", "dimension", "value"]).astype(
                {"value": float}
            ),
        )


def meta(*, samples: int = 2, score_turns=None) -> dict:
    return {
        "slug": "agentic",
        "name": "Agentic",
        "mode": "rubric",
        "rubric": RUBRIC,
        "weights": {},
        "pass_threshold": 0.6,
        "min_quality": None,
        "samples_per_task": samples,
        "reviewed_samples": 1,
        "overlap": 2,
        "score_turns": score_turns,
    }


# ---------------------------------------------------------------------------------------------
# The tool-use fixture (docs/statistics.md, "Tool use": the hand computation)

# (task, sample): (steps, tool check passed, all checks passed, latency ms)
TOOL_PLAN = {
    # T1 order lookup: get_order times out (a mock's error), then succeeds, then the answer
    ("T1", 0): ("recovers", True, True, 1000),
    ("T1", 1): ("recovers", True, False, 1200),  # the tools went right, the answer did not
    # T2 no tool needed: sample 1 calls get_order anyway, and no mock answers it
    ("T2", 0): ("answers", True, True, 300),
    ("T2", 1): ("unmocked", False, False, 900),
    # T3 one call; sample 0 sends arguments that are not JSON
    ("T3", 0): ("bad_json", False, False, 700),
    ("T3", 1): ("one_call", True, True, 800),
    # T4 two calls; T5 one call
    ("T4", 0): ("two_calls", True, True, 1500),
    ("T4", 1): ("two_calls", True, True, 1600),
    ("T5", 0): ("one_call", True, True, 600),
    ("T5", 1): ("one_call", True, True, 650),
}


def tool_transcript(kind: str):
    done = step(text="Your order A-17 shipped today.")
    if kind == "recovers":
        return one_turn(
            step([call("c1")], [result("c1", error="timeout")]),
            step([call("c2")], [result("c2")]),
            done,
        )
    if kind == "answers":
        return one_turn(step(text="Our returns window is 30 days."))
    if kind == "unmocked":
        return one_turn(
            step(
                [call("c1")],
                [result("c1", error="no mocked result for this call", unmocked=True)],
            ),
            done,
        )
    if kind == "bad_json":
        # what the real loop stores for it (tasks/generation/conversation.py): its own refusal, no mock
        return one_turn(step([call("c1", valid=False)], [result("c1", error=NOT_AN_OBJECT)]), done)
    if kind == "one_call":
        return one_turn(step([call("c1")], [result("c1")]), done)
    assert kind == "two_calls"
    return one_turn(
        step([call("c1"), call("c2", "get_tracking")], [result("c1"), result("c2")]), done
    )


def tool_campaign() -> CampaignFrames:
    """'careful' runs the plan above; 'silent' never calls a tool and its tasks have no
    tool_calls check (its rates of nothing are null with a reason). T6 has no tools."""
    b = Builder(["careful", "silent"])
    ids = {t: b.task(t, tools=2) for t in ("T1", "T2", "T3", "T4", "T5")}
    plain = b.task("T6")
    for (task, sample), (kind, tool_ok, all_ok, ms) in TOOL_PLAN.items():
        b.gen(
            ids[task],
            "careful",
            sample,
            transcript=tool_transcript(kind),
            # where the tools went wrong the answer's own check passed: only tool_calls failed
            checks={"tool_calls": tool_ok, "must_include": all_ok or not tool_ok},
            latency_ms=ms,
        )
        b.gen(ids[task], "silent", sample, transcript=tool_transcript("answers"), latency_ms=400)
    for sample in (0, 1):
        b.gen(plain, "careful", sample, checks={"max_chars": True}, latency_ms=99999)
        b.gen(plain, "silent", sample, checks={"max_chars": True}, latency_ms=99999)
    return b.frames()


# ---------------------------------------------------------------------------------------------
# The conversation fixtures (docs/statistics.md, "Conversations")

FIVE_TURNS = 5
FORGETS_AFTER = 3


def turn_campaign(n_tasks: int = 12) -> tuple[CampaignFrames, dict]:
    """Five-turn scripted-user tasks with a turn check at every turn (the constraint stated at
    turn 1 still holds). 'steady' keeps it at every turn; 'forgetful' keeps it up to turn 3 and
    drops it from turn 4, in every sample. Returns (frames, {(task, contender, sample): gen})."""
    b = Builder(["steady", "forgetful"])
    gens = {}
    for t in range(n_tasks):
        tid = b.task(f"C{t + 1:02d}", turns=FIVE_TURNS)
        for sample in (0, 1):
            gens[tid, "steady", sample] = b.gen(
                tid, "steady", sample, transcript=conversation([True] * FIVE_TURNS)
            )
            kept = [n <= FORGETS_AFTER for n in range(1, FIVE_TURNS + 1)]
            gens[tid, "forgetful", sample] = b.gen(
                tid, "forgetful", sample, transcript=conversation(kept)
            )
    return b, gens


# per task: [single-turn sample scores], [conversation sample scores]; a score is the share
# of the task's two checks that pass on the final answer (0, 0.5 or 1)
SINGLE_VS_MULTI = {
    "S1": ([1, 1, 1, 0.5], [1, 0.5, 0.5, 0]),
    "S2": ([1, 1, 1, 1], [1, 1, 0.5, 0.5]),
    "S3": ([1, 0.5, 0.5, 0.5], [0.5, 0, 0, 0]),
}


def _two_checks(score: float) -> dict:
    return {"must_include": score >= 0.5, "max_chars": score >= 1}


def single_multi_campaign() -> CampaignFrames:
    """Three tasks with two turns and a single_turn statement, four samples per regime, for
    'lost'; 'even' scores 1 everywhere. A plain task gives both contenders pass figures."""
    b = Builder(["even", "lost"])
    for external_id, (single, multi) in SINGLE_VS_MULTI.items():
        tid = b.task(external_id, turns=2, single_turn=True)
        for sample, (s, m) in enumerate(zip(single, multi, strict=True)):
            b.gen(
                tid,
                "lost",
                sample,
                single_turn=True,
                checks=_two_checks(s),
                transcript=conversation([None]),
            )
            b.gen(tid, "lost", sample, checks=_two_checks(m), transcript=conversation([None, None]))
            b.gen(
                tid,
                "even",
                sample,
                single_turn=True,
                checks=_two_checks(1),
                transcript=conversation([None]),
            )
            b.gen(tid, "even", sample, checks=_two_checks(1), transcript=conversation([None, None]))
    return b.frames()
