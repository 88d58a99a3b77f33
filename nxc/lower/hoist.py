"""Which checks of a loop can be done once, before it (checked C builds).

Checked C tests every load and store against the live mappings. In a loop

    while d < n { out[i0 + d] = a[d * s + j]; d = d + 1 }

the addresses of `out[...]` and `a[...]` walk arithmetic progressions whose
first element and length are known when the loop starts: one range check per
access, before the loop, proves every iteration's access valid. The same
holds for a loop around innermost loops of that kind (`while j < m { var d =
0; while d < n { ... p[j * w + d] ... } ... }`): the elements of
`p[I + S1*j + S2*d]` over the whole nest lie between the first and
I + S1*(m-1-j0) + S2*(n-1-d0) elements further. The C emitter writes such a
loop twice (loop versioning): a fast copy with plain accesses, entered when
every range check passes, and the checked copy otherwise. A loop that would
fault therefore runs the checked copy, which stops at the exact iteration and
site, with the same message and stack, as without this analysis; a loop that
would not fault runs without checks (and GCC may vectorize it).

The range checks are only sound if nothing in the loop can move what they
looked at, so a loop qualifies only when (this module checks all of it):
- its condition has a conjunct `d < N` or `d <= N` on an i64 local `d`
  whose only assignment in the body is a final `d = d + 1` (or `d += 1`);
  each inner loop (at the body's top level, innermost) is the same, right
  after the statement that sets its counter to an invariant start;
- every bound, start, stride and index part that does not depend on a
  counter is "invariant": constants, and locals or parameters the loop never
  assigns, combined with + - * (no memory read, no call, no division, which
  could trap before the loop instead of in it);
- it calls only functions that touch no memory at all (float32 primitives,
  and .nx functions without memory accesses or such calls, transitively:
  nxc/lower/effects.py): no mapping can end (sys_munmap), and no memory the
  checks rely on can change;
- a hoisted access is `P[I + S1*c1 + S2*c2]` (S invariant, >= 0 at run time)
  of a scalar or pointer element, with P an invariant local, or `p.f`
  through an invariant local pointer p (one fixed address); P may itself be
  such a field (`pool.K`, whose value the range check reads once), provided
  every store of the loop is hoisted too, so the emitter can check at run
  time that no store of the loop can overwrite that field.
Accesses that do not fit (in a loop condition, through a non-invariant
pointer, of a struct value) stay checked in the fast copy too. Accesses
through the same pointer with the same strides at constant offsets from each
other (`acc[16 + r]`, `acc[32 + r]`) share one range check, from the least
offset's first element to the greatest's last (_merge_offsets).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from nxc.syntax import ast
from nxc.check.types import BoolType, IntType, PointerType
from nxc.lower.effects import is_access
from nxc.syntax.printer import expr_text

@dataclass(eq=False)
class Counter:
    """A loop counter: `d` runs from `start` (None: its value where the plan's
    loop starts) through `bound` (exclusive; inclusive for `d <= N`) by +1."""
    sym: object
    bound: ast.Expr
    inclusive: bool
    start: ast.Expr | None = None
    loop: ast.While | None = None    # the loop it counts


@dataclass(eq=False)
class RangeAccess:
    """`P[I + S1*c1 + S2*c2]`: over the loop nest, its elements lie in one
    progression from the first iteration's (each S invariant, >= 0 at run time)."""
    node: ast.Index
    terms: list                      # [(counter index, stride expr or None for 1)]
    store: bool
    region: int = 0                  # 0: the loop's own body; k: inside the loop of counter k
    # Elements past this access's own progression that one range check covers: the accesses
    # through the same pointer with the same strides whose index is this one's plus a constant
    # of at most `extra` (_merge_offsets), checked with it.
    extra: int = 0


@dataclass(eq=False)
class FixedAccess:
    """`p.f` with p invariant: one address for every iteration."""
    node: ast.FieldAccess
    store: bool
    base_of: bool = False            # the pointer of some RangeAccess (its value must not change)


