"""The threaded linear-kernel loops of issue 28, for bench/gen_program.py.

Each generated program gets one or two of these (drawn from their own random
stream, so the rest of every seed's program is unchanged): a weight matrix
W [rows, cols] of one of the kernels' weight types, filled in .nx from an LCG
(sane values, and per program a rate of special ones: infinities, NaNs with
payloads, subnormals, signed zeros, the largest finite value), T tokens of
float32 input X [T, cols], and

* a *packed* kernel: W repacked into panels of R lanes, element (row, c) at
  panel[(c * R) + r], pad rows zero; a `sys_parallel_for` task whose items are
  one or two panels (or rows, for the row-major variant), each item writing
  only its own outputs; every lane keeps its own sum from +0 in column order,
  a separate multiply then add (mul then add, as the vectorized kernels do),
  several tokens per lane held at once; the accumulators are the output rows
  themselves or a scratch the task maps and unmaps; quantized weights are
  dequantized in the loop from int8 bytes (or four in a u32 word, extracted
  by shifts like nx_qgemm's tiles) or 4-bit nibbles, times a per-block f16
  scale converted by the branch-free lane conversion (nx_gemm_f16_lane's) or
  kept as per-lane factors in a scratch;
* a *scalar reference* on the row-major W, computed after the kernel in the
  plain order with the branching conversions (nx_f16_to_f32's, and
  nx_bf16_to_f32's for bf16); any output that differs from the kernel's sets
  the program's gfold to KERNEL_SENTINEL + k (bench/difftest.py reports it as
  a disagreement), and every output is folded into the checksum.

So one run checks the kernel against the reference inside every
configuration, and bench/difftest.py checks the checksums across the
configurations (backends, opt levels, targets, checked, thread counts).
"""
from __future__ import annotations

import random

KERNEL_SENTINEL = 0x7F0CE00000000000     # run() returns this + k when kernel k != its reference
MIX = "0x100000001B3"
LCG_A, LCG_C = 6364136223846793005, 1442695040888963407

F32_SPECIALS = ["0x7F800000", "0xFF800000", "0x7FC00001", "0x00000001", "0x80000000", "0x00000000",
                "0x807FFFFF", "0x7F7FFFFF"]
F16_SPECIALS = ["0x0001", "0x03FF", "0x7C00", "0xFC00", "0x7E01", "0x8000", "0x0400", "0x7BFF"]
BF16_SPECIALS = ["0x7F80", "0xFF80", "0x7FC1", "0x0001", "0x8000", "0x0000", "0x007F", "0x7F7F"]

WEIGHT_TYPES = ["f32", "bf16", "f16", "q8", "q8w", "q4"]
# columns per packed unit: q8w packs four int8 columns in a u32 word, q4 two nibbles in a byte
UNIT_COLS = {"f32": 1, "bf16": 1, "f16": 1, "q8": 1, "q8w": 4, "q4": 2}
PACKED_TYPE = {"f32": "u32", "bf16": "u16", "f16": "u16", "q8": "i8", "q8w": "u32", "q4": "u8"}
SOURCE_TYPE = {"f32": "u32", "bf16": "u16", "f16": "u16", "q8": "i8", "q8w": "i8", "q4": "u8"}
MAX_WORK = 480                           # rows * cols * tokens of one kernel (the Python backend's time)


