"""Reporting: the text a run prints, its JSON lines and its JUnit XML.

A line per result as it arrives (or progress letters with -q, or one JSON
object per result with --json), then every failure explained (the `return`
that fired, its source lines and the values of the operands of its guard),
then a summary whose last line is `N passed, N failed, ...`. The
explanations of single outcomes (`describe_failure`...) are here too:
`nxc run` prints the same ones.
"""
from __future__ import annotations

import json
import os
import re
import sys

from nxc.diagnostics import display_path
from nxc.gates.protocol import Outcome, Site, Status
from nxc.diagnostics import render_stack


# Summary words, in the order the summary line lists them.
S = Status
SUMMARY = [(S.PASS, "passed", "passed"), (S.FAIL, "failed", "failed"),
           (S.COMPILE_ERROR, "compile error", "compile errors"), (S.RUNTIME_ERROR, "runtime error", "runtime errors"),
           (S.CRASH, "crash", "crashes"), (S.TIMEOUT, "timeout", "timeouts"),
           (S.MEMORY_LIMIT, "over the memory limit", "over the memory limit"), (S.INTERNAL_ERROR, "error", "errors")]
LETTER = {S.PASS: ".", S.FAIL: "F", S.COMPILE_ERROR: "E", S.RUNTIME_ERROR: "R", S.CRASH: "C", S.TIMEOUT: "T",
          S.MEMORY_LIMIT: "M", S.INTERNAL_ERROR: "E"}
# JUnit: a verdict on the .nx code is a <failure>; not getting as far as running it is an <error>.
JUNIT_FAILURES = (S.FAIL, S.RUNTIME_ERROR, S.CRASH, S.TIMEOUT, S.MEMORY_LIMIT)
JUNIT_ERRORS = (S.COMPILE_ERROR, S.INTERNAL_ERROR)

SIGNAL_HINT = {
    "SIGSEGV": "an invalid memory access, such as a read or write through a null pointer",
    "SIGBUS": "an invalid memory access (misaligned or beyond a mapping)",
    "SIGABRT": "the program aborted",
    "SIGFPE": "an arithmetic fault",
    "SIGILL": "an illegal instruction",
}


# A stub (`nxc port --stubs`, nxc/gates/collect.py) compiles, but its
# functions return placeholders: shown as STUB (JUnit <skipped>), counted
# apart from the passes, not a failure (exit 0).
STUB_NOTE = "a stub written by 'nxc port --stubs': it compiles, its functions return placeholders; replace it"


def is_stub(r) -> bool:
    return r.passed and r.kind == "stub"


# ------------------------------------------------------------------ one outcome
def location(site: Site) -> str:
    """`path:line` of a site, the path as the user would type it."""
    return f"{display_path(site.file)}:{site.line}"


def sources_of(program) -> dict:
    """Absolute path -> SourceFile of every module of the program (to quote lines
    from the text that was compiled, not from what is on disk now)."""
    return {m.source.path: m.source for m in program.graph.modules}


def describe_failure(outcome: Outcome, sources: dict, context: int = 2) -> str:
    """`FAIL main returned N at FILE:LINE` and the source around that return."""
    site = outcome.site
    src = sources.get(site.file) if site is not None else None
    if src is None:
        return f"FAIL main returned {outcome.value}"
    lines = [f"FAIL main returned {outcome.value} at {location(site)}"]
    for n in range(max(site.line - context, 1), site.line + context + 1):
        text = src.line_text(n)
        if n > site.line and not text:
            break
        mark = ">" if n == site.line else " "
        lines.append(f" {mark}{n:5d} | {text}")
    for text, value in outcome.captured:
        lines.append(f"        {text} = {show_value(value)}")
    return "\n".join(lines)


