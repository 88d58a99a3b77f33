"""Tools around the toolchain, built on nxc.syntax and nxc.check only (none of
them compiles or runs anything): porting (port: restore module pages, stubs:
infer stubs for missing imports, fmt: format, info: describe a module) and
editor support and module pages (lsp, doc, the nx Pygments lexer).
"""