@dataclass(eq=False)
class LoopPlan:
    loop: ast.While
    counters: list                   # [Counter]: the loop's own first, then its inner loops'
    ranges: list[RangeAccess] = field(default_factory=list)
    fixed: list[FixedAccess] = field(default_factory=list)
    # The access nodes the fast copy writes without a check (set once the plan is made).
    unchecked: frozenset = frozenset()


def plan_loops(fn, program, free: set[str]) -> dict:
    """ast.While -> LoopPlan for each loop of `fn` whose checks can be hoisted."""
    plans = {}
    for loop in _whiles(fn.decl.body):
        p = _plan_loop(loop, program.info, free)
        if p is not None:
            plans[loop] = p
    return plans


def _plan_loop(loop: ast.While, info, free: set[str]):
    """The plan of a loop whose body is straight code and innermost counted
    loops (each at its top level, right after the statement that sets its
    counter to an invariant start): a copy of it nest-wide without the
    checks of the accesses that fit (see the module doc), or None."""
    body = loop.body
    # Locals the body assigns (declared in it, or assigned).
    assigned = set()
    for n in ast.nodes(body):
        if isinstance(n, ast.Assign) and isinstance(n.target, ast.Name):
            assigned.add(info.sym(n.target))
        elif isinstance(n, ast.VarDecl):
            assigned.add(info.sym(n))
    own = _counter(loop, assigned, info)
    if own is None:
        return None
    counters = [own]
    regions = []                     # (statement, counter indices its accesses may use)
    stmts = body.stmts
    for i, st in enumerate(stmts):
        if not any(isinstance(n, ast.While) for n in ast.nodes(st)):
            regions.append((st, (0,)))
            continue
        if not isinstance(st, ast.While) or any(isinstance(n, ast.While) for n in ast.nodes(st.body)) or i == 0:
            return None
        inner = _counter(st, assigned, info)
        start = _start_of(stmts[i - 1], inner.sym, info) if inner is not None else None
        if start is None or not _invariant(start, assigned, info):
            return None
        # Inside that loop d runs from start by its increment (_counter: its
        # body sets d nowhere else); outside it d is no counter (it is assigned,
        # so not invariant either), so it may be set again for another loop.
        inner.start, inner.loop = start, st
        counters.append(inner)
        regions.append((st.body, (0, len(counters) - 1)))
    # Calls: only functions that touch no memory.
    for n in ast.nodes(body):
        if isinstance(n, ast.Call):
            s = info.sym(n.func) if isinstance(n.func, ast.Name) else None
            if s is None or s.name not in free:
                return None
    plan = LoopPlan(loop, counters)
    # Every access of the body (the conditions' stay checked), stores marked.
    stores = {id(n.target) for n in ast.nodes(body) if isinstance(n, ast.Assign)}
    addressed = {id(n.operand) for n in ast.nodes(body) if isinstance(n, ast.Unary) and n.op == "&"}
    accesses = []
    for region, allowed in regions:
        accesses += [(n, allowed) for n in ast.nodes(region) if is_access(n) and id(n) not in addressed]
    unknown_store = False
    fixed_of: dict[int, FixedAccess] = {}
    for n, _ in accesses:
        if isinstance(n, ast.FieldAccess) and _fixed_address(n, assigned, info):
            fixed_of[id(n)] = FixedAccess(n, id(n) in stores)
    for n, allowed in accesses:
        if id(n) in fixed_of:
            continue
        r = None
        if isinstance(n, ast.Index) and _scalar(info.ty(n)):
            base_ok = ((isinstance(n.base, ast.Name) and _invariant(n.base, assigned, info))
                       or id(n.base) in fixed_of)
            syms = {counters[k].sym: k for k in allowed}
            terms = _linear(n.index, syms, assigned, info) if base_ok else None
            if terms:
                r = RangeAccess(n, sorted(terms.items(), key=lambda kv: kv[0]), id(n) in stores, max(allowed))
        if r is not None:
            plan.ranges.append(r)
        elif id(n) in stores:
            unknown_store = True
    # The fields a range of this plan, or of an inner loop's own plan, reads
    # its pointer from: the disjointness tests for them are done here, once.
    hoisted = {id(r.node) for r in plan.ranges}
    for n, allowed in accesses:
        f = fixed_of.get(id(n.base)) if isinstance(n, ast.Index) else None
        if f is not None and (id(n) in hoisted or max(allowed) > 0):
            f.base_of = True
    if unknown_store:
        # A store the checks cannot see might overwrite a field some range was
        # computed from: those ranges stay checked.
        plan.ranges = [r for r in plan.ranges if id(r.node.base) not in fixed_of]
        for f in fixed_of.values():
            f.base_of = False
    plan.fixed = list(fixed_of.values())
    if not plan.ranges and not plan.fixed:
        return None
    plan.unchecked = frozenset([r.node for r in plan.ranges] + [f.node for f in plan.fixed])
    plan.ranges = _merge_offsets(plan.ranges, info)
    return plan