def show_value(value) -> str:
    """Large integers also in hex: float32 bit patterns and masks read better so."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 0x10000:
        return f"{value} (0x{value & 0xFFFFFFFFFFFFFFFF:X})"
    return str(value)


def runtime_error_report(outcome: Outcome, sources: dict, prefix: str = "RUNTIME-ERROR ",
                         message: str | None = None) -> str:
    """The run-time error, with its source line and a caret when it names one,
    then the .nx call stack."""
    lines = [f"{prefix}{outcome.message if message is None else message}"]
    site = outcome.site
    src = sources.get(site.file) if site is not None else None
    if src is not None and src.line_text(site.line):
        lines.append(f" >{site.line:5d} | {src.line_text(site.line)}")
        lines.append(" " * 10 + " " * (site.column - 1) + "^")
    if outcome.stack:
        lines.append(render_stack(outcome.stack))
    return "\n".join(lines)


def crash_report(outcome: Outcome, sources: dict) -> str:
    """The signal, and where the gate was: the checked re-run's finding
    (`detail`) or the stack the checked build left."""
    sig = outcome.message
    hint = SIGNAL_HINT.get(sig)
    text = (f"CRASH ({sig}): the gate's process was killed by {sig}" + (f" ({hint})" if hint else "")
            if sig.startswith("SIG") else f"CRASH: the gate's process ended without a result ({sig})")
    first, _, rest = outcome.detail.partition("\n")
    if first:
        text += "\n" + first
    if rest:
        text += "\n" + runtime_error_report(outcome, sources, prefix="", message=rest)
    elif outcome.stack:
        text += "\n" + render_stack(outcome.stack)
    return text


def timeout_report(outcome: Outcome, timeout: float, flag: str = "--timeout") -> str:
    """TIMEOUT, and where the gate was when it was stopped."""
    text = f"TIMEOUT: the gate did not finish in {timeout:g} s and was stopped ({flag} SECONDS allows more)"
    if outcome.stack:
        text += "\n" + render_stack(outcome.stack, "it was stopped in (innermost first):")
    elif outcome.checked is False:
        text += "\n(an unchecked build keeps no .nx stack: run without --unchecked to see where it was)"
    return text


# ------------------------------------------------------------------ a run
class Reporter:
    def __init__(self, verbosity: int, json_lines: bool, total: int, out=None):
        self.verbosity = verbosity
        self.json = json_lines
        self.total = total
        self.out = out or sys.stdout
        self.done = 0
        self.width = len(str(total))
        self.letters_on_line = 0

    def say(self, text: str = "", end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()

    def header(self, items: list[Item], workers: int, options: Options) -> None:
        if self.json or self.verbosity < 0:
            return
        modules = len({it.path for it in items})
        gates = len({it.path for it in items if it.kind == "gate"})
        stubs = len({it.path for it in items if it.kind == "stub"})
        libraries = modules - gates - stubs
        self.say(f"nxc test: {modules} module{'s' if modules != 1 else ''} ({gates} gate{'s' if gates != 1 else ''}, "
                 f"{libraries} librar{'ies' if libraries != 1 else 'y'}"
                 f"{f', {stubs} stub' + ('s' if stubs != 1 else '') if stubs else ''}), "
                 f"backend {'+'.join(options.backends)}, {workers} worker{'s' if workers != 1 else ''}, "
                 f"timeout {options.timeout:g} s{'' if options.use_cache else ', no cache'}"
                 f"{', soft f32' if options.soft_f32 else ''}")

    def result(self, r: Result) -> None:
        self.done += r.covers
        if self.json:
            self.say(json.dumps(r.to_json()))
            return
        if self.verbosity < 0:
            self.say("S" if is_stub(r) else LETTER.get(r.status, "?"), end="")
            self.letters_on_line += 1
            if self.letters_on_line >= 70 or self.done >= self.total:
                self.say(f" [{self.done}/{self.total}]")
                self.letters_on_line = 0
            return
        what = r.message if not r.passed else ("library, compiles" if r.kind == "library" else
                                                STUB_NOTE if r.kind == "stub" else "gate")
        if r.warnings:
            n = len(r.warnings)
            what += f", {n} warning{'s' if n != 1 else ''}"
        word = "STUB" if is_stub(r) else str(r.status)
        word = f"{word} (cached)" if r.cached else word
        line = f"[{self.done:{self.width}d}/{self.total}] {word:<13} {r.id}  {what} ({r.seconds:.2f}s)"
        if self.verbosity > 0:
            build = ("" if r.build_cached is None else
                     f", build {'cached' if r.build_cached else 'compiled'} {r.build_seconds:.2f}s")
            if r.relinked:          # a separately compiled gate: linked now, from objects compiled or cached
                n = len(r.recompiled)
                build += f" (linked; {n} module object{'s' if n != 1 else ''} compiled)"
            elif r.host:            # nothing linked for it: another library holds all it needs
                n = len(r.recompiled)
                build += (f" ({n} module object{'s' if n != 1 else ''} compiled; run from a library linked for "
                          f"a gate that imports it or for its batch, {r.host[:12]})")
            indent = " " * (2 * self.width + 4)
            line += f"\n{indent}front end {r.front_end_seconds:.2f}s{build}, run {r.run_seconds:.3f}s"
            if r.plan:              # which path the planner took, and why (nxc/incremental/plan.py)
                line += f"\n{indent}path: {r.plan}: {r.plan_reason}"
        self.say(line)

    def finish(self, results: list[Result], order: list[str], elapsed: float, not_run: int,
               stopped_early: bool, interrupted: bool, durations: int | None = None,
               maxfail: int = 0, notes: list[str] = (), stats: dict | None = None) -> None:
        failed = [r for r in results if not r.passed]
        rank = {id_: i for i, id_ in enumerate(order)}
        failed.sort(key=lambda r: rank.get(r.id, 0))
        stream = sys.stderr if self.json else self.out
        write = (lambda s: (stream.write(s + "\n"), stream.flush()))
        warned = sorted((r for r in results if r.warnings), key=lambda r: rank.get(r.id, 0))
        if warned and not self.json:
            write("")
            write(" WARNINGS ".center(78, "="))
            for r in warned:
                write(f" {r.path} ".center(78, "_"))
                write("\n".join(r.warnings))
        if failed and not self.json:
            write("")
            write(" FAILURES ".center(78, "="))
            for r in failed:
                write(f" {r.id} [{r.status}] ".center(78, "_"))
                write(r.report or f"{r.status}: {r.message}")
                if r.output:
                    write(" the gate's output ".center(78, "-"))
                    write(r.output.rstrip("\n"))
                write("")
        builds = [r for r in results if r.build_cached is not None]
        if builds and self.verbosity >= 0:
            compiled = sum(not r.build_cached for r in builds)
            write(f"C builds: {compiled} compiled, {len(builds) - compiled} from the cache")
        cached = sum(r.cached for r in results)
        if cached and self.verbosity >= 0:
            write(f"results: {cached} passed before with the same build and options, not run again "
                  f"(PASS (cached); --rerun runs them)")
        if durations is not None and results and not self.json:
            write(durations_table(results, durations))
        for note in notes:
            write(note)
        if interrupted:
            write(f"interrupted: {not_run} not run")
        elif stopped_early and not_run:
            why = "the first failure (-x)" if maxfail == 1 else f"{maxfail} failures (--maxfail {maxfail})"
            write(f"stopped after {why}: {not_run} not run")
        write(summary_line(results, elapsed))
        if self.json:       # last line of stdout: a consumer needs no other stream
            event = summary_event(results, elapsed, not_run, interrupted, stopped_early)
            if stats:
                event["incremental"] = stats
            self.say(json.dumps(event))


def durations_table(results: list[Result], n: int) -> str:
    """--durations N: the N slowest items (0: all), with each step's time."""
    ranked = sorted(results, key=lambda r: -r.seconds)
    shown = ranked if n <= 0 else ranked[:n]
    title = f" slowest {len(shown)} item{'s' if len(shown) != 1 else ''} " if n > 0 else " durations "
    lines = ["", title.center(78, "="),
             f"{'total':>8} {'front end':>10} {'build':>8} {'run':>8}  item"]
    for r in shown:
        note = " (cached)" if r.cached else (" (build cached)" if r.build_cached else "")
        lines.append(f"{r.seconds:7.2f}s {r.front_end_seconds:9.2f}s {r.build_seconds:7.2f}s "
                     f"{r.run_seconds:7.3f}s  {r.id}{note}")
    return "\n".join(lines)


