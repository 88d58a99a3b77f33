"""The C backend: emit C11, build it with cffi (cached by content hash)."""
