"""Encryption at rest for secrets a team gives the server (judge connection keys).

Fernet (AES-128-CBC with HMAC-SHA256) from the ``cryptography`` package. The key comes from
EVALSITE_SECRETS_KEY: one or more comma-separated keys, the first encrypting, all decrypting
(to rotate, put the new key first and re-save the connections). Each is either a Fernet key
(``Fernet.generate_key()``) or any passphrase, which is stretched with SHA-256. Without it the
key is derived from SECRET_KEY, so rotating SECRET_KEY makes stored keys unreadable: set
EVALSITE_SECRETS_KEY in production.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SecretUnreadable(Exception):
    """The ciphertext was written with a key this deployment no longer has."""


def _fernet_key(material: str) -> bytes:
    try:
        Fernet(material.encode())
        return material.encode()
    except ValueError:
        digest = hashlib.sha256(b"evalsite-secrets:" + material.encode()).digest()
        return base64.urlsafe_b64encode(digest)


@lru_cache(maxsize=4)
def _fernet(configured: str, fallback: str) -> MultiFernet:
    materials = [k.strip() for k in configured.split(",") if k.strip()] or [fallback]
    return MultiFernet([Fernet(_fernet_key(m)) for m in materials])


def _current() -> MultiFernet:
    return _fernet(settings.EVALSITE_SECRETS_KEY, settings.SECRET_KEY)


def secret_encrypt(plaintext: str) -> str:
    return _current().encrypt(plaintext.encode()).decode()


def secret_decrypt(ciphertext: str) -> str:
    """The plaintext; SecretUnreadable when no configured key opens it."""
    return _decrypt(_current(), ciphertext)


@lru_cache(maxsize=512)
def _decrypt(fernet: MultiFernet, ciphertext: str) -> str:
    # Cached per process: workers decrypt a connection's key once, not per evaluation.
    try:
        return fernet.decrypt(ciphertext.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "the stored key cannot be decrypted with this deployment's EVALSITE_SECRETS_KEY"
        ) from None


def secret_reencrypt(ciphertext: str) -> str:
    """The same secret encrypted with the first configured key (after a key rotation)."""
    try:
        return _current().rotate(ciphertext.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "the stored key cannot be decrypted with this deployment's EVALSITE_SECRETS_KEY"
        ) from None
