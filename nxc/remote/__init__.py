"""A cache shared between machines, behind the local one (issue 32, docs/runner.md).

- store.py: where the bytes live: an HTTP server in the Bazel remote-cache
  layout (`/cas/<sha256>`, `/ac/<key>`: bazel-remote, nginx's WebDAV) or
  redis; bounded timeouts, every fault a RemoteError.
- trust.py: the shared key, and the signed action entries made with it.
- shared.py: which local entries are shared, fetching on a local miss
  (verified, then written into the local cache), uploading local writes,
  and switching the remote off for the run after its first fault.
- setup.py: the front doors' options (`--remote-cache`, the environment)
  turned into a `shared.Shared` put behind nxc/cache.py.
"""
