"""The key/value metadata of a GGUF file, read in Python.

The model's weights are read by `nx_src/nx_gguf.nx` (it skips arrays by type without
loading them); the tokenizer needs exactly those arrays (151,936 token strings and
151,387 merges for Qwen3), as Python strings. This reader memory-maps the file and
decodes the header and the key/value section only (GGUF versions 2 and 3, all 13 value
types; gguf.md in the ggml repository), never the tensor data. Every length is checked
against the file's size before it is used, so a damaged file gives `GGUFMetadataError`,
not a huge allocation or a traceback from struct.
"""
from __future__ import annotations

import mmap
import os
import struct

# GGUF value types (gguf.md: gguf_metadata_value_type).
_U8, _I8, _U16, _I16, _U32, _I32, _F32, _BOOL, _STRING, _ARRAY, _U64, _I64, _F64 = range(13)
_SCALAR = {_U8: "<B", _I8: "<b", _U16: "<H", _I16: "<h", _U32: "<I", _I32: "<i",
           _F32: "<f", _BOOL: "<?", _U64: "<Q", _I64: "<q", _F64: "<d"}
_NUMPY_KIND = {_U8: "u1", _I8: "i1", _U16: "<u2", _I16: "<i2", _U32: "<u4", _I32: "<i4",
               _F32: "<f4", _BOOL: "u1", _U64: "<u8", _I64: "<i8", _F64: "<f8"}


class GGUFMetadataError(ValueError):
    """The file is not a GGUF file this reader understands, or it is damaged."""


class _Reader:
    def __init__(self, buf, path: str):
        self.buf = buf
        self.pos = 0
        self.path = path

    def fail(self, what: str):
        raise GGUFMetadataError(f"{self.path}: {what} (at byte {self.pos})")

    def need(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            self.fail("truncated: a value runs past the end of the file")

    def scalar(self, vtype: int):
        fmt = _SCALAR[vtype]
        n = struct.calcsize(fmt)
        self.need(n)
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += n
        return v

    def string(self) -> str:
        n = self.scalar(_U64)
        self.need(n)
        raw = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        # Token strings are UTF-8 in every file llama.cpp writes; a stray byte is kept
        # visible (surrogateescape) rather than refused, so one odd token cannot stop a load.
        return raw.decode("utf-8", errors="surrogateescape")

    def strings(self, count: int) -> list[str]:
        """`count` strings in a row: the tokenizer's hot path, one unpack per string."""
        buf, pos, end = self.buf, self.pos, len(self.buf)
        out = []
        unpack = struct.Struct("<Q").unpack_from
        for _ in range(count):
            if pos + 8 > end:
                self.pos = pos
                self.fail("truncated: a string array runs past the end of the file")
            (n,) = unpack(buf, pos)
            pos += 8
            if n > end - pos:
                self.pos = pos
                self.fail("truncated: a string runs past the end of the file")
            out.append(bytes(buf[pos:pos + n]).decode("utf-8", errors="surrogateescape"))
            pos += n
        self.pos = pos
        return out

    def value(self, vtype: int, depth: int = 0):
        if vtype in _SCALAR:
            return self.scalar(vtype)
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            if depth > 4:
                self.fail("arrays nested too deep")
            etype = self.scalar(_U32)
            count = self.scalar(_U64)
            if etype == _STRING:
                if count > len(self.buf) // 8:
                    self.fail(f"an array of {count} strings cannot fit in the file")
                return self.strings(count)
            if etype in _NUMPY_KIND:
                import numpy as np
                size = struct.calcsize(_SCALAR[etype])
                self.need(count * size)
                arr = np.frombuffer(self.buf, dtype=_NUMPY_KIND[etype], count=count,
                                    offset=self.pos).copy()
                self.pos += count * size
                return arr.tolist()
            if etype == _ARRAY:
                if count > len(self.buf) // 12:
                    self.fail(f"an array of {count} arrays cannot fit in the file")
                return [self.value(_ARRAY, depth + 1) for _ in range(count)]
            self.fail(f"unknown array element type {etype}")
        self.fail(f"unknown value type {vtype}")


def read_metadata(path) -> dict:
    """Every metadata key of the GGUF file at `path`, as Python values (arrays as lists)."""
    path = os.fspath(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise GGUFMetadataError(f"{path}: cannot open: {e.strerror or e}") from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            if size < 24:
                raise GGUFMetadataError(f"{path}: not a GGUF file (only {size} bytes)")
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise GGUFMetadataError(f"{path}: cannot read: {e}") from None
    try:
        r = _Reader(memoryview(buf), path)
        if bytes(r.buf[:4]) != b"GGUF":
            r.fail("not a GGUF file (no 'GGUF' magic)")
        r.pos = 4
        version = r.scalar(_U32)
        if version not in (2, 3):
            r.fail(f"GGUF version {version} is not read (2 and 3 are)")
        r.scalar(_U64)                      # tensor count: not needed here
        n_kv = r.scalar(_U64)
        if n_kv > size // 12:
            r.fail(f"{n_kv} metadata keys cannot fit in the file")
        meta = {}
        for _ in range(n_kv):
            key = r.string()
            vtype = r.scalar(_U32)
            meta[key] = r.value(vtype)
        r.buf.release()
        return meta
    finally:
        try:
            buf.close()
        except BufferError:                 # a view escaped through an exception: the GC closes it
            pass
