"""The command-line side of the porting tools: `nxc port`, `nxc fmt`, `nxc info`.

nxc/cli.py registers these with `add_tool_parsers` and dispatches through
TOOL_COMMANDS; the tools themselves (port, stubs, fmt, info) know nothing of
argparse. Imports of the tools are deferred to the command that needs them,
so `nxc --help` stays quick.
"""
from __future__ import annotations

import os
import sys

from nxc.gates.protocol import EXIT_COMPILE_ERROR, EXIT_FAIL, EXIT_OK, EXIT_USAGE


def add_tool_parsers(sub, add_include) -> None:
    p = sub.add_parser("port", help="restore modules from Nishi module pages, report or stub missing imports",
                       description="Restore each module of each PAGE file (several pages may be pasted back to "
                                   "back; '-' reads stdin) into DIR, by the page rule (docs/porting.md). Then "
                                   "check each restored module; for every import that cannot be found, list the "
                                   "names the module uses from it with the signatures their uses imply. A PAGE that "
                                   "is already a .nx module is only checked (with --stubs: stubbed).")
    p.add_argument("pages", nargs="+", metavar="PAGE",
                   help="page files ('-': stdin), or .nx modules to check (and stub) only")
    p.add_argument("-o", "--output", default=".", metavar="DIR", help="where to write the modules (default: .)")
    p.add_argument("--stubs", action="store_true",
                   help="write a stub module for each missing import (next to the restored module)")
    p.add_argument("--check", action="store_true",
                   help="write nothing: exit 1 unless each module in DIR is exactly what its page restores to")
    p.add_argument("--force", action="store_true", help="overwrite existing files that differ")
    add_include(p)

    f = sub.add_parser("fmt", help="format modules in the house layout (in place, or --check / --diff)",
                       description="Format each .nx PATH (folders: every .nx file under them; '-': stdin to "
                                   "stdout). Only blanks between tokens, indentation and blank-line runs change; "
                                   "line breaks and comments stay. A file that does not parse is left alone.")
    f.add_argument("paths", nargs="+", metavar="PATH", help=".nx files or folders (searched recursively); '-': stdin")
    f.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is not formatted")
    f.add_argument("--diff", action="store_true", help="write nothing; print what would change as a diff")

    i = sub.add_parser("info", help="what a module defines: header, imports, signatures, layouts, gate checks",
                       description="Describe MODULE: header metadata, size, imports, functions with signatures "
                                   "and doc comments, constants, struct layouts, and the gate's checks. With "
                                   "--where NAME: which modules on the search path (MODULE's folder, or the "
                                   "current one; -I, NXPATH, the bundled nx_src/) define NAME, and the import "
                                   "that brings each in.")
    i.add_argument("module", metavar="MODULE", nargs="?", help="the .nx module to describe (with --where: where to start the search)")
    i.add_argument("--where", metavar="NAME",
                   help="list the modules on the search path that define NAME (function, struct, type, constant, "
                        "global), with file:line; exit 1 if none does")
    i.add_argument("--json", action="store_true", help="print one JSON object")
    add_include(i)


def find_nx_files(paths: list[str]) -> list[str]:
    """The .nx files named or under the folders named, sorted, each once;
    hidden folders and virtual environments are skipped. Raises FileNotFoundError."""
    out, seen = [], set()
    for p in paths:
        if os.path.isdir(p):
            for folder, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__"
                                 and not os.path.isfile(os.path.join(folder, d, "pyvenv.cfg")))
                for name in sorted(files):
                    if name.endswith(".nx"):
                        candidates = os.path.join(folder, name)
                        if os.path.realpath(candidates) not in seen:
                            seen.add(os.path.realpath(candidates))
                            out.append(candidates)
        elif os.path.isfile(p):
            if os.path.realpath(p) not in seen:
                seen.add(os.path.realpath(p))
                out.append(p)
        else:
            raise FileNotFoundError(p)
    return out


def _render_errors(diagnostics) -> None:
    for d in diagnostics:
        print(d.render(), file=sys.stderr)


# ---------------------------------------------------------------- port
def _is_page(path: str) -> bool:
    from nxc.tools.port import is_page_header
    try:
        with open(path, "rb") as f:
            first = f.readline().decode("utf-8", "replace")
    except OSError:
        return True             # let read_pages report it
    return is_page_header(first)


