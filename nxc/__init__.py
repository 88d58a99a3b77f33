"""nxc: the toolchain for Nishi .nx modules.

The pipeline, one stage per module, data flowing one way:
  loader (imports) -> parse (grammar/nx.lark + postlex) -> check -> emit_c | emit_py
  -> build_c (cffi, cached) -> run (gates)
"""
__version__ = "0.1.0"
