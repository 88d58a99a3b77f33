"""C backend: the bodies and records a gate's link needs, asked before any C is emitted.

A gate's worker in `nxc test` checks only some bodies (nxc/check/summary.py,
check_gate: the root's, and those of the modules without a clean verdict):
its program is partial, the effects of the other bodies coming from the
records kept under their modules' object keys (nxc/incremental/records.py).
The C backend never calls the checker. `LinkPlanner` (CBackend.plan_bodies)
says what it needs instead, as a `Needed` (nxc/backend/base.py: records to
give the program, modules and functions whose bodies to check); the worker
does it (Bodies.meet) and asks again with the new program, until nothing is
asked (nxc/gates/execute.py, final_program). Then `emitted(program)` is the
LinkedC of that final program, which no longer changes.

What is asked, in this order (a generator, `_steps`, each `yield` one question):

1. Interfaces, bottom-up. key(M) = object_key(M's source, the interface
   digests of M's imports, the configuration), and M's digest is that of its
   record under key(M) (kept when M's bodies were last checked with that key:
   the same whether or not M was checked here), or, for a module without a
   record (its bodies checked first if they were not: asked), interface_text's,
   which is then recorded (the new records are written together once every
   interface is known). A module whose imports' digests are not all known
   yet waits for the next round. The records found for modules not checked
   here are handed to the program before any digest is computed from it (an
   effect of a checked body depends on its callees'), and at the end.
2. Bodies to emit: the units whose objects are not in the cache (all of them
   without the cache; none when the gate's library is there; one that
   another worker is compiling now is waited for, as the build would wait
   for it, rather than checked for nothing): their modules' bodies, then the bodies of the functions their C copies in
   (ProgramFacts.is_copied, transitively) whose C this worker does not keep
   (copies.CopiedC, under the module's object key), until none is missing.

The questions, their order and the records written are those the backend
used to answer itself by checking, so the keys, the records, the objects and
their C are the same (tests/test_backend_never_checks.py).
"""
from __future__ import annotations

from nxc.backend.base import NOTHING, BodyPlan, Needed
from nxc.backend.c.closure import import_closure
from nxc.backend.c.copies import copies_unknown
from nxc.backend.c.objects import LinkedC, awaited_object, library_path, record_of
from nxc.backend.c.units import interface_text
from nxc.cache import parts_digest, present, stamped
from nxc.incremental.index import bottom_cycle
from nxc.incremental.records import read_record, write_records


