"""What nxc trusts of a shared cache, and the key it trusts it with.

Content (`cas/<sha256>`) needs no trust: a blob is used only when its
SHA-256 is the one asked for (and its size the one expected). But which
blob an object key names, and whether a gate passed, no reader can check
without doing the work itself: an action entry (`ac/<key>`) is used only
when it carries an HMAC-SHA256 under the shared key, over the entry's key
and its bytes (so an entry moved to another key fails too). Without the
key no action entry is read, and none is written: what nobody can check
is nothing to share.

The key is a secret of the CI that writes the cache (a file, or the
environment); anyone holding it can make entries every holder trusts.
"""
from __future__ import annotations

import hashlib
import hmac
import os

KEY_ENV = "NXC_REMOTE_CACHE_KEY"                # the key itself
KEY_FILE_ENV = "NXC_REMOTE_CACHE_KEY_FILE"      # a file holding it
MIN_KEY_BYTES = 16
_MAGIC = b"NXR1"
_MAC = 32


class BadKey(ValueError):
    """The key given cannot be used (a one-line message for the user)."""


def load_key(key_file: str | None) -> bytes | None:
    """The shared key: from `key_file` (--remote-cache-key-file), else the
    file NXC_REMOTE_CACHE_KEY_FILE names, else NXC_REMOTE_CACHE_KEY; None: no
    key. Surrounding white space is no part of it (a file ends in a newline)."""
    path = key_file or os.environ.get(KEY_FILE_ENV) or None
    if path is not None:
        try:
            with open(path, "rb") as f:
                key = f.read(1 << 16).strip()
        except OSError as exc:
            raise BadKey(f"cannot read the remote cache key file '{path}' ({exc.strerror or exc})") from None
        where = f"the remote cache key file '{path}'"
    else:
        text = os.environ.get(KEY_ENV)
        if not text:
            return None
        key, where = text.strip().encode("utf-8", "surrogateescape"), KEY_ENV
    if len(key) < MIN_KEY_BYTES:
        raise BadKey(f"{where} holds {len(key)} bytes: a shared key needs at least {MIN_KEY_BYTES} "
                        f"(e.g. `head -c 32 /dev/urandom | base64`)")
    return key


def _mac(key: bytes, name: str, body: bytes) -> bytes:
    return hmac.new(key, b"nxc-remote-ac\0" + name.encode() + b"\0" + body, hashlib.sha256).digest()


def sign(key: bytes, name: str, body: bytes) -> bytes:
    """The action entry `name` holding `body`."""
    return _MAGIC + _mac(key, name, body) + body


def verify(key: bytes, name: str, data: bytes) -> bytes | None:
    """The body of action entry `name` if `data` is one signed under `key`, else None."""
    if len(data) < len(_MAGIC) + _MAC or not data.startswith(_MAGIC):
        return None
    body = data[len(_MAGIC) + _MAC:]
    return body if hmac.compare_digest(data[len(_MAGIC):len(_MAGIC) + _MAC], _mac(key, name, body)) else None


def content_name(data: bytes) -> str:
    """The name of a content blob: its SHA-256."""
    return hashlib.sha256(data).hexdigest()
