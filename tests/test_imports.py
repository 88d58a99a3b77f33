"""The import structure of nxc/: no cycles, no reaching into other modules' private names.

Read from the source with `ast` (nothing is imported), so a function-level
import counts like a top-level one: a cycle hidden inside a function is
still a cycle between the two modules.
"""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "nxc")


def nxc_modules() -> dict[str, str]:
    """Dotted module name -> file, for every .py file of nxc/."""
    found = {}
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                found[".".join(rel)] = os.path.join(folder, name)
    return found


MODULES = nxc_modules()


def imports_of(name: str, path: str):
    """(imported nxc module, names imported from it, node) for each import in the file.

    `from nxc.a import b` is an import of module nxc.a.b when that is a module,
    else of nxc.a (names: b)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    yield alias.name, [], node
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            if not base.startswith("nxc"):
                continue
            names = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:
                    yield sub, [], node
                else:
                    names.append(alias.name)
            if names and base in MODULES:
                yield base, names, node


def graph() -> dict[str, set[str]]:
    edges = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for target, _, _ in imports_of(name, path):
            if target != name:
                edges[name].add(target)
    return edges


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_walk_sees_the_package():
    # Guards the two tests below against passing on an empty or misread tree.
    assert {"nxc.cli", "nxc.api", "nxc.gates.run", "nxc.backend.base", "nxc.syntax.parse"} <= set(MODULES)
    edges = graph()
    assert "nxc.backend.registry" in edges["nxc.gates.run"]
    assert "nxc.backend.c.backend" in edges["nxc.backend.registry"]   # a function-level import


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_in_nxc():
    cycles = find_cycles(graph())
    assert not cycles, "import cycles (function-level imports included): " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_no_module_imports_another_modules_private_names():
    bad = []
    for name, path in MODULES.items():
        bound = {}          # local name -> nxc module it refers to
        for target, names, node in imports_of(name, path):
            if target == name:
                continue
            for n in names:
                if n.startswith("_") and not (n.startswith("__") and n.endswith("__")):
                    bad.append(f"{path}:{node.lineno}: from {target} import {n}")
            for alias in node.names:
                if isinstance(node, ast.ImportFrom) and f"{target}" .endswith("." + alias.name):
                    bound[alias.asname or alias.name] = target
                elif isinstance(node, ast.Import) and alias.name == target and alias.asname:
                    bound[alias.asname] = target
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in bound and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.append(f"{path}:{node.lineno}: {node.value.id}.{node.attr} ({bound[node.value.id]})")
    assert not bad, "private names used across modules:\n" + "\n".join(bad)
