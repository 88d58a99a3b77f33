"""C backend, function emitter, checked mode: memory places through
NXRT_CHK, calls and loop heads keeping the shadow stack, the site caches a
call that may unmap forgets, and the range checks a hoisted loop does once
before it (nxc/lower/hoist.py; runtime/nx_runtime.h). A mixin of
function.FunctionEmitter, which holds the state it reads.
"""
from __future__ import annotations

from nxc.syntax import ast
from nxc.check.types import VOID
from nxc.lower.hoist import LoopPlan
from nxc.backend.c.names import CHECKED_EXTERNS, access_type_name, c_type, func_c_name

# Where the checked code forgets its site caches (filled in when the function is done).
FORGET = "/*nx:forget*/"


def is_memory_place(e: ast.Expr) -> bool:
    return isinstance(e, (ast.Index, ast.FieldAccess)) or (isinstance(e, ast.Unary) and e.op == "*")


def cache_shape(t: str) -> str:
    """What a site cache entry depends on besides the mapping: the access's size
    and alignment (runtime/nx_runtime.h: span = (len - size) / align + 1). The
    8-byte scalars and every pointer share one, so `pool.n` and `pool.K` through
    the same pointer pay one miss per call, not two."""
    if t.endswith("*") or t in ("int64_t", "uint64_t", "double"):
        return "8"
    if t in ("int32_t", "uint32_t", "float"):
        return "4"
    if t in ("int16_t", "uint16_t"):
        return "2"
    if t in ("int8_t", "uint8_t"):
        return "1"
    return t


