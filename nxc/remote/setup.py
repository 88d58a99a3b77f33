"""The remote cache's settings, from the front doors' options or the
environment, put behind the local cache (nxc/cache.py, use_remote).

`nxc test` and `nxc run` take `--remote-cache URL`, `--remote-cache-key-file
FILE`, `--remote-cache-readonly` and `--remote-cache-timeout SECONDS`
(nxc/cli.py), the pytest plugin the same with `--nx-` in front; each falls
back on its environment variable (below), so a CI job can set them once.
A forked worker inherits what its runner set up.
"""
from __future__ import annotations

import atexit
import math
import os
import sys

from nxc import cache
from nxc.remote import trust
from nxc.remote.shared import Shared
from nxc.remote.store import store_for

URL_ENV = "NXC_REMOTE_CACHE"
READONLY_ENV = "NXC_REMOTE_CACHE_READONLY"
TIMEOUT_ENV = "NXC_REMOTE_CACHE_TIMEOUT"
DEFAULT_TIMEOUT = 5.0       # seconds: to connect, and again for a whole answer
# More overflows a socket's time_t (an OverflowError, not a message). The
# bound nxc/gates/protocol.py sets for gates, written again: remote/ sits
# below gates/ in the stage order and cannot import it.
MAX_TIMEOUT = 1_000_000


class SetupError(ValueError):
    """Settings that cannot be used: a one-line message, exit status 2."""


def _timeout(value) -> float:
    if value is None:
        text = os.environ.get(TIMEOUT_ENV)
        if not text:
            return DEFAULT_TIMEOUT
        try:
            value = float(text)
        except ValueError:
            raise SetupError(f"{TIMEOUT_ENV}='{text}' is not a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise SetupError(f"the remote cache timeout must be a positive, finite number of seconds, at most "
                         f"{MAX_TIMEOUT:,}, not {value}")
    return float(value)


def _truthy(text: str | None) -> bool:
    return (text or "").strip().lower() not in ("", "0", "no", "false", "off")


def configure(url: str | None = None, key_file: str | None = None, readonly: bool = False,
              timeout: float | None = None) -> Shared | None:
    """Set up the remote cache of this process (None: there is none, or no key
    to trust it with: a note says so). Raises SetupError."""
    url = url or os.environ.get(URL_ENV) or None
    if url is None:
        cache.use_remote(None)
        return None
    readonly = readonly or _truthy(os.environ.get(READONLY_ENV))
    seconds = _timeout(timeout)
    try:
        store = store_for(url, seconds)
        key = trust.load_key(key_file)
    except ValueError as exc:           # trust.BadKey too
        raise SetupError(f"--remote-cache: {exc}") from None
    if key is None:
        cache.use_remote(None)
        print(f"nxc: note: remote cache {store.url} not used: no shared key ({trust.KEY_FILE_ENV} or "
              f"--remote-cache-key-file, or {trust.KEY_ENV}), and without one nothing on it can be trusted",
              file=sys.stderr)
        return None
    shared = Shared(store, key, readonly)
    cache.use_remote(shared)
    owner = os.getpid()
    atexit.register(lambda: os.getpid() == owner and shared.forget_run())
    return shared


def configure_from_args(args) -> Shared | None:
    return configure(getattr(args, "remote_cache", None), getattr(args, "remote_cache_key_file", None),
                     bool(getattr(args, "remote_cache_readonly", False)), getattr(args, "remote_cache_timeout", None))