def cmd_port(args) -> int:
    from nxc.diagnostics import display_path
    from nxc.tools.port import PageError, comment_after_code_lines, read_pages, restore, write_module
    status = EXIT_OK
    restored = []
    for page_file in args.pages:
        if page_file.endswith(".nx") and not args.check and not _is_page(page_file):
            # already a module (restored earlier, or written by hand): only
            # its imports are looked at, so --stubs serves any module
            print(f"{display_path(page_file)}: a module, not a page: nothing to restore")
            restored.append(page_file)
            continue
        pages, errors = read_pages(page_file, sys.stdin)
        # each page's outcome in input order: a broken page does not hide the ones after it
        for page in sorted(pages + errors, key=lambda x: x.line if isinstance(x, PageError) else x.first_line):
            if isinstance(page, PageError):
                print(str(page) + "; nothing written for that module", file=sys.stderr)
                status = EXIT_FAIL
                continue
            for warning in page.warnings:
                print(warning, file=sys.stderr)
            size = len(restore(page).encode("utf-8"))
            size_line = f"{page.name}: {len(page.body)} lines, {size} B restored (page: {page.bytes} B)"
            aligned = comment_after_code_lines(page) if size < page.bytes else []
            # after the size line, which it explains
            aligned_note = "" if not aligned else (
                f"\n  the page collapsed runs of spaces inside lines, which are not restored; comments after "
                f"code, likely aligned in the original, are on line{'s' if len(aligned) != 1 else ''} "
                + ", ".join(map(str, aligned)))
            path = os.path.join(args.output, page.name)
            if args.check:
                try:
                    with open(path, encoding="utf-8", newline="") as fh:
                        same = fh.read() == restore(page)
                except OSError:
                    print(f"{size_line}: {display_path(path)} is missing")
                    status = EXIT_FAIL
                    continue
                print(f"{size_line}: {display_path(path)} {'matches' if same else 'DIFFERS'}")
                status = status if same else EXIT_FAIL
                continue
            result = write_module(page, args.output, args.force)
            if result.status == "exists":
                print(f"{page.origin}:{page.first_line}: error: {display_path(path)} exists and differs from "
                      f"what {page.name}'s page restores to; not overwritten (--force to overwrite)",
                      file=sys.stderr)
                status = EXIT_FAIL
                continue
            note = " (unchanged)" if result.status == "unchanged" else ""
            print(f"{size_line} -> {display_path(path)}{note}{aligned_note}")
            restored.append(path)
    if args.check:
        return status
    for path in restored:
        status = max(status, _port_check(path, args))
    return status


def _port_check(path: str, args) -> int:
    """Check one restored module: report (and with --stubs, write) what its
    missing imports must provide, then run the checker on it."""
    from nxc.check.frontend import check_file
    from nxc.diagnostics import CompileError, Diagnostics, display_path
    from nxc.tools.stubs import describe, infer_stubs, write_stubs
    try:
        report = infer_stubs(path, args.include)
    except CompileError as exc:
        _render_errors(exc.diagnostics)
        return EXIT_COMPILE_ERROR
    if report.missing:
        print(describe(report))
        if not args.stubs:
            print(f"{display_path(path)}: {len(report.missing)} missing module"
                  f"{'s' if len(report.missing) != 1 else ''}; --stubs writes stand-ins so it can be checked")
            return EXIT_FAIL
        written = write_stubs(report, os.path.dirname(path), args.force)
        for stub_path, how in written:
            if how == "exists":
                print(f"nxc: error: {display_path(stub_path)} exists and is not this stub; not overwritten "
                      "(--force to overwrite)", file=sys.stderr)
                return EXIT_FAIL
            print(f"wrote stub {display_path(stub_path)}")
        for stub_path, _ in written:
            # each stub on its own, as `nxc check` and `nxc test` will take it
            try:
                check_file(stub_path, args.include, Diagnostics(warnings=False))
            except CompileError as exc:
                _render_errors(exc.diagnostics)
                print(f"nxc: error: the stub {display_path(stub_path)} does not check on its own (this is a bug "
                      "in nxc port; edit the stub by hand)", file=sys.stderr)
                return EXIT_FAIL
    diags = Diagnostics()
    try:
        check_file(path, args.include, diags)
    except CompileError as exc:
        _render_errors(exc.diagnostics)
        return EXIT_COMPILE_ERROR
    for w in diags.warnings:
        print(w.render(), file=sys.stderr)
    print(f"{display_path(path)}: checks" + (" (against stubs)" if report.missing else ""))
    return EXIT_OK


