"""The backends: Program to C (through cffi) or to Python over checked memory."""
