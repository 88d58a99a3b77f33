#!/usr/bin/env python3
"""Random well-typed .nx programs, Csmith-style, for differential testing.

    python bench/gen_program.py --seed 7                 # one program on stdout
    python bench/gen_program.py --seed 1 --count 50 -o out/   # out/gen_1.nx ... gen_50.nx

`generate(seed) -> str` is a complete module whose gate `main` returns a
checksum of everything the program computed (so every backend and every
optimisation level must return the same number). `generate_parts(seed,
prefix)` gives the same program without imports and `main`, its top-level
names prefixed, so that bench/difftest.py can put many programs in one module
(one C build for all of them) and call each `<prefix>run()` on its own.

What a program contains (each drawn at random):
* integer expressions at all eight widths and both signs, bools, casts between
  every pair of types, shifts by any amount (any count type, negative and
  huge counts), `/` and `%` with the divisor kept non-zero (`(e | 1)`,
  `((e & 7) + 1)`, non-zero literals including -1 and MIN), literal-only
  sub-expressions that take their type from the context, comparisons,
  `&&`/`||` with side effects on the right;
* locals (`let`/`var`, shadowing in inner blocks, names that are keywords or
  reserved in C or Python), globals, parameters assigned like variables,
  compound assignments of every operator;
* helper functions (each calls only earlier ones, some bounded-recursive) that
  read and write memory and globals, so evaluation order matters;
* memory from `sys_mmap`: arrays of every width, arrays of structs (with an
  embedded struct and a self-pointer), indexed in bounds (`& (N-1)`), read
  through narrower pointer views (`as *u8`), `&p[i]`, `*p`, address
  arithmetic through `as i64`;
* nested bounded `while` loops (up, down, `while true` + `break`,
  `continue`), `if` / `else if` / `else`, early returns;
* float32 through the runtime primitives and nx_f32.nx's functions;
* a vectorizable loop nest (issue 19): an inner loop over independent
  elements, each a sequential float32 chain in the outer loop's order;
* issue 28's threaded linear-kernel loops (bench/gen_kernels.py): packed-panel
  float32 sums over f32 / bf16 / f16 / int8 / 4-bit weights in a
  `sys_parallel_for` task, checked in the program against a scalar reference
  (a mismatch makes `run` return gen_kernels.KERNEL_SENTINEL + k);
* fold checks: an expression of constants (folded by the checker) compared
  with the same expression computed at run time from locals; a mismatch makes
  `run` return FOLD_SENTINEL + k, which bench/difftest.py reports.

No program has undefined behaviour: every index is masked to its array, every
divisor is non-zero, every loop has a bounded counter that nothing else
assigns, recursion is bounded, no address is ever folded into the checksum
(only compared), and an estimated cost budget keeps each run to a few
thousand operations even on the Python backend.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_kernels  # noqa: E402

# Every program also gets issue 28's threaded kernel loops (bench/gen_kernels.py, their own
# random stream): set to False for the programs as they were before them.
KERNELS = True

INT_TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
BITS = {t: int(t[1:]) for t in INT_TYPES}
SIGNED = {t: t[0] == "i" for t in INT_TYPES}
SIZE = {**{t: BITS[t] // 8 for t in INT_TYPES}, "bool": 1}

FOLD_SENTINEL = 0x7F01D00000000000          # run() returns this + k when fold check k fails
FOLD_MASK = 0xFFFFFFFFFFFF0000

IMPORTS = ['import "nx_syscalls.nx"', 'import "nx_f32.nx"', 'import "nx_f32_div.nx"', 'import "nx_f32_cvt.nx"']

# Valid nx names that are keywords, builtins or reserved words in C or Python,
# or look like the backends' own helper names: the backends must rename them.
ODD_NAMES = ["int", "char", "float", "double", "static", "auto", "goto", "default", "switch", "case", "do",
             "for", "long", "short", "signed", "unsigned", "union", "enum", "typedef", "volatile", "register",
             "inline", "restrict", "class", "def", "lambda", "None", "True", "False", "pass", "yield", "print",
             "len", "range", "list", "dict", "self", "not", "and", "or", "is", "in", "del", "global", "nonlocal",
             "try", "except", "finally", "raise", "with", "async", "await", "from", "assert", "elif", "match",
             "_", "_t", "_a", "_p", "_r", "_d", "_SH", "_rt", "_ld", "_st", "_Vq", "_cap", "__init__", "__x__",
             "nx_t0", "nx_p", "nx_r", "l_v1", "NULL", "errno", "stdin", "abs", "exit", "malloc", "memcpy",
             "INT64_C", "int64_t", "uint8_t", "main_", "nxg_x", "nxf_x", "sys", "math", "os"]

F32_CONSTS = ["0x00000000", "0x80000000", "0x3F800000", "0xBF800000", "0x40490FDB", "0x3F000000",
              "0x00000001", "0x807FFFFF", "0x00800000", "0x7F7FFFFF", "0xFF7FFFFF", "0x7F800000",
              "0xFF800000", "0x7FC00000", "0x3DCCCCCD", "0x4B800001", "0x4F000000", "0xCF000000",
              "0x33800000", "0x42B17218", "0xC2CE0000", "0x3F7FFFFF", "0x4B7FFFFF", "0x1A3504F3"]

F32_BIN = ["nx_f32_add", "nx_f32_sub", "nx_f32_mul", "nx_f32_div", "nx_f32_max", "nx_f32_min"]
F32_UN = ["nx_f32_sqrt", "nx_f32_neg", "nx_f32_abs", "nx_f32_exp"]
F32_CMP = ["nx_f32_lt", "nx_f32_le", "nx_f32_eq", "nx_f32_gt", "nx_f32_ge", "nx_f32_ne"]

MIX = "0x100000001B3"        # FNV-1a 64-bit prime: ck = (ck ^ v) * MIX

MAX_COST = 6000              # estimated operations of one program run


def lit_text(value: int, ty: str, rng: random.Random) -> str:
    """A literal (or literal-only expression) denoting `value` (in ty's range) for type ty."""
    bits = BITS[ty]
    value &= (1 << bits) - 1
    if SIGNED[ty] and value >> (bits - 1) and rng.random() < 0.7:
        return f"-{(1 << bits) - value}"                  # -128 for i8, -1 ...
    if rng.random() < 0.5:
        return f"0x{value:X}"
    return str(value)


def interesting(ty: str, rng: random.Random) -> int:
    bits = BITS[ty]
    m = (1 << bits) - 1
    choice = rng.randrange(12)
    if choice == 0:
        return 0
    if choice == 1:
        return 1
    if choice == 2:
        return m                                          # -1 / MAX unsigned
    if choice == 3:
        return 1 << (bits - 1)                            # MIN / high bit
    if choice == 4:
        return (1 << (bits - 1)) - 1                      # MAX signed
    if choice == 5:
        return rng.randrange(2, 17)
    if choice == 6:
        return (rng.randrange(bits) + rng.choice([0, 1, 2, bits]))  # near shift widths
    if choice == 7:
        return (1 << rng.randrange(bits)) + rng.choice([-1, 0, 1])
    return rng.getrandbits(bits)


@dataclass
class Var:
    name: str
    ty: str                  # int type, "bool", "*T" (T an int type or a struct name)
    mutable: bool
    kind: str                # local | param | global | counter
    length: int = 0          # pointers: elements that may be indexed (power of two, or 1)


@dataclass
class Struct:
    name: str
    fields: list             # [(name, type)]: int types, bool, "S:<struct>" (embedded), "*<self>"


@dataclass
class Func:
    name: str
    params: list             # [Var]
    ret: str | None
    cost: int
    lines: list = field(default_factory=list)
    recursive: bool = False
    touches: list = field(default_factory=list)      # bump helpers: the globals they change
    touches_memory: bool = False                     # ... and memory through the global pointer


class Gen:
    def __init__(self, seed: int, prefix: str = ""):
        self.rng = random.Random(seed)
        self.seed = seed
        self.P = prefix
        self.N = self.rng.choice([8, 16, 32])             # elements of every array
        self.structs: list[Struct] = []
        self.globals: list[Var] = []
        self.funcs: list[Func] = []
        self.fold_checks = 0
        self.consts: list[tuple[str, str]] = []      # (name, type)
        self.aliases: list[tuple[str, str]] = []     # (alias, type)
        self.gp: Var | None = None                   # a global pointer to an array
        self.bumps: list[Func] = []                  # side-effect helpers (gen_bumps)
        self.out: list[str] = []
        # per-function state
        self.scopes: list[dict[str, Var]] = []
        self.lines: list[str] = []
        self.indent = 1
        self.mult = 1                 # product of enclosing loop trip counts
        self.cost = 0                 # estimated cost of the function so far
        self.loop_depth = 0
        self.in_loop_with_top_increment = False
        self.local_count = 0
        self.odd_used: set[str] = set()
        self.func: Func | None = None
        self.budget = 0

    # ------------------------------------------------------------ helpers
    def r(self) -> float:
        return self.rng.random()

    def pick(self, seq):
        return self.rng.choice(seq)

    def emit(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def new_name(self) -> str:
        if self.r() < 0.08:
            free = [n for n in ODD_NAMES if n not in self.odd_used]
            if free:
                n = self.pick(free)
                self.odd_used.add(n)
                return n
        self.local_count += 1
        return f"v{self.local_count}"

    def all_vars(self) -> list[Var]:
        seen: dict[str, Var] = {}
        for scope in self.scopes:
            seen.update(scope)
        for g in self.globals:
            if g.name not in seen:
                seen[g.name] = g
        return list(seen.values())

    def vars_of(self, ty: str, mutable: bool = False) -> list[Var]:
        return [v for v in self.all_vars() if v.ty == ty and (v.mutable or not mutable)
                and not (mutable and v.kind == "counter") and v.name != "ck"]

    def declare(self, var: Var) -> None:
        self.scopes[-1][var.name] = var

    def int_type(self) -> str:
        return self.pick(INT_TYPES)

    def spend(self, n: int = 1) -> None:
        self.cost += n * self.mult

    # ------------------------------------------------------------ memory
    def arrays(self) -> list[Var]:
        """Pointer variables in scope (arrays of N, or single elements)."""
        return [v for v in self.all_vars() if v.ty.startswith("*")]

    def struct(self, name: str) -> Struct:
        for s in self.structs:
            if s.name == name:
                return s
        raise KeyError(name)

    def index(self, length: int, depth: int) -> str:
        """An index expression that is always in [0, length)."""
        if length == 1:
            return "0"
        c = self.r()
        if c < 0.25:
            return str(self.rng.randrange(length))
        # the mask (length - 1) must be positive in the index's type: no i8 for 256 bytes
        fits = [t for t in INT_TYPES if not SIGNED[t] or length - 1 < 1 << (BITS[t] - 1)]
        if depth <= 0:                                   # no nested memory access: variables only
            vs = [v for v in self.all_vars() if v.ty in fits]
            if not vs:
                return str(self.rng.randrange(length))
            return f"({self.pick(vs).name} & {length - 1})"
        if c < 0.75:
            e = self.expr(self.pick(fits), depth - 1)
            return f"({e} & {length - 1})"
        e = self.expr(self.int_type(), depth - 1, typed=False)
        return f"(({e} as u32) % {length})"

    def has_link(self, target: str) -> bool:
        return target not in SIZE and any(n == "link" for n, _ in self.struct(target).fields)

    def place(self, ty: str, depth: int, for_store: bool = False) -> str | None:
        """A memory place of type `ty`, of a kind drawn from those in scope (None if none)."""
        cands = []                                        # (pointer var, how)
        for v in self.arrays():
            target = v.ty[1:]
            if target == ty:
                cands.append((v, "direct"))
            elif target in INT_TYPES and ty in INT_TYPES and SIZE[target] > SIZE[ty] and v.length > 1 \
                    and (not for_store or self.r() < 0.5):
                cands.append((v, "view"))
            elif target not in SIZE:
                paths = [p for p, fty in self.field_paths(self.struct(target)) if fty == ty]
                if paths:
                    cands.append((v, paths))
        if not cands:
            return None
        v, how = self.pick(cands)
        target = v.ty[1:]
        if how == "direct":
            c = self.r()
            if v.length == 1 or c < 0.1:
                return f"(*{v.name})" if self.r() < 0.5 else f"{v.name}[0]"
            if c < 0.2:
                return f"(*(&{v.name}[{self.index(v.length, depth)}]))"
            if c < 0.3:
                idx = self.index(v.length, depth)
                return f"((({v.name} as i64) + ({idx} as i64) * {SIZE[ty]}) as *{ty})[0]"
            if c < 0.4:                               # a negative index from a middle element
                half = v.length // 2
                signed = [t for t in ("i8", "i16", "i32", "i64")]
                e = self.expr(self.pick(signed), max(depth - 1, 0)) if depth > 0 else str(self.rng.randrange(half))
                return f"(&{v.name}[{half}])[(({e} & {half - 1}) - {half})]"
            return f"{v.name}[{self.index(v.length, depth)}]"
        if how == "view":
            n = v.length * SIZE[target] // SIZE[ty]          # a narrower view of the same bytes
            return f"({v.name} as *{ty})[{self.index(n, depth)}]"
        base = f"{v.name}[{self.index(v.length, depth)}]" if v.length > 1 else v.name
        if self.has_link(target) and self.r() < 0.2:
            base = f"{base}.link"                         # every link points into the same array
        path = self.pick(how)
        c = self.r()
        if c < 0.1:
            return f"(*(&{base}.{path}))"
        if c < 0.2 and "." in path:                       # through a pointer to the embedded struct
            outer, rest = path.split(".", 1)
            return f"(&{base}.{outer}).{rest}"
        return f"{base}.{path}"

    def field_paths(self, st: Struct, prefix: str = ""):
        for name, fty in st.fields:
            if fty.startswith("S:"):
                yield from self.field_paths(self.struct(fty[2:]), f"{prefix}{name}.")
            elif not fty.startswith("*"):
                yield f"{prefix}{name}", fty

    # ------------------------------------------------------------ expressions
    def literal(self, ty: str) -> str:
        if ty == "bool":
            return self.pick(["true", "false"])
        return lit_text(interesting(ty, self.rng), ty, self.rng)

    def expr(self, ty: str, depth: int, typed: bool = True) -> str:
        """An expression of type `ty`. typed: a literal-only expression here takes its type
        from the context (else it would be an i64 and needs a cast)."""
        text = self._expr(ty, depth)
        if not typed and ty != "i64" and is_lit(text):
            return f"({text} as {ty})"
        return text

    def _expr(self, ty: str, depth: int) -> str:
        if ty == "bool":
            return self.cond(depth)
        if ty.startswith("*"):
            raise TypeError(ty)
        self.spend()
        if depth <= 0 or self.r() < 0.2:
            return self.leaf(ty)
        c = self.r()
        if c < 0.30:
            op = self.pick(["+", "-", "*", "&", "|", "^", "+", "*"])
            return f"({self._expr(ty, depth - 1)} {op} {self._expr(ty, depth - 1)})"
        if c < 0.40:
            return self.shift(ty, depth)
        if c < 0.48:
            op = self.pick(["/", "%"])
            return f"({self._expr(ty, depth - 1)} {op} {self.nonzero(ty, depth)})"
        if c < 0.56:
            return f"({self.pick(['-', '~'])}{self._expr(ty, depth - 1)})"
        if c < 0.68:
            src = self.pick(INT_TYPES + ["bool"])
            return f"({self.expr(src, depth - 1, typed=False)} as {self.type_text(ty)})"
        if c < 0.72:
            bumps = [b for b in self.bumps if b.ret == ty]
            if bumps:
                return f"{self.pick(bumps).name}({self.expr(ty, depth - 1)})"
        if c < 0.74 and self.bumps:
            return self.order_probe(ty, depth)
        if c < 0.76:
            call = self.call_expr(ty, depth)
            if call:
                return call
        if c < 0.86:
            place = self.place(ty, depth - 1)
            if place:
                return place
        if c < 0.88:
            ptrs = [v for v in self.arrays() if v.length > 1]
            if ptrs:                                  # the distance between two elements: the
                v = self.pick(ptrs)                   # same on every backend (addresses are not)
                a = f"&{v.name}[{self.index(v.length, 0)}]"
                b = self.pick([v.name, f"&{v.name}[{self.index(v.length, 0)}]"])
                return f"(({a} as {ty}) - ({b} as {ty}))"
        if ty == "i64" and c < 0.94:
            return self.f32_expr(depth)
        if c < 0.97:
            return self.literal_expr(ty, 2)
        return self.leaf(ty)

    def touched_read(self, b: Func, ty: str) -> str | None:
        """A read of something bump helper `b` changes, as a `ty`."""
        opts = [f"({g.name} as {ty})" if g.ty != ty else g.name for g in b.touches]
        if b.touches_memory and self.gp is not None:
            opts.append(f"({self.gp.name}[{self.rng.randrange(self.N)}] as {ty})")
        return self.pick(opts) if opts else None

    def order_probe(self, ty: str, depth: int) -> str:
        """`bump(e) op g` or `f(bump(e), g)` with g changed by the bump: left to right matters."""
        b = self.pick(self.bumps)
        call = f"{b.name}({self.expr(b.ret, max(depth - 1, 0))})"
        read = self.touched_read(b, ty) or self.leaf(ty)
        if b.ret != ty:
            call = f"({call} as {ty})"
        op = self.pick(["+", "-", "^", "*", "|"])
        return f"({call} {op} {read})"

    def leaf(self, ty: str) -> str:
        c = self.r()
        vs = self.vars_of(ty)
        if vs and c < 0.55:
            return self.pick(vs).name
        if c < 0.7:
            place = self.place(ty, 0)
            if place:
                return place
        if c < 0.8:
            other = [v for v in self.all_vars() if v.ty in INT_TYPES or v.ty == "bool"]
            if other:
                return f"({self.pick(other).name} as {self.type_text(ty)})"
        if c < 0.86:
            consts = [n for n, t in self.consts if t == ty]
            if consts:
                return self.pick(consts)
            if ty == "i64" and self.r() < 0.5:
                return self.pick([f"sizeof({self.pick(self.structs).name})" if self.structs else "sizeof(u16)",
                                  "NX_F32_ONE", "NX_F32_NAN", "NX_F32_MIN_SUBNORMAL", "NX_F32_SIGN_MASK"])
        return self.literal(ty)

    def type_text(self, ty: str) -> str:
        """ty, or now and then an alias of it."""
        names = [a for a, t in self.aliases if t == ty]
        if names and self.r() < 0.4:
            return self.pick(names)
        return ty

    def literal_expr(self, ty: str, depth: int) -> str:
        """Only literals and operators: the checker folds it, in the type of its context."""
        if depth <= 0 or self.r() < 0.4:
            return self.literal(ty)
        op = self.pick(["+", "-", "*", "&", "|", "^", "<<", ">>", "/", "%"])
        a = self.literal_expr(ty, depth - 1)
        if op in ("/", "%"):
            b = lit_text(interesting(ty, self.rng) or 1, ty, self.rng)
        elif op in ("<<", ">>"):
            b = str(self.rng.randrange(0, 130))
        else:
            b = self.literal_expr(ty, depth - 1)
        return f"({a} {op} {b})"

    def shift(self, ty: str, depth: int) -> str:
        op = self.pick(["<<", ">>"])
        a = self.expr(ty, depth - 1, typed=False)      # a literal on the left would take the context's type
        c = self.r()
        if c < 0.3:
            b = str(self.pick([0, 1, BITS[ty] - 1, BITS[ty], BITS[ty] + 1, 63, 64, 65, 127, 200,
                               self.rng.randrange(BITS[ty])]))
        elif c < 0.4:
            b = f"(-{self.rng.randrange(1, 70)})"
        else:
            b = self.expr(self.int_type(), depth - 1, typed=False)
        return f"({a} {op} {b})"

    def nonzero(self, ty: str, depth: int) -> str:
        """A divisor of type ty that is never 0 (literal divisors are non-zero in any type)."""
        c = self.r()
        if c < 0.3:
            return lit_text(interesting(ty, self.rng) or 1, ty, self.rng)
        e = self.expr(ty, depth - 1)
        if c < 0.7:
            return f"({e} | 1)"
        if c < 0.85:
            return f"(({e} & 7) + 1)"
        return f"({e} | {lit_text(1 << (BITS[ty] - 1), ty, self.rng)})"

    def cond(self, depth: int) -> str:
        self.spend()
        c = self.r()
        if depth <= 0 or c < 0.1:
            vs = self.vars_of("bool")
            if vs and self.r() < 0.6:
                return self.pick(vs).name
            place = self.place("bool", 0) if self.r() < 0.5 else None
            if place:
                return place
            if self.r() < 0.3:
                return self.literal("bool")
            t = self.int_type()
            return f"({self.expr(t, 0)} {self.pick(['==', '!=', '<', '<=', '>', '>='])} {self.expr(t, 0)})"
        if c < 0.45:
            t = self.int_type()
            op = self.pick(["==", "!=", "<", "<=", ">", ">="])
            a = self._expr(t, depth - 1)
            b = self._expr(t, depth - 1)
            if is_lit(a) and is_lit(b) and t != "i64":
                a = f"({a} as {t})"
            return f"({a} {op} {b})"
        if c < 0.6:
            op = self.pick(["&&", "||"])
            return f"({self.cond_or_int(depth - 1)} {op} {self.cond_or_int(depth - 1)})"
        if c < 0.68:
            return f"(!{self.cond_or_int(depth - 1)})"
        if c < 0.75:
            op = self.pick(["&", "|", "^", "==", "!="])
            return f"({self.cond(depth - 1)} {op} {self.cond(depth - 1)})"
        if c < 0.8:
            return f"({self.expr(self.int_type(), depth - 1, typed=False)} as bool)"
        if c < 0.87:
            f = self.pick(F32_CMP + ["nx_f32_is_nan"])
            if f == "nx_f32_is_nan":
                return f"{f}({self.f32_value(depth - 1)})"
            return f"{f}({self.f32_value(depth - 1)}, {self.f32_value(depth - 1)})"
        if c < 0.92:
            call = self.call_expr("bool", depth)
            if call:
                return call
        if c < 0.96:
            ptrs = [v for v in self.arrays() if v.length > 1]
            if ptrs:
                v = self.pick(ptrs)
                op = self.pick(["==", "!="])
                a = f"&{v.name}[{self.index(v.length, 0)}]"
                b = f"&{v.name}[{self.index(v.length, 0)}]"
                if self.has_link(v.ty[1:]) and self.r() < 0.5:
                    a = f"{v.name}[{self.index(v.length, 0)}].link"
                return f"({a} {op} {b})"
        t = self.int_type()
        return f"({self.expr(t, depth - 1, typed=False)} != 0)"

    def cond_or_int(self, depth: int) -> str:
        if self.r() < 0.8:
            return self.cond(depth)
        return self.expr(self.int_type(), depth, typed=False)

    # float32 (i64 bit patterns)
    def f32_value(self, depth: int) -> str:
        c = self.r()
        if depth <= 0 or c < 0.35:
            vs = [v for v in self.vars_of("i64") if v.name.startswith("fv")]
            if vs and self.r() < 0.5:
                return self.pick(vs).name
            return self.pick(F32_CONSTS)
        if c < 0.85:
            return self.f32_expr(depth - 1)
        return self.expr("i64", depth - 1)                # any i64: only the low 32 bits count

    def f32_expr(self, depth: int) -> str:
        self.spend(3)
        c = self.r()
        if c < 0.5:
            return f"{self.pick(F32_BIN)}({self.f32_value(depth - 1)}, {self.f32_value(depth - 1)})"
        if c < 0.65:
            f = self.pick(F32_UN)
            if f == "nx_f32_exp":
                if self.mult > 64:
                    f = "nx_f32_sqrt"
                else:
                    self.spend(25)
            return f"{f}({self.f32_value(depth - 1)})"
        if c < 0.8:
            return f"nx_i32_to_f32({self.expr(self.pick(['i64', 'i32']), depth - 1)} as i64)" \
                if self.r() < 0.5 else f"nx_i32_to_f32({self.expr('i64', depth - 1)})"
        if c < 0.9:
            return f"nx_f32_to_i32({self.f32_value(depth - 1)})"
        return self.pick(F32_CONSTS)

    def call_expr(self, ty: str | None, depth: int) -> str | None:
        cands = [f for f in self.funcs if f.ret == ty and self.mult * f.cost + self.cost <= self.budget]
        if not cands:
            return None
        f = self.pick(cands)
        args = self.args_for(f, depth)
        if args is None:
            return None
        self.spend(f.cost)
        return f"{f.name}({', '.join(args)})"

    def args_for(self, f: Func, depth: int) -> list[str] | None:
        args = []
        for p in f.params:
            if p.ty.startswith("*"):
                target = p.ty[1:]
                cands = [v for v in self.arrays() if v.ty == p.ty and v.length >= p.length]
                views = [v for v in self.arrays() if p.length > 1 and target in INT_TYPES and v.ty[1:] in INT_TYPES
                         and SIZE[v.ty[1:]] > SIZE[target] and v.length >= p.length]
                elems = [v for v in self.arrays() if p.length == 1 and v.ty == p.ty and v.length > 1]
                opts = [v.name for v in cands] + [f"({v.name} as {p.ty})" for v in views] \
                    + [f"&{v.name}[{self.index(v.length, 0)}]" for v in elems]
                if not opts:
                    return None
                args.append(self.pick(opts))
            elif p.kind == "depth":
                args.append(str(self.rng.randrange(0, 5)))
            elif p.ty in INT_TYPES and self.bumps and self.r() < 0.4:
                b = self.pick(self.bumps)
                if self.r() < 0.5:
                    call = f"{b.name}({self.expr(b.ret, max(depth - 1, 0))})"
                    args.append(call if b.ret == p.ty else f"({call} as {p.ty})")
                else:
                    args.append(self.touched_read(b, p.ty) or self.expr(p.ty, max(depth - 1, 0)))
            else:
                args.append(self.expr(p.ty, max(depth - 1, 0)))
        return args

    # ------------------------------------------------------------ statements
    def fold(self, text: str, ty: str) -> None:
        """ck = (ck ^ value) * MIX"""
        self.spend()
        v = text if ty == "u64" else f"({text} as u64)"
        self.emit(f"ck = (ck ^ {v}) * {MIX}")

    def block(self, n: int, depth: int, allow_return: bool, loop_exit: bool) -> None:
        """Statements of a block whose scope is already pushed."""
        for _ in range(n):
            if self.cost >= self.budget:
                break
            self.statement(depth, allow_return, loop_exit)
        self.close_scope_folds()

    def close_scope_folds(self) -> None:
        for v in list(self.scopes[-1].values()):
            if v.kind in ("local", "counter") and not v.ty.startswith("*") and v.name != "ck":
                self.fold(v.name, v.ty)

    def statement(self, depth: int, allow_return: bool, loop_exit: bool) -> None:
        c = self.r()
        edepth = self.pick([1, 2, 2, 3])
        self.spend()
        if c < 0.16:
            self.decl(edepth)
        elif c < 0.28:
            self.assign(edepth)
        elif c < 0.36:
            self.compound(edepth)
        elif c < 0.48:
            self.store(edepth)
        elif c < 0.58 and depth > 0:
            self.if_stmt(depth, allow_return, loop_exit)
        elif c < 0.68 and depth > 0 and self.mult < 64:
            self.loop(depth, allow_return)
        elif c < 0.76:
            t = self.pick(INT_TYPES + ["bool"])
            self.fold(self.expr(t, edepth, typed=False), t)
        elif c < 0.8:
            self.call_stmt(edepth)
        elif c < 0.83:
            self.fold_check()
        elif c < 0.86 and depth > 0:
            self.emit("{")
            self.indent += 1
            self.scopes.append({})
            self.block(self.rng.randrange(1, 4), depth - 1, allow_return, loop_exit)
            self.scopes.pop()
            self.indent -= 1
            self.emit("}")
        elif c < 0.9 and loop_exit:
            word = "break" if (not self.in_loop_with_top_increment or self.r() < 0.5) else "continue"
            self.emit(f"if {self.cond(1)} {{")
            self.indent += 1
            self.emit(word)
            self.indent -= 1
            self.emit("}")
        elif c < 0.93 and allow_return and self.func is not None and self.func.ret is not None:
            self.emit(f"if {self.cond(1)} {{")
            self.indent += 1
            self.emit(f"return {self.ret_value(1)}")
            self.indent -= 1
            self.emit("}")
        else:
            t = self.pick(INT_TYPES)            # (drawn before the coin: keeps the seeds' programs)
            if self.r() < 0.5:
                self.fold(self.expr(t, edepth), t)
            else:
                self.decl(edepth)

    def decl(self, depth: int) -> None:
        ty = self.pick(INT_TYPES + ["bool", "i64"])
        mutable = self.r() < 0.6
        is_f32 = ty == "i64" and self.r() < 0.3
        if is_f32:
            value = self.f32_expr(depth)
        else:
            value = self.expr(ty, depth, typed=True)
        # shadow an outer name now and then (never a counter or ck)
        name = None
        if len(self.scopes) > 1 and self.r() < 0.1:
            outer = [n for s in self.scopes[:-1] for n, v in s.items()
                     if v.kind in ("local", "param") and n != "ck" and n not in self.scopes[-1]
                     and not v.ty.startswith("*")]       # pointer params are passed on by name
            if outer:
                name = self.pick(outer)
        if name is None:
            name = f"fv{self.local_count + 1}" if is_f32 else self.new_name()
            if is_f32:
                self.local_count += 1
        word = "var" if mutable else "let"
        if ty != "i64" and self.r() < 0.3 and not is_lit(value):
            self.emit(f"{word} {name} = {value}")        # type inferred from the value
        elif ty == "i64" and self.r() < 0.3:
            self.emit(f"{word} {name} = {value}")
        else:
            self.emit(f"{word} {name}: {self.type_text(ty)} = {value}")
        self.declare(Var(name, ty, mutable, "local"))

    def assign(self, depth: int) -> None:
        fvs = [v for v in self.vars_of("i64", mutable=True) if v.name.startswith("fv")]
        if fvs and self.r() < 0.5:                    # float32 locals stay float32 (C unboxing)
            v = self.pick(fvs)
            if self.r() < 0.5:
                self.emit(f"{v.name} = {self.pick(F32_BIN[:4])}({v.name}, {self.f32_value(depth)})")
            else:
                self.emit(f"{v.name} = {self.f32_expr(depth)}")
            return
        vs = [v for v in self.all_vars() if v.mutable and v.kind != "counter" and not v.ty.startswith("*")]
        if not vs:
            return self.decl(depth)
        v = self.pick(vs)
        self.emit(f"{v.name} = {self.expr(v.ty, depth)}")

    def compound(self, depth: int) -> None:
        vs = [v for v in self.all_vars() if v.mutable and v.kind != "counter" and v.ty in INT_TYPES]
        if not vs:
            return self.decl(depth)
        v = self.pick(vs)
        self.emit(f"{v.name} {self.compound_rhs(v.ty, depth)}")

    def compound_rhs(self, ty: str, depth: int) -> str:
        op = self.pick(["+=", "-=", "*=", "&=", "|=", "^=", "<<=", ">>=", "/=", "%="])
        if op in ("<<=", ">>="):
            return f"{op} {self.expr(self.int_type(), depth, typed=False)}"
        if op in ("/=", "%="):
            return f"{op} {self.nonzero(ty, depth)}"
        return f"{op} {self.expr(ty, depth)}"

    def store(self, depth: int) -> None:
        ty = self.pick(INT_TYPES + INT_TYPES + ["bool"])
        place = self.place(ty, depth - 1, for_store=True)
        if not place:
            return self.assign(depth)
        if ty in INT_TYPES and self.r() < 0.35:
            self.emit(f"{place} {self.compound_rhs(ty, depth)}")
        else:
            self.emit(f"{place} = {self.expr(ty, depth)}")

    def call_stmt(self, depth: int) -> None:
        cands = [f for f in self.funcs if self.mult * f.cost + self.cost <= self.budget]
        if not cands:
            return self.decl(depth)
        f = self.pick(cands)
        args = self.args_for(f, depth)
        if args is None:
            return self.decl(depth)
        self.spend(f.cost)
        self.emit(f"{f.name}({', '.join(args)})")

    def if_stmt(self, depth: int, allow_return: bool, loop_exit: bool) -> None:
        self.emit(f"if {self.cond_or_int(self.rng.randrange(1, 4))} {{")
        self.sub_block(depth, allow_return, loop_exit)
        while self.r() < 0.3:
            self.emit(f"}} else if {self.cond(2)} {{")
            self.sub_block(depth, allow_return, loop_exit)
        if self.r() < 0.5:
            self.emit("} else {")
            self.sub_block(depth, allow_return, loop_exit)
        self.emit("}")

    def sub_block(self, depth: int, allow_return: bool, loop_exit: bool) -> None:
        self.indent += 1
        self.scopes.append({})
        self.block(self.rng.randrange(1, 4), depth - 1, allow_return, loop_exit)
        self.scopes.pop()
        self.indent -= 1

    def loop(self, depth: int, allow_return: bool) -> None:
        trips = self.rng.randrange(1, 9)
        ty = self.pick(INT_TYPES)
        i = f"i{self.local_count + 1}"
        self.local_count += 1
        counter = Var(i, ty, False, "counter")
        kind = self.rng.randrange(4)
        saved = (self.mult, self.in_loop_with_top_increment, self.loop_depth)
        self.mult *= trips
        self.loop_depth += 1
        if kind == 0:                       # up, increment at the bottom (no continue)
            self.emit(f"var {i}: {ty} = 0")
            bound = str(trips) if self.r() < 0.7 else f"(({self.expr(ty, 1)} & 7) + 1)"
            extra = f" && {self.cond(1)}" if self.r() < 0.2 else ""
            self.emit(f"while {i} < {bound}{extra} {{")
            self.in_loop_with_top_increment = False
            self.loop_body(depth, allow_return, counter, tail=f"{i} = {i} + 1")
        elif kind == 1:                     # up, increment at the top (continue allowed)
            self.emit(f"var {i}: {ty} = 0")
            cmp_ = self.pick([f"{i} < {trips}", f"{trips} > {i}"])
            self.emit(f"while {cmp_} {{")
            self.in_loop_with_top_increment = True
            self.loop_body(depth, allow_return, counter, head=[self.pick([f"{i} += 1", f"{i} = 1 + {i}"])])
        elif kind == 2:                     # down
            self.emit(f"var {i}: {ty} = {trips}")
            self.emit(f"while {i} {self.pick(['>', '!='])} 0 {{")
            self.in_loop_with_top_increment = True
            self.loop_body(depth, allow_return, counter, head=[f"{i} = {i} - 1"])
        else:                               # while true + break
            self.emit(f"var {i}: {ty} = 0")
            self.emit("while true {")
            self.in_loop_with_top_increment = True
            self.loop_body(depth, allow_return, counter, head=[f"if {i} >= {trips} {{ break }}", f"{i} = {i} + 1"])
        self.mult, self.in_loop_with_top_increment, self.loop_depth = saved
        self.scopes[-1][i] = counter        # the counter stays in scope after the loop: fold it
        counter.kind = "local"

    def loop_body(self, depth: int, allow_return: bool, counter: Var, head: list[str] | None = None,
                  tail: str | None = None) -> None:
        self.indent += 1
        self.scopes.append({counter.name: counter})
        for line in head or []:
            self.emit(line)
        n = self.rng.randrange(1, 4)
        for _ in range(n):
            if self.cost >= self.budget:
                break
            self.statement(depth - 1, allow_return, loop_exit=True)
        for v in list(self.scopes[-1].values()):
            if v is not counter and v.kind == "local" and not v.ty.startswith("*"):
                self.fold(v.name, v.ty)
        if tail:
            self.emit(tail)
        self.scopes.pop()
        self.indent -= 1
        self.emit("}")

    def ret_value(self, depth: int) -> str:
        ty = self.func.ret
        if ty == "bool":
            return f"((ck & 1) == 1) != {self.cond(depth)}"
        return f"(ck as {ty}) ^ {self.expr(ty, depth)}"

    def fold_check(self) -> None:
        """An expression of constants (folded by the checker) vs the same expression computed
        at run time from locals; a mismatch sets <prefix>gfold, which run() returns."""
        ty = self.pick(INT_TYPES + ["bool"])
        leaves: list[tuple[str, str, str]] = []        # (local name, literal, its type)

        def build(t: str, d: int) -> tuple[str, str]:
            if t == "bool":
                st = self.int_type()
                a, b = build(st, d - 1), build(st, d - 1)
                op = self.pick(["==", "!=", "<", "<=", ">", ">="])
                return f"({a[0]} {op} {b[0]})", f"({a[1]} {op} {b[1]})"
            if d <= 0 or self.r() < 0.3:
                src = self.pick(INT_TYPES)
                lit = f"0x{interesting(src, self.rng):X}"
                self.local_count += 1
                name = f"k{self.local_count}"
                leaves.append((name, lit, src))
                return f"({lit} as {src} as {t})", f"({name} as {t})"
            c = self.r()
            if c < 0.5:
                op = self.pick(["+", "-", "*", "&", "|", "^"])
                a, b = build(t, d - 1), build(t, d - 1)
                return f"({a[0]} {op} {b[0]})", f"({a[1]} {op} {b[1]})"
            if c < 0.7:
                op = self.pick(["<<", ">>"])
                a, b = build(t, d - 1), build(self.int_type(), d - 1)
                return f"({a[0]} {op} {b[0]})", f"({a[1]} {op} {b[1]})"
            if c < 0.85:
                op = self.pick(["/", "%"])
                a, b = build(t, d - 1), build(t, d - 1)
                return f"({a[0]} {op} ({b[0]} | 1))", f"({a[1]} {op} ({b[1]} | 1))"
            if c < 0.93:
                op = self.pick(["-", "~"])
                a = build(t, d - 1)
                return f"({op}{a[0]})", f"({op}{a[1]})"
            a = build(self.pick(INT_TYPES + ["bool"]), d - 1)
            return f"({a[0]} as {t})", f"({a[1]} as {t})"

        folded, runtime = build(ty, self.rng.randrange(1, 4))
        for name, lit, src in leaves:
            self.emit(f"let {name}: {src} = {lit} as {src}")
        k = FOLD_SENTINEL + self.fold_checks
        self.fold_checks += 1
        self.emit(f"if {folded} != {runtime} {{ {self.P}gfold = {k} }}")
        self.spend(len(leaves) * 2)

    # ------------------------------------------------------------ top level
    def gen_structs(self) -> None:
        for k in range(self.rng.randrange(1, 3)):
            name = f"{self.P}S{k}"
            fields = []
            used = set()
            for _ in range(self.rng.randrange(1, 4)):
                fname = self.pick(ODD_NAMES) if self.r() < 0.15 else f"m{len(fields)}"
                if fname in used:
                    continue
                used.add(fname)
                fields.append((fname, self.pick(INT_TYPES + ["bool"])))
            if self.structs and self.r() < 0.5:
                fields.insert(self.rng.randrange(len(fields) + 1), ("inner", "S:" + self.pick(self.structs).name))
            if self.r() < 0.6:
                fields.insert(self.rng.randrange(len(fields) + 1), ("link", "*" + name))
            self.structs.append(Struct(name, fields))
        for st in self.structs:
            sep = self.pick([", ", "\n    "])
            body = sep.join(f"{n}: {t[2:] if t.startswith('S:') else t}" for n, t in st.fields)
            if sep == ", ":
                self.out.append(f"struct {st.name} {{ {body} }}")
            else:
                self.out.append(f"struct {st.name} {{\n    {body}\n}}")
        self.out.append("")

    def gen_globals(self) -> None:
        for k in range(self.rng.randrange(0, 3)):
            ty = self.pick(INT_TYPES)
            name = f"{self.P}A{k}"
            self.out.append(f"type {name} = {ty}")
            self.aliases.append((name, ty))
        for k in range(self.rng.randrange(0, 4)):
            ty = self.pick(INT_TYPES)
            name = f"{self.P}C{k}"
            same = [n for n, t in self.consts if t == ty]
            if same and self.r() < 0.5:
                value = f"({self.pick(same)} {self.pick(['+', '*', '^', '-', '<<'])} {self.literal(ty)})"
            else:
                value = self.literal_expr(ty, 2)
            self.out.append(f"const {name}: {self.type_text(ty)} = {value}")
            self.consts.append((name, ty))
        self.gp = None
        if self.r() < 0.5:
            t = self.pick(INT_TYPES)
            self.gp = Var(f"{self.P}gp", "*" + t, False, "global", self.N)
            self.out.append(f"var {self.gp.name}: *{t} = 0 as *{t}")
            self.globals.append(self.gp)
        for k in range(self.rng.randrange(1, 4)):
            ty = self.pick(INT_TYPES + ["bool"])
            g = Var(f"{self.P}g{k}", ty, True, "global")
            init = self.literal(ty) if ty == "bool" else lit_text(interesting(ty, self.rng), ty, self.rng)
            self.out.append(f"var {g.name}: {ty} = {init}")
            self.globals.append(g)
        self.out.append(f"var {self.P}gfold: i64 = 0")
        self.out.append(f"var {self.P}gck: u64 = {self.rng.getrandbits(64)}")
        self.globals.append(Var(f"{self.P}gck", "u64", True, "global"))
        self.out.append("")

    def gen_bumps(self) -> None:
        """Tiny helpers with side effects on globals (and memory through the global pointer)
        that return their argument: wrapped around operands, they make evaluation order
        observable (`h(bump(x), g)` must call bump before reading g)."""
        self.bumps: list[Func] = []
        for k in range(self.rng.randrange(1, 3)):
            ty = self.pick(INT_TYPES)
            f = Func(f"{self.P}bump{k}", [Var("x", ty, False, "param")], ty, 4)
            lines = []
            targets = [g for g in self.globals if g.ty in INT_TYPES]
            f.touches = []
            for g in self.rng.sample(targets, min(len(targets), self.rng.randrange(1, 3))):
                f.touches.append(g)
                op = self.pick(["+", "^", "*", "-"])
                lines.append(f"    {g.name} = ({g.name} {op} (x as {g.ty})) + {self.rng.randrange(1, 100)}")
            if self.gp is not None and self.r() < 0.7:
                t = self.gp.ty[1:]
                lines.append(f"    {self.gp.name}[(x as u64) & {self.N - 1}] += (x as {t}) | 1")
                f.touches_memory = True
            lines.append("    return x")
            self.out.append(f"func {f.name}(x: {ty}) -> {ty} {{")
            self.out.extend(lines)
            self.out.append("}")
            self.out.append("")
            self.bumps.append(f)

    def begin_function(self, f: Func, budget: int) -> None:
        self.func = f
        self.lines = []
        self.indent = 1
        self.mult = 1
        self.cost = 0
        self.budget = budget
        self.local_count = 0
        self.odd_used = set()
        self.scopes = [{p.name: p for p in f.params}]
        for p in f.params:
            if p.kind == "param" and p.name in ODD_NAMES:
                self.odd_used.add(p.name)
        self.scopes.append({})
        self.emit(f"var ck: u64 = {self.rng.getrandbits(64)}")
        self.scopes[-1]["ck"] = Var("ck", "u64", True, "local")

    def gen_helper(self, k: int) -> None:
        ret = self.pick(INT_TYPES + INT_TYPES + ["bool", None])
        params = []
        names = set()
        recursive = ret is not None and self.r() < 0.15
        if recursive:
            params.append(Var("depth", "i32", False, "depth"))
            names.add("depth")
        for _ in range(self.rng.randrange(0, 5)):
            name = self.pick(ODD_NAMES) if self.r() < 0.15 else f"a{len(params)}"
            if name in names:
                continue
            names.add(name)
            c = self.r()
            if c < 0.65:
                params.append(Var(name, self.pick(INT_TYPES + ["bool"]), True, "param"))
            else:
                elem = self.pick(INT_TYPES + [s.name for s in self.structs])
                length = 1 if self.r() < 0.25 else self.N
                params.append(Var(name, "*" + elem, True, "param", length))
        f = Func(f"{self.P}f{k}", params, ret, 0, recursive=recursive)
        self.begin_function(f, budget=self.rng.randrange(30, 300))
        if recursive:
            self.emit("if depth <= 0 {")
            self.indent += 1
            self.emit(f"return {self.ret_value(1)}")
            self.indent -= 1
            self.emit("}")
        self.block(self.rng.randrange(2, 5), self.pick([1, 2]), allow_return=True, loop_exit=False)
        if recursive:
            args = ["depth - 1"]
            for p in params[1:]:
                if p.ty.startswith("*"):
                    args.append(p.name)
                else:
                    args.append(self.expr(p.ty, 1))
            self.fold(f"{f.name}({', '.join(args)})", ret)
        if ret is None:
            self.emit(f"{self.P}gck = {self.P}gck ^ ck")
        else:
            self.emit(f"return {self.ret_value(2)}")
        f.cost = self.cost * (6 if recursive else 1) + 1
        plist = ", ".join(f"{p.name}: {self.type_text(p.ty) if p.ty in INT_TYPES else p.ty}" for p in params)
        arrow = f" -> {ret}" if ret else ""
        self.out.append(f"func {f.name}({plist}){arrow} {{")
        self.out.extend(self.lines)
        self.out.append("}")
        self.out.append("")
        self.funcs.append(f)

    def gen_run(self) -> None:
        f = Func(f"{self.P}run", [], "i64", 0)
        self.begin_function(f, budget=MAX_COST)
        N = self.N
        arrays = []
        for t in self.rng.sample(INT_TYPES, self.rng.randrange(1, 4)) + (["bool"] if self.r() < 0.4 else []):
            name = f"arr_{t}"
            self.emit(f"let {name}: *{t} = sys_mmap({N} * sizeof({t})) as *{t}")
            v = Var(name, "*" + t, False, "local", N)
            self.declare(v)
            arrays.append(v)
        if self.gp is not None:
            t = self.gp.ty[1:]
            self.emit(f"{self.gp.name} = sys_mmap({N} * sizeof({t})) as *{t}")
            arrays.append(self.gp)
        structs = []
        for st in self.structs:
            name = f"sa_{st.name[len(self.P):]}"
            self.emit(f"let {name}: *{st.name} = sys_mmap({N} * sizeof({st.name})) as *{st.name}")
            v = Var(name, "*" + st.name, False, "local", N)
            self.declare(v)
            arrays.append(v)
            structs.append((name, st))
        if structs:
            self.emit("var z: i64 = 0")
            self.emit(f"while z < {N} {{")
            for name, st in structs:
                if self.has_link(st.name):
                    self.emit(f"    {name}[z].link = &{name}[(z * {self.rng.randrange(1, 8)} + 1) & {N - 1}]")
                for path, fty in self.field_paths(st):
                    if fty == "bool":
                        self.emit(f"    {name}[z].{path} = (z & {self.rng.randrange(1, 8)}) != 0")
                    else:
                        self.emit(f"    {name}[z].{path} = ((z * {self.rng.getrandbits(16)}) as {fty}) ^ "
                                  f"{lit_text(interesting(fty, self.rng), fty, self.rng)}")
            self.emit("    z = z + 1")
            self.emit("}")
        for v in arrays:
            t = v.ty[1:]
            if t in INT_TYPES:
                self.emit(f"{v.name}[{self.rng.randrange(N)}] = {lit_text(interesting(t, self.rng), t, self.rng)}")
        self.block(self.rng.randrange(3, 7), self.pick([2, 2, 3]), allow_return=False, loop_exit=False)
        self.vector_nest()
        if KERNELS:
            top, body = gen_kernels.kernels(self.seed, self.P)
            self.out.extend(top)
            for line in body:
                self.emit(line)
        # fold every array and every global into the checksum
        self.emit("var q: i64 = 0")
        self.emit(f"while q < {N} {{")
        self.indent += 1
        for v in arrays:
            t = v.ty[1:]
            if t in INT_TYPES or t == "bool":
                self.fold(f"{v.name}[q]", t)
            else:
                for path, fty in self.field_paths(self.struct(t)):
                    self.fold(f"{v.name}[q].{path}", fty)
        self.emit("q = q + 1")
        self.indent -= 1
        self.emit("}")
        for g in self.globals:
            if not g.ty.startswith("*"):
                self.fold(g.name, g.ty)
        self.emit(f"if {self.P}gfold != 0 {{ return {self.P}gfold }}")
        self.emit("return ck as i64")
        self.out.append(f"func {f.name}() -> i64 {{")
        self.out.extend(self.lines)
        self.out.append("}")

    def vector_nest(self) -> None:
        """A loop nest of the shape the C backend's vectorizer takes (issue 19): an outer
        loop, an inner loop over independent elements whose body reads x[i] / acc[i] and
        loop invariants and writes only acc[i] -- each element a sequential chain of
        float32 ops in the outer order. Drawn from its own random stream, so the rest
        of every seed's program is what it was before these nests existed."""
        rng = random.Random(self.seed * 7919 + 19)
        length = rng.choice([1, 3, 5, 8, 13, 16, 37])
        outer = rng.randrange(1, 6)
        acc_t = rng.choice(["i64", "u32"])
        P = self.P

        def leaf() -> str:
            c = rng.random()
            if c < 0.35:
                return "vx[vi]"
            if c < 0.55:
                return f"vacc[vi] as i64" if acc_t == "u32" else "vacc[vi]"
            if c < 0.75:
                return "vk"
            return rng.choice(F32_CONSTS)

        def f32(depth: int) -> str:
            if depth <= 0 or rng.random() < 0.3:
                return leaf()
            c = rng.random()
            if c < 0.75:
                op = rng.choice(["nx_f32_add", "nx_f32_sub", "nx_f32_mul", "nx_f32_div"])
                return f"{op}({f32(depth - 1)}, {f32(depth - 1)})"
            if c < 0.85:
                return f"nx_f32_sqrt({f32(depth - 1)})"
            if c < 0.93:
                return f"nx_f32_exp_lanes({f32(depth - 1)})"
            return f"nx_i32_to_f32(vi * {rng.randrange(1, 9)} - {rng.randrange(0, 20)})"

        acc_read = "vacc[vi] as i64" if acc_t == "u32" else "vacc[vi]"
        # vk in every body: the outer loop's value enters each element's chain
        body = (f"nx_f32_{rng.choice(['add', 'sub', 'mul'])}({acc_read}, "
                f"nx_f32_mul(vk, {f32(rng.randrange(0, 3))}))")
        store = f"{body} as u32" if acc_t == "u32" else body
        seeds = [rng.choice(F32_CONSTS) for _ in range(3)]
        self.emit("{")
        self.indent += 1
        self.emit(f"let vx: *i64 = sys_mmap({length} * 8) as *i64")
        self.emit(f"let vacc: *{acc_t} = sys_mmap({length} * sizeof({acc_t})) as *{acc_t}")
        self.emit("var vi: i64 = 0")
        self.emit(f"while vi < {length} {{")
        self.emit(f"    vx[vi] = nx_f32_mul(nx_i32_to_f32(vi * {rng.randrange(1, 50)} - {rng.randrange(0, 99)}), "
                  f"{seeds[0]})")
        self.emit(f"    vacc[vi] = {seeds[1]}" + (" as u32" if acc_t == "u32" else ""))
        self.emit("    vi = vi + 1")
        self.emit("}")
        if rng.random() < 0.3:
            self.emit(f"vx[{rng.randrange(length)}] = {rng.choice(F32_CONSTS)}")
        self.emit("var vo: i64 = 0")
        self.emit(f"while vo < {outer} {{")
        self.emit(f"    let vk: i64 = nx_f32_add(nx_i32_to_f32(vo), {seeds[2]})")
        self.emit("    vi = 0")
        self.emit(f"    while vi < {length} {{")
        self.emit(f"        vacc[vi] = {store}")
        self.emit("        vi = vi + 1")
        self.emit("    }")
        self.emit("    vo = vo + 1")
        self.emit("}")
        self.emit("vi = 0")
        self.emit(f"while vi < {length} {{")
        self.indent += 1
        self.fold("vacc[vi]", acc_t)
        self.emit("vi = vi + 1")
        self.indent -= 1
        self.emit("}")
        self.indent -= 1
        self.emit("}")
        del P

    def kernel_program(self) -> str:
        """Only the kernel loops (bench/gen_kernels.py) and their checks: a tenth of a full
        program's C to compile, for long runs of the threaded kernels."""
        self.out.append(f"// generated by bench/gen_program.py --kernels-only, seed {self.seed}")
        self.out.append(f"var {self.P}gfold: i64 = 0")
        top, body = gen_kernels.kernels(self.seed, self.P)
        self.out.extend(top)
        self.begin_function(Func(f"{self.P}run", [], "i64", 0), budget=MAX_COST)
        for line in body:
            self.emit(line)
        self.emit(f"if {self.P}gfold != 0 {{ return {self.P}gfold }}")
        self.emit("return ck as i64")
        self.out.append(f"func {self.P}run() -> i64 {{")
        self.out.extend(self.lines)
        self.out.append("}")
        return "\n".join(self.out) + "\n"

    def program(self) -> str:
        self.out.append(f"// generated by bench/gen_program.py, seed {self.seed}")
        self.gen_structs()
        self.gen_globals()
        self.gen_bumps()
        for k in range(self.rng.randrange(1, 4)):
            self.gen_helper(k)
        self.gen_run()
        return "\n".join(self.out) + "\n"


_LIT_TOKEN = re.compile(r"\s*(0x[0-9A-Fa-f]+|\d+|<<|>>|[-+*/%&|^~()])")


def is_lit(text: str) -> bool:
    """Mirrors check.is_literal_expr: only integer literals, unary - ~ and the
    arithmetic operators (such an expression takes its type from its context)."""
    pos = 0
    while pos < len(text):
        m = _LIT_TOKEN.match(text, pos)
        if m is None:
            return text[pos:].strip() == ""
        pos = m.end()
    return True


def generate_parts(seed: int, prefix: str = "p_", kernels_only: bool = False) -> str:
    """The program's declarations, names prefixed, no imports and no `main`."""
    gen = Gen(seed, prefix)
    return gen.kernel_program() if kernels_only else gen.program()


def generate(seed: int, kernels_only: bool = False) -> str:
    """A complete module: imports, the program, and `main` returning its checksum."""
    body = generate_parts(seed, "p_", kernels_only)
    return ("\n".join(IMPORTS) + "\n\n" + body
            + "\nfunc main() -> i64 {\n    return p_run()\n}\n")


def generate_batch(seeds: list[int], kernels_only: bool = False) -> tuple[str, list[str]]:
    """Many programs in one module: (text, entry function names in seed order)."""
    parts, entries = ["\n".join(IMPORTS), ""], []
    for s in seeds:
        prefix = f"s{s}_"
        parts.append(generate_parts(s, prefix, kernels_only))
        entries.append(f"{prefix}run")
    calls = " ^ ".join(f"{e}()" for e in entries)
    parts.append(f"\nfunc main() -> i64 {{\n    return {calls}\n}}\n")
    return "\n".join(parts), entries


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=1, help="programs with seeds SEED, SEED+1, ...")
    ap.add_argument("--kernels-only", action="store_true",
                    help="only issue 28's threaded kernel loops (bench/gen_kernels.py)")
    ap.add_argument("-o", "--out", metavar="DIR", help="write gen_<seed>.nx files to DIR (default: stdout)")
    args = ap.parse_args(argv)
    for s in range(args.seed, args.seed + args.count):
        text = generate(s, args.kernels_only)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, f"gen_{s}.nx"), "w", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