# ---------------------------------------------------------------- fmt
def cmd_fmt(args) -> int:
    import difflib
    from nxc.diagnostics import CompileError, Diagnostics, SourceFile, display_path
    from nxc.syntax.loader import read_source
    from nxc.tools.fmt import format_source, mixed_line_ends
    if "-" in args.paths:
        if len(args.paths) != 1:
            print("nxc: error: '-' (stdin) cannot be combined with other paths", file=sys.stderr)
            return EXIT_USAGE
        text = sys.stdin.read()
        diags = Diagnostics()
        try:
            out = format_source(SourceFile("<stdin>", text), diags)
        except CompileError as exc:
            _render_errors(exc.diagnostics)
            sys.stdout.write(text)          # unchanged, so a pipe loses nothing
            return EXIT_COMPILE_ERROR
        if args.check:
            return EXIT_OK if out == text else EXIT_FAIL
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), out.splitlines(True),
                                                       "<stdin>", "<stdin> (formatted)"))
        else:
            sys.stdout.write(out)
        return EXIT_OK
    try:
        files = find_nx_files(args.paths)
    except FileNotFoundError as exc:
        print(f"nxc: error: no such file or folder: '{exc.args[0]}'", file=sys.stderr)
        return EXIT_USAGE
    status, changed = EXIT_OK, 0
    for path in files:
        diags = Diagnostics()
        src = read_source(path, diags)
        if src is None:
            _render_errors(diags.errors)
            status = EXIT_FAIL
            continue
        try:
            out = format_source(src, diags)
        except CompileError as exc:
            _render_errors(exc.diagnostics)
            status = EXIT_COMPILE_ERROR
            continue
        mixed = mixed_line_ends(path)
        if out == src.text and mixed is None:
            continue
        changed += 1
        shown = display_path(path)
        if args.diff:
            sys.stdout.writelines(difflib.unified_diff(src.text.splitlines(True), out.splitlines(True),
                                                       shown, shown + " (formatted)"))
        if args.check or args.diff:
            if args.check:
                print(f"{shown}: not formatted" + (f" (mixed line ends: {mixed})" if mixed else ""), file=sys.stderr)
                status = EXIT_FAIL
            continue
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(out)
        print(f"formatted {shown}")
    if args.check and status == EXIT_OK:
        print(f"{len(files)} file{'s' if len(files) != 1 else ''} formatted", file=sys.stderr)
    elif args.check:
        print(f"{changed} of {len(files)} files not formatted (run 'nxc fmt PATH' to format them)",
              file=sys.stderr)
    return status


# ---------------------------------------------------------------- info
def cmd_info(args) -> int:
    from nxc.diagnostics import CompileError
    from nxc.tools.info import module_info, render, render_json
    if args.where is not None:
        return _info_where(args)
    if args.module is None:
        print("nxc: error: nxc info needs a MODULE to describe, or --where NAME", file=sys.stderr)
        return EXIT_USAGE
    try:
        info = module_info(args.module, args.include)
    except CompileError as exc:
        _render_errors(exc.diagnostics)
        return EXIT_COMPILE_ERROR
    print(render_json(info) if args.json else render(info))
    return EXIT_OK


def _info_where(args) -> int:
    """`nxc info --where NAME [MODULE]`: the definitions of NAME on the search
    path of a module in MODULE's folder (default: the current folder)."""
    import json
    from nxc.check.defined_where import definitions_of, search_folders
    from nxc.diagnostics import display_path
    folder = os.path.dirname(os.path.abspath(args.module)) if args.module else os.getcwd()
    found = definitions_of(args.where, folder, args.include)
    if args.json:
        print(json.dumps({"name": args.where, "definitions": [
            {"module": d.import_name, "path": display_path(d.path), "line": d.line, "column": d.col, "kind": d.kind,
             "declaration": d.detail, "import": f'import "{d.import_name}"'} for d in found]}, indent=2))
    elif found:
        for d in found:
            print(f"{d.where}: {d.detail}   (import \"{d.import_name}\")")
    else:
        looked = "".join(f"\n  {display_path(f)}" for f in search_folders(folder, args.include))
        print(f"nxc: error: no module on the search path defines '{args.where}'; looked in:{looked}", file=sys.stderr)
    return EXIT_OK if found else EXIT_FAIL


TOOL_COMMANDS = {"port": cmd_port, "fmt": cmd_fmt, "info": cmd_info}
