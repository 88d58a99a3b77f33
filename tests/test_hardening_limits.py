"""issue 15 (2): deep but valid programs work; past the documented limit a
located `nested too deeply` error, never a RecursionError or a crash.

The depths are ten times the ones that raised before (97 nested ifs, 162
nested blocks or calls, 242 chained casts, 124 chained consts, 497 chained
type aliases, 991 embedded structs, ~1,000 chained imports).
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from nxc.check.frontend import check_file
from nxc.diagnostics import CompileError, Diagnostics
from nxc.gates.run import execute
from nxc.syntax.depth import MAX_DEPTH

from conftest import compile_errors


def nested_ifs(n):
    return "func main() -> i64 {\n" + "if true {\n" * n + "return 0\n" + "}\n" * n + "return 1\n}\n"


def nested_whiles(n):
    return "func main() -> i64 {\n" + "while true {\n" * n + "return 0\n" + "}\n" * n + "return 1\n}\n"


def nested_calls(n):
    return "func f(x: i64) -> i64 { return x }\nfunc main() -> i64 {\n    return " + "f(" * n + "0" + ")" * n + "\n}\n"


def chained_casts(n):
    return "func main() -> i64 {\n    return 0" + " as i64" * n + "\n}\n"


def chained_consts(n):
    lines = ["const C0: i64 = 0"] + [f"const C{i}: i64 = C{i - 1} + 1" for i in range(1, n)]
    return "\n".join(lines) + f"\nfunc main() -> i64 {{\n    return C{n - 1} - {n - 1}\n}}\n"


def chained_aliases(n):
    lines = ["type T0 = i64"] + [f"type T{i} = T{i - 1}" for i in range(1, n)]
    return "\n".join(lines) + f"\nfunc main() -> i64 {{\n    let x: T{n - 1} = 0\n    return x\n}}\n"


def embedded_structs(n):
    lines = ["struct S0 { a: i64 }"] + [f"struct S{i} {{ s: S{i - 1} }}" for i in range(1, n)]
    return "\n".join(lines) + f"\nfunc main() -> i64 {{\n    return sizeof(S{n - 1}) - 8\n}}\n"


def long_sum(n):
    return "func main() -> i64 {\n    var x: i64 = 0\n    let y: i64 = " + " + ".join(["x"] * n) + "\n    return y\n}\n"


CASES = [(nested_ifs, 970), (nested_whiles, 970), (nested_calls, 1620), (chained_casts, 2420),
         (chained_consts, 1240), (chained_aliases, 4970), (embedded_structs, 9910), (long_sum, 2010)]


@pytest.mark.parametrize("make, n", CASES, ids=[m.__name__ for m, _ in CASES])
def test_ten_times_deeper_checks_and_runs_on_c(tmp_path, make, n):
    path = tmp_path / "deep.nx"
    path.write_text(make(n))
    program = check_file(str(path), diags=Diagnostics())
    [outcome] = execute(program, "c", opt="0", timeout=120)
    assert outcome.status == "PASS", (outcome.status, outcome.message)


@pytest.mark.parametrize("make, n", [(nested_ifs, 150), (nested_whiles, 25), (long_sum, 400), (nested_calls, 300)],
                         ids=["ifs", "whiles", "sum", "calls"])
def test_python_backend_limit_is_a_located_error(tmp_path, make, n):
    # Before: invalid Python (a SyntaxError traceback) from 201-term
    # expressions, 21 nested whiles, 99 nested ifs. CPython's parser limits
    # stay; past them the error names the .nx line, and C still runs it.
    path = tmp_path / "deep.nx"
    path.write_text(make(n))
    proc = subprocess.run([sys.executable, "-m", "nxc", "run", "-w", "--backend", "py", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr    # 3: a compile error
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"{path}:") and "nested too deeply for the Python backend" in first
    assert subprocess.run([sys.executable, "-m", "nxc", "run", "-w", str(path)]).returncode == 0


def test_deep_parse_survives_the_parse_cache(tmp_path):
    # Before: pickling the parse cache raised RecursionError at 97 nested ifs.
    from nxc.syntax import loader
    path = tmp_path / "deep.nx"
    path.write_text(nested_ifs(3000))
    check_file(str(path), diags=Diagnostics())
    loader._PARSED.clear()
    program = check_file(str(path), diags=Diagnostics())      # from the disk copy
    assert program.entry is not None


def test_parentheses_do_not_nest_the_tree(tmp_path):
    path = tmp_path / "deep.nx"
    path.write_text("func main() -> i64 {\n    return " + "(" * 50_000 + "0" + ")" * 50_000 + "\n}\n")
    assert check_file(str(path), diags=Diagnostics()).entry is not None


@pytest.mark.parametrize("text", [
    "func main() -> i64 {\n    return 0" + " as i64" * (MAX_DEPTH + 5) + "\n}\n",
    nested_ifs(MAX_DEPTH // 2 + 10),
    long_sum(MAX_DEPTH + 10),
], ids=["casts", "ifs", "sum"])
def test_past_the_limit_a_located_error(tmp_path, text):
    path = tmp_path / "deep.nx"
    path.write_text(text)
    [err] = compile_errors(str(path))
    assert "nested too deeply" in err.message and err.pos is not None and err.pos.line >= 2


def test_a_chain_of_a_thousand_imports(tmp_path):
    n = 1000
    for i in range(n):
        nxt = f'import "m{i + 1}.nx"\n' if i + 1 < n else ""
        (tmp_path / f"m{i}.nx").write_text(f"{nxt}func f{i}() -> i64 {{ return {i} }}\n")
    root = tmp_path / "root.nx"
    root.write_text(f'import "m0.nx"\nfunc main() -> i64 {{\n    if f{n - 1}() != {n - 1} {{ return 1 }}\n'
                    "    return 0\n}\n")
    program = check_file(str(root), diags=Diagnostics())
    assert len(program.graph.modules) == n + 1
    assert program.graph.modules[0].source.path.endswith(f"m{n - 1}.nx")    # dependencies first


def test_an_error_deep_in_an_import_chain_names_the_chain(tmp_path):
    for i in range(300):
        nxt = f'import "m{i + 1}.nx"\n' if i + 1 < 300 else "let oops\n"
        (tmp_path / f"m{i}.nx").write_text(nxt)
    [err] = compile_errors(str(tmp_path / "m0.nx"))
    assert err.pos.file.path.endswith("m299.nx") and len(err.notes) == 299


@pytest.mark.parametrize("digits", [25, 4301, 5000, 100_000])
def test_a_huge_literal_is_a_located_error(tmp_path, digits):
    # Before: ValueError (Python refuses int() of more than 4,300 digits).
    path = tmp_path / "t.nx"
    path.write_text("func main() -> i64 {\n    let x: i64 = " + "9" * digits + "\n    return 0\n}\n")
    [err] = compile_errors(str(path))
    assert "does not fit in 64 bits" in err.message and (err.pos.line, err.pos.col) == (2, 18)
    assert len(err.message) < 200
    hexpath = tmp_path / "h.nx"
    hexpath.write_text("func main() -> i64 {\n    let x: i64 = 0x" + "f" * digits + "\n    return 0\n}\n")
    [err] = compile_errors(str(hexpath))
    assert "does not fit in 64 bits" in err.message


def test_leading_zeros_do_not_make_a_literal_too_big(tmp_path):
    path = tmp_path / "t.nx"
    path.write_text("func main() -> i64 {\n    return " + "0" * 5000 + "7 - 7\n}\n")
    assert check_file(str(path), diags=Diagnostics()).entry is not None


def test_compile_error_is_still_raised_not_swallowed(tmp_path):
    path = tmp_path / "t.nx"
    path.write_text("func main() -> i64 {\n    return nope\n}\n")
    with pytest.raises(CompileError):
        check_file(str(path), diags=Diagnostics())
