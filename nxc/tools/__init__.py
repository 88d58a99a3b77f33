"""Porting tools: restore module pages (port), infer stubs for missing
imports (stubs), format (fmt), describe a module (info). Built on nxc.syntax
and nxc.check only: none of them compiles or runs anything."""