def helpers(P: str, types: set[str]) -> list[str]:
    """Top-level helpers the kernels of a program share (names prefixed): the fill, and the
    conversions the weight types `types` need (no unused function: less to compile)."""
    fill = [
        f"func {P}krand(h: *u64) -> u64 {{",
        f"    h[0] = h[0] * {LCG_A} + {LCG_C}",
        "    return h[0] >> 32",
        "}",
        "",
        "// sane float32 bits in [2^-7, 2) of either sign, or one of sp[0..7] at rate/16",
        f"func {P}kf32(h: *u64, sp: *u32, rate: u64) -> u32 {{",
        f"    let b: u64 = {P}krand(h)",
        "    if (b >> 28) < rate { return sp[b & 7] }",
        "    return ((b & 0x807FFFFF) | ((120 + ((b >> 23) & 7)) << 23)) as u32",
        "}",
        "",
        f"func {P}kf16(h: *u64, sp: *u16, rate: u64) -> u16 {{",
        f"    let b: u64 = {P}krand(h)",
        "    if (b >> 28) < rate { return sp[b & 7] }",
        "    return ((b & 0x83FF) | ((12 + ((b >> 10) & 7)) << 10)) as u16",
        "}",
        "",
    ]
    f16 = [
        "// binary16 -> float32 without branches (nx_gemm_f16_lane's way): NaNs keep a payload",
        f"func {P}f16l(h16: u16) -> i64 {{",
        "    let h: u32 = h16 as u32",
        "    let o: u32 = (h & 0x7FFF) << 13",
        "    let f: u32 = nx_f32_mul(o as i64, 0x77800000) as u32",
        "    let big: u32 = (0 as u32) - ((o >= 0x0F800000) as u32)",
        "    return (((f & ~big) | ((o | 0x7F800000) & big)) | ((h & 0x8000) << 16)) as i64",
        "}",
        "",
        "// binary16 -> float32 with branches (nx_f16_to_f32's way): the reference",
        f"func {P}f16r(h: i64) -> i64 {{",
        "    let sign: i64 = (h & 0x8000) << 16",
        "    let e: i64 = (h >> 10) & 0x1F",
        "    let m: i64 = h & 0x3FF",
        "    if e == 0x1F {",
        "        if m != 0 { return 0x7FC00000 }",
        "        return sign | 0x7F800000",
        "    }",
        "    if e == 0 {",
        "        if m == 0 { return sign }",
        "        var p: i64 = 9",
        "        while ((m >> p) & 1) == 0 { p = p - 1 }",
        "        return sign | ((p - 24 + 127) << 23) | ((m << (23 - p)) & 0x007FFFFF)",
        "    }",
        "    return sign | ((e - 15 + 127) << 23) | (m << 13)",
        "}",
        "",
    ]
    bf16 = [
        f"func {P}bf16r(h: i64) -> i64 {{",
        "    let b: i64 = h & 0xFFFF",
        "    if (b & 0x7FFF) > 0x7F80 { return 0x7FC00000 }",
        "    return b << 16",
        "}",
        "",
    ]
    return fill + (f16 if types - {"f32", "bf16"} else []) + (bf16 if "bf16" in types else [])


