"""nxc's incremental layer: what a run knows from earlier runs, and how it is keyed.

keys (every key and file signature, each key's parts as data), index (the
module index: each module file's signature, digest and imports), inputs (the
files a gate opened, checked before its cached pass is used), records (object
and gate records, clean verdicts), results (passing results, last failed)
and plan (the one decision per unit, with its reason). docs/architecture.md
says where it sits and docs/runner.md what the cache assumes.
"""
