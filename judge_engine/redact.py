"""Error text fit for a team to read: no traceback, no server path, bounded.

Everything stored in a field a tenant can see (an evaluation's error, a try-it outcome, a
webhook's last error) goes through `tenant_error`. A failure of ours is never described at
all: the tenant gets `internal_error(ref)`, and the log line with the traceback carries the
same ref. These are the storing side's guards; the texts themselves are meant to be clean
already (the judge error text is the provider's status and message, judge_engine.judge).
"""

from __future__ import annotations

import re
import secrets
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit

MAX_ERROR_CHARS = 1000
REDACTED_PATH = "<path>"
DEPLOYMENT_JUDGE = "<the deployment's judge>"
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


# Where the addresses no tenant may read come from: the deployment judge's base URL, which the
# runs app registers (this module knows no settings). Read at each call, so a changed setting
# is hidden at once.
_hidden_sources: list[Callable[[], Iterable[str]]] = []


def hide_addresses(source: Callable[[], Iterable[str]]) -> None:
    """Register a source of URLs whose address (the URL, its host:port, a host name with a dot
    or an IP address) ``tenant_error`` replaces with ``<the deployment's judge>``."""
    _hidden_sources.append(source)


def _address_forms(url: str) -> list[str]:
    """The URL and the parts of it that name its host, longest first."""
    try:
        parts = urlsplit(url.strip())
        host, netloc = parts.hostname or "", parts.netloc.rsplit("@", 1)[-1]
    except ValueError:
        return []
    if not host:
        return []
    # A bare dotless name ("judge", "localhost") is also an ordinary word: only with its port.
    bare = [host] if "." in host or ":" in host else []
    forms = [url.strip().rstrip("/"), f"{parts.scheme}://{netloc}", netloc, *bare]
    return sorted({f for f in forms if f}, key=len, reverse=True)


def _hide_addresses(text: str) -> str:
    for source in _hidden_sources:
        for url in source():
            for form in _address_forms(url or ""):
                pattern = rf"(?<![\w.-]){re.escape(form)}(?:/[^\s'\"(),;<>\[\]]*)?(?![\w-])"
                text = re.sub(pattern, DEPLOYMENT_JUDGE, text, flags=re.IGNORECASE)
    return text


def new_ref() -> str:
    """A short random id tying a tenant's message to the operators' log line."""
    return secrets.token_hex(6)


def internal_error(ref: str) -> str:
    """What a tenant is told about a failure of ours: nothing but where to look it up."""
    return f"internal error (ref {ref}); the operators' logs have the details"


def tenant_error(message: str, *, limit: int = MAX_ERROR_CHARS) -> str:
    """``message`` without a traceback, a server path or the deployment judge's address, at
    most ``limit`` characters."""
    text = _hide_addresses(str(message))
    cut = _TRACEBACK.search(text)
    if cut is not None:
        text = text[: cut.start()].rstrip(" \n:-") or WITHHELD
    text = _FRAME.sub("", text)
    text = _PATH.sub(REDACTED_PATH, _OWN_PATH.sub(REDACTED_PATH, text)).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text
