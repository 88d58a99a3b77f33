"""nxc: the toolchain for Nishi .nx modules.

The pipeline, one package per stage, data flowing one way
(docs/architecture.md):
  syntax (loader, lexer, postlex, lalr + parse over grammar/nx.lark) -> check
  -> lower (analyses both emitters share)
  -> backend.c (emit, build with cffi, cached) | backend.py (emit, run)
  -> gates (isolation, runner, reports, pytest plugin)
with the CLI (cli.py), the Python API (api.py) and the tools (tools/) on top.
"""
__version__ = "0.1.0"


def __getattr__(name):
    # The Python API is loaded on first use, so the CLI starts fast.
    import importlib
    if name in ("load", "Module", "Pointer", "NxRuntimeError"):
        return getattr(importlib.import_module("nxc.api"), name)
    if name == "CompileError":
        return importlib.import_module("nxc.diagnostics").CompileError
    if name == "f32":
        return importlib.import_module("nxc.f32")
    raise AttributeError(f"module 'nxc' has no attribute {name!r}")


__all__ = ["load", "Module", "Pointer", "NxRuntimeError", "CompileError", "f32", "__version__"]
