"""The `evalsite` command line against the live test server with a real worker and the fake
judge: each command and its exit codes (0 ok, 1 failed result or gate, 2 usage or input
error, 3 unavailable or still judging), in-process through ``main([...])`` and once as the
installed console script in a subprocess."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from evalsite_client import Client
from evalsite_client.cli import main
from evalsite_client.cli.commands import ago
from evalsite_client.gate import BULK_CHUNK

from tests.clients.pyclient import NOT_PASSING, PASSING, TASK, cli_env


@pytest.fixture
def env(live_server, api_key, monkeypatch):
    for name, value in cli_env(live_server, api_key).items():
        monkeypatch.setenv(name, value)
    return cli_env(live_server, api_key)


@pytest.fixture
def client(env):
    with Client() as c:
        yield c


def payload(output: str, **fields) -> dict:
    return {
        "agent": "cli",
        "input": {"messages": [{"role": "user", "content": TASK}]},
        "output": output,
    } | fields


def write_jsonl(path: Path, runs: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return str(path)


# --- score ----------------------------------------------------------------------------------------


def test_score_exits_0_on_a_pass_and_1_on_a_fail(env, worker, make_rubric, tmp_path, capsys):
    make_rubric()
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(payload(PASSING)))
    bad.write_text(json.dumps(payload(NOT_PASSING)))

    assert main(["score", str(good), "--rubric", "support-quality", "--wait", "60"]) == 0
    assert "PASSED" in capsys.readouterr().out
    assert main(["score", str(bad), "--rubric", "support-quality", "--wait", "60", "--json"]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert (answer["status"], answer["passed"]) == ("succeeded", False)


def test_score_with_inline_criteria_from_stdin(env, worker, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(json.dumps(payload(PASSING))))

    assert main(["score", "-", "--criteria", '- Mentions "refund"', "--wait", "60"]) == 0
    assert 'c1 [required] Mentions "refund"' in capsys.readouterr().out


def test_a_stored_score_is_printed_as_stored_with_its_version_and_fresh_re_judges(
    env, worker, make_rubric, tmp_path, capsys
):
    from rubrics.services import rubric_set_criteria

    rubric = make_rubric()
    run = tmp_path / "run.json"
    run.write_text(json.dumps(payload(PASSING, external_id="cli-fresh")))
    args = ["score", str(run), "--rubric", "support-quality", "--wait", "60"]
    assert main(args) == 0
    assert "stored" not in capsys.readouterr().out
    rubric_set_criteria(rubric=rubric, criteria=[{"description": 'Mentions "voucher"'}])

    assert main(args) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert re.match(
        r"PASSED \(stored result from version 1, judged \d+ (s|min) ago; --fresh to re-judge\)",
        first_line,
    ), first_line

    assert main([*args, "--fresh"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("NOT PASSED  score") and "stored" not in out
    assert 'Mentions "voucher"' in out


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(0, "0 s ago"), (59, "59 s ago"), (60, "1 min ago"), (3 * 3600 + 5, "3 h ago"),
     (2 * 86400, "2 d ago")],
)  # fmt: skip
def test_how_long_ago_a_result_was_judged_is_said_coarsely(seconds, said):
    now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    stamp = (now - timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")
    assert ago(stamp, now) == said


def test_a_score_still_judging_exits_3_with_the_evaluation_ids(
    env, worker, make_rubric, tmp_path, capsys
):
    make_rubric()
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(payload(PASSING + " [[latency:3]]")))

    assert main(["score", str(slow), "--rubric", "support-quality", "--wait", "0.3"]) == 3
    err = capsys.readouterr().err
    assert "still judging (not a pass): evaluations " in err


def test_a_score_over_the_judge_budget_exits_3_saying_when_it_resumes(
    env, worker, team, make_rubric, tmp_path, capsys
):
    from judging.services.budget import budget_update

    make_rubric()
    budget_update(team=team, monthly_usd=0)
    run = tmp_path / "run.json"
    run.write_text(json.dumps(payload(PASSING)))

    assert main(["score", str(run), "--rubric", "support-quality", "--wait", "30"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("Waiting for budget — resumes when the budget is raised: ")
    assert "not a pass" in err


def test_an_unknown_rubric_exits_2_printing_the_apis_message_and_field(env, team, tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(payload(PASSING)))

    assert main(["score", str(run), "--rubric", "nope"]) == 2
    err = capsys.readouterr().err
    assert "error (422): invalid input\n  field rubric: " in err


def test_usage_errors_exit_2(env, team, tmp_path, capsys):
    assert main(["score", str(tmp_path / "missing.json"), "--rubric", "x"]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["gate", "--rubric", "x", "--golden"]) == 2  # no threshold
    assert "--min-pass-rate" in capsys.readouterr().err
    assert main(["gate", "--rubric", "x", "--golden", "--min-pass-rate", "120%"]) == 2
    assert main(["frobnicate"]) == 2


def test_no_url_is_a_usage_error_naming_the_variable(monkeypatch, capsys):
    monkeypatch.delenv("EVALSITE_URL", raising=False)
    assert main(["export"]) == 2
    assert "EVALSITE_URL" in capsys.readouterr().err


# --- runs push and export -------------------------------------------------------------------------


def test_runs_push_sends_jsonl_in_bulk_chunks_with_a_progress_bar_and_export_reads_them_back(
    env, team, make_rubric, client, tmp_path, capsys
):
    make_rubric()
    runs = [payload(PASSING, external_id=f"push-{i}") for i in range(5)]
    path = write_jsonl(tmp_path / "runs.jsonl", runs)

    code = main(["runs", "push", path, "--rubric", "support-quality", "--chunk", "2", "--progress"])
    out = capsys.readouterr()
    assert code == 0 and "pushed 5 runs: 5 created, 0 already stored" in out.out
    assert "pushing runs [" in out.err and "5/5 100%" in out.err
    assert main(["runs", "push", path, "--rubric", "support-quality", "--json"]) == 0  # again
    assert json.loads(capsys.readouterr().out) == {"runs": 5, "created": 0, "existing": 5}

    exported = tmp_path / "out.jsonl"
    assert main(["export", "--agent", "cli", "--limit", "3", "--full", "-o", str(exported)]) == 0
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(lines) == 3 and {r["external_id"] for r in lines} <= {f"push-{i}" for i in range(5)}
    assert all(r["rubric"] for r in lines) and "steps" in lines[0]
    assert main(["export", "-q", "push-3"]) == 0
    assert [json.loads(x)["external_id"] for x in capsys.readouterr().out.splitlines()] == [
        "push-3"
    ]


def test_runs_push_reports_a_bad_line_by_its_line_number_and_exits_2(env, team, tmp_path, capsys):
    path = tmp_path / "runs.jsonl"
    path.write_text(
        json.dumps(payload(PASSING))
        + "\n\n"
        + json.dumps(payload(PASSING, input={"messages": [{"role": "robot", "content": "hi"}]}))
        + "\n"
    )

    assert main(["runs", "push", path.as_posix()]) == 2
    err = capsys.readouterr().err
    assert "nothing was stored" in err and "field line 3 input.messages[0].role:" in err

    path.write_text("{not json\n")
    assert main(["runs", "push", path.as_posix()]) == 2
    assert "line 1: not JSON" in capsys.readouterr().err


# --- rescore --------------------------------------------------------------------------------------


def test_rescore_wait_exits_0_when_all_succeed_and_1_when_an_evaluation_failed(
    env, worker, make_rubric, client, capsys
):
    make_rubric()
    ok = client.create_run(payload(PASSING), rubric="support-quality")
    broken = client.create_run(payload(PASSING + " [[judge:400]]"), rubric="support-quality")
    client.wait_evaluations([e["id"] for r in (ok, broken) for e in r["evaluations"]], timeout=60)

    code = main(
        [
            "rescore",
            "--rubric",
            "support-quality",
            "--runs",
            ok["id"],
            "--force",
            "--wait",
            "--progress",
        ]
    )
    out = capsys.readouterr()
    assert code == 0 and "completed, 1 evaluations (1 succeeded, 0 failed" in out.out
    assert "re-scoring [" in out.err

    code = main(
        [
            "rescore",
            "--rubric",
            "support-quality",
            "--runs",
            broken["id"],
            "--force",
            "--wait",
            "--json",
        ]
    )
    out = capsys.readouterr()
    assert code == 1 and json.loads(out.out)["status"] == "completed_with_failures"
    assert "failed: run " in out.err


def test_rescore_dry_run_prints_the_estimate(env, fake_judge, make_rubric, make_run, capsys):
    make_rubric()
    make_run(rubric="support-quality")

    assert main(["rescore", "--rubric", "support-quality", "--dry-run"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert (estimate["runs"], estimate["skipped_pending"]) == (0, 1)  # its evaluation is queued


# --- gate -----------------------------------------------------------------------------------------


def test_gate_passes_above_the_thresholds_and_fails_below_them(
    env, worker, make_rubric, tmp_path, capsys
):
    make_rubric()
    runs = [payload(PASSING, external_id=f"prod-{i}") for i in range(3)] + [payload(NOT_PASSING)]
    path = write_jsonl(tmp_path / "runs.jsonl", runs)

    assert main(["gate", path, "--rubric", "support-quality", "--min-pass-rate", "75%"]) == 0
    table = capsys.readouterr().out
    assert "pass rate 75.0% (3/4 runs passed), minimum 75.0%" in table and table.rstrip().endswith(
        "PASSED"
    )

    code = main(
        ["gate", path, "--rubric", "support-quality", "--min-criterion-pass-rate", "0.9", "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and not report["ok"]
    c2 = next(c for c in report["criteria"] if c["criterion_id"] == "c2")
    assert (c2["passed"], c2["total"], c2["ok"]) == (3, 4, False)
    assert report["reasons"] == [
        'required criterion c2 (Gives the "order number") passes 75.0%, below 90.0%'
    ]
    thanks = next(c for c in report["criteria"] if c["criterion_id"] == "c3")
    assert thanks["required"] is False and thanks["ok"] is True  # optional: reported, not gated


def test_gate_on_an_earlier_version_rescores_the_runs_against_it(
    env, worker, make_rubric, client, tmp_path, capsys
):
    make_rubric()
    client.set_criteria("support-quality", '- Mentions "refund"\n- Says "never"')  # v2 fails all
    path = write_jsonl(tmp_path / "runs.jsonl", [payload(PASSING), payload(PASSING)])

    assert (
        main(
            [
                "gate",
                path,
                "--rubric",
                "support-quality",
                "--version",
                "1",
                "--min-pass-rate",
                "1",
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert (report["version"], report["passed"], report["total"]) == (1, 2, 2)
    assert main(["gate", path, "--rubric", "support-quality", "--min-pass-rate", "1"]) == 1


def test_gate_on_the_golden_set_measures_agreement_with_reviewers(
    env, worker, make_rubric, client, capsys
):
    make_rubric()
    run = client.create_run(payload(PASSING), rubric="support-quality")
    client.wait_evaluations([e["id"] for e in run["evaluations"]], timeout=60)
    for key, satisfied in (("c1", True), ("c2", False), ("c3", True)):  # reviewers disagree on c2
        client.create_override(run["id"], key, satisfied, note="" if satisfied else "wrong number")
    client.mark_golden(run["id"])

    code = main(["gate", "--golden", "--rubric", "support-quality", "--min-pass-rate", "0.6"])
    out = capsys.readouterr()
    assert code == 0, out
    assert "pass rate 66.7% (2/3 golden-set verdicts agreeing with reviewers)" in out.out
    code = main(
        [
            "gate",
            "--golden",
            "--rubric",
            "support-quality",
            "--min-criterion-pass-rate",
            "1",
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["mode"] == "golden", json.dumps(report)
    assert [c["criterion_id"] for c in report["criteria"] if not c["ok"]] == ["c2"]


def test_the_installed_evalsite_script_gates_in_a_subprocess(env, worker, make_rubric, tmp_path):
    make_rubric()
    path = write_jsonl(tmp_path / "runs.jsonl", [payload(NOT_PASSING)])
    script = shutil.which("evalsite", path=str(Path(sys.executable).parent))
    assert script, "the evalsite console script is not installed (make install)"

    done = subprocess.run(
        [script, "gate", path, "--rubric", "support-quality", "--min-pass-rate", "0.5", "--json"],
        capture_output=True, text=True, timeout=120, env=os.environ | env,
    )  # fmt: skip

    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["pass_rate"] == 0.0


def test_a_refused_gate_line_is_named_by_its_line_number_and_exits_2(
    env, team, make_rubric, tmp_path, capsys
):
    make_rubric()
    path = tmp_path / "runs.jsonl"
    robot = payload(PASSING, input={"messages": [{"role": "robot", "content": "hi"}]})
    path.write_text(
        json.dumps(payload(PASSING)) + "\n\n" + json.dumps(payload(PASSING)) + "\n"
        + json.dumps(robot) + "\n"
    )  # fmt: skip

    assert main(["gate", str(path), "--rubric", "support-quality", "--min-pass-rate", "1"]) == 2
    err = capsys.readouterr().err
    assert "field line 4 input.messages[0].role:" in err, err

    # Past the first bulk chunk the line is still the file's, not the chunk's.
    write_jsonl(path, [payload(PASSING)] * BULK_CHUNK + [robot])
    assert main(["gate", str(path), "--rubric", "support-quality", "--min-pass-rate", "1"]) == 2
    err = capsys.readouterr().err
    assert f"field line {BULK_CHUNK + 1} input.messages[0].role:" in err, err
    assert f"the {BULK_CHUNK} runs before these were stored" in err


# --- a reader that stops early ----------------------------------------------------------------


def test_export_into_a_pipe_closed_early_exits_141_without_a_traceback(env, client):
    # Enough runs that the export outgrows the pipe (shrunk to one page) and stdout's buffer, so
    # the CLI is still writing when the reader goes: `evalsite export | head -1`.
    long = "Your refund for order number 1234 was sent. " * 8
    client.create_runs_bulk([payload(long, external_id=f"pipe-{i}") for i in range(60)])
    script = shutil.which("evalsite", path=str(Path(sys.executable).parent))
    assert script, "the evalsite console script is not installed (make install)"
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)

    with os.fdopen(read_end, "rb") as reader:
        cli = subprocess.Popen(
            [script, "export", "--agent", "cli"], stdout=write_end, stderr=subprocess.PIPE,
            env=os.environ | env,
        )  # fmt: skip
        os.close(write_end)
        first = reader.readline()
    _, err = cli.communicate(timeout=60)

    assert json.loads(first)["agent"] == "cli"
    assert cli.returncode == 141, err.decode()
    assert err == b""
