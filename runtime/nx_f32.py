"""float32 primitives for nxc's Python backend.

Same names and semantics as the C runtime (runtime/nx_runtime.h, without the
``nxrt_`` prefix), bit-identical to it and to Berkeley SoftFloat
(tests/test_runtime_f32.py checks all three):

* a float32 value is a Python int whose low 32 bits are the IEEE-754 binary32
  pattern; inputs are masked to their low 32 bits, results are ints in
  [0, 2**32) (``nx_f32_to_i32``: a signed int; comparisons: bool);
* round to nearest even, subnormals kept, every NaN result is 0x7FC00000.

Why it is written this way
--------------------------
Speed: these run once per float op of interpreted nx code, so each is a few
bytecodes and no allocation beyond the result.

* The operands are converted to Python floats (binary64) and the op is done in
  binary64, then rounded once to binary32.  For + - * / and sqrt of binary32
  operands that is correctly rounded: binary64 has 53 >= 2*24 + 2 bits, so
  the double rounding is innocuous, and no binary32 operation leaves the
  binary64 normal range (so its subnormals are never involved).
* bits <-> float goes through one 8-byte scratch buffer seen as two memoryview
  casts ('I' and 'f').  Storing a Python float into the 'f' view is a C cast
  (double -> float): RNE, subnormals kept, overflow -> inf (Annex F).  That is
  ~35% faster than struct.pack/unpack (which also raises OverflowError on
  overflow).  Storing an int outside [0, 2**32) into the 'I' view raises
  ValueError, which is used instead of masking on the fast path.
* The scratch buffer is shared module state.  Each function writes it and
  reads it back with no call and no GC-tracked allocation in between, so
  under the GIL no other Python code (other thread, finalizer) can run inside
  such a window.  On a free-threaded build (no GIL), or if the import-time
  self-check of the C cast fails, the module binds the struct-based versions
  instead (same results, thread safe, ~30% slower).  ``IMPL`` says which set
  is in use; both sets are kept as ``_sc_<name>`` / ``_st_<name>`` for tests.

Run ``python runtime/nx_f32.py`` for a ns/op micro-benchmark.
"""

import math as _math
import struct as _struct
import sys as _sys

__all__ = [
    "nx_f32_add", "nx_f32_sub", "nx_f32_mul", "nx_f32_div", "nx_f32_sqrt",
    "nx_f32_lt", "nx_f32_le", "nx_f32_eq",
    "nx_i32_to_f32", "nx_f32_to_i32",
    "IMPL",
]

_NAMES = tuple(n for n in __all__ if n != "IMPL")

F32_CANONICAL_NAN = 0x7FC00000
_M = 0xFFFFFFFF
_sqrt = _math.sqrt

# --------------------------------------------------------------------------
# Fast set: shared scratch buffer viewed as uint32[2] and float[2].
# --------------------------------------------------------------------------

_scratch = bytearray(8)
_wI = memoryview(_scratch).cast("I")
_wF = memoryview(_scratch).cast("f")


def _sc_nx_f32_add(a, b):
    try:
        _wI[0] = a
        _wI[1] = b
    except ValueError:
        _wI[0] = a & 0xFFFFFFFF
        _wI[1] = b & 0xFFFFFFFF
    r = _wF[0] + _wF[1]
    if r != r:
        return 0x7FC00000
    _wF[0] = r
    return _wI[0]


def _sc_nx_f32_sub(a, b):
    try:
        _wI[0] = a
        _wI[1] = b
    except ValueError:
        _wI[0] = a & 0xFFFFFFFF
        _wI[1] = b & 0xFFFFFFFF
    r = _wF[0] - _wF[1]
    if r != r:
        return 0x7FC00000
    _wF[0] = r
    return _wI[0]


def _sc_nx_f32_mul(a, b):
    try:
        _wI[0] = a
        _wI[1] = b
    except ValueError:
        _wI[0] = a & 0xFFFFFFFF
        _wI[1] = b & 0xFFFFFFFF
    r = _wF[0] * _wF[1]
    if r != r:
        return 0x7FC00000
    _wF[0] = r
    return _wI[0]


