"""Float32 unboxing for the C backend: which i64 values may live as C `float`.

A float32 in .nx is a bit pattern in an i64, and each runtime primitive
(`nx_f32_add`, ...) returns canonical bits. Emitted naively, a loop-carried
accumulator bounces between integer and float registers and is NaN-checked on
every iteration (measured 2.7x slower than plain float C). This pass finds:

- primitive calls, which the C emitter writes as plain float expressions
  when their operands are float expressions too;
- locals that only ever hold float32 bits produced by primitives (or a
  constant that is a canonical float32 pattern), which the emitter declares
  as C `float`.

Bits are only materialised where they are observed (a store, an integer
operation, a call to a non-primitive, a return), through
`nxrt_f32_lane_bits` (a local's bits) or `nxrt_f32_to_bits` (a primitive's
result), which canonicalise NaN; the first selects with masks instead of a
conditional, so that GCC can vectorize a loop around the loop that computed
the local (a kernel's sums stored after its column loop). That keeps results identical
to the boxed code: inside float arithmetic a NaN stays a NaN whatever its
payload, comparisons treat every NaN alike, and every observed NaN becomes
0x7FC00000 exactly as each primitive would have made it.

A local that is also set from other bits (a load, a parameter: `var s = acc[r]
as i64` before a chain of adds into s) may be a float too, provided no
observation of it can see such bits: those may be a NaN with another payload,
which canonicalising would change, while a float operand sees every NaN
alike. `_observes_only_f32` follows each statement's effect on what the local
may hold (bits, primitives' results, or both) through branches and loops.
Without this rule a sum started from a load was kept as bits and
canonicalised at every add, which made a kernel written that way 50% slower.
"""
from __future__ import annotations

from nxc.syntax import ast
from nxc.check.types import I64

# How a primitive is written in C on float operands.
F32_BINARY = {"nx_f32_add": "+", "nx_f32_sub": "-", "nx_f32_mul": "*", "nx_f32_div": "/"}
F32_COMPARE = {"nx_f32_lt": "<", "nx_f32_le": "<=", "nx_f32_eq": "=="}
# Primitives whose result is a float32 (as opposed to bool or i32).
F32_RESULT = frozenset(F32_BINARY) | {"nx_f32_sqrt", "nx_i32_to_f32"}
# Primitives whose operands are float32.
F32_OPERANDS = frozenset(F32_BINARY) | frozenset(F32_COMPARE) | {"nx_f32_sqrt", "nx_f32_to_i32"}
# Primitives whose operands the C emitter writes as float expressions (float_expr): a float
# local there is read as a float, its bits unobserved.
F32_FLOAT_ARGS = frozenset(F32_BINARY) | frozenset(F32_COMPARE) | {"nx_f32_sqrt"}