class LinkPlanner(BodyPlan):
    """The questions of one gate's link (the module's docstring), asked of the
    worker one at a time; `linked` carries what the answers found (keys,
    interface digests, closures) into the LinkedC that is emitted."""

    def __init__(self, backend, program, *, checked: bool, opt: str, use_cache: bool, unbox_f32: bool = True,
                 emit=None, also=frozenset()):
        """emit: the real paths of the modules whose units will be emitted
        (default: those whose objects the build will not find in the cache,
        and the modules `also`: those whose site tables a fault must read and
        the cache no longer holds whole, BodiesNeeded.paths)."""
        super().__init__(backend)
        self.linked = LinkedC(program, checked=checked, opt=opt, unbox_f32=unbox_f32)
        self.use_cache = use_cache
        self.emit = None if emit is None else frozenset(emit)
        self.also = frozenset(also)
        self._steps = self._questions() if self.linked.partial else None
        self.asked = 0                  # questions asked (NXC_DEBUG_STATS, tests)

    def needed(self, program) -> Needed:
        linked = self.linked
        if program is not linked.program:
            if not self.asked:
                raise RuntimeError("LinkPlanner was given another program than it planned (a bug in nxc)")
            linked.advance(program)
        if self._steps is None:
            return NOTHING
        try:
            need = next(self._steps)
        except StopIteration:
            self._steps = None
            return NOTHING
        self.asked += 1
        return need

    def emitted(self, program) -> LinkedC:
        if self._steps is not None or program is not self.linked.program:
            raise RuntimeError("emitted before LinkPlanner needed nothing more (a bug in nxc)")
        return self.linked

    # ---- the questions ----
    def _questions(self):
        new_records: list[tuple[str, dict]] = []
        yield from self._interfaces(new_records)
        # Written together once the interfaces are all known (a later
        # module's key reads none of them: each record is its own module's).
        write_records(new_records)
        self.linked.walked = True
        yield from self._bodies_to_emit()

    def _interfaces(self, new_records: list):
        linked = self.linked
        config = linked.config()
        program = linked.program
        with_functions = {fn.module.source.path for fn in program.functions if fn is not program.entry}
        pending = import_closure(program, program.graph.root)       # dependencies first
        records: dict[str, dict] = {}           # found, not yet handed to the program
        while pending:
            checked = linked.program.checked_modules
            ready, missing, later = [], [], []
            for m in pending:
                p = m.source.path
                if any(d.source.path not in linked.interfaces for d in linked.closure_of(m)[:-1]):
                    later.append(m)
                    continue
                # A module without functions has a record too (its interface
                # only): a gate's link can then be planned from records alone
                # (nxc/backend/c/recorded.py). A record is what checking the
                # module under this key gives, so a module checked here (the
                # root of every run of its gate) that has one takes its digest
                # from it, without interface_text.
                key = linked.key_of(m, config)
                record = read_record(key)
                if record is not None:
                    linked.interfaces[p] = record["interface"]
                    if p not in checked or p not in with_functions:
                        records[p] = record
                elif p in checked or p not in with_functions:
                    ready.append((m, key))
                else:
                    missing.append((m, key))
            cycle = self._bottom_cycle(later) if not (ready or missing) and later else []
            check = [m.source.path for m, _ in missing] + [m.source.path for m in cycle
                                                           if m.source.path in with_functions]
            if check or (records and (ready or cycle)):
                yield Needed(modules=frozenset(check), records=records)
                records = {}
            facts = linked.facts()
            for m, key in ready + missing:
                digest = linked.interfaces[m.source.path] = parts_digest(m.source.path, interface_text(facts, m))
                new_records.append((key, record_of(facts, m, digest)))
            if cycle:
                # Modules that import each other: each one's key needs the
                # others' interface digests, so none can be looked up in the
                # records first. Their bodies are checked (asked above), their
                # digests taken from interface_text, then their keys computed
                # (the key still covers every interface of the closure) and
                # their records written for the gates that import the cycle.
                for m in cycle:
                    linked.interfaces[m.source.path] = parts_digest(m.source.path, interface_text(facts, m))
                new_records.extend((linked.key_of(m, config), record_of(facts, m, linked.interfaces[m.source.path]))
                                   for m in cycle)
                later = [m for m in later if m.source.path not in linked.interfaces]
            pending = later
        if records:
            yield Needed(records=records)

    def _bottom_cycle(self, waiting: list) -> list:
        """The modules of `waiting` that form a cycle of imports waiting for nothing
        outside itself (nxc/incremental/index.py, bottom_cycle)."""
        imported = {m.source.path: {d.source.path for d in self.linked.closure_of(m)[:-1]} for m in waiting}
        cycle = set(bottom_cycle([m.source.path for m in waiting], imported, self.linked.interfaces))
        return [m for m in waiting if m.source.path in cycle]

    def _to_emit(self) -> list:
        """The units whose C the build will emit: those whose objects are not
        in the cache (objects.build_gate: none when the library is there)."""
        units, _, _, key = self.linked.plan()
        if self.emit is not None:
            return [u for u in units if u.module.source.path in self.emit]
        if not self.use_cache:
            return list(units)
        target, _ = library_path(key)
        if present(target) and stamped(target):
            return [u for u in units if u.module.source.path in self.also]
        return [u for u in units if u.module.source.path in self.also or awaited_object(u.key) is None]

    def _bodies_to_emit(self):
        linked = self.linked
        todo = self._to_emit()
        unchecked = frozenset(u.module.source.path for u in todo) - linked.program.checked_modules
        if unchecked:
            yield Needed(modules=unchecked)
        while True:
            facts = linked.facts()
            need: dict[int, object] = {}
            for u in todo:
                for fn in copies_unknown(facts, linked.unit_functions(u), linked.copy_key):
                    need.setdefault(id(fn), fn)
            # Only those: each is checked once per gate, its facts once per
            # body (nxc/lower/effects.py, body_facts), so a new program costs
            # its fixed points only, not a walk of every body again.
            if not need:
                return
            yield Needed(functions=tuple(need.values()))
