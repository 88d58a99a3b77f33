"""The Python API as a new user meets it: externs, help(), signatures, keywords, names."""
from __future__ import annotations

import inspect
import pydoc

import pytest

import nxc


@pytest.mark.parametrize("backend", ["c", "py"])
def test_externs_are_callable(backend):
    f32 = nxc.load("nx_src/nx_f32.nx", backend=backend)
    assert f32.nx_f32_add(0x3F800000, 0x3F800000) == 0x40000000         # 1 + 1 = 2
    assert f32.nx_f32_lt(0x3F800000, 0x40000000) is True
    sys = nxc.load("nx_syscalls.nx", backend=backend)
    assert sorted(sys.functions) == ["sys_mmap", "sys_munmap", "sys_vector_lanes", "sys_write"]
    assert sys.sys_vector_lanes() in ((16,) if backend == "py" else (4, 8, 16))
    p = sys.sys_mmap(64)
    assert p and sys.sys_munmap(p, 64) == 0


def test_bundled_modules_are_found_by_name():
    by_name = nxc.load("nx_f32.nx")
    assert by_name.path.endswith("nx_src/nx_f32.nx")
    assert nxc.load("nx_f32").path == by_name.path
    with pytest.raises(nxc.CompileError, match="no_such_module"):
        nxc.load("no_such_module.nx")


def test_signature_and_keyword_arguments():
    f32 = nxc.load("nx_f32.nx")
    sig = inspect.signature(f32.nx_f32_max)
    assert list(sig.parameters) == ["a", "b"] and str(sig) == "(a: 'i64', b: 'i64') -> 'i64'"
    assert f32.nx_f32_max(b=0x40000000, a=0x3F800000) == 0x40000000
    with pytest.raises(TypeError, match="nx_f32_max\\(\\): .*'c'"):
        f32.nx_f32_max(1, 2, c=3)
    with pytest.raises(TypeError, match="takes 2 arguments \\(1 given\\)"):
        f32.nx_f32_max(1)


def test_parameters_named_like_python_keywords(write_nx):
    # `or`, `class`, `lambda` are plain names in nx (the program generator
    # makes them); nxc.load raised ValueError from inspect before.
    path = write_nx("""
        func pick(or: i64, or_: i64, class: i64) -> i64 {
            return or * 100 + or_ * 10 + class
        }
    """)
    m = nxc.load(path)
    sig = inspect.signature(m.pick)
    assert list(sig.parameters) == ["or__", "or_", "class_"]
    assert m.pick(1, 2, 3) == 123
    assert m.pick(class_=3, or__=1, or_=2) == 123
    assert "func pick(or: i64, or_: i64, class: i64)" in m.pick.__doc__


def test_help_lists_functions_with_signatures_and_doc_comments(write_nx):
    path = write_nx("""
        // A tiny module: one doc comment for the module.

        // Twice its argument.
        // (A second line.)
        func twice(x: i64) -> i64 {
            return x * 2
        }
    """, name="tiny.nx")
    m = nxc.load(path)
    text = pydoc.render_doc(m, renderer=pydoc.plaintext)
    assert "A tiny module: one doc comment for the module." in text
    assert "func twice(x: i64) -> i64" in text
    assert "twice(x: 'i64') -> 'i64'" in text
    assert "Twice its argument.\n" in m.twice.__doc__ and "(A second line.)" in m.twice.__doc__
    assert isinstance(m, nxc.Module) and m.twice(21) == 42


def test_exceptions_are_exported():
    assert issubclass(nxc.NxRuntimeError, RuntimeError)
    assert nxc.CompileError.__name__ == "CompileError"
    from nxc import api
    assert api.CompileError is nxc.CompileError and api.NxRuntimeError is nxc.NxRuntimeError