def primitive_name(e, info) -> str | None:
    """The runtime float32 primitive `e` calls, if it is such a call."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
        sym = info.sym(e.func)
        if sym is not None and sym.kind == "extern" and (sym.name in F32_RESULT or sym.name in F32_OPERANDS):
            return sym.name
    return None


def is_pure(e, info) -> bool:
    """No call with side effects inside (primitives are pure). `info`: the
    checked program's side tables (nxc/check/program.py), as in every
    function of this module.

    Remembered per node and program: the emitters ask at every level of an
    expression, which made a chain of n operators cost n^2 (1,500 terms: 18 s).
    """
    if e is None or info.const(e) is not None:
        return True
    key = (id(info), id(e))
    known = _PURITY.get(key)
    if known is not None and known[0] is info and known[1] is e:
        return known[2]
    if isinstance(e, ast.Call) and primitive_name(e, info) is None:
        pure = False
    else:
        pure = all(is_pure(x, info) for x in ast.subexpressions(e))
    if len(_PURITY) > 1 << 16:
        _PURITY.clear()
    _PURITY[key] = (info, e, pure)      # held, so their ids are not reused while here
    return pure


_PURITY: dict[tuple[int, int], tuple[object, object, bool]] = {}


def is_canonical_f32_const(value: int) -> bool:
    """A constant whose bits a float round trip keeps exactly."""
    if not 0 <= value < 1 << 32:
        return False
    is_nan = (value & 0x7F800000) == 0x7F800000 and (value & 0x007FFFFF) != 0
    return not is_nan or value == 0x7FC00000


def _produces_f32(e, unboxed: set, info) -> bool:
    name = primitive_name(e, info)
    if name is not None:
        return name in F32_RESULT
    if isinstance(e, ast.Name) and info.sym(e) in unboxed:
        return True
    return info.const(e) is not None and info.ty(e) == I64 and is_canonical_f32_const(info.const(e))


def unboxed_locals(body: ast.Block, info) -> set:
    """Locals of a function body that can be C floats (see the module doc)."""
    values: dict[object, list] = {}
    excluded: set = set()

    def walk(stmts):
        for s in stmts:
            if isinstance(s, ast.VarDecl):
                if info.sym(s) is not None and info.sym(s).type == I64:
                    values.setdefault(info.sym(s), []).append(s.value)
            elif isinstance(s, ast.Assign):
                t = s.target
                if isinstance(t, ast.Name) and info.sym(t) is not None and info.sym(t).kind == "local" and info.sym(t).type == I64:
                    if s.op != "=":
                        excluded.add(info.sym(t))
                    else:
                        values.setdefault(info.sym(t), []).append(s.value)
            elif isinstance(s, ast.If):
                walk(s.then.stmts)
                if isinstance(s.orelse, ast.Block):
                    walk(s.orelse.stmts)
                elif s.orelse is not None:
                    walk([s.orelse])
            elif isinstance(s, ast.While):
                walk(s.body.stmts)
            elif isinstance(s, ast.Block):
                walk(s.stmts)

    walk(body.stmts)
    unboxed = {sym for sym in values if sym not in excluded}
    changed = True
    while changed:          # drop locals fed by anything but float32 producers
        changed = False
        for sym in list(unboxed):
            if not all(_produces_f32(v, unboxed, info) for v in values[sym]):
                unboxed.discard(sym)
                changed = True
    # Locals also set from other bits: a float where no observation can see those bits.
    mixed = {sym for sym in values if sym not in excluded and sym not in unboxed
             and any(primitive_name(v, info) in F32_RESULT for v in values[sym])}
    changed = True
    while changed:
        changed = False
        for sym in list(mixed):
            if not _observes_only_f32(body, sym, unboxed, unboxed | mixed, info):
                mixed.discard(sym)
                changed = True
    unboxed |= mixed
    # A local only ever set from constants gains nothing as a float.
    return {s for s in unboxed if any(primitive_name(v, info) is not None or isinstance(v, ast.Name)
                                      for v in values[s])}


# What a local may hold at a point of its function: bits the primitives made (or a
# canonical constant), other bits, or either.
_F32, _BITS = "f32", "bits"


def _observes_only_f32(body: ast.Block, sym, pure: set, floats: set, info) -> bool:
    """True if no use of `sym` that observes its bits can see a value that did not come
    from a float32 producer. pure: the locals set from producers only (a Name of one is
    a producer); floats: every local that would be a float (a Name of `sym` assigned
    whole to one of them is a float operand, not an observation)."""

    def value_kind(v) -> frozenset:
        return frozenset({_F32 if _produces_f32(v, pure, info) else _BITS})

    def seen(e, state: frozenset, whole_is_float: bool = False) -> bool:
        # False if e observes sym's bits while sym may hold other bits: a use of sym that the C
        # emitter does not read as a float (an operand of a float primitive, or the whole value
        # of a float local's assignment: float_expr)
        if e is None or _BITS not in state or (whole_is_float and isinstance(e, ast.Name)):
            return True
        as_float, uses = set(), []
        for n in ast.walk(e):
            if isinstance(n, ast.Call) and primitive_name(n, info) in F32_FLOAT_ARGS:
                as_float.update(id(a) for a in n.args)
            elif isinstance(n, ast.Name) and info.sym(n) is sym:
                uses.append(id(n))
        return all(u in as_float for u in uses)

    class Paths:    # the states that leave a loop's body by break / continue
        def __init__(self):
            self.brk: frozenset = frozenset()
            self.cont: frozenset = frozenset()

    def stmts(ss, state: frozenset, loop) -> frozenset | None:
        for st in ss:
            state = stmt(st, state, loop)
            if state is None:
                return None
        return state

    def target_is_float(t) -> bool:
        return isinstance(t, ast.Name) and info.sym(t) in floats

    def stmt(st, state: frozenset, loop) -> frozenset | None:
        if not state:           # not reached
            return state
        if isinstance(st, ast.VarDecl):
            if not seen(st.value, state, info.sym(st) in floats):
                return None
            return value_kind(st.value) if info.sym(st) is sym else state
        if isinstance(st, ast.Assign):
            if not (seen(st.value, state, target_is_float(st.target)) and
                    (isinstance(st.target, ast.Name) or seen(st.target, state))):
                return None
            if isinstance(st.target, ast.Name) and info.sym(st.target) is sym:
                return value_kind(st.value)
            return state
        if isinstance(st, ast.If):
            if not seen(st.cond, state):
                return None
            a = stmts(st.then.stmts, state, loop)
            b = state if st.orelse is None else stmt(st.orelse, state, loop)
            return None if a is None or b is None else a | b
        if isinstance(st, ast.Block):
            return stmts(st.stmts, state, loop)
        if isinstance(st, ast.While):
            inner = Paths()
            head = state
            while True:
                if not seen(st.cond, head):
                    return None
                end = stmts(st.body.stmts, head, inner)
                if end is None:
                    return None
                grown = head | end | inner.cont
                if grown == head:
                    return head | inner.brk
                head = grown
        if isinstance(st, ast.Break):
            loop.brk |= state
            return frozenset()
        if isinstance(st, ast.Continue):
            loop.cont |= state
            return frozenset()
        if isinstance(st, ast.Return):
            return frozenset() if seen(st.value, state) else None
        if isinstance(st, ast.ExprStmt):
            return state if seen(st.expr, state) else None
        return None             # a statement this walk does not know: keep the bits

    # a parameter or an outer value is not what sym holds before its declaration
    return stmts(body.stmts, frozenset({_BITS}), Paths()) is not None
