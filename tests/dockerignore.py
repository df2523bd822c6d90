"""What ``docker build`` sends for ``COPY . .``: a ``.dockerignore`` read and matched by Docker's
own rules, in Python (the tests have no docker).

Reading follows BuildKit's ``dockerignore.ReadAll``: ``#`` lines are comments, lines are
trimmed, ``!`` marks an exception, each pattern is cleaned (``filepath.Clean``) and a leading
``/`` dropped. Matching follows moby/patternmatcher: a pattern is turned into a regular
expression where ``*`` is any run of characters but ``/``, ``?`` one such character, ``**`` any
number of folders, ``[...]`` a class and ``\\`` escapes; a pattern without ``**`` is anchored at
the context's root (``data`` is only the top folder); a path is excluded when it or one of its
parent folders matches, and the last matching pattern decides (``MatchesOrParentMatches``). As
Docker does, an excluded folder is not walked into when no pattern is an exception.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

_ESCAPED = set(".+()|{}$")


def read_dockerignore(text: str) -> list[str]:
    patterns = []
    for line in text.removeprefix("\ufeff").splitlines():
        if line.startswith("#"):
            continue
        pattern = line.strip()
        if not pattern:
            continue
        invert = pattern.startswith("!")
        if invert:
            pattern = pattern[1:].strip()
        if pattern:
            pattern = posixpath.normpath(pattern)
            if len(pattern) > 1 and pattern.startswith("/"):
                pattern = pattern.lstrip("/")
        patterns.append("!" + pattern if invert else pattern)
    return patterns


@dataclass
class Pattern:
    text: str
    exclusion: bool
    kind: str = "exact"
    regex: re.Pattern[str] | None = None

    @classmethod
    def parse(cls, raw: str) -> Pattern:
        exclusion = raw.startswith("!")
        pattern = cls(raw[1:] if exclusion else raw, exclusion)
        pattern._compile()
        return pattern

    # Mirrors moby/patternmatcher's compile token by token, so the two can be read side by side.
    def _compile(self) -> None:  # noqa: C901
        text, reg, kind, pos, i = self.text, "^", "exact", 0, 0
        while pos < len(text):
            ch, pos = text[pos], pos + 1
            if ch == "*" and text[pos : pos + 1] == "*":
                pos += 2 if text[pos + 1 : pos + 2] == "/" else 1  # "**/" is read as "**"
                if pos == len(text):
                    reg, kind = (reg, "prefix") if kind == "exact" else (reg + ".*", "regexp")
                else:
                    reg, kind = reg + "(.*/)?", "regexp"
                kind = "suffix" if i == 0 else kind
            elif ch == "*":
                reg, kind = reg + "[^/]*", "regexp"
            elif ch == "?":
                reg, kind = reg + "[^/]", "regexp"
            elif ch in _ESCAPED:
                reg += "\\" + ch
            elif ch == "\\":
                if pos >= len(text):
                    raise ValueError(f"bad pattern {self.text!r}")
                reg, kind, pos = reg + "\\" + text[pos], "regexp", pos + 1
            elif ch in "[]":
                reg, kind = reg + ch, "regexp"
            else:
                reg += ch
            i += 1
        self.kind = kind
        if kind == "regexp":
            self.regex = re.compile(reg + r"\Z")

    def match(self, path: str) -> bool:
        if self.kind == "exact":
            return path == self.text
        if self.kind == "prefix":
            return path.startswith(self.text[:-2])
        if self.kind == "suffix":
            suffix = self.text[2:]
            return path.endswith(suffix) or (suffix[:1] == "/" and path == suffix[1:])
        assert self.regex is not None
        return self.regex.match(path) is not None


def excluded(path: str, patterns: list[Pattern]) -> bool:
    """moby/patternmatcher ``MatchesOrParentMatches`` for a slash path in the context."""
    path = posixpath.normpath(path)
    parents = posixpath.dirname(path).split("/") if "/" in path else []
    matched = False
    for pattern in patterns:
        if pattern.exclusion != matched:
            continue
        hit = pattern.match(path) or any(
            pattern.match("/".join(parents[: n + 1])) for n in range(len(parents))
        )
        if hit:
            matched = not pattern.exclusion
    return matched


def context_files(root: Path) -> list[str]:
    """Every path ``COPY . .`` would receive from ``root`` (symbolic links as themselves)."""
    patterns = [Pattern.parse(p) for p in read_dockerignore((root / ".dockerignore").read_text())]
    exceptions = any(p.exclusion for p in patterns)
    sent: list[str] = []
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root).as_posix()
        walked = []
        for name in sorted(dirs) + sorted(files):
            path = name if rel == "." else f"{rel}/{name}"
            is_dir = name in dirs and not (Path(folder) / name).is_symlink()
            if excluded(path, patterns):
                if is_dir and exceptions:
                    walked.append(name)
                continue
            if is_dir:
                walked.append(name)
            else:
                sent.append(path)
        dirs[:] = [d for d in dirs if d in walked]
    return sent