def summary_event(results: list[Result], elapsed: float, not_run: int, interrupted: bool,
                  stopped_early: bool) -> dict:
    """The final `--json` line: the counts of the summary, by status word."""
    counts = {many.replace(" ", "_"): 0 for _, _, many in SUMMARY}
    for r in results:
        for status, _, many in SUMMARY:
            if r.status == status:
                counts[many.replace(" ", "_")] += 1
    stubs = sum(is_stub(r) for r in results)
    counts["passed"] -= stubs
    return {"event": "summary", **counts, "stubs": stubs, "results": len(results),
            "items": sum(r.covers for r in results),
            "cached": sum(r.cached for r in results), "warnings": sum(len(r.warnings) for r in results),
            "not_run": not_run, "interrupted": interrupted, "stopped_early": stopped_early,
            "passed_all": bool(results) and not not_run and all(r.passed for r in results),
            "seconds": round(elapsed, 4)}


def summary_line(results: list[Result], elapsed: float | None = None) -> str:
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    stubs = sum(is_stub(r) for r in results)
    counts[S.PASS] = counts.get(S.PASS, 0) - stubs
    parts = []
    for status, one, many in SUMMARY:
        n = counts.get(status, 0)
        if n or status in (S.PASS, S.FAIL):
            parts.append(f"{n} {one if n == 1 else many}")
    if stubs:
        parts.append(f"{stubs} stub{'s' if stubs != 1 else ''}")
    text = ", ".join(parts)
    return text if elapsed is None else f"{text} in {elapsed:.2f}s"


