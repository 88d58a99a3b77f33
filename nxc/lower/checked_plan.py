"""The checked C backend's lowering of one program, worked out at once,
before any of its C is written (nxc/backend/c/facts.py asks for it once per
program): the emitters then only read it.

- the program's effects (effects.py, may_unmap.py): the functions whose
  calls may end a mapping, touch no memory, are silent, and the loud ones
  whose calls keep a shadow-stack frame;
- per function whose body the program checked: the loops whose checks are
  hoisted (hoist.py), whether it keeps a frame of its own;
- per loop of those bodies: whether it stores its site again each iteration
  (an inner loop or a loud call in it moves the frame's slot), and whether
  the fast copy of a hoisted nest must (only a loud call does).

A function's loop plans depend on its body, the checker's tables and the
memory-free functions only: a gate's worker checks more bodies into a new
program several times (nxc/check/summary.py, Bodies), and each new program
reuses the plans of the bodies whose answers have not changed.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

from nxc.check.externs import task_externs
from nxc.lower.effects import checked_functions, memory_free, silent, unmapping
from nxc.lower.hoist import plan_loops
from nxc.lower.may_unmap import calls_in, has_loop
from nxc.lower.plan import ProgramPlan


@dataclass(frozen=True)
class CheckedPlan:
    may_unmap: frozenset        # names: a call may end a mapping
    memory_free: frozenset      # names: a call touches no memory
    silent: frozenset           # names: a call can neither fail nor hang (stores no site)
    loud: frozenset             # names: a call keeps a frame (all functions but the silent ones)
    loops: dict                 # Function -> {ast.While: LoopPlan}: the loops whose checks are hoisted
    framed: dict                # Function -> whether it keeps a shadow-stack frame
    restamps: dict              # ast.While -> (restamps, restamps in a hoisted nest's fast copy)


def _loud_functions(program, silent_names) -> frozenset:
    """The functions whose calls keep a frame: all but the silent ones.
    sys_parallel_for counts as a loud call: it runs a task (which may fault)
    and stores its site in this frame's slot (runtime/nx_threads.c), as a
    call does."""
    return (frozenset(fn.decl.name for fn in program.functions) - silent_names) | task_externs()


def plan_checked(program, plan: ProgramPlan) -> CheckedPlan:
    """The CheckedPlan of `program` (`plan`: its plan_program), with the
    answers for every function whose body it checked. An imported module's
    gate is planned when asked for (plan_bodies): it is written only into its
    own module's object, never into a whole program's C."""
    free = frozenset(memory_free(program))
    quiet = frozenset(silent(program))
    cp = CheckedPlan(frozenset(unmapping(program)), free, quiet, _loud_functions(program, quiet), {}, {}, {})
    plan_bodies(program, plan, cp, checked_functions(program))
    return cp


def plan_bodies(program, plan: ProgramPlan, cp: CheckedPlan, functions) -> None:
    """Adds the answers for `functions` (planned by `plan`) to `cp`."""
    sym = program.info.sym
    for fn in functions:
        fp = plan.functions[fn]
        cp.loops[fn] = _loop_plans(fn, program, cp.memory_free)
        # A function with no loop and no call of an nx function that could fail or
        # spin takes no shadow-stack frame: it cannot spin or recurse, and a fault
        # in it names it by its own site (faults.stack_from puts it on top of its
        # caller's frame). Small helpers called in hot loops (nx_f32_max,
        # nx_f32_exp) stay as cheap and as inlinable as unchecked.
        cp.framed[fn] = bool(fp.loops or fp.calls & cp.loud)
        for s in fp.loops:
            called = bool((calls_in(s.body, sym) | calls_in(s.cond, sym)) & cp.loud)
            cp.restamps[s] = (has_loop(s.body) or called, called)


# Function -> (the checker's tables, the memory-free names, its loop plans).
_LOOPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _loop_plans(fn, program, free: frozenset) -> dict:
    known = _LOOPS.get(fn)
    if known is not None and known[0] is program.info and known[1] == free:
        return known[2]
    plans = plan_loops(fn, program, free)
    _LOOPS[fn] = (program.info, free, plans)
    return plans