def _sc_nx_f32_div(a, b):
    try:
        _wI[0] = a
        _wI[1] = b
    except ValueError:
        _wI[0] = a & 0xFFFFFFFF
        _wI[1] = b & 0xFFFFFFFF
    try:
        r = _wF[0] / _wF[1]
    except ZeroDivisionError:
        # Python raises for any x / ±0 (NaN too); IEEE: 0/0, NaN/0 -> NaN,
        # x/±0 -> inf with sign(x) xor sign(y). (A try costs nothing when
        # nothing is raised; a test of y would cost every division.)
        x = _wF[0]
        if x != x or x == 0.0:
            return 0x7FC00000
        return ((a ^ b) & 0x80000000) | 0x7F800000
    if r != r:
        return 0x7FC00000
    _wF[0] = r
    return _wI[0]


def _sc_nx_f32_sqrt(a):
    try:
        _wI[0] = a
    except ValueError:
        _wI[0] = a & 0xFFFFFFFF
    x = _wF[0]
    if x > 0.0:                       # finite positive or +inf
        r = _sqrt(x)
        _wF[0] = r
        return _wI[0]
    if x == 0.0:                      # sqrt(±0) = ±0
        return a & 0xFFFFFFFF
    return 0x7FC00000                 # negative or NaN


def _sc_nx_f32_lt(a, b):
    try:
        _wI[0] = a
        _wI[1] = b
    except ValueError:
        _wI[0] = a & 0xFFFFFFFF
        _wI[1] = b & 0xFFFFFFFF
    return _wF[0] < _wF[1]


def _sc_nx_f32_le(a, b):
    try:
        _wI[0] = a
        _wI[1] = b
    except ValueError:
        _wI[0] = a & 0xFFFFFFFF
        _wI[1] = b & 0xFFFFFFFF
    return _wF[0] <= _wF[1]


def _sc_nx_f32_eq(a, b):
    try:
        _wI[0] = a
        _wI[1] = b
    except ValueError:
        _wI[0] = a & 0xFFFFFFFF
        _wI[1] = b & 0xFFFFFFFF
    return _wF[0] == _wF[1]


