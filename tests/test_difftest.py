"""Generated programs (bench/gen_program.py) and the differential test
(bench/difftest.py): a bounded run here; `bash bench/difftest_long.sh` is the
long one (20,000 programs)."""
from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from nxc.diagnostics import CompileError, Diagnostics
from nxc.check.frontend import check_file

BENCH = os.path.join(os.path.dirname(__file__), "..", "bench")


def _load(name):
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


gen_program = _load("gen_program")
difftest = _load("difftest")
reduce_program = _load("reduce_program")


def test_generation_is_deterministic_and_varied():
    assert gen_program.generate(17) == gen_program.generate(17)
    texts = [gen_program.generate(s) for s in range(1, 41)]
    assert len(set(texts)) == 40
    joined = "\n".join(texts)
    for feature in ("struct ", "while ", "} else", "sys_mmap", " as *u8)", ".link", "nx_f32_", " << ", " >> ",
                    " / ", " % ", "break", "continue", "p_bump", "gfold", " as i8", " as u64", "let ", "var ",
                    "&&", "||", "-= ", "<<= ", "return "):
        assert feature in joined, feature


def test_200_generated_programs_check_cleanly(tmp_path):
    """Grammar-generated programs that must parse and check with no error and no warning."""
    path = str(tmp_path / "gen.nx")
    for seed in range(1000, 1200):
        with open(path, "w", encoding="utf-8") as f:
            f.write(gen_program.generate(seed))
        diags = Diagnostics()
        try:
            program = check_file(path, diags=diags)
        except CompileError as exc:
            pytest.fail(f"seed {seed}: {exc.diagnostics[0].render()}")
        assert not diags.warnings, f"seed {seed}: {diags.warnings[0].render()}"
        assert program.entry is not None


def test_a_batch_of_generated_programs_agrees_on_every_backend(tmp_path):
    seeds = list(range(1, 21))
    results, warnings = difftest.run_batch(seeds, difftest.CONFIGS, str(tmp_path), timeout=120)
    assert not warnings
    for s in seeds:
        assert difftest.verdict(results[s]) == "same", (s, results[s])
        assert set(results[s]) == {"c-O0", "c-O2", "py"}


def test_soft_f32_agrees_with_the_runtime_on_generated_programs(tmp_path):
    seeds = list(range(500, 508))
    configs = [c for c in difftest.CONFIGS if c[0] == "py"] + difftest.SOFT_CONFIGS
    results, _ = difftest.run_batch(seeds, configs, str(tmp_path), timeout=120)
    for s in seeds:
        assert difftest.verdict(results[s]) == "same", (s, results[s])


def test_verdicts():
    ok = (difftest.OK, 5)
    assert difftest.verdict({"a": ok, "b": ok}) == "same"
    assert difftest.verdict({"a": ok, "b": (difftest.OK, 6)}) == "differ"
    assert difftest.verdict({"a": ok, "b": "crash: SIGSEGV"}) == "differ"
    fold = (difftest.OK, gen_program.FOLD_SENTINEL + 3)
    assert difftest.verdict({"a": fold, "b": fold}) == "fold"


def test_the_driver_runs_and_counts(tmp_path, capsys):
    out = tmp_path / "counts.json"
    assert difftest.main(["--count", "6", "--seed", "3", "--batch", "6", "--save", str(tmp_path / "f"),
                          "--json", str(out), "-q"]) == 0
    assert "tried 6 programs" in capsys.readouterr().out
    assert out.exists()


def test_reducer_passes_shrink_while_the_property_holds(tmp_path):
    """The reducer's passes with a cheap oracle: keep the program checking cleanly and keep
    one marked statement; everything else should go."""
    text = gen_program.generate(42)
    lines = text.split("\n")
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("var ck: u64") and k > 0
             and "p_run" in lines[k - 1])
    lines.insert(i + 1, "    ck = ck + 77777")
    text = "\n".join(lines)
    path = str(tmp_path / "r.nx")

    def oracle(t: str) -> bool:
        if "ck + 77777" not in t:
            return False
        with open(path, "w", encoding="utf-8") as f:
            f.write(t)
        try:
            check_file(path, diags=Diagnostics(warnings=False))
        except CompileError:
            return False
        return True

    small = reduce_program.delete_pass(text, oracle, lambda m: None)
    small = reduce_program.unwrap_pass(small, oracle, lambda m: None)
    small = reduce_program.simplify_pass(small, oracle, lambda m: None, budget=200)
    assert oracle(small)
    assert small.count("\n") < text.count("\n") // 3
    assert "ck + 77777" in small


def test_reducer_expression_helpers():
    assert reduce_program.top_level_split("a + (b * c)") == ["a", "(b * c)"]
    assert reduce_program.top_level_split("(x + 1) as u8") == ["(x + 1)"]
    assert reduce_program.top_level_split("f(a, b)") == []
    lines = ["func f() {", "    if x {", "        y = 1", "    } else {", "        y = 2", "    }", "}"]
    assert reduce_program.unit_end(lines, 1) == 6
    assert reduce_program.unit_end(lines, 0) == 7
