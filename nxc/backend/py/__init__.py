"""The Python backend: emit Python over runtime/nx_memory.py, load and run it."""