# The widest gap between accesses one range check covers: accesses further apart may lie in
# two mappings, and one range over both would send the loop to its checked copy.
_MERGE_MOST = 4096


def _merge_offsets(ranges: list, info) -> list:
    """One range for the accesses through the same invariant pointer name, with the same
    counters and strides, whose indexes differ by constants (`acc[16 + r]`, `acc[32 + r]`;
    `x[c * 8 + 1]` ... `x[c * 8 + 7]`), loads and stores apart: the one of least index, its
    `extra` the greatest difference. Its range holds every element of each of them (strides are
    >= 0), so when it is valid they all are, as when each was checked alone: a kernel's nest
    had 27 range checks before each 32-column chunk, about a fifth of the checked call."""
    groups: dict = {}
    out = []
    for r in ranges:
        rest, off = _split_offset(r.node.index, info)
        base = info.sym(r.node.base) if isinstance(r.node.base, ast.Name) else None
        if base is None:
            out.append(r)
            continue
        key = (base, r.store, r.region, expr_text(rest),
               tuple((k, None if s is None else expr_text(s)) for k, s in r.terms))
        groups.setdefault(key, []).append((off, r))
    for members in groups.values():
        members.sort(key=lambda m: m[0])
        start = 0
        for i in range(1, len(members) + 1):
            if i == len(members) or members[i][0] - members[start][0] > _MERGE_MOST:
                low, first = members[start]
                first.extra = members[i - 1][0] - low
                out.append(first)
                start = i
    return out


def _split_offset(e, info) -> tuple:
    """(the index without its constant addend, the addend): `E + K`, `K + E`, `E - K`."""
    if isinstance(e, ast.Binary) and e.op in ("+", "-"):
        k = info.const(e.right)
        if isinstance(k, int) and not isinstance(k, bool) and _is_i64(info.ty(e.left)):
            return e.left, k if e.op == "+" else -k
        k = info.const(e.left)
        if e.op == "+" and isinstance(k, int) and not isinstance(k, bool) and _is_i64(info.ty(e.right)):
            return e.right, k
    return e, 0


def _counter(loop: ast.While, assigned, info):
    """The Counter of `while d < N && ... { ...; d = d + 1 }`, d an i64 local
    the body assigns only there, N invariant; or None."""
    stmts = loop.body.stmts
    if not stmts:
        return None
    for c in ast.conjuncts(loop.cond):
        if not (isinstance(c, ast.Binary) and c.op in ("<", "<=") and isinstance(c.left, ast.Name)
                and _is_i64(info.ty(c.left))):
            continue
        d = info.sym(c.left)
        if d is None or d.kind not in ("local", "param") or not _is_increment(stmts[-1], d, info):
            continue
        if sum(1 for n in ast.walk(loop.body) if isinstance(n, ast.Assign) and isinstance(n.target, ast.Name)
               and info.sym(n.target) is d) != 1:
            continue
        if not _is_i64(info.ty(c.right)) or not _invariant(c.right, assigned, info):
            continue
        return Counter(d, c.right, c.op == "<=")
    return None


