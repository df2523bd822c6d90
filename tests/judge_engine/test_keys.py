"""Verdict keys decide which stored verdicts a rescore may reuse."""

from __future__ import annotations

import re

import pytest

from judge_engine import JudgeConfig, keys, verdict_key
from judge_engine.keys import PROMPT_VERSION

JUDGE = JudgeConfig(model="openai/gpt-4o-mini", api_key="sk-secret", temperature=0.0)
BASE = dict(
    criterion_description="Mentions the refund", task="Where?", system="Be nice", output="Sent."
)


def key(judge: JudgeConfig = JUDGE, **changes: str | None) -> str:
    return verdict_key(judge, **(BASE | changes))


def test_a_key_is_a_stable_sha256_hex_digest():
    assert key() == key()
    assert re.fullmatch(r"[0-9a-f]{64}", key())


@pytest.mark.parametrize(
    "changes",
    [
        {"criterion_description": "Mentions the refund amount"},
        {"task": "Where is it?"},
        {"system": "Be terse"},
        {"output": "Sent today."},
    ],
)
def test_the_key_changes_with_any_text_the_verdict_depends_on(changes):
    assert key(**changes) != key()


@pytest.mark.parametrize(
    "changes",
    [
        {"model": "openai/gpt-4o"},
        {"temperature": 0.7},
        {"max_tokens": 100},
        {"api_base": "http://localhost:8000/v1"},
        {"extra": {"top_p": 0.5}},
    ],
)
def test_the_key_changes_with_the_judge_model_and_its_parameters(changes):
    assert key(JUDGE.model_copy(update=changes)) != key()


@pytest.mark.parametrize(
    "changes",
    [
        {"api_key": "sk-other"},
        {"timeout": 5.0},
        {"retries": 0},
        {"repair_retries": 3},
        {"extra": {"extra_headers": {"Authorization": "Bearer x"}, "api_token": "t"}},
    ],
)
def test_secrets_and_retry_settings_do_not_change_the_key(changes):
    assert key(JUDGE.model_copy(update=changes)) == key()


def test_the_key_changes_with_the_prompt_version(monkeypatch):
    before = key()
    monkeypatch.setattr(keys, "PROMPT_VERSION", PROMPT_VERSION + "-next")
    assert key() != before


def test_a_missing_system_prompt_keys_the_same_as_an_empty_one():
    assert key(system=None) == key(system="")


def test_the_judge_identity_holds_no_secret():
    judge = JudgeConfig(
        model="m",
        api_key="sk-secret",
        extra={"seed": 1, "headers": {"x": "sk-h"}, "aws_secret_access_key": "s"},
    )
    identity = judge.identity()
    assert "sk-" not in repr(identity)
    assert identity["extra"] == {"seed": 1}
    assert "api_key" not in identity
