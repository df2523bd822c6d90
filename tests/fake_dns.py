"""A resolver for tests, patched in at the OS boundary (``socket.getaddrinfo``): the names a
test gives answer what the test says, numeric hosts go to the system's own parser
(``AI_NUMERICHOST``: no lookup), and every other name does not resolve, so no test ever asks
real DNS. ``answers(name, first, then, ...)`` makes a name whose answer changes: each lookup
takes the next answer, the last one stays (DNS rebinding)."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any


class FakeDns:
    def __init__(self, real: Any) -> None:
        self.real = real
        self.plan: dict[str, list[list[str]]] = {}
        self.lookups: list[str] = []

    def answers(self, name: str, *answers: list[str]) -> None:
        self.plan[name] = [list(a) for a in answers]

    def __call__(
        self, host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[tuple[Any, ...]]:
        name = (host.decode() if isinstance(host, bytes) else str(host or "")).lower()
        if name not in self.plan or flags & socket.AI_NUMERICHOST:
            numeric = flags | socket.AI_NUMERICHOST
            return self.real(host, port, family, type, proto, numeric)  # gaierror for names
        self.lookups.append(name)
        steps = self.plan[name]
        addresses = steps.pop(0) if len(steps) > 1 else steps[0]
        return [
            info
            for address in addresses
            if (info := _info(address, port, family, type, proto)) is not None
        ]


def _info(address: str, port: Any, family: int, type: int, proto: int) -> tuple | None:
    version = ipaddress.ip_address(address).version
    af = socket.AF_INET if version == 4 else socket.AF_INET6
    if family not in (0, socket.AF_UNSPEC, af):
        return None
    number = int(port or 0)
    sockaddr = (address, number) if version == 4 else (address, number, 0, 0)
    return (af, type or socket.SOCK_STREAM, proto or socket.IPPROTO_TCP, "", sockaddr)