def write_junit(path: str, results: list[Result], order: list[str], elapsed: float,
                suite_name: str = "nxc") -> None:
    """JUnit XML valid against junit-10.xsd (the schema pytest's xunit2 targets,
    kept in tests/): no testcase-level <properties>, no `file`/`line`
    attributes; the gate's value, site and captured operands go into the
    <failure> message and text, what it printed into <system-out>, the
    module's warnings into <system-err>."""
    from xml.etree import ElementTree as ET     # here: most runs write no JUnit file
    rank = {id_: i for i, id_ in enumerate(order)}
    results = sorted(results, key=lambda r: rank.get(r.id, 0))
    failures = sum(r.status in JUNIT_FAILURES for r in results)
    errors = sum(r.status in JUNIT_ERRORS for r in results)
    stubs = sum(is_stub(r) for r in results)
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name=suite_name, tests=str(len(results)), failures=str(failures),
                          errors=str(errors), skipped=str(stubs), time=f"{elapsed:.3f}")
    for r in results:
        stem = os.path.splitext(r.path)[0].replace(os.sep, ".").lstrip(".")
        case = ET.SubElement(suite, "testcase", classname=stem, name=r.id, time=f"{r.seconds:.3f}")
        if not r.passed:
            tag = "error" if r.status in JUNIT_ERRORS else "failure"
            el = ET.SubElement(case, tag, message=xml_text(junit_message(r)), type=str(r.status))
            el.text = xml_text(r.report)
        elif is_stub(r):            # compiles, yet stands for a module not there: not a pass
            ET.SubElement(case, "skipped", message=f"STUB: {STUB_NOTE}")
        if r.output:
            ET.SubElement(case, "system-out").text = xml_text(r.output)
        if r.warnings:
            ET.SubElement(case, "system-err").text = xml_text("\n".join(r.warnings))
    ET.indent(suites)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def junit_message(r: Result) -> str:
    """`STATUS: message [backend]`, and the guard's operands of a FAIL: a CI's
    one-line view of a failure says which check and with which values."""
    text = f"{r.status}: {r.message}" + (f" [{r.backend}]" if r.backend else "")
    if r.captured:
        text += " (" + ", ".join(f"{t} = {show_value(v)}" for t, v in r.captured) + ")"
    return text


# Characters XML 1.0 cannot hold at all (not even escaped): a quoted source
# line or a gate's output may have them; they are shown as U+FFFD.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)
