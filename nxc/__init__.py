"""nxc: the toolchain for Nishi .nx modules.

The pipeline, one stage per module, data flowing one way:
  loader (imports) -> lexer -> postlex -> lalr + parse (grammar/nx.lark) -> check
  -> emit_c | emit_py
  -> build_c (cffi, cached) -> run (gates)
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