class Kernel:
    """One kernel instance: its parameters, its top-level lines, its lines in run()."""

    def __init__(self, rng: random.Random, P: str, k: int):
        self.rng, self.P, self.k = rng, P, k
        self.wt = rng.choice(WEIGHT_TYPES)
        self.layout = rng.choice(["packed", "packed", "packed", "rows"])
        self.R = rng.choice([1, 2, 3, 4, 8, 8, 16]) if self.layout == "packed" else 1
        self.upc = UNIT_COLS[self.wt] if self.layout == "packed" else 1
        self.qb = 0
        if self.wt in ("q8", "q8w", "q4"):
            self.qb = rng.choice([4, 8]) if self.wt != "q4" else rng.choice([2, 4, 8])
        step = max(self.qb, UNIT_COLS[self.wt], 1)
        self.T = rng.choice([1, 1, 2, 3])
        self.cols = step * rng.randrange(1, max(2, 24 // step + 1))
        max_rows = max(1, MAX_WORK // (self.cols * self.T))
        self.rows = 0 if rng.random() < 0.03 else rng.randrange(1, min(max_rows, 3 * self.R + 3) + 1)
        self.np = (self.rows + self.R - 1) // self.R
        self.per_item = rng.choice([1, 1, 2, 3])           # panels (or rows) per item
        self.acc_t = rng.choice(["u32", "i64"])
        self.scratch = rng.random() < 0.4                  # accumulate in a mapped scratch, not in Y
        self.factors = self.wt in ("q8", "q8w", "q4") and rng.random() < 0.5
        self.hoist_x = rng.random() < 0.5
        self.assoc = rng.choice(["qd_x", "q_dx", "dq_x"])
        self.rate = rng.choice([0, 0, 1, 4])
        self.seed = rng.getrandbits(63)
        self.J = f"{P}KJ{k}"
        self.nb = self.cols // self.qb if self.qb else 0
        # The eight-token kernel's shape (nx_f32_gemm.nx, nx_gemm_tokens8): a lane pass over
        # several columns (each token's sum a chain of cpp steps, the accumulator a float in
        # between), the token values loaded before the lane loop, up to eight tokens at once.
        # Drawn last, so that every earlier draw of a seed is what it was without it.
        self.cpp = 1
        if self.wt in ("f32", "bf16", "f16") and self.layout == "packed" and rng.random() < 0.4:
            self.cpp = rng.choice([2, 4, 8])
            self.T = rng.choice([4, 5, 8])
            self.hoist_x = True
            self.cols = self.cpp * rng.randrange(1, max(2, 16 // self.cpp + 1))
            max_rows = max(1, MAX_WORK // (self.cols * self.T))
            self.rows = rng.randrange(1, min(max_rows, 3 * self.R + 3) + 1)
            self.np = (self.rows + self.R - 1) // self.R
        self.rp = self.np * self.R                         # rows of Y (padded to whole panels)

    # ---------------------------------------------------------------- pieces
    def read(self, e: str) -> str:
        return f"({e} as i64)" if self.acc_t == "u32" else e

    def store(self, e: str) -> str:
        return f"{e} as u32" if self.acc_t == "u32" else e

    def term(self, qf: str, d: str, x: str) -> str:
        """One weight times x: float weights (d empty) or int q times scale d, in this kernel's order."""
        if not d:
            return f"nx_f32_mul({qf}, {x})"
        if self.assoc == "qd_x":
            return f"nx_f32_mul(nx_f32_mul({qf}, {d}), {x})"
        if self.assoc == "q_dx":
            return f"nx_f32_mul({qf}, nx_f32_mul({d}, {x}))"
        return f"nx_f32_mul(nx_f32_mul({d}, {qf}), {x})"

    def lane_deq(self, e: str) -> str:
        """The kernel's conversion of a float weight element `e`."""
        if self.wt == "f32":
            return f"({e} as i64)"
        if self.wt == "bf16":
            return f"((({e}) as u32) << 16) as i64"
        return f"{self.P}f16l({e})"

    # ---------------------------------------------------------------- top level
    def top(self) -> list[str]:
        P, R, T = self.P, self.R, self.T
        pt = PACKED_TYPE[self.wt] if self.layout == "packed" else SOURCE_TYPE[self.wt]
        fields = [f"w: *{pt}", "s: *u16", "x: *i64", f"y: *{self.acc_t}", "rows: i64", "cols: i64",
                  "np: i64", "rp: i64"]
        out = [f"struct {self.J} {{ {', '.join(fields)} }}", ""]
        if self.layout == "rows":
            out += self.row_dot()
        out.append(f"func {P}kt{self.k}(ctx: *void, begin: i64, end: i64) {{")
        out.append(f"    let j: *{self.J} = ctx as *{self.J}")
        if self.layout == "rows":
            out += [f"    var row: i64 = begin * {self.per_item}",
                    f"    var re: i64 = end * {self.per_item}",
                    "    if re > j.rows { re = j.rows }",
                    "    while row < re {"]
            for t in range(T):
                out.append(f"        j.y[{t} * j.rp + row] = {self.store(f'{P}kdot{self.k}(j, row, {t})')}")
            out += ["        row = row + 1", "    }", "}", ""]
            return out
        out += [f"    var p: i64 = begin * {self.per_item}",
                f"    var pe: i64 = end * {self.per_item}",
                "    if pe > j.np { pe = j.np }"]
        if self.factors:
            out.append(f"    let f: *u32 = sys_mmap({R} * 4) as *u32")
        if self.scratch:
            out.append(f"    let acc: *{self.acc_t} = sys_mmap({T * R} * sizeof({self.acc_t})) as *{self.acc_t}")
        out.append("    while p < pe {")
        body = []
        for t in range(T):
            base = f"&acc[{t * R}]" if self.scratch else f"&j.y[{t} * j.rp + p * {R}]"
            body.append(f"let a{t}: *{self.acc_t} = {base}")
        body += ["var r: i64 = 0", f"while r < {R} {{"]
        body += [f"    a{t}[r] = 0" for t in range(T)]
        body += ["    r = r + 1", "}"]
        cu = self.cols // self.upc
        passes = cu // self.cpp                            # lane passes over the columns
        body += ["var c: i64 = 0", f"while c < {passes} {{"]
        inner = []
        if self.factors:
            inner += [f"if ((c * {self.upc}) % {self.qb}) == 0 {{",
                      "    r = 0",
                      f"    while r < {R} {{",
                      f"        f[r] = {P}f16l(j.s[(p * {self.nb} + (c * {self.upc}) / {self.qb}) * {R} + r]) as u32",
                      "        r = r + 1",
                      "    }",
                      "}"]
        if self.hoist_x:
            span = self.upc * self.cpp                     # columns per pass
            for t in range(T):
                for u in range(span):
                    inner.append(f"let x{t}_{u}: i64 = j.x[{t} * {self.cols} + c * {span} + {u}]")
        inner += ["r = 0", f"while r < {R} {{"]
        inner += ["    " + s for s in self.lane_body(cu)]
        inner += ["    r = r + 1", "}"]
        body += ["    " + s for s in inner]
        body += ["    c = c + 1", "}"]
        if self.scratch:
            body += ["r = 0", f"while r < {R} {{"]
            body += [f"    j.y[{t} * j.rp + p * {R} + r] = a{t}[r]" for t in range(T)]
            body += ["    r = r + 1", "}"]
        body.append("p = p + 1")
        out += ["        " + s for s in body]
        out.append("    }")
        if self.factors:
            out.append(f"    sys_munmap(f as *void, {R} * 4)")
        if self.scratch:
            out.append(f"    sys_munmap(acc as *void, {T * R} * sizeof({self.acc_t}))")
        out += ["}", ""]
        return out

    def xat(self, t: int, u: int) -> str:
        if self.hoist_x:
            return f"x{t}_{u}"
        return f"j.x[{t} * {self.cols} + c * {self.upc * self.cpp} + {u}]"

    def lane_body(self, cu: int) -> list[str]:
        """Lane r of unit c of panel p: every token's sum gets this unit's columns, in order."""
        P, R, T = self.P, self.R, self.T
        at = f"(p * {cu} + c) * {R} + r"
        lines = []
        if self.qb:
            if self.factors:
                lines.append("let d: i64 = f[r] as i64")
            else:
                lines.append(f"let d: i64 = {P}f16l(j.s[(p * {self.nb} + (c * {self.upc}) / {self.qb}) * {R} + r])")
        if self.wt in ("f32", "bf16", "f16") and self.cpp > 1:
            # this pass's cpp columns of the lane's row: element (row, col) at (p * cols + col) * R + r
            for u in range(self.cpp):
                lines.append(f"let wv{u}: i64 = "
                             f"{self.lane_deq(f'j.w[(p * {self.cols} + c * {self.cpp} + {u}) * {R} + r]')}")
            qs = [(f"wv{u}", "") for u in range(self.cpp)]
        elif self.wt in ("f32", "bf16", "f16"):
            lines.append(f"let wv: i64 = {self.lane_deq(f'j.w[{at}]')}")
            qs = [("wv", "")]
        elif self.wt == "q8":
            qs = [(f"nx_i32_to_f32(j.w[{at}] as i64)", "d")]
        elif self.wt == "q8w":
            lines.append(f"let w: u32 = j.w[{at}]")
            qs = [(f"nx_i32_to_f32((((w << {24 - 8 * b}) as i32) >> 24) as i64)", "d") for b in range(4)]
        else:
            lines.append(f"let b: u8 = j.w[{at}]")
            qs = [("nx_i32_to_f32(((b & 15) as i32 - 8) as i64)", "d"),
                  ("nx_i32_to_f32(((b >> 4) as i32 - 8) as i64)", "d")]
        for t in range(T):
            if len(qs) == 1:
                lines.append(f"a{t}[r] = " + self.store(
                    f"nx_f32_add({self.read(f'a{t}[r]')}, {self.term(qs[0][0], qs[0][1], self.xat(t, 0))})"))
                continue
            lines.append(f"var s{t}: i64 = {self.read(f'a{t}[r]')}")
            for u, (qf, d) in enumerate(qs):
                lines.append(f"s{t} = nx_f32_add(s{t}, {self.term(qf, d, self.xat(t, u))})")
            lines.append(f"a{t}[r] = {self.store(f's{t}')}")
        return lines

    def row_dot(self) -> list[str]:
        """Row-major variant: one output of a row, a helper the task calls (a call inside a task)."""
        P = self.P
        out = [f"func {P}kdot{self.k}(j: *{self.J}, row: i64, t: i64) -> i64 {{",
               "    var s: i64 = 0",
               "    var c: i64 = 0",
               f"    while c < {self.cols} {{",
               f"        let x: i64 = j.x[t * {self.cols} + c]"]
        if self.qb:
            out.append(f"        let d: i64 = {P}f16l(j.s[row * {self.nb} + c / {self.qb}])")
        if self.wt in ("f32", "bf16", "f16"):
            out.append(f"        s = nx_f32_add(s, {self.term(self.lane_deq(f'j.w[row * {self.cols} + c]'), '', 'x')})")
        elif self.wt in ("q8", "q8w"):
            out.append(f"        s = nx_f32_add(s, {self.term(f'nx_i32_to_f32(j.w[row * {self.cols} + c] as i64)', 'd', 'x')})")
        else:
            q = f"nx_i32_to_f32((((j.w[(row * {self.cols} + c) >> 1] >> ((c & 1) * 4)) & 15) as i32 - 8) as i64)"
            out.append(f"        s = nx_f32_add(s, {self.term(q, 'd', 'x')})")
        out += ["        c = c + 1", "    }", "    return s", "}", ""]
        return out

    # ---------------------------------------------------------------- in run()
    def run_lines(self, gfold: str) -> list[str]:
        """Fill, pack, run the task, check against the reference, fold the outputs."""
        P, R, T, rows, cols = self.P, self.R, self.T, self.rows, self.cols
        st = SOURCE_TYPE[self.wt]
        n_src = rows * cols // (2 if self.wt == "q4" else 1)
        L = [f"// kernel {self.k}: {self.wt} {self.layout} R={R} rows={rows} cols={cols} tokens={T} "
             f"columns per pass={self.cpp}",
             f"kh[0] = {self.seed}",
             f"let kw: *{st} = sys_mmap({max(n_src, 1)} * sizeof({st})) as *{st}",
             f"let ks: *u16 = sys_mmap({max(rows * self.nb, 1)} * 2) as *u16",
             f"let kx: *i64 = sys_mmap({T * cols} * 8) as *i64",
             f"let ky: *{self.acc_t} = sys_mmap({max(T * self.rp, 1)} * sizeof({self.acc_t})) as *{self.acc_t}",
             "var ki: i64 = 0",
             f"while ki < {n_src} {{"]
        if self.wt == "f32":
            L.append(f"    kw[ki] = {P}kf32(kh, ksp32, {self.rate})")
        elif self.wt == "f16":
            L.append(f"    kw[ki] = {P}kf16(kh, ksp16, {self.rate})")
        elif self.wt == "bf16":
            L += [f"    let kb: u32 = {P}kf32(kh, ksp32, 0) >> 16",
                  f"    kw[ki] = kb as u16",
                  f"    if ({P}krand(kh) >> 28) < {self.rate} {{ kw[ki] = kspb[ki & 7] }}"]
        else:
            L.append(f"    kw[ki] = ({P}krand(kh) & 255) as {st}")
        L += ["    ki = ki + 1", "}",
              "ki = 0", f"while ki < {rows * self.nb} {{",
              f"    ks[ki] = {P}kf16(kh, ksp16, {self.rate})", "    ki = ki + 1", "}",
              "ki = 0", f"while ki < {T * cols} {{",
              f"    kx[ki] = {P}kf32(kh, ksp32, {self.rate}) as i64", "    ki = ki + 1", "}",
              f"let kj: *{self.J} = sys_mmap(sizeof({self.J})) as *{self.J}"]
        if self.layout == "packed":
            L += self.pack_lines()
        else:
            L.append("kj.w = kw")
        L += ["kj.s = ks" if self.layout == "rows" else "kj.s = kps",
              "kj.x = kx", "kj.y = ky", f"kj.rows = {rows}", f"kj.cols = {cols}", f"kj.np = {self.np}",
              f"kj.rp = {self.rp if self.layout == 'packed' else rows}"]
        units = self.np if self.layout == "packed" else rows
        items = (units + self.per_item - 1) // self.per_item
        L.append(f"sys_parallel_for({P}kt{self.k}, kj as *void, {items})")
        L += self.reference_lines(gfold)
        return L

    def pack_lines(self) -> list[str]:
        R, cols, st = self.R, self.cols, SOURCE_TYPE[self.wt]
        pt = PACKED_TYPE[self.wt]
        cu = cols // self.upc
        L = [f"let kpw: *{pt} = sys_mmap({max(self.np * cu * R, 1)} * sizeof({pt})) as *{pt}",
             f"let kps: *u16 = sys_mmap({max(self.np * self.nb * R, 1)} * 2) as *u16",
             "var kp: i64 = 0",
             f"while kp < {self.np} {{",
             "    var kr: i64 = 0",
             f"    while kr < {R} {{",
             f"        let krow: i64 = kp * {R} + kr",
             f"        if krow < {self.rows} {{",
             "            var kc: i64 = 0",
             f"            while kc < {cu} {{"]
        dst = f"kpw[(kp * {cu} + kc) * {R} + kr]"
        if self.wt == "q8w":
            b = f"krow * {cols} + kc * 4"
            src = " | ".join(f"(((kw[{b} + {i}] as u32) & 255) << {8 * i})" for i in range(4))
        elif self.wt == "q4":
            src = f"kw[krow * {cols // 2} + kc]"
        else:
            src = f"kw[krow * {cols} + kc]"
        del st
        L += [f"                {dst} = {src}",
              "                kc = kc + 1",
              "            }"]
        if self.nb:
            L += ["            kc = 0",
                  f"            while kc < {self.nb} {{",
                  f"                kps[(kp * {self.nb} + kc) * {R} + kr] = ks[krow * {self.nb} + kc]",
                  "                kc = kc + 1",
                  "            }"]
        L += ["        }", "        kr = kr + 1", "    }", "    kp = kp + 1", "}", "kj.w = kpw"]
        return L

    def reference_lines(self, gfold: str) -> list[str]:
        P, cols = self.P, self.cols
        rp = self.rp if self.layout == "packed" else self.rows
        if self.wt == "f32":
            w = f"(kw[kr * {cols} + kc] as i64)"
        elif self.wt == "bf16":
            w = f"{P}bf16r(kw[kr * {cols} + kc] as i64)"
        elif self.wt == "f16":
            w = f"{P}f16r(kw[kr * {cols} + kc] as i64)"
        elif self.wt in ("q8", "q8w"):
            w = f"nx_i32_to_f32(kw[kr * {cols} + kc] as i64)"
        else:
            w = f"nx_i32_to_f32(((((kw[(kr * {cols} + kc) >> 1] as i64) >> ((kc & 1) * 4)) & 15) - 8))"
        d = f"{P}f16r(ks[kr * {self.nb} + kc / {self.qb}] as i64)" if self.qb else ""
        return [
            "var kt: i64 = 0",
            f"while kt < {self.T} {{",
            "    var kr: i64 = 0",
            f"    while kr < {self.rows} {{",
            "        var ksum: i64 = 0",
            "        var kc: i64 = 0",
            f"        while kc < {cols} {{",
            f"            ksum = nx_f32_add(ksum, {self.term(w, d, f'kx[kt * {cols} + kc]')})",
            "            kc = kc + 1",
            "        }",
            f"        let kgot: i64 = {'ky[kt * %d + kr]' % rp if self.acc_t == 'i64' else '(ky[kt * %d + kr] as i64)' % rp}",
            f"        if kgot != ksum {{ {gfold} = {KERNEL_SENTINEL + self.k} }}",
            f"        ck = (ck ^ (kgot as u64)) * {MIX}",
            "        kr = kr + 1",
            "    }",
            "    kt = kt + 1",
            "}",
        ]


def kernels(seed: int, P: str) -> tuple[list[str], list[str]]:
    """(top-level lines, lines for the body of run()) of seed's kernels, from their own stream."""
    rng = random.Random(seed * 104729 + 28)
    ks = [Kernel(rng, P, k) for k in range(rng.choice([1, 1, 2]))]
    top = helpers(P, {kern.wt for kern in ks})
    body = ["{", "    let kh: *u64 = sys_mmap(8) as *u64",
            "    let ksp32: *u32 = sys_mmap(32) as *u32",
            "    let ksp16: *u16 = sys_mmap(16) as *u16",
            "    let kspb: *u16 = sys_mmap(16) as *u16"]
    for i in range(8):
        body += [f"    ksp32[{i}] = {F32_SPECIALS[i]}", f"    ksp16[{i}] = {F16_SPECIALS[i]}",
                 f"    kspb[{i}] = {BF16_SPECIALS[i]}"]
    for kern in ks:
        top += kern.top()
        body += ["    {"] + ["        " + s for s in kern.run_lines(f"{P}gfold")] + ["    }"]
    body.append("}")
    return top, body