def _start_of(st, d, info):
    """The value `var d = E` / `d = E` gives d, if st is that statement."""
    if isinstance(st, ast.VarDecl) and info.sym(st) is d:
        return st.value
    if isinstance(st, ast.Assign) and st.op == "=" and isinstance(st.target, ast.Name) and info.sym(st.target) is d:
        return st.value
    return None


_ONE = None          # a term's stride when it is 1


def _linear(e, counters: dict, assigned, info):
    """An index expression as {counter index: stride (None for 1)} when it is
    `I + S1*c1 + S2*c2 ...` (I and each S invariant, each counter at most
    once); {} when it is invariant; None otherwise."""
    if not _is_i64(info.ty(e)):
        return None
    if not any(_mentions(e, c, info) for c in counters):
        return {} if _invariant(e, assigned, info) else None
    if isinstance(e, ast.Name):
        return {counters[info.sym(e)]: _ONE} if info.sym(e) in counters else None
    if isinstance(e, ast.Binary):
        if e.op == "+":
            a, b = _linear(e.left, counters, assigned, info), _linear(e.right, counters, assigned, info)
            if a is None or b is None or set(a) & set(b):
                return None
            return {**a, **b}
        if e.op == "-":
            a, b = _linear(e.left, counters, assigned, info), _linear(e.right, counters, assigned, info)
            return a if a is not None and b == {} else None
        if e.op == "*":
            for x, y in ((e.left, e.right), (e.right, e.left)):
                if isinstance(x, ast.Name) and info.sym(x) in counters and \
                        not any(_mentions(y, c, info) for c in counters) and _invariant(y, assigned, info):
                    return {counters[info.sym(x)]: y}
    return None


def _invariant(e, assigned, info) -> bool:
    """Constant, or locals the loop does not assign combined with + - * (and
    integer casts): the same value in every iteration, evaluated at no risk."""
    if info.const(e) is not None and not isinstance(info.ty(e), PointerType):
        return True
    if isinstance(e, ast.Name):
        s = info.sym(e)
        return s is not None and s.kind in ("local", "param") and s not in assigned
    if isinstance(e, ast.Binary) and e.op in ("+", "-", "*"):
        return _invariant(e.left, assigned, info) and _invariant(e.right, assigned, info)
    if isinstance(e, ast.Unary) and e.op == "-":
        return _invariant(e.operand, assigned, info)
    if isinstance(e, ast.Cast) and isinstance(info.ty(e), IntType) and isinstance(info.ty(e.expr), IntType):
        return _invariant(e.expr, assigned, info)
    return False


def _fixed_address(e: ast.FieldAccess, assigned, info) -> bool:
    """`p.f` through a pointer p the loop does not assign, of a scalar field."""
    return (info.through_pointer(e) and isinstance(e.base, ast.Name) and _invariant(e.base, assigned, info)
            and _scalar(info.ty(e)))


def _mentions(e, d, info) -> bool:
    if isinstance(e, ast.Name):
        return info.sym(e) is d
    return any(_mentions(x, d, info) for x in ast.subexpressions(e))


def _is_increment(s, d, info) -> bool:
    if not (isinstance(s, ast.Assign) and isinstance(s.target, ast.Name) and info.sym(s.target) is d):
        return False
    if s.op == "+=":
        return info.const(s.value) == 1
    v = s.value
    return (s.op == "=" and isinstance(v, ast.Binary) and v.op == "+"
            and any(info.const(x) == 1 for x in (v.left, v.right))
            and any(isinstance(x, ast.Name) and info.sym(x) is d for x in (v.left, v.right)))


def _is_i64(t) -> bool:
    return isinstance(t, IntType) and t.bits == 64 and t.signed


def _scalar(t) -> bool:
    """An element whose size equals its alignment (what the range check assumes)."""
    return isinstance(t, (IntType, PointerType, BoolType))


def _whiles(stmt):
    for n in ast.nodes(stmt):
        if isinstance(n, ast.While):
            yield n
