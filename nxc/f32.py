"""float32 <-> the i64 bit-pattern convention of .nx (low 32 bits, upper zero)."""
from __future__ import annotations

import numpy as np


def to_bits(values) -> np.ndarray:
    """float32 values (any array-like) -> int64 array of their bit patterns."""
    arr = np.asarray(values, dtype=np.float32)
    return arr.view(np.uint32).astype(np.int64)


def from_bits(bits) -> np.ndarray:
    """int64 bit patterns (low 32 bits used) -> float32 array."""
    arr = np.asarray(bits, dtype=np.int64)
    return (arr & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
