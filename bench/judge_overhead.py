#!/usr/bin/env python
"""Per-call overhead of the judge seam (judge_engine/judge.py) versus a bare litellm loop.

Starts the fake judge (tests/fake_judge.py) as its own process with latency L, then, each in a
fresh Python process so neither inherits the other's litellm state, runs N judge calls with C in
flight:

  bare     litellm.acompletion with the same messages and response_format, nothing else
  engine   judge_engine.judge.complete_json (rubric prompt, schema, validation, accounting)
  engine-logged
           the same with litellm's logging left on (ablation: what marking our calls as
           litellm-internal, judge_engine/llm.py, buys)
  scorer   RubricScorer.ascore in the caller's own loop (asyncio.run), as an agent loop scores:
           5 criteria, batched; the direct transport for this OpenAI-compatible server
  scorer-litellm
           the same with JudgeConfig(transport="litellm")

and prints calls/s, efficiency = ideal time (N × L / C) / measured time, and the client
process's CPU time per call (the figure least disturbed by other load on the machine), with the
machine's load average before and after, so figures taken under outside load can be told apart.

    .venv/bin/python bench/judge_overhead.py --calls 2000 --concurrency 32 --latency 0.2

``--before REV`` also runs each mode on ``git archive REV`` (extracted to a temporary folder,
put first on the child's PYTHONPATH), interleaved with this tree's run of the same mode, so a
change is measured before and after side by side under the same load:

    .venv/bin/python bench/judge_overhead.py --modes scorer --before HEAD~1 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITERIA = [(f"c{i}", f'Mentions "word{i}"') for i in range(5)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"fake judge did not start on port {port}")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} CPUs)"


def prompt(i: int) -> list[dict]:
    """The same rubric prompt layout for every mode, built here so the bare mode never imports
    judge_engine (whose import configures litellm)."""
    output = " ".join(f"word{n}" for n in range(5)) + f" (run {i})"
    criteria = "\n".join(f"[{cid}] {text}" for cid, text in CRITERIA)
    user = (
        f"<task>\nTask {i}: list the words.\n</task>\n\n<output>\n{output}\n</output>\n\n"
        f"<criteria>\n{criteria}\n</criteria>"
    )
    return [
        {"role": "system", "content": "You are a strict grader. Give one verdict per criterion."},
        {"role": "user", "content": user},
    ]


def verdict_schema() -> dict:
    item = {
        "type": "object",
        "properties": {
            "criterion_id": {"type": "string", "enum": [cid for cid, _ in CRITERIA]},
            "satisfied": {"type": "boolean"},
            "reasoning": {"type": "string"},
        },
        "required": ["criterion_id", "satisfied", "reasoning"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "verdicts": {"type": "array", "items": item},
            "overall_assessment": {"type": "string"},
        },
        "required": ["verdicts", "overall_assessment"],
        "additionalProperties": False,
    }


async def run_calls(one, calls: int, concurrency: int) -> float:
    sem = asyncio.Semaphore(concurrency)

    async def limited(i: int) -> None:
        async with sem:
            await one(i)

    await asyncio.gather(*(limited(-1 - i) for i in range(concurrency)))  # warm-up: connections
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(limited(i) for i in range(calls)))
    return time.perf_counter() - start, time.process_time() - cpu


def bare_one(url: str):
    import litellm

    schema = verdict_schema()

    async def one(i: int) -> None:
        await litellm.acompletion(
            model="openai/bench-judge",
            messages=prompt(i),
            api_base=url,
            api_key="bench",
            timeout=60,
            response_format={"type": "json_schema", "json_schema": {"name": "v", "schema": schema}},
        )

    return one


def engine_one(url: str, mode: str):
    from judge_engine import JudgeConfig, judge, llm
    from judge_engine.rubric import validate_verdicts

    if mode == "engine-logged":  # ablation only: the bench patching the engine, never the tests
        llm._unlogged = contextlib.nullcontext
    config = JudgeConfig(model="openai/bench-judge", api_base=url, api_key="bench")
    asked = dict(CRITERIA)
    schema = verdict_schema()
    validate = partial(validate_verdicts, asked=asked)

    async def one(i: int) -> None:
        await judge.complete_json(
            config, prompt(i), schema_name="rubric_verdicts", schema=schema, validate=validate
        )

    return one


def scorer_one(url: str, mode: str):
    from judge_engine import JudgeConfig, RubricScorer

    transport = "litellm" if mode == "scorer-litellm" else "auto"
    config = JudgeConfig(
        model="openai/bench-judge", api_base=url, api_key="bench", transport=transport
    )
    scorer = RubricScorer(config, criteria=[text for _, text in CRITERIA])
    output = " ".join(f"word{n}" for n in range(5))

    async def one(i: int) -> None:
        result = await scorer.ascore(task=f"Task {i}: list the words.", output=f"{output} ({i})")
        assert result.passed

    return one


def child(mode: str, url: str, calls: int, concurrency: int, gc_freeze: bool) -> None:
    if mode == "bare":
        one = bare_one(url)
    elif mode.startswith("scorer"):
        one = scorer_one(url, mode)
    else:
        one = engine_one(url, mode)
    if gc_freeze:
        # What a worker can do after its imports: litellm leaves ~400k objects tracked by the
        # cyclic GC, and each full collection then stalls the event loop for ~0.3 s.
        gc.collect()
        gc.freeze()
    elapsed, cpu = asyncio.run(run_calls(one, calls, concurrency))
    if mode == "bare":
        assert "judge_engine" not in sys.modules
    print(elapsed, cpu)


def measure(
    mode: str, url: str, args: argparse.Namespace, tree: Path = ROOT
) -> tuple[float, float]:
    cmd = [sys.executable, __file__, "--child", mode, "--url", url]
    cmd += ["--calls", str(args.calls), "--concurrency", str(args.concurrency)]
    cmd += ["--gc-freeze"] if args.gc_freeze else []
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(tree))
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    elapsed, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(elapsed), float(cpu)


def extract(rev: str) -> Path:
    """`git archive rev` in a temporary folder (left for the OS to clean: it is small)."""
    folder = Path(tempfile.mkdtemp(prefix="judge-overhead-"))
    archive = subprocess.run(
        ["git", "archive", rev], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--modes", default="bare,engine,engine-logged")
    p.add_argument(
        "--repeat", type=int, default=1, help="alternate the modes R times; report medians"
    )
    p.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after imports, every mode")
    p.add_argument("--before", help="also run each mode on this git revision, interleaved")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.url, args.calls, args.concurrency, args.gc_freeze)
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fake_judge",
            "--port",
            str(port),
            "--latency",
            str(args.latency),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        ideal = args.calls * args.latency / args.concurrency
        print(
            f"N={args.calls} calls, C={args.concurrency} in flight, L={args.latency * 1000:.0f} ms, ideal {ideal:.2f} s"
        )
        print(f"load average before: {load_average()}")
        modes = args.modes.split(",")
        trees = {"": ROOT}
        if args.before:
            trees = {f" @{args.before}": extract(args.before), " (this tree)": ROOT}
        runs: dict[str, list[tuple[float, float]]] = {m + t: [] for m in modes for t in trees}
        for _ in range(args.repeat):  # interleaved, so a burst of outside load hits every mode
            for mode in modes:
                for label, tree in trees.items():
                    url = f"http://127.0.0.1:{port}/v1"
                    runs[mode + label].append(measure(mode, url, args, tree))
        for name, measured in runs.items():
            elapsed = statistics.median(e for e, _ in measured)
            cpu = statistics.median(c for _, c in measured)
            print(
                f"{name:>32}: {elapsed:6.2f} s  {args.calls / elapsed:7.1f} calls/s  "
                f"efficiency {ideal / elapsed:.2f}  client CPU {cpu / args.calls * 1000:.2f} ms/call"
            )
        print(f"load average after: {load_average()}")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
