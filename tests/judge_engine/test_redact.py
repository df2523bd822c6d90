"""Error text a team may read: no traceback, no server path, bounded."""

from __future__ import annotations

import re
import sys
import traceback
from pathlib import Path

import pytest

from judge_engine.redact import (
    MAX_ERROR_CHARS,
    REDACTED_PATH,
    WITHHELD,
    internal_error,
    new_ref,
    tenant_error,
)

ROOT = Path(__file__).resolve().parents[2]


def formatted_traceback() -> str:
    try:
        open(ROOT / "no-such-dir" / "secret.txt")  # noqa: SIM115 - raising is the point
    except OSError:
        return traceback.format_exc()
    raise AssertionError("expected an OSError")


def test_a_traceback_after_a_message_is_cut_off_and_the_message_kept():
    message = "litellm.APIConnectionError: Connection error.\n" + formatted_traceback()
    assert tenant_error(message) == "litellm.APIConnectionError: Connection error."


def test_a_bare_traceback_is_withheld_entirely():
    cleaned = tenant_error(formatted_traceback())
    assert cleaned == WITHHELD and str(ROOT) not in cleaned


@pytest.mark.parametrize(
    "path",
    [
        str(ROOT / "runs" / "services" / "execute.py"),
        str(ROOT / ".venv" / "lib" / "x"),
        sys.prefix + "/lib/python3/site-packages/litellm/main.py",
        "/etc/ssl/certs/ca.pem",
        "/home/deploy/.config/key",
        "/srv/app/settings.toml",
        "~/project/x.py",
        "C:\\Users\\deploy\\app\\x.py",
    ],
)
def test_server_paths_are_redacted_wherever_they_appear(path):
    message = f"[Errno 2] No such file or directory: '{path}' (while reading {path})"
    cleaned = tenant_error(message)
    assert path not in cleaned
    assert (
        cleaned
        == f"[Errno 2] No such file or directory: '{REDACTED_PATH}' (while reading {REDACTED_PATH})"
    )


def test_frames_of_a_quoted_stack_are_dropped():
    cleaned = tenant_error('failed at File "/opt/x/y.py", line 12, in run: boom')
    assert "/opt" not in cleaned and "line 12" not in cleaned
    assert cleaned.startswith("failed at") and cleaned.endswith("boom")


@pytest.mark.parametrize(
    "text",
    [
        "judge answered HTTP 404 for https://api.example.com/v1/chat/completions",
        "judge at http://127.0.0.1:8000/v1 refused",
        "a ratio of 1/2/3 and a/b/c.py relative name",
        "Invalid request (fake judge)",
    ],
)
def test_urls_and_ordinary_text_are_kept(text):
    assert tenant_error(text) == text


def test_long_text_is_bounded_with_an_ellipsis():
    cleaned = tenant_error("x" * 5000)
    assert len(cleaned) == MAX_ERROR_CHARS and cleaned.endswith("…")
    assert len(tenant_error("y" * 500, limit=300)) == 300


def test_an_internal_error_names_only_its_ref():
    ref = new_ref()
    assert re.fullmatch(r"[0-9a-f]{12}", ref) and ref != new_ref()
    assert (
        internal_error(ref) == f"internal error (ref {ref}); the operators' logs have the details"
    )