class CheckedMixin:
    """Checked mode's C (function.FunctionEmitter's)."""

    def place(self, e: ast.Expr, mode: str) -> str:
        """The C lvalue of an assignment's target (checked as a write)."""
        if self.checked and is_memory_place(e):
            return self.checked_place(e, mode)
        return self.expr(e)

    def checked_place(self, e: ast.Expr, mode: str) -> str:
        """`NXRT_CHK(T, address, cache, site)`: the place, after its access was checked
        (in the fast copy of a hoisted loop, the plain place: checked before the loop)."""
        if e in self.fast:
            if isinstance(e, ast.Index):
                pre, base = self.sequenced(e.base, [e.index])
                text = f"{base}[{self.expr(e.index)}]"
                return f"(*({pre}, &{text}))" if pre else text
            return f"{self.expr(e.base)}->f_{e.name}"
        t = c_type(self.ty(e))
        site = self.site(e.pos, f"{mode} of {access_type_name(self.ty(e))}", "access")
        address = self.address(e)
        store = mode == "write"
        # A store must not reach a read-only mapping (sys_file_map's): NXRT_CHKW tells the
        # runtime, and its cache pair is its own (a read's entry may name such a mapping).
        return f"NXRT_CHK{'W' if store else ''}({t}, {address}, {self.cache_for(address, t, store)}, {site})"

    def address(self, e: ast.Expr) -> str:
        """The address of a memory place as a uintptr_t expression, not checked
        (C's pointer arithmetic, wrapping at 64 bits)."""
        if isinstance(e, ast.Index):
            pre, base = self.sequenced(e.base, [e.index])
            text = (f"((uintptr_t)({base}) + (uintptr_t)({self.expr(e.index)}) * "
                    f"(uintptr_t)sizeof({c_type(self.ty(e))}))")
            self.pointer_text = [base]
            return f"({pre}, {text})" if pre else text
        if isinstance(e, ast.FieldAccess):
            through = self.info.through_pointer(e)
            struct = self.ty(e.base).target if through else self.ty(e.base)
            if through:
                pointer = self.expr(e.base)
                base = f"(uintptr_t)({pointer})"
            else:
                base = self.address(e.base)
                pointer = self.pointer_text[0] if self.pointer_text else base
            self.pointer_text = [pointer]
            return f"({base} + offsetof({c_type(struct)}, f_{e.name}))"
        if isinstance(e, ast.Unary) and e.op == "*":
            pointer = self.expr(e.operand)
            self.pointer_text = [pointer]
            return f"((uintptr_t)({pointer}))"
        raise TypeError(f"not a memory place: {type(e).__name__}")

    def cache_for(self, address: str, t: str, store: bool = False) -> int:
        """The cache pair of the place whose address() was just written: accesses
        through the same pointer at the same type share one (see cache_of), reads
        and stores apart (a read may cache a read-only mapping, a store must not)."""
        key = (self.pointer_text.pop() if self.pointer_text else address, cache_shape(t), store)
        self.pointer_text = []
        k = self.cache_of.get(key)
        if k is None:
            k = self.cache_of[key] = self.cache_count
            self.cache_count += 1
        return k

    def hoisted_checks(self, plan: LoopPlan, done: frozenset) -> str:
        """The C condition under which the fast copy of `plan.loop` may run: the
        loop runs no iteration, or every access it leaves unchecked is valid in
        every iteration of the nest (runtime/nx_runtime.h: NXRT_TRY, NXRT_SPAN1,
        nxrt_reach, nxrt_apart). Evaluated where the loop starts: its own
        counter holds its first value, an inner loop's counter is replaced by
        the start its loop gets. `done`: accesses an enclosing loop's checks
        already cover (no test of their own here)."""
        tests, counts, runs = [], [], []
        for k, c in enumerate(plan.counters):
            first = f"l_{c.sym.unique}" if k == 0 else f"({self.expr(c.start)})"
            bound = self.expr(c.bound)
            n = self.new_temp("uint64_t")       # iterations - 1, when there is one
            if c.inclusive:
                runs.append(f"{first} <= {bound}")
                count = f"{bound} != INT64_MAX && ({n} = (uint64_t){bound} - (uint64_t){first}, 1)"
            else:
                runs.append(f"{first} < {bound}")
                count = f"({n} = (uint64_t){bound} - (uint64_t){first} - 1u, 1)"
            tests.append(count)
            counts.append(n)
        # An inner loop that runs no iteration: no test for its accesses.
        runs_in = {k: "" if k == 0 else f"!({runs[k]}) || " for k in range(len(plan.counters))}
        self.subst = {c.sym: f"({self.expr(c.start)})" for c in plan.counters[1:]}
        fields = {}
        for f in plan.fixed:            # first: the ranges below read the base fields
            t = c_type(self.ty(f.node))
            addr = self.address(f.node)
            k = self.cache_for(addr, t, f.store)
            fields[f.node] = addr
            if f.node not in done:
                site = self.site(f.node.pos, f"{'write' if f.store else 'read'} of "
                                 f"{access_type_name(self.ty(f.node))}", "access")
                tests.append(f"NXRT_TRY{'W' if f.store else ''}({t}, {addr}, {k}, {site})")
        spans = []
        need_stores = any(f.base_of and f.node not in self.apart_done for f in plan.fixed)
        for r in plan.ranges:
            if r.node in done and not (r.store and need_stores):
                continue
            t = c_type(self.ty(r.node))
            first = self.address(r.node)
            k = self.cache_for(first, t, r.store)
            if len(r.terms) == 1 and r.terms[0][1] is None:
                # `p[I + d]`: the last element is n = iterations - 1 after the first
                reach, test = counts[r.terms[0][0]], ""
            else:
                reach = self.new_temp("uint64_t")   # elements from the first to the last
                terms = [(counts[c], "INT64_C(1)" if stride is None else self.expr(stride)) for c, stride in r.terms]
                terms += [("0u", "0")] * (2 - len(terms))
                test = f"nxrt_reach(&{reach}, {terms[0][0]}, {terms[0][1]}, {terms[1][0]}, {terms[1][1]})"
            if r.extra:
                # the accesses at constant offsets up to r.extra past it (nxc/lower/hoist.py)
                wide = self.new_temp("uint64_t")
                test += (f"{' && ' if test else ''}!__builtin_add_overflow((uint64_t){reach}, "
                         f"(uint64_t)INT64_C({r.extra}), &{wide})")
                reach = wide
            spans.append((r, first, reach, t))
            if r.node not in done:
                site = self.site(r.node.pos, f"{'write' if r.store else 'read'} of "
                                 f"{access_type_name(self.ty(r.node))}", "access")
                span = "NXRT_SPAN1W" if r.store else "NXRT_SPAN1"
                test += f"{' && ' if test else ''}{span}({t}, {first}, {reach}, {k}, {site})"
            if test:
                tests.append(f"({runs_in[r.region]}{test})")
        # No store of the nest may overwrite a pointer some range was computed from.
        for f in plan.fixed:
            if not f.base_of or f.node in self.apart_done:      # an enclosing loop's tests cover it
                continue
            fa, ft = fields[f.node], c_type(self.ty(f.node))
            for r, first, reach, t in spans:
                if r.store:
                    tests.append(f"({runs_in[r.region]}nxrt_apart({fa}, sizeof({ft}), {first}, {reach}, sizeof({t})))")
            for g in plan.fixed:
                if g.store:
                    tests.append(f"nxrt_apart({fa}, sizeof({ft}), {fields[g.node]}, 0u, "
                                 f"sizeof({c_type(self.ty(g.node))}))")
        self.subst = {}
        return f"!({runs[0]}) || ({' && '.join(tests)})"

    def restamps(self, s: ast.While) -> bool:
        """Whether the loop must store its site each iteration: its body (or
        condition) holds a call of an nx function or an inner loop, which
        store theirs in this frame's slot."""
        return self.loop_restamps[s][0]

    def restamps_nest(self, s: ast.While) -> bool:
        """restamps for the fast copy of a hoisted nest, whose inner loops store no site:
        only a call of an nx function moves this frame's slot."""
        return self.loop_restamps[s][1]

    def frame_at(self, pos, kind: str) -> str:
        """Store a site in this function's shadow-stack slot (where it is now)."""
        return f"*nx_fr = {self.site(pos, kind, kind)}"

    def checked_call(self, e: ast.Call, pres: list[str], args: list[str]) -> str:
        sym = self.sym(e.func)
        if sym.kind == "extern":
            if sym.name in CHECKED_EXTERNS:
                what = sym.name.removeprefix("sys_")
                call = f"nxrt_chk_{sym.name}({', '.join(args + [self.site(e.pos, what, what)])})"
            else:
                call = f"{func_c_name(sym)}({', '.join(args)})"
            parts = pres
        else:
            call = f"{func_c_name(sym)}({', '.join(args)})"
            parts = pres if sym.name in self.silent else pres + [self.frame_at(e.pos, 'call')]
        if sym.name in self.may_unmap:
            # A mapping may have ended: forget the site caches, after the call.
            if self.ty(e) is None or self.ty(e) is VOID:
                call = f"({call}, {FORGET})"
            else:
                tmp = self.temp(self.ty(e))
                call = f"({tmp} = {call}, {FORGET}, {tmp})"
        return f"({', '.join(parts)}, {call})" if parts else call
