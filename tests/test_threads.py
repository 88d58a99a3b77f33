"""Threads (issue 28): sys_parallel_for and the runtime's pool (runtime/nx_threads.h).

The same bits for any thread count (1, 2, 3, 7) in small kernels and in the packed linear
kernel (against the scalar reference), on checked and unchecked C and the Python backend;
a fault inside a parallel kernel gives the usual located report with the whole .nx stack and
exit status 4; a fault raised on a pool worker (deterministically: a C harness) comes back to
the caller with the worker's record and stack, and the pool runs again afterwards; the
checker's rules for the task argument; the thread-count options.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import nxc
from nxc.backend.c import build as c_build
from nxc.paths import runtime_dir

from test_linear_packed import REF, check_module

HERE = os.path.dirname(os.path.abspath(__file__))
THREADS = os.path.join(HERE, "nx", "threads")
KERNELS = os.path.join(THREADS, "par_kernels.nx")
FAULT = os.path.join(THREADS, "par_fault.nx")
COUNTS = (1, 2, 3, 7)


def nxc_cmd(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "nxc", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("threads", COUNTS)
@pytest.mark.parametrize("flags", [(), ("--unchecked",), ("--backend", "py")])
def test_parallel_kernels_gate_any_thread_count(threads, flags):
    """The gate compares each parallel result with a sequential run of the same items."""
    r = nxc_cmd("run", *flags, "--threads", str(threads), KERNELS)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("threads", COUNTS)
@pytest.mark.parametrize("checked", [True, False])
def test_packed_linear_same_bits_any_thread_count(threads, checked):
    """Every output word of the packed kernel equals the scalar reference's, at every count:
    shapes with many panels and decode groups (so the items really are split), and tails."""
    mod = nxc.load(REF, checked=checked, threads=threads)
    check_module(mod, [(300, 40, 5), (261, 33, 1), (130, 13, 7), (37, 21, 2), (1, 9, 3), (70, 17, 1)], seed=5)


def test_packed_linear_same_bits_python_backend_threads():
    mod = nxc.load(REF, backend="py", threads=3)
    check_module(mod, [(70, 9, 1), (40, 6, 3)], seed=6)


def test_linear_words_identical_across_counts_and_backends():
    """One wide case, word for word: Y at 1, 2, 3 and 7 threads (C) and on the Python backend."""
    rng = np.random.default_rng(2)
    rows, cols, T = 150, 24, 3
    W = (rng.standard_normal(rows * cols) * 0.5).astype(np.float32).view(np.uint32).copy()
    X = (rng.standard_normal(T * cols)).astype(np.float32).view(np.uint32).astype(np.int64)
    outs = []
    for backend, t in [("c", 1), ("c", 2), ("c", 3), ("c", 7), ("py", 2)]:
        mod = nxc.load(REF, backend=backend, threads=t)
        Ys, Yp = np.zeros(T * rows, np.int64), np.zeros(T * rows, np.int64)
        assert mod.nx_f32_linear_both(W, 0, rows, cols, X, T, Ys, Yp) == 0
        outs.append(Yp)
    assert ((outs[0] & 0x7F800000) != 0x7F800000).any()
    for o in outs[1:]:
        assert np.array_equal(o, outs[0])


@pytest.mark.parametrize("threads", [1, 2, 7])
def test_fault_in_parallel_kernel_is_located(threads):
    """An out-of-bounds write inside a task: the usual report, the .nx stack through the
    sys_parallel_for call, exit status 4, the same words as the Python backend's."""
    r = nxc_cmd("run", "--threads", str(threads), FAULT, timeout=120)
    assert r.returncode == 4, r.stderr
    first = r.stderr.splitlines()[0]
    assert "par_fault.nx:23:5: runtime error: out-of-bounds write of i64" in first
    assert "offset 8024 of the 8000-byte mapping" in first
    for frame in ("in par_item", "par_fault.nx:35:21 in par_task", "par_fault.nx:46:5 in par_run", "in main"):
        assert frame in r.stderr, r.stderr
    py = nxc_cmd("run", "--backend", "py", "--threads", str(threads), FAULT, timeout=120)
    assert py.returncode == 4
    strip = lambda line: line.split(" at 0x")[0]     # noqa: E731 - addresses differ by backend
    assert strip(py.stderr.splitlines()[0]) == strip(first)


