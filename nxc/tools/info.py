"""`nxc info`: what a module is and what it defines, from the checked program.

Header metadata (the `key: value` lines of the leading comment), size,
imports (direct and transitive), functions with their signatures and the
doc comment above each, constants with their values, structs with their C
layout, and the gate's checks: each `return` of `main` with its value, its
line and the `if` that guards it.
"""
from __future__ import annotations

import json
import os

from nxc.check.frontend import check_file
from nxc.diagnostics import Diagnostics, display_path
from nxc.syntax.scan import GUESSED_ORDER
from nxc.syntax.printer import signature
from nxc.syntax import ast

HEADER_KEYS = ("genealogy_id", "lineage_id", "license_tier")


def doc_comment(lines: list[str], line: int) -> str:
    """The `//` lines right above 1-based `line`, without the slashes."""
    out = []
    i = line - 2
    while i >= 0 and lines[i].lstrip().startswith("//"):
        out.append(lines[i].lstrip()[2:].strip())
        i -= 1
    return "\n".join(reversed(out)).strip()


def _guard_text(src_lines: list[str], guard: ast.Expr | None, ret: ast.Return) -> str:
    """The source of the `if` that leads to a gate return (its line, up to `{`)."""
    if guard is None:
        return ""
    line = src_lines[ast.start_pos(guard).line - 1].strip()
    if line.startswith("if ") and " {" in line:
        return line[: line.index(" {")]
    return line


def module_info(path: str, include: list[str] | None = None) -> dict:
    """Everything `nxc info` shows, as plain data. Raises CompileError."""
    diags = Diagnostics(warnings=False)
    program = check_file(path, include, diags)
    root = program.graph.root
    text = root.source.text
    lines = text.splitlines()
    transitive = [{"name": os.path.basename(m.source.path), "path": display_path(m.source.path)}
                  for m in program.graph.modules if m is not root]
    info: dict = {
        "module": display_path(root.source.path),
        "header": {k: root.header.get(k) for k in HEADER_KEYS},
        "lines": len(lines),
        "bytes": len(text.encode("utf-8")),
        "imports": [imp.path for imp in root.imports],
        "transitive_imports": transitive,
        "functions": [],
        "consts": [],
        "structs": [],
        "gate": None,
    }
    for item in root.items:
        if isinstance(item, ast.FuncDecl) and item.name != "main":
            info["functions"].append({"name": item.name, "signature": signature(item), "line": item.pos.line,
                                      "doc": doc_comment(lines, item.pos.line)})
    for sym in program.consts:
        if getattr(sym, "module", None) is root:
            info["consts"].append({"name": sym.name, "type": str(sym.type), "value": sym.value,
                                   "line": sym.pos.line})
    for st in program.structs:
        if st.pos is not None and st.pos.file is root.source:
            info["structs"].append({"name": st.name, "size": st.size, "align": st.align, "line": st.pos.line,
                                    # a stub's struct: fields in the order of their first use (nxc/tools/stubs.py)
                                    "guessed_order": st.pos.line >= 2 and
                                    lines[st.pos.line - 2].startswith(GUESSED_ORDER),
                                    "fields": [{"name": f.name, "type": str(f.type), "offset": f.offset}
                                               for f in st.fields]})
    if program.entry is not None:
        checks = []
        for gr in program.gate_returns:
            value = gr.node.value
            const = program.info.const(value) if value is not None else None
            if const == 0:
                continue            # the passing return
            checks.append({"value": const, "line": gr.node.pos.line,
                           "guard": _guard_text(lines, gr.guard, gr.node)})
        info["gate"] = {"line": program.entry.decl.pos.line, "checks": checks}
    return info


def render(info: dict) -> str:
    out = [f"{info['module']}: {info['lines']} lines, {info['bytes']} B"]
    for k, v in info["header"].items():
        out.append(f"  {k}: {v if v is not None else '(none)'}")
    out.append("imports: " + (", ".join(info["imports"]) or "(none)"))
    if info["transitive_imports"]:
        out.append("  all modules it loads: " + ", ".join(m["name"] for m in info["transitive_imports"]))
    out.append(f"functions ({len(info['functions'])}):")
    for f in info["functions"]:
        out.append(f"  {f['signature']}   [line {f['line']}]")
        for doc_line in f["doc"].splitlines():
            out.append(f"      // {doc_line}" if doc_line else "      //")
    out.append(f"consts ({len(info['consts'])}):")
    for c in info["consts"]:
        out.append(f"  {c['name']}: {c['type']} = {c['value']}" + (f" (0x{c['value']:X})" if c['value'] and c['value'] > 9 else ""))
    out.append(f"structs ({len(info['structs'])}):")
    for s in info["structs"]:
        out.append(f"  struct {s['name']}: size {s['size']}, align {s['align']}"
                   + (" (a stub's: field order guessed, not the real layout)" if s["guessed_order"] else ""))
        for f in s["fields"]:
            out.append(f"    +{f['offset']:<4} {f['name']}: {f['type']}")
    gate = info["gate"]
    if gate is None:
        out.append("gate: none (a library module)")
    else:
        out.append(f"gate: func main at line {gate['line']}, {len(gate['checks'])} checks")
        for c in gate["checks"]:
            where = f": {c['guard']}" if c["guard"] else ""
            out.append(f"  {c['value']} at line {c['line']}{where}")
    return "\n".join(out)


def render_json(info: dict) -> str:
    return json.dumps(info, indent=2)

