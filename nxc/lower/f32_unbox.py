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
`nxrt_f32_to_bits`, which canonicalises NaN. That keeps results identical
to the boxed code: inside float arithmetic a NaN stays a NaN whatever its
payload, comparisons treat every NaN alike, and every observed NaN becomes
0x7FC00000 exactly as each primitive would have made it.
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
    function of this module."""
    if e is None or info.const(e) is not None:
        return True
    if isinstance(e, ast.Call) and primitive_name(e, info) is None:
        return False
    return all(is_pure(x, info) for x in ast.subexpressions(e))


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
    # A local only ever set from constants gains nothing as a float.
    return {s for s in unboxed if any(primitive_name(v, info) is not None or isinstance(v, ast.Name)
                                      for v in values[s])}
