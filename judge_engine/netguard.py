"""Which URLs the server may call for a team: the one address rule for every outbound URL.

A team names URLs that the server then calls (a judge connection's ``api_base``, a re-score
batch's or an alert rule's webhook, an export endpoint). Unless the deployment allows it, such
a URL must not reach this machine, its private network or the cloud's metadata service:
loopback, private, link-local (169.254.169.254 is the metadata address of most clouds), shared
(100.64/10), multicast, reserved and unspecified addresses are refused, however they are
written:

* the host is first read the way resolvers and HTTP clients read it: Unicode is mapped with
  IDNA/UTS-46 (``127。0。0。1`` with ideographic full stops, ``①②⑦.0.0.1``, fullwidth
  ``ｌｏｃａｌｈｏｓｔ``), and decimal digits of any script count as the digits they are
  (``١٢٧.٠.٠.١``);
* the legacy numeric forms that resolvers accept (``http://2130706433/``, ``http://0x7f.1/``,
  ``http://0177.0.0.1/``) and IPv6 forms that embed an IPv4 address (``::ffff:127.0.0.1``,
  6to4, Teredo, NAT64) are read as the address they stand for;
* a name is looked up and every address it has must be public (``localhost`` and whatever
  ``/etc/hosts`` or DNS points at this machine).

A URL with user information (``http://user@host/``) is refused outright: it is a classic way to
make a URL look like it goes somewhere else.

Framework-free: the judge engine checks a team's ``api_base`` right before every request, and
``public_addresses`` is what a connection uses to connect only to an address it checked (DNS
may have changed since the URL was accepted). Callers pass ``allow_private`` from their own
setting (evalsite.outbound does, for every URL a team chooses).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import unicodedata
from urllib.parse import SplitResult, urlsplit

import idna

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Host names that are this machine or a cloud metadata service whatever DNS says.
_LOCAL_NAMES = ("localhost", "metadata.google.internal", "metadata", "instance-data")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
# What inet_aton reads as an IPv4 address besides a dotted quad: 1 to 4 parts, each decimal,
# octal (leading 0) or hex (0x).
_LEGACY_NUMERIC = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$", re.I)


class AddressRefused(Exception):
    """A host the server must not connect to; the message says why (``points to …``)."""


def _parts(url: str) -> tuple[SplitResult | None, str]:
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return None, ""
    return parts, parts.hostname or ""


def normal_host(host: str) -> str | None:
    """The host as resolvers read it: ASCII, lower case, no trailing dot; a numeric host in
    ASCII digits whatever digits it was written with. None: not a valid host name."""
    if host.isascii():
        return host.lower().rstrip(".")
    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False).rstrip(".")
    except idna.IDNAError:
        return None
    digits = "".join(_ascii_digit(c) for c in mapped)
    if digits.isascii() and _literal(digits) is not None:
        return digits
    try:
        return idna.encode(mapped).decode("ascii")
    except idna.IDNAError:
        return None


def _ascii_digit(char: str) -> str:
    value = unicodedata.decimal(char, None)
    return str(value) if value is not None and not char.isascii() else char


def _literal(host: str) -> IPAddress | None:
    """The address a literal host stands for, including the resolver's numeric forms."""
    try:
        return ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        pass
    if _LEGACY_NUMERIC.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return _numeric_host(host)


def _numeric_host(host: str) -> IPAddress | None:
    """What the system resolver itself reads as a number (no lookup: AI_NUMERICHOST)."""
    if not host or not host.isascii():
        return None
    try:
        infos = socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        return None
    return ipaddress.ip_address(str(infos[0][4][0]).split("%")[0]) if infos else None


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


def _shape_refusal(url: str) -> tuple[str | None, str]:
    """(refusal, normalised host) from the URL's text alone."""
    parts, raw = _parts(url)
    if parts is None or parts.scheme not in ("http", "https"):
        return "must be an http:// or https:// URL", ""
    if "@" in parts.netloc:
        return "must not contain user information (user@host)", ""
    if not raw:
        return "has no host", ""
    host = normal_host(raw)
    if not host:
        return f"has a host that is not a valid name ({raw})", ""
    return None, host


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
    except (OSError, UnicodeError) as exc:
        return _unresolved(host, exc)
    return _first_refusal(infos)


async def url_refusal_async(url: str, *, allow_private: bool = False) -> str | None:
    """``url_refusal(url, resolve=True)`` without blocking the event loop."""
    decided, refusal, host = _without_lookup(url, allow_private)
    if decided:
        return refusal
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        return _unresolved(host, exc)
    return _first_refusal(infos)


def public_addresses(host: str, port: int, *, allow_private: bool = False) -> list[str]:
    """The addresses to connect to for ``host``: looked up now, and refused (AddressRefused)
    unless every one of them is public. Connecting to these, not to the name, is what makes
    the address checked the address connected to (DNS rebinding)."""
    if not allow_private and (named := _named_refusal(normal_host(host) or host)):
        raise AddressRefused(named)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise AddressRefused(_unresolved(host, exc)) from exc
    if not allow_private and (refusal := _first_refusal(infos)) is not None:
        raise AddressRefused(refusal)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _without_lookup(url: str, allow_private: bool) -> tuple[bool, str | None, str]:
    """What the URL's text alone decides: (decided, refusal, host). Not decided means the
    host's addresses must be looked up and checked."""
    refusal, host = _shape_refusal(url)
    if refusal is not None or allow_private:
        return True, refusal, host
    literal = _literal(host)
    if literal is not None:
        return True, address_refusal(literal), host
    named = _named_refusal(host)
    return named is not None, named, host


def _unresolved(host: str, exc: Exception) -> str:
    return f"host {host} does not resolve ({getattr(exc, 'strerror', None) or exc})"


def _first_refusal(infos: list) -> str | None:
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if (refusal := address_refusal(address)) is not None:
            return refusal
    return None
