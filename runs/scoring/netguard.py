"""Which URLs the server may call for a team: the one address guard for webhooks and judges.

A team names URLs that the server then calls (a re-score batch's webhook, a judge connection's
``api_base``). Unless the deployment allows it, such a URL must not reach this machine, its
private network or the cloud's metadata service: loopback, private, link-local (169.254.169.254
is the metadata address of most clouds), shared (100.64/10), multicast, reserved and unspecified
addresses are refused, however they are written: the legacy numeric forms that resolvers accept
(``http://2130706433/``, ``http://0x7f.1/``, ``http://017700000001/``) and IPv6 forms that
embed an IPv4 address (``::ffff:127.0.0.1``, 6to4, Teredo, NAT64) are read as the address they
stand for. A URL with user information (``http://user@host/``) is refused outright: it is a
classic way to make a URL look like it goes somewhere else.

Framework-free (the judge engine checks a team's ``api_base`` right before every request,
since DNS may have changed since the URL was accepted); callers pass ``allow_private`` from
their own setting.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from urllib.parse import SplitResult, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Host names that are this machine or a cloud metadata service whatever DNS says.
_LOCAL_NAMES = ("localhost", "metadata.google.internal", "metadata", "instance-data")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
# What inet_aton reads as an IPv4 address besides a dotted quad: 1 to 4 parts, each decimal,
# octal (leading 0) or hex (0x).
_LEGACY_NUMERIC = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$", re.I)


def _parts(url: str) -> tuple[SplitResult | None, str]:
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return None, ""
    return parts, (parts.hostname or "").rstrip(".").lower()


def _literal(host: str) -> IPAddress | None:
    """The address a literal host stands for, including the legacy numeric forms."""
    try:
        return ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        pass
    if _LEGACY_NUMERIC.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _embedded(address: IPAddress) -> list[IPAddress]:
    """The address and every IPv4 address an IPv6 address carries inside it."""
    found: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            found.append(address.ipv4_mapped)
        if address.sixtofour is not None:
            found.append(address.sixtofour)
        if address.teredo is not None:
            found.extend(address.teredo)
        if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
            found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def address_refusal(address: IPAddress) -> str | None:
    """Why the server must not call this address (None: a public address)."""
    for inner in _embedded(address):
        if not inner.is_global or inner.is_multicast or inner.is_reserved:
            return f"points to {address}, a loopback, private, link-local or reserved address"
    return None


def _shape_refusal(url: str) -> tuple[str | None, str, IPAddress | None]:
    """(refusal, host, literal address) from the URL's text alone."""
    parts, host = _parts(url)
    if parts is None or parts.scheme not in ("http", "https"):
        return "must be an http:// or https:// URL", host, None
    if "@" in parts.netloc:
        return "must not contain user information (user@host)", host, None
    if not host:
        return "has no host", host, None
    return None, host, _literal(host)


def _named_refusal(host: str) -> str | None:
    if any(host == name or host.endswith("." + name) for name in _LOCAL_NAMES):
        return f"points to {host}, this machine or a cloud metadata service"
    return None


def url_refusal(url: str, *, resolve: bool, allow_private: bool = False) -> str | None:
    """Why the server must not call ``url`` (None: it may). With ``resolve`` the host name is
    looked up and every address it has is checked; without, only its text (literal addresses,
    local names). ``allow_private`` (a deployment setting) lets private addresses through; the
    URL's shape is checked all the same."""
    decided, refusal, host = _without_lookup(url, allow_private)
    if decided or not resolve:
        return refusal
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        return _unresolved(host, exc)
    return _first_refusal(infos)


async def url_refusal_async(url: str, *, allow_private: bool = False) -> str | None:
    """``url_refusal(url, resolve=True)`` without blocking the event loop."""
    decided, refusal, host = _without_lookup(url, allow_private)
    if decided:
        return refusal
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        return _unresolved(host, exc)
    return _first_refusal(infos)


def _without_lookup(url: str, allow_private: bool) -> tuple[bool, str | None, str]:
    """What the URL's text alone decides: (decided, refusal, host). Not decided means the
    host's addresses must be looked up and checked."""
    refusal, host, literal = _shape_refusal(url)
    if refusal is not None or allow_private:
        return True, refusal, host
    if literal is not None:
        return True, address_refusal(literal), host
    named = _named_refusal(host)
    return named is not None, named, host


def _unresolved(host: str, exc: OSError) -> str:
    return f"host {host} does not resolve ({exc.strerror or exc})"


def _first_refusal(infos: list) -> str | None:
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if (refusal := address_refusal(address)) is not None:
            return refusal
    return None
