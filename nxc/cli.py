"""The `nxc` command line: check, run, emit-c, emit-py, test, cache.

Every mistake in the user's .nx code or command line ends here as a message
and a non-zero exit status, never as a Python traceback.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

from nxc import __version__
from nxc.diagnostics import CompileError, Diagnostics, ToolError
from nxc.gates.protocol import EXIT_COMPILE_ERROR, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, MAX_TIMEOUT, Status


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's default exits 2 with usage: keep that, say it plainly
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"nxc: error: {message}{_did_you_mean(self, message)}\n")


def _did_you_mean(parser, message: str) -> str:
    """'; did you mean 'test'?' for a misspelt subcommand (`nxc tset`)."""
    import difflib
    import re
    m = re.match(r"argument COMMAND: invalid choice: '([^']*)'", message)
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if m is None or sub is None:
        return ""
    close = difflib.get_close_matches(m.group(1), list(sub.choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _add_include(p):
    p.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                   help="also look for imported modules in DIR (before NXPATH and the bundled nx_src/)")


def _add_warn(p):
    p.add_argument("-w", "--no-warn", action="store_true", help="do not print warnings")


def _add_soft_f32(p):
    p.add_argument("--soft-f32", action="store_true",
                   help="float32 primitives in .nx integer code (nx_src/nx_f32_soft.nx) instead of the runtime's")


def _add_build(p):
    p.add_argument("--opt", default="2", choices=["0", "2", "native"],
                   help="C optimisation level: 0, 2 (default) or native (-O3 -march=native)")
    p.add_argument("--march", default=None,
                   choices=["native", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"],
                   help="C target instruction set (default: native, the host's own; x86-64 = portable SSE2, "
                        "x86-64-v3 = AVX2, x86-64-v4 = AVX-512); part of the cache key, the same bits on each")
    p.add_argument("--no-cache", action="store_true",
                   help="rebuild even if a cached build exists (nxc test: and rerun gates that passed before)")
    _add_unchecked(p)


def _add_unchecked(p):
    p.add_argument("--unchecked", action="store_true",
                   help="C without memory checks and .nx stack (faster; a crash is then located by a checked re-run)")


def _add_remote(p):
    """The shared cache behind the local one (nxc/remote/, docs/runner.md#a-cache-shared-between-machines)."""
    p.add_argument("--remote-cache", metavar="URL", default=None,
                   help="also take builds and results from, and give them to, the cache at URL: http:// or "
                        "https:// (the Bazel remote-cache layout: bazel-remote, a WebDAV server) or redis:// "
                        "(default $NXC_REMOTE_CACHE)")
    p.add_argument("--remote-cache-key-file", metavar="FILE", default=None,
                   help="the shared key that signs what the remote cache holds (default $NXC_REMOTE_CACHE_KEY_FILE, "
                        "else the key in $NXC_REMOTE_CACHE_KEY); without one the remote cache is not used")
    p.add_argument("--remote-cache-readonly", action="store_true",
                   help="read the remote cache, never write to it (CI of untrusted changes; $NXC_REMOTE_CACHE_READONLY=1)")
    p.add_argument("--remote-cache-timeout", type=seconds, default=None, metavar="SECONDS",
                   help="bound of each request to the remote cache, to connect and to answer (default 5; "
                        "$NXC_REMOTE_CACHE_TIMEOUT); after one fault it is not used for the rest of the run")


def seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds, at most
    MAX_TIMEOUT (nan, inf and huge values would reach select() and time
    arithmetic as tracebacks)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be a positive, finite number of seconds")
    if value > MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(f"'{text}' is more than {MAX_TIMEOUT:,} seconds")
    return value


MIN_MEMORY_LIMIT = 16 << 20     # less cannot start a gate's process; it read as "0 MiB" (no limit)


def memory_size(text: str) -> int:
    """An argparse type: bytes, with an optional K, M, G or T suffix (powers of 1024);
    0 (no limit) or at least MIN_MEMORY_LIMIT."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in units else ""
    try:
        value = float(t[:-1] if unit else t) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (e.g. 512M, 4G, 0)") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be a size of 0 or more")
    if 0 < value < MIN_MEMORY_LIMIT:
        raise argparse.ArgumentTypeError(f"'{text}' is {int(value)} bytes: a limit must be at least "
                                         f"{MIN_MEMORY_LIMIT >> 20}M (or 0 for no limit)")
    return int(value)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="nxc", description="Toolchain for Nishi .nx modules: check, compile and run their gates.",
                epilog="Run 'nxc COMMAND --help' for a command's options.")
    p.add_argument("--version", action="version", version=f"nxc {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    c = sub.add_parser("check", help="parse and check modules, report every error",
                       description="Parse and type-check each FILE and everything it imports. A module "
                                   "whose source and imports' interfaces are unchanged since it last checked "
                                   "clean is not checked again (its warnings are shown as then).")
    c.add_argument("files", nargs="+", metavar="FILE", help="modules, or folders (every .nx module under them)")
    _add_include(c)
    _add_warn(c)

    r = sub.add_parser("run", help="compile a module and run its gate (func main() -> i64)",
                       description="Compile FILE and run its gate (checked C by default). Exit status: 0 pass, "
                                   "1 the gate failed (its value and the return that produced it are printed), "
                                   "2 usage, 3 compile error, 4 run-time error, 5 backends disagree, "
                                   "70 internal error, 124 timeout, 128+N killed by signal N. "
                                   "A folder runs every gate under it: 0 if all passed, else 1.")
    r.add_argument("file", metavar="FILE", help="a module, or a folder: run every gate under it")
    r.add_argument("--backend", default="c", choices=["c", "py", "both"],
                   help="c (default), py (checked memory), or both (fails unless they agree)")
    r.add_argument("--timeout", type=seconds, default=60.0, metavar="SECONDS",
                   help="stop the gate after SECONDS (default 60)")
    r.add_argument("--threads", type=int, default=1, metavar="N",
                   help="threads sys_parallel_for may use (default 1; the result is the same for any N)")
    r.add_argument("-v", "--verbose", action="store_true", help="say how long each step took")
    _add_include(r)
    _add_warn(r)
    _add_build(r)
    _add_soft_f32(r)
    _add_remote(r)

    for name, what in (("emit-c", "C"), ("emit-py", "Python")):
        e = sub.add_parser(name, help=f"print the {what} generated for a module",
                           description=f"Write the {what} source generated for FILE (to stdout, or -o OUT).")
        if name == "emit-c":
            e.add_argument("files", nargs="+", metavar="FILE",
                           help="the module (its imports come along); with --object, several modules or folders")
            e.add_argument("-o", "--output", metavar="OUT",
                           help="write to OUT instead of stdout (several modules: OUT is a folder, one "
                                "STEM.c per module)")
            _add_unchecked(e)       # by default the checked C that nxc run builds
            e.add_argument("--object", action="store_true",
                           help="only FILE's own functions and its gate, as the object a gate links (docs/build.md); "
                                "default: the whole program as one file")
        else:
            e.add_argument("file", metavar="FILE", help="the module (its imports come along)")
            e.add_argument("-o", "--output", metavar="OUT", help="write to OUT instead of stdout")
        _add_include(e)
        _add_warn(e)
        _add_soft_f32(e)

    t = sub.add_parser("test", help="find and run every gate (and compile every library module) under PATHs",
                       description="Find the .nx modules under each PATH (default: the current folder). A module "
                                   "with 'func main() -> i64' is a gate: it is compiled and run in its own process; "
                                   "a module without one must compile. Exit status 0 only if everything passed.")
    t.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders (searched recursively)")
    t.add_argument("-k", dest="keyword", metavar="PATTERN",
                   help="only items whose id, file name, kind (gate/library) or backend contains PATTERN; "
                        "'and', 'or', 'not' and parentheses combine words, as in pytest")
    t.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first item that does not pass")
    t.add_argument("--maxfail", type=int, default=None, metavar="N", help="stop after N items did not pass")
    t.add_argument("--lf", "--last-failed", dest="lf", action="store_true",
                   help="run only the items that did not pass last time (all if none failed)")
    t.add_argument("--ff", "--failed-first", dest="ff", action="store_true",
                   help="run the items that did not pass last time first, then the rest")
    t.add_argument("--rerun", action="store_true",
                   help="run every gate, even one that passed before with the same build (PASS (cached))")
    t.add_argument("--durations", type=int, default=None, metavar="N",
                   help="list the N slowest items with front-end, build and run time (0: all)")
    t.add_argument("--partition", metavar="slice:K/N|hash:K/N",
                   help="run only share K of N of the modules (CI sharding; see docs/runner.md)")
    t.add_argument("-W", dest="warnings_as", choices=["error"], default=None,
                   help="-W error: a module with warnings does not pass (COMPILE-ERROR)")
    t.add_argument("--watch", action="store_true",      # no -w: in check, run and emit-* -w is --no-warn
                   help="(no short form: -w is --no-warn elsewhere) after the run, rerun the gates a change affects whenever a .nx file under PATHs "
                        "changes (Ctrl-C ends it)")
    t.add_argument("--watch-iterations", type=int, default=None, help=argparse.SUPPRESS)  # tests: stop after N reruns
    t.add_argument("--watch-interval", type=float, default=0.5, help=argparse.SUPPRESS)   # seconds between looks
    t.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="run N modules at once (default and 0: one per CPU)")
    t.add_argument("--backend", default="c", choices=["c", "py", "both"],
                   help="c (default), py (checked memory), or both (one item per backend)")
    t.add_argument("--timeout", type=seconds, default=60.0, metavar="SECONDS",
                   help="stop a gate after SECONDS and report TIMEOUT (default 60)")
    t.add_argument("--memory-limit", type=memory_size, default=None, metavar="SIZE",
                   help="stop a gate whose memory grows past SIZE (e.g. 512M, 4G; 0: no limit) and report "
                        "MEMORY-LIMIT (default: a quarter of the physical memory)")
    t.add_argument("--list", action="store_true", help="list the items that would run, run nothing")
    t.add_argument("--junit-xml", metavar="FILE", help="also write the results as JUnit XML to FILE")
    t.add_argument("--json", action="store_true",
                   help="print one JSON object per result, then a summary object (the text summary goes to stderr)")
    t.add_argument("-q", "--quiet", action="count", default=0, help="one letter per result, then failures")
    t.add_argument("-v", "--verbose", action="count", default=0, help="also the time of each step")
    _add_include(t)
    _add_build(t)
    _add_soft_f32(t)
    _add_remote(t)

    ca = sub.add_parser("cache", help="show or clear the cache (builds, parsed modules, test results)",
                        description="Inspect (info) or empty (clear) the cache folder (NXC_CACHE_DIR): "
                                    "built modules (c/), parsed modules (parse/), passing gate results "
                                    "(results/) and last-failed lists (state/).")
    ca.add_argument("action", choices=["info", "clear"],
                    help="info: where the cache is and what each part holds; clear: empty it")

    from nxc.tools.commands import add_tool_parsers     # port, fmt, info
    add_tool_parsers(sub, _add_include)
    _add_tools_parsers(sub)                             # lsp, doc
    return p


def _add_tools_parsers(sub) -> None:
    """Editor support and module pages (nxc/tools/)."""
    ls = sub.add_parser("lsp", help="language server for editors (LSP over stdio)",
                        description="Run the .nx language server on stdin/stdout (see docs/editors.md).")
    ls.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default and only transport)")
    _add_include(ls)
    d = sub.add_parser("doc", help="static HTML module pages for .nx modules",
                       description="Write one HTML page per module of PATHs (and the modules they import) "
                                   "plus an index to SITE (see docs/doc-pages.md).")
    d.add_argument("paths", nargs="+", metavar="PATH", help=".nx files or folders (searched recursively)")
    d.add_argument("-o", "--output", required=True, metavar="SITE", help="folder to write the pages to")
    d.add_argument("--results", metavar="FILE",
                   help="gate results from 'nxc test --json' (one JSON object per line) to show on the pages")
    _add_include(d)


def _print_warnings(diags: Diagnostics, quiet: bool) -> None:
    if quiet:
        return
    for d in diags.warnings:
        print(d.render(), file=sys.stderr)


def _front(path: str, args) -> tuple[object, Diagnostics]:
    from nxc.check.frontend import check_file
    diags = Diagnostics(warnings=not getattr(args, "no_warn", False))
    program = check_file(path, args.include, diags, soft_f32=getattr(args, "soft_f32", False))
    _print_warnings(diags, args.no_warn)
    return program, diags


def _report_compile_error(exc: CompileError) -> int:
    for d in exc.diagnostics:
        print(d.render(), file=sys.stderr)
    n = len(exc.diagnostics)
    print(f"nxc: {n} error{'s' if n != 1 else ''}", file=sys.stderr)
    return EXIT_COMPILE_ERROR


def _modules_of(paths: list[str]) -> list[str]:
    """Folders stand for every .nx module under them (as for `nxc test`)."""
    from nxc.gates.collect import find_modules
    return [p for arg in paths for p in (find_modules([arg]) if os.path.isdir(arg) else [arg])]


def _check_summarised(path: str, args) -> None:
    """`nxc check` of one module: bodies with a clean verdict for their source
    and their closure's interfaces are not checked again (nxc/check/summary.py)."""
    from nxc.check.summary import check_incremental
    diags = Diagnostics(warnings=not args.no_warn)
    checked = check_incremental(path, args.include, diags)
    for text in checked.warnings:
        print(text, file=sys.stderr)
    if os.environ.get("NXC_DEBUG_STATS"):       # docs/performance.md: what was re-checked
        import json
        print("nxc: stats: " + json.dumps({"checked": checked.checked, "reused": checked.reused}), file=sys.stderr)


def cmd_check(args) -> int:
    status = EXIT_OK
    for path in _modules_of(args.files):
        try:
            _check_summarised(path, args)
        except CompileError as exc:
            status = _report_compile_error(exc)
    return status


def cmd_emit(args) -> int:
    if args.command == "emit-c":
        many = len(args.files) > 1 or os.path.isdir(args.files[0])
        if many and not args.object:
            raise ToolError("several modules need --object (the whole program is one file per gate)")
        if many or (args.object and args.output and os.path.isdir(args.output)):
            return _emit_objects(_modules_of(args.files), args)
        args.file = args.files[0]
    try:
        if args.command == "emit-c" and args.object:
            text = _object_c(args.file, args)
        else:
            text = _emitted_text(args)
    except CompileError as exc:
        return _report_compile_error(exc)
    if args.output:
        _write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _emitted_text(args) -> str:
    """The whole program as one file: `nxc emit-c` (C) or `nxc emit-py` (Python)."""
    program, _ = _front(args.file, args)
    from nxc.backend.registry import backend_for
    if args.command == "emit-c":
        return backend_for("c", checked=not args.unchecked).emit(program).text
    return backend_for("py").emit(program).text


def module_object_c(path: str, include: list[str], *, checked: bool = True,
                    soft_f32: bool = False) -> tuple[str, list[str]]:
    """(the C of the module at `path`'s own object, the warnings of its check):
    `nxc emit-c --object`, and bench/tree_bench.py's yardstick. The module is
    checked as a gate's worker checks it: the declarations of its closure,
    its own bodies and those its C copies in (check_gate, then what the C
    backend asks for: nxc/gates/execute.py, final_program), not every body
    of its closure as a whole check does (0.24 s a module of the 800-module
    tree). The C is the same (tests/test_emit_object.py). Raises CompileError."""
    from nxc.backend.registry import backend_for
    from nxc.check.frontend import check_file
    from nxc.check.summary import check_gate
    from nxc.gates.execute import Options, final_program
    backend = backend_for("c", checked=checked)
    real = os.path.realpath(path)
    found = check_gate(path, list(include), Diagnostics(), soft_f32=soft_f32)
    if found is None:
        # The worker's check cannot stand for the whole one here (a body
        # uses a name from outside its closure; nesting too deep for it):
        # the whole one, with diagnostics of its own (check_gate's stopped
        # half way).
        diags = Diagnostics()
        program = check_file(path, list(include), diags, soft_f32=soft_f32)
        return backend.object_text(backend.emit(program), real), [d.render() for d in diags.warnings]
    options = Options(include=list(include), soft_f32=soft_f32, checked=checked)
    _, emitted = final_program(found, options, emit={real})
    return backend.object_text(emitted, real), list(found.warnings)


def _object_c(path: str, args) -> str:
    """The C of `path`'s own object (`nxc emit-c --object`), its warnings printed (unless -w)."""
    text, warnings = module_object_c(path, args.include, checked=not args.unchecked, soft_f32=args.soft_f32)
    if not args.no_warn:
        for warning in warnings:
            print(warning, file=sys.stderr)
    return text


def _write_text(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise ToolError(f"cannot write '{path}': {exc.strerror or exc}") from None


def _emit_objects(paths: list[str], args) -> int:
    """`nxc emit-c --object` of several modules, in this one process (a
    process per module paid nxc's start-up, ~1 s CPU, for ~30 ms of work):
    OUT/STEM.c for each, or OUT/STEM_ID.c (names.module_c_id) when two
    modules share a stem. A module that does not compile is reported and
    skipped; the status is then 3."""
    from nxc.backend.c.names import module_c_id_of
    if not args.output:
        raise ToolError("several modules need -o FOLDER (one .c file per module)")
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise ToolError(f"'{args.output}' is not a folder (several modules: one .c file each)")
    try:
        os.makedirs(args.output, exist_ok=True)
    except OSError as exc:
        raise ToolError(f"cannot make '{args.output}': {exc.strerror or exc}") from None
    given = list({os.path.realpath(p): p for p in reversed(paths)}.items())[::-1]     # each module once
    stems = [os.path.splitext(os.path.basename(real))[0] for real, _ in given]
    status = EXIT_OK
    for (real, path), stem in zip(given, stems):
        name = stem if stems.count(stem) == 1 else module_c_id_of(real)
        try:
            text = _object_c(path, args)
        except CompileError as exc:
            status = _report_compile_error(exc)
            continue
        _write_text(os.path.join(args.output, name + ".c"), text)
    return status


def _run_folder(args) -> int:
    """`nxc run DIR`: every gate under DIR, one after another; library modules are skipped."""
    import copy
    from nxc.diagnostics import display_path
    status, ran = EXIT_OK, 0
    for path in _modules_of([args.file]):
        try:
            program, _ = _front(path, args)
        except CompileError as exc:
            _report_compile_error(exc)
            status = EXIT_FAIL              # a folder: 0 if every gate passed, else 1
            continue
        if program.entry is None:
            continue
        one = copy.copy(args)
        one.file = path
        ran += 1
        result = cmd_run(one)
        print(f"{'PASS' if result == EXIT_OK else 'FAIL'} {display_path(path)}", file=sys.stderr)
        status = status if result == EXIT_OK else EXIT_FAIL
    if ran == 0 and status == EXIT_OK:
        print(f"nxc: error: no gate under {args.file}", file=sys.stderr)
        return EXIT_USAGE
    return status


def cmd_run(args) -> int:
    """Exit statuses: protocol.RUN_* (README, docs/runner.md)."""
    if os.path.isdir(args.file):
        return _run_folder(args)
    import signal
    from nxc.gates import execute as gates_execute
    from nxc.gates import protocol as P
    from nxc.gates.run import execute
    if args.timeout <= 0:
        print("nxc: error: --timeout must be positive", file=sys.stderr)
        return P.RUN_USAGE
    if not 1 <= args.threads <= 256:
        print("nxc: error: --threads must be between 1 and 256", file=sys.stderr)
        return P.RUN_USAGE
    t0 = time.perf_counter()
    try:
        program, _ = _front(args.file, args)
    except CompileError as exc:
        _report_compile_error(exc)
        return P.RUN_COMPILE_ERROR
    t1 = time.perf_counter()
    if program.entry is None:
        print(f"nxc: error: {args.file} has no gate: declare 'func main() -> i64' to run it", file=sys.stderr)
        return P.RUN_USAGE
    options = gates_execute.Options(timeout=args.timeout, checked=not args.unchecked)
    try:
        outcomes = execute(program, args.backend, opt=args.opt, use_cache=not args.no_cache,
                           timeout=args.timeout, verbose=args.verbose, checked=options.checked,
                           threads=args.threads)
    except CompileError as exc:         # a backend's own limit (the Python backend's nesting)
        _report_compile_error(exc)
        return P.RUN_COMPILE_ERROR
    except ToolError:
        raise                           # the user's setup (no compiler...): one line, from main()
    except Exception as exc:  # noqa: BLE001 - a bug in nxc (the C compiler rejected generated code ...)
        r = gates_execute.Result(args.file, args.file, "gate", args.backend, Status.INTERNAL_ERROR)
        print(gates_execute.internal_error(r, exc, 0.0).report, file=sys.stderr)
        return P.RUN_INTERNAL
    if args.verbose:
        print(f"nxc: front end {1000 * (t1 - t0):.1f} ms", file=sys.stderr)
    first = outcomes[0]
    if len(outcomes) == 2 and (outcomes[0].status, outcomes[0].value) != (outcomes[1].status, outcomes[1].value):
        print("MISMATCH between backends: " + "; ".join(
            f"{o.backend}: {o.status} {o.value if o.value is not None else o.message}" for o in outcomes),
            file=sys.stderr)
        return P.RUN_MISMATCH
    if first.status == Status.PASS:
        if args.verbose:
            print(f"PASS {args.file}", file=sys.stderr)
        return P.RUN_PASS
    r = gates_execute.Result(args.file, args.file, "gate", first.backend, first.status)
    gates_execute.fill_result(first, program, options, r)
    print(r.report or f"{r.status}: {r.message}", file=sys.stderr)
    if first.status == Status.FAIL:
        return P.RUN_FAIL
    if first.status == Status.RUNTIME_ERROR:
        return P.RUN_RUNTIME_ERROR
    if first.status == Status.TIMEOUT:
        return P.RUN_TIMEOUT
    if first.status == Status.CRASH and first.message.startswith("SIG"):
        try:
            return P.RUN_SIGNAL_BASE + signal.Signals[first.message].value
        except KeyError:
            pass
    return P.RUN_INTERNAL


def cmd_cache(args) -> int:
    from nxc.paths import CACHE_PARTS, cache_clear, cache_info
    if args.action == "info":
        info = cache_info()
        print(f"cache: {info['path']}")
        for name, (files, size) in info["parts"].items():
            print(f"  {name + '/':9} {files:6} files {size / 1e6:8.1f} MB   {CACHE_PARTS[name]}")
    else:
        info = cache_clear()
        files = sum(n for n, _ in info["parts"].values())
        print(f"removed {files} file{'s' if files != 1 else ''} from {info['path']}")
    return EXIT_OK


COMMANDS = {"check": cmd_check, "run": cmd_run, "emit-c": cmd_emit, "emit-py": cmd_emit, "cache": cmd_cache}
from nxc.tools.commands import TOOL_COMMANDS  # noqa: E402 - port, fmt, info: registered in build_parser
COMMANDS.update(TOOL_COMMANDS)


def cmd_lsp(args) -> int:
    from nxc.tools.lsp import serve
    return serve(args.include)


def cmd_doc(args) -> int:
    from nxc.tools.doc import main as doc_main
    return doc_main(args)


COMMANDS["lsp"] = cmd_lsp
COMMANDS["doc"] = cmd_doc


# The positional arguments that name files or folders, per command ('-' is stdin).
_PATH_ARGS = {"check": "files", "run": "file", "emit-c": "files", "emit-py": "file", "info": "module",
              "fmt": "paths", "port": "pages", "doc": "paths", "test": "paths"}


def _missing_path(args) -> str | None:
    """The first path argument that does not exist: a usage mistake (2) for
    every command alike, before any command reads it."""
    names = getattr(args, _PATH_ARGS.get(args.command, ""), None)
    for name in [names] if isinstance(names, str) else names or []:
        if name != "-" and not os.path.exists(name):
            return name
    return None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from nxc.cache import one_run
    with one_run():                     # the cache-full warning: once per run, not per worker
        return _dispatch(parser, args)


def _dispatch(parser, args) -> int:
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    missing = _missing_path(args)
    if missing is not None:
        print(f"nxc: error: no such file or folder: '{missing}'", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "march", None) is not None:
        # the target travels inside the build configuration string (see build_config)
        from nxc.backend.c.build import build_config
        args.opt = build_config(args.opt, args.march)
    if args.command in ("test", "run") and (args.remote_cache or os.environ.get("NXC_REMOTE_CACHE")):
        from nxc.remote.setup import SetupError, configure_from_args
        try:
            configure_from_args(args)
        except SetupError as exc:
            print(f"nxc: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.command == "test":
        from nxc.gates.command import main as test_main
        return test_main(args)
    try:
        return COMMANDS[args.command](args)
    except ToolError as exc:            # the setup: no C compiler, an output that cannot be written
        print(f"nxc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("nxc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