def _sc_nx_i32_to_f32(x):
    # Low 32 bits as signed int32 (exact as a double); one RNE rounding.
    if not -0x80000000 <= x < 0x80000000:
        x = ((x & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000
    _wF[0] = x
    return _wI[0]


def _sc_nx_f32_to_i32(a):
    try:
        _wI[0] = a
    except ValueError:
        _wI[0] = a & 0xFFFFFFFF
    x = _wF[0]
    if x != x:
        return 2147483647
    if x >= 2147483648.0:
        return 2147483647
    if x < -2147483648.0:
        return -2147483648
    return int(x)                     # truncates toward zero


# --------------------------------------------------------------------------
# Thread-safe set: struct pack/unpack (no shared mutable state).
# --------------------------------------------------------------------------

_pII = _struct.Struct("<II").pack
_uff = _struct.Struct("<ff").unpack
_pI = _struct.Struct("<I").pack
_uf = _struct.Struct("<f").unpack
_pf = _struct.Struct("<f").pack
_uI = _struct.Struct("<I").unpack


def _st_round(r):
    """binary64 -> binary32 bits, RNE; NaN canonical; overflow -> ±inf."""
    if r != r:
        return 0x7FC00000
    try:
        return _uI(_pf(r))[0]
    except OverflowError:             # struct refuses to round to inf itself
        return 0x7F800000 if r > 0.0 else 0xFF800000


def _st_nx_f32_add(a, b):
    x, y = _uff(_pII(a & 0xFFFFFFFF, b & 0xFFFFFFFF))
    return _st_round(x + y)


def _st_nx_f32_sub(a, b):
    x, y = _uff(_pII(a & 0xFFFFFFFF, b & 0xFFFFFFFF))
    return _st_round(x - y)


def _st_nx_f32_mul(a, b):
    x, y = _uff(_pII(a & 0xFFFFFFFF, b & 0xFFFFFFFF))
    return _st_round(x * y)


def _st_nx_f32_div(a, b):
    x, y = _uff(_pII(a & 0xFFFFFFFF, b & 0xFFFFFFFF))
    if y == 0.0:
        if x != x or x == 0.0:
            return 0x7FC00000
        return ((a ^ b) & 0x80000000) | 0x7F800000
    return _st_round(x / y)


def _st_nx_f32_sqrt(a):
    x = _uf(_pI(a & 0xFFFFFFFF))[0]
    if x > 0.0:
        return _st_round(_sqrt(x))
    if x == 0.0:
        return a & 0xFFFFFFFF
    return 0x7FC00000


def _st_nx_f32_lt(a, b):
    x, y = _uff(_pII(a & 0xFFFFFFFF, b & 0xFFFFFFFF))
    return x < y


def _st_nx_f32_le(a, b):
    x, y = _uff(_pII(a & 0xFFFFFFFF, b & 0xFFFFFFFF))
    return x <= y


def _st_nx_f32_eq(a, b):
    x, y = _uff(_pII(a & 0xFFFFFFFF, b & 0xFFFFFFFF))
    return x == y


def _st_nx_i32_to_f32(x):
    return _st_round(float(((x & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000))


def _st_nx_f32_to_i32(a):
    x = _uf(_pI(a & 0xFFFFFFFF))[0]
    if x != x:
        return 2147483647
    if x >= 2147483648.0:
        return 2147483647
    if x < -2147483648.0:
        return -2147483648
    return int(x)


# --------------------------------------------------------------------------
# Pick the implementation.
# --------------------------------------------------------------------------

def _scratch_cast_ok():
    """Does storing a double into the 'f' view round like binary32 RNE?"""
    cases = (
        (1.0 + 2.0 ** -24, 0x3F800000),           # tie -> even (down)
        (1.0 + 3 * 2.0 ** -24, 0x3F800002),       # tie -> even (up)
        (2.0 ** -150, 0x00000000),                # tie at 0 -> +0
        (1.5 * 2.0 ** -150, 0x00000001),          # rounds to min subnormal
        (-(2.0 ** -149) * 3, 0x80000003),         # exact negative subnormal
        (3.4028235677973366e38, 0x7F800000),      # FLT_MAX + half ulp -> inf
        (3.4028234663852886e38, 0x7F7FFFFF),      # FLT_MAX
        (-1e300, 0xFF800000),                     # overflow -> -inf
        (-0.0, 0x80000000),
    )
    try:
        for value, bits in cases:
            _wF[0] = value
            if _wI[0] != bits:
                return False
        _wI[0] = 0x00000001                       # subnormal read back exactly
        if _wF[0] != 2.0 ** -149:
            return False
    except Exception:
        return False
    return True


def _gil_enabled():
    probe = getattr(_sys, "_is_gil_enabled", None)   # CPython >= 3.13
    return True if probe is None else bool(probe())


if _gil_enabled() and _scratch_cast_ok():
    IMPL = "scratch"
else:
    IMPL = "struct"

if IMPL == "scratch":
    nx_f32_add = _sc_nx_f32_add
    nx_f32_sub = _sc_nx_f32_sub
    nx_f32_mul = _sc_nx_f32_mul
    nx_f32_div = _sc_nx_f32_div
    nx_f32_sqrt = _sc_nx_f32_sqrt
    nx_f32_lt = _sc_nx_f32_lt
    nx_f32_le = _sc_nx_f32_le
    nx_f32_eq = _sc_nx_f32_eq
    nx_i32_to_f32 = _sc_nx_i32_to_f32
    nx_f32_to_i32 = _sc_nx_f32_to_i32
else:
    nx_f32_add = _st_nx_f32_add
    nx_f32_sub = _st_nx_f32_sub
    nx_f32_mul = _st_nx_f32_mul
    nx_f32_div = _st_nx_f32_div
    nx_f32_sqrt = _st_nx_f32_sqrt
    nx_f32_lt = _st_nx_f32_lt
    nx_f32_le = _st_nx_f32_le
    nx_f32_eq = _st_nx_f32_eq
    nx_i32_to_f32 = _st_nx_i32_to_f32
    nx_f32_to_i32 = _st_nx_f32_to_i32


def _bench(number=1_000_000, repeat=5):
    import timeit
    ops2 = ("nx_f32_add", "nx_f32_sub", "nx_f32_mul", "nx_f32_div",
            "nx_f32_lt", "nx_f32_le", "nx_f32_eq")
    ops1 = ("nx_f32_sqrt", "nx_i32_to_f32", "nx_f32_to_i32")
    a, b = 0x3FC00000, 0x40490FDB    # 1.5, pi
    print(f"IMPL={IMPL}  Python {_sys.version.split()[0]}  (best of {repeat}, ns/op)")
    for prefix, label in (("", "public"), ("_st_", "struct")):
        g = globals()
        for n in ops2 + ops1:
            f = g[prefix + n]
            stmt = "f(a, b)" if n in ops2 else "f(a)"
            t = min(timeit.repeat(stmt, globals={"f": f, "a": a, "b": b},
                                  number=number, repeat=repeat))
            print(f"  {label:6s} {n:15s} {t / number * 1e9:7.1f}")


if __name__ == "__main__":
    _bench()
