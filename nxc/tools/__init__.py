"""Tools around the toolchain: editor support, module pages, porting aids.

Each tool is one file here and reaches the language only through the front
end (nxc.syntax) and the checker (nxc.check).
"""
