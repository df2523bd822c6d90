"""The one guard on every URL a team chooses for the server to call.

Judge connections' ``api_base`` (teams), re-score batches' webhooks (runs), alert rules'
webhooks (reviews) and export endpoints all go through here, with the same rules
(judge_engine.netguard: Unicode and numeric host forms normalised, names resolved, every
non-public address refused) and the deployment's setting for that kind of URL:

* when the URL is saved, ``outbound_refusal`` resolves the host now and the service makes the
  refusal a field error naming the field (a 422 on the API, an error under the field on pages);
* when it is called, ``outbound_post`` checks it again and connects only to an address it
  checked at connect time (the name is resolved once more, every answer must be public, and the
  socket goes to one of those answers), never following redirects and never through a proxy
  from the environment. The judge engine does the same with its own transport
  (judge_engine/direct.py ``_PublicOnlyResolver`` and judge_engine/request.py
  ``check_address``), guarded when ``outbound_guarded(Purpose.JUDGE)``.

``EVALSITE_JUDGE_ALLOW_PRIVATE`` and ``EVALSITE_WEBHOOK_ALLOW_PRIVATE`` (self-hosted judges and
receivers on the operator's network) turn the address checks off for their kind; the URL's
shape (http(s), no ``user@``, a valid host) is checked all the same.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import httpcore
import httpx
from django.conf import settings

from judge_engine.netguard import AddressRefused, public_addresses, url_refusal


class Purpose(enum.StrEnum):
    JUDGE = "judge"
    WEBHOOK = "webhook"
    EXPORT = "export"  # the OTLP export endpoint: receivers a team runs, like webhooks


# The setting that lets each kind of URL reach private addresses, and what it allows.
_ALLOW_SETTING = {
    Purpose.JUDGE: ("EVALSITE_JUDGE_ALLOW_PRIVATE", "judges"),
    Purpose.WEBHOOK: ("EVALSITE_WEBHOOK_ALLOW_PRIVATE", "receivers"),
    Purpose.EXPORT: ("EVALSITE_WEBHOOK_ALLOW_PRIVATE", "receivers"),
}


class OutboundRefused(Exception):
    """The URL may not be called now; the message says why (``points to …``)."""


def private_allowed(purpose: Purpose) -> bool:
    return bool(getattr(settings, _ALLOW_SETTING[purpose][0]))


def outbound_guarded(purpose: Purpose) -> bool:
    """Whether calls of this kind must reach public addresses only."""
    return not private_allowed(purpose)


def outbound_refusal(url: str, *, purpose: Purpose) -> str | None:
    """Why the server must not call ``url`` (None: it may), its host resolved now. For a field
    error when a URL is saved, and before each delivery."""
    refusal = url_refusal(url, resolve=True, allow_private=private_allowed(purpose))
    if refusal is not None and refusal.startswith("points to"):
        name, what = _ALLOW_SETTING[purpose]
        refusal += f" (a deployment can allow {what} on its own network: {name}=1)"
    return refusal


def outbound_field_errors(url: str, *, field: str, purpose: Purpose) -> dict[str, str]:
    """``{field: refusal}`` for a URL a team is saving, or ``{}`` (an empty URL passes)."""
    if not url:
        return {}
    refusal = outbound_refusal(url, purpose=purpose)
    return {} if refusal is None else {field: refusal}


def outbound_post(
    url: str, *, purpose: Purpose, content: bytes, headers: Mapping[str, str], timeout: float
) -> httpx.Response:
    """POST to a URL a team chose: OutboundRefused when the guard refuses it (checked now, and
    again as the connection is made), httpx.HTTPError when the receiver cannot be reached."""
    if (refusal := outbound_refusal(url, purpose=purpose)) is not None:
        raise OutboundRefused(refusal)
    transport = GuardedTransport(allow_private=private_allowed(purpose))
    with httpx.Client(transport=transport, timeout=timeout, follow_redirects=False) as client:
        try:
            return client.post(url, content=content, headers=dict(headers))
        except AddressRefused as exc:
            raise OutboundRefused(str(exc)) from exc


class _GuardedBackend(httpcore.SyncBackend):
    """Connects to an address ``public_addresses`` returned for the host, never to the name."""

    def __init__(self, *, allow_private: bool) -> None:
        self.allow_private = allow_private

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        failure: httpcore.ConnectError | None = None
        for address in public_addresses(host, port, allow_private=self.allow_private):
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:  # the next address, as create_connection does
                failure = exc
        raise failure or httpcore.ConnectError(f"no address for {host}")


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport whose connections go through ``_GuardedBackend``. TLS still verifies
    the URL's host name (httpcore passes it as the server name, not the address)."""

    def __init__(self, *, allow_private: bool) -> None:
        super().__init__()
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            network_backend=_GuardedBackend(allow_private=allow_private),
        )
