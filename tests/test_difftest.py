"""Generated programs (bench/gen_program.py) and the differential test
(bench/difftest.py): a bounded run here; `bash bench/difftest_long.sh` is the
long one (20,000 programs)."""
from __future__ import annotations

import os
import sys

import pytest

from nxc.diagnostics import CompileError, Diagnostics
from nxc.check.frontend import check_file

from bench_modules import load_bench

gen_program = load_bench("gen_program")
gen_kernels = sys.modules["gen_kernels"]
difftest = load_bench("difftest")
reduce_program = load_bench("reduce_program")


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
    results, warnings = difftest.run_batch(seeds, difftest.BASIC_CONFIGS, str(tmp_path), timeout=120,
                                           threads=(1, 3))
    assert not warnings
    for s in seeds:
        assert difftest.verdict(results[s]) == "same", (s, results[s])
        assert set(results[s]) == {"c-O0/t1", "c-O0/t3", "c-O2/t1", "c-O2/t3", "py"}


def test_kernel_loops_are_generated_in_every_form():
    """Issue 28's loops (bench/gen_kernels.py): every weight type, both layouts, the
    quantized forms, scratch accumulators and per-lane factors appear in a few dozen seeds."""
    texts = [gen_program.generate(s, kernels_only=True) for s in range(1, 41)]
    joined = "\n".join(texts)
    for wt in gen_kernels.WEIGHT_TYPES:
        assert f"// kernel 0: {wt} packed" in joined or f"// kernel 1: {wt} packed" in joined, wt
    for feature in ("sys_parallel_for(p_kt0, kj as *void", " rows R=1 ", "_f16l(", "_f16r(", "_bf16r(",
                    ") << 16) as i64", "as i32) >> 24", "(b & 15) as i32 - 8", "sys_munmap(acc as *void",
                    "let d: i64 = f[r] as i64", "var s0: i64 = a0[r]", "tokens=3"):
        assert feature in joined, feature
    # the full programs carry the same loops, from their own stream: the rest is unchanged
    full = gen_program.generate(7)
    assert "sys_parallel_for(p_kt0" in full
    gen_program.KERNELS = False
    try:
        assert "sys_parallel_for" not in gen_program.generate(7)
    finally:
        gen_program.KERNELS = True


def test_kernel_programs_agree_on_every_config_and_thread_count(tmp_path):
    """The bounded version of the long run (bench/difftest_long.sh with --kernels-only):
    C -O0, -O2 native, -O2 x86-64, checked C and Python, each C build at 1, 2, 3 and 7 threads."""
    difftest.KERNELS_ONLY = True
    try:
        seeds = list(range(900, 916))
        results, warnings = difftest.run_batch(seeds, difftest.CONFIGS, str(tmp_path), timeout=120)
    finally:
        difftest.KERNELS_ONLY = False
    assert not warnings
    names = {f"{c[0]}/t{n}" for c in difftest.CONFIGS if c[1] == "c" for n in difftest.THREADS} | {"py"}
    for s in seeds:
        assert set(results[s]) == names
        assert difftest.verdict(results[s]) == "same", (s, results[s])
        assert results[s]["py"][0] == difftest.OK


def test_a_kernel_that_differs_from_its_reference_is_a_disagreement(tmp_path):
    """The in-program check can fail: a kernel whose sums start from 1.0, not +0."""
    text = next(t for t in (gen_program.generate(s, kernels_only=True) for s in range(900, 960))
                if "    a0[r] = 0\n" in t)
    bad = text.replace("    a0[r] = 0\n", "    a0[r] = 0x3F800000\n")
    program, _ = difftest.front_end_text(bad, str(tmp_path))
    kind, data = difftest.run_entries(program, ["main"], "py", None, 60)
    assert kind == "ok"
    (result,) = data[0]
    assert difftest.is_kernel_mismatch(result), result
    assert difftest.verdict({"py": result, "c": result}) == "differ"


def test_soft_f32_agrees_with_the_runtime_on_generated_programs(tmp_path):
    seeds = list(range(500, 508))
    configs = [c for c in difftest.CONFIGS if c[0] == "py"] + difftest.SOFT_CONFIGS
    results, _ = difftest.run_batch(seeds, configs, str(tmp_path), timeout=120, threads=(1,))
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
    assert difftest.main(["--count", "4", "--seed", "3", "--batch", "4", "--save", str(tmp_path / "f"),
                          "--json", str(out), "--threads", "1,2", "-q"]) == 0
    assert "tried 4 programs" in capsys.readouterr().out
    assert out.exists()


def test_reducer_passes_shrink_while_the_property_holds(tmp_path):
    """The reducer's passes with a cheap oracle: keep the program checking cleanly and keep
    one marked statement; everything else should go."""
    gen_program.KERNELS = False                 # the program as it was before issue 28's loops
    try:
        text = gen_program.generate(42)
    finally:
        gen_program.KERNELS = True
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
