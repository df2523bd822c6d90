"""No secret in any log: a logging filter that redacts whatever is shaped like one.

The secrets are kept out at their source (the API parses ``Authorization`` itself, services
log no keys); this is the defence in depth, installed on every handler of ``LOGGING``. It
rewrites each record's message (with its arguments already merged in, whatever their type),
its traceback and its stack, replacing:

- our API keys (``es_`` + 43 URL-safe characters, teams.services.api_key_create);
- an ``Authorization`` value whole, the credential after ``Bearer`` or ``Basic``, the value of anything named like a key,
  token, secret or password (``api_key=...``, ``"authorization": "..."``);
- provider keys a team's judge connection may hold (``sk-...``, ``sk-ant-...``, ``AIza...``);
- the token of an invite link (``/invite/<token>/``);
- random tokens: webhook secrets (64 hex digits), invite tokens and other URL-safe tokens
  (32+ characters mixing upper and lower case).

Ids (UUIDs, hex digests of 32 characters) and ordinary words are left alone.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"

_OUR_KEY = re.compile(r"(?<![A-Za-z0-9])es_[A-Za-z0-9_\-]+")
_AUTH_HEADER = re.compile(r"(?i)(?<![a-z])(authorization[\"']?\s*[:=]\s*[\"']?)[^\r\n'\"]+")
_SCHEME = re.compile(r"(?i)\b(bearer|basic)(\s+)[^\s'\",;]+")
_NAMED = re.compile(
    r"(?i)\b((?:x-)?api[_-]?key|authorization|(?:webhook_|client_)?secret|password|passwd"
    r"|(?:access_|auth_|invite_)?token)\b([\"']?\s*[:=]\s*[\"']?)(?!\[redacted\])[^\s'\",;&]+"
)
_PROVIDER_KEY = re.compile(r"(?<![A-Za-z0-9])(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}|\bAIza[\w\-]{20,}")
_INVITE = re.compile(r"(/invite/)[^/\s'\"?#]+")
_HEX = re.compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{48,}(?![0-9A-Fa-f])")
_TOKEN = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{32,}(?![A-Za-z0-9_\-])")


def _random_looking(match: re.Match[str]) -> str:
    text = match.group(0)
    upper = any(c.isupper() for c in text)
    lower = any(c.islower() for c in text)
    digit = any(c.isdigit() for c in text)
    if upper and lower and (digit or len(text) >= 40):
        return REDACTED
    return text


def redact(text: str) -> str:
    """``text`` with everything shaped like a secret replaced by ``[redacted]``."""
    text = _OUR_KEY.sub("es_" + REDACTED, text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _SCHEME.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _NAMED.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _PROVIDER_KEY.sub(REDACTED, text)
    text = _INVITE.sub(lambda m: m.group(1) + REDACTED, text)
    text = _HEX.sub(REDACTED, text)
    return _TOKEN.sub(_random_looking, text)


class RedactSecrets(logging.Filter):
    """Redacts a record in place (message, arguments, traceback, stack); lets it through."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: keep what can be shown
            message = f"{record.msg!s} {record.args!s}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
