"""Error text fit for a team to read: no traceback, no server path, bounded.

Everything stored in a field a tenant can see (an evaluation's error, a try-it outcome, a
webhook's last error) goes through `tenant_error`. A failure of ours is never described at
all: the tenant gets `internal_error(ref)`, and the log line with the traceback carries the
same ref. These are the storing side's guards; the texts themselves are meant to be clean
already (the judge error text is the provider's status and message, runs.scoring.judge).
"""

from __future__ import annotations

import re
import secrets
import sys
from pathlib import Path

MAX_ERROR_CHARS = 1000
REDACTED_PATH = "<path>"
WITHHELD = "error details withheld; the operators' logs have them"

_TRACEBACK = re.compile(r"Traceback \(most recent call last\)", re.IGNORECASE)
_FRAME = re.compile(r'File "[^"]*", line \d+(?:, in \S+)?')
# An absolute file path: not the path part of a URL (that follows a host name or a port), and
# either under a directory a server keeps its files in or naming a source or library file.
_ROOTS = "home|usr|opt|srv|var|tmp|etc|root|work|app|lib|lib64|proc|sys|mnt|data|run|snap|nix"
_PATH = re.compile(
    r"(?<![\w.:/~-])(?:"
    rf"/(?:{_ROOTS})(?:/[^\s'\"(),;:<>\[\]]+)+"
    r"|(?:/[\w.+-]+)+/[\w.+-]+\.(?:py|pyc|pyi|so|dll|pem|key|crt|cfg|ini|toml|env|log)\b"
    r"|~/[^\s'\"(),;:<>\[\]]+"
    r"|[A-Za-z]:\\[^\s'\"(),;:<>\[\]]+"
    r")"
)
# Directories of this very deployment, wherever they are, and anything under them.
_OWN_DIRS = sorted(
    {str(Path(__file__).resolve().parents[2]), sys.prefix, sys.base_prefix, str(Path.home())}
    - {"", "/"},
    key=len,
    reverse=True,
)
_OWN_PATH = re.compile(
    r"(?<![\w.:/~-])(?:" + "|".join(map(re.escape, _OWN_DIRS)) + r")(?:/[^\s'\"(),;:<>\[\]]*)*"
)


def new_ref() -> str:
    """A short random id tying a tenant's message to the operators' log line."""
    return secrets.token_hex(6)


def internal_error(ref: str) -> str:
    """What a tenant is told about a failure of ours: nothing but where to look it up."""
    return f"internal error (ref {ref}); the operators' logs have the details"


def tenant_error(message: str, *, limit: int = MAX_ERROR_CHARS) -> str:
    """``message`` without a traceback or a server path, at most ``limit`` characters."""
    text = str(message)
    cut = _TRACEBACK.search(text)
    if cut is not None:
        text = text[: cut.start()].rstrip(" \n:-") or WITHHELD
    text = _FRAME.sub("", text)
    text = _PATH.sub(REDACTED_PATH, _OWN_PATH.sub(REDACTED_PATH, text)).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text