def test_fault_on_worker_thread(tmp_path):
    """A fault raised on a worker (never the caller: the harness makes sure) unwinds to the
    caller's handler with the worker's record and a stack that starts with the caller's frames
    (the call site in the caller's slot, then the task's frame); the pool then runs a clean
    call. No hang (a timeout), no crash."""
    exe = tmp_path / "worker_fault"
    flags = [f for f in c_build.flags_for("2") if f not in ("-shared", "-fPIC", "-fvisibility=hidden")]
    cc = c_build.compiler()
    build = subprocess.run([*cc, *flags, "-DNXRT_CHECKED", "-I", runtime_dir(),
                            os.path.join(THREADS, "worker_fault.c"), "-o", str(exe), "-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    # kind 9 = NXRT_F_MUNMAP_UNKNOWN at site 9; frames: caller's slot at the call (5), the task (7)
    assert run.stdout.splitlines() == ["kind 9 site 9 depth 2 frames 5 7 trap 9", "clean ok"]


def _check(tmp_path, body: str):
    src = tmp_path / "bad.nx"
    src.write_text('import "nx_syscalls.nx"\n' + body)
    return nxc_cmd("check", str(src), timeout=60)


def test_task_must_be_a_function_name(tmp_path):
    r = _check(tmp_path, "func f() { let p: *void = 0 as *void\n sys_parallel_for(p, p, 4) }\n")
    assert r.returncode == 3
    assert "the first argument of 'sys_parallel_for' must be the name of a function" in r.stderr
    assert "'p' is a variable" in r.stderr


def test_task_signature_is_checked(tmp_path):
    r = _check(tmp_path, "func t(ctx: *void, b: i64) { }\n"
                         "func f() { sys_parallel_for(t, 0 as *void, 4) }\n")
    assert r.returncode == 3
    assert "'t' cannot be a task of 'sys_parallel_for': it is func(*void, i64) -> void" in r.stderr


def test_task_not_an_expression(tmp_path):
    r = _check(tmp_path, "func f() { sys_parallel_for(0 as *void, 0 as *void, 4) }\n")
    assert r.returncode == 3
    assert "must be the name of a function" in r.stderr


def test_thread_count_options():
    with pytest.raises(ValueError, match="threads must be an integer from 1 to 256"):
        nxc.load(REF, threads=0)
    r = nxc_cmd("run", "--threads", "0", KERNELS, timeout=60)
    assert r.returncode == 2 and "--threads must be between 1 and 256" in r.stderr


@pytest.mark.parametrize("threads", [1, 3])
def test_division_by_zero_in_task_reads_as_on_python(threads):
    """A trap in a task called by a function with no frame of its own otherwise (main here):
    the caller keeps a frame for the call, so the stack is the Python backend's, word for word."""
    path = os.path.join(THREADS, "par_divzero.nx")
    c = nxc_cmd("run", "--threads", str(threads), path, timeout=120)
    py = nxc_cmd("run", "--backend", "py", "--threads", str(threads), path, timeout=120)
    assert c.returncode == py.returncode == 4
    assert "runtime error: division by zero" in c.stderr
    assert "par_divzero.nx:14:5 in main" in c.stderr
    assert c.stderr == py.stderr
    u = nxc_cmd("run", "--unchecked", "--threads", str(threads), path, timeout=120)
    assert u.returncode == 4 and "division by zero" in u.stderr


def test_each_module_calls_with_its_own_count():
    """Two loads of one program share one library, whose thread count is process-wide: each
    call sets its own module's count (a bench once timed 1 and 2 threads with the same count,
    the last one loaded). Read back through the library's nxc_threads() entry point."""
    one = nxc.load(KERNELS, checked=False, threads=1)
    three = nxc.load(KERNELS, checked=False, threads=3)
    lib = one._backend.lib            # the library both modules share (same build)
    assert lib is three._backend.lib
    for mod, want in ((one, 1), (three, 3), (one, 1)):
        assert mod.par_run(200, -1, 0) == mod.seq_run(200, 0)
        assert lib.nxc_threads() == want
