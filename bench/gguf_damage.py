"""Damage a GGUF file byte by byte, and check the text encoder says so clearly (or still works).

    python bench/gguf_damage.py [--quick] [--keep DIR]

A tiny Qwen3 GGUF with its tokenizer is written (bench/make_qwen3_gguf.py),
then copies of it are damaged, each one way, and encoded with
`python -m nxc.models.qwen3 encode FILE "a photo of a cat" -o OUT`:
- every one of the first 64 bytes (magic, version, counts), and every 97th
  byte of the metadata and tensor infos after them, xor 0xFF;
- every third of the first 64 bytes and every 331st after, set to 0xFF;
- the file cut at 0, 4, 8, 16, 24, 100 and 1,000 bytes, near and at the
  end of the tensor infos, in the tensor data, and one byte short.

Each must either encode (a byte of a name or of the tokenizer's text can
change without making the file unreadable) or stop with a one-line
`error:` message and a non-zero exit: never a traceback, a signal, a hang
(120 s) or a fault inside the .nx GGUF reader. Printed: how many cases
ended each way, and every case that did not. Exit status 1 if any.
--quick: a bounded set (tests/test_text_encoder.py runs it).
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FAULTS = ("RUNTIME-ERROR", "runtime error", "Traceback")


def tensor_data_offset(path: str) -> int:
    """Where the tensor data begins (everything before it is header)."""
    import gguf
    return int(gguf.GGUFReader(path).data_offset)


def cases(size: int, header_end: int, quick: bool) -> list[tuple[str, int, str]]:
    if quick:
        return ([(f"xor@{o}", o, "xor") for o in (0, 4, 8, 16, 24, 40, header_end // 2, header_end - 8)]
                + [(f"cut@{n}", n, "cut") for n in (0, 24, header_end // 2, size - 1)])
    out = [(f"xor@{o}", o, "xor") for o in list(range(64)) + list(range(64, header_end, 97))]
    out += [(f"ff@{o}", o, "ff") for o in list(range(0, 64, 3)) + list(range(64, header_end, 331))]
    out += [(f"cut@{n}", n, "cut") for n in (0, 4, 8, 16, 24, 100, 1000, header_end - 984, header_end,
                                              (header_end + size) // 2, size - 1)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a dozen cases")
    ap.add_argument("--keep", help="work in this folder (kept) instead of a temporary one")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="nxc-gguf-damage-")
    os.makedirs(work, exist_ok=True)
    good = os.path.join(work, "tiny.gguf")
    made = subprocess.run([sys.executable, os.path.join(HERE, "make_qwen3_gguf.py"), good, "--tokenizer"],
                          capture_output=True, text=True)
    if made.returncode != 0:
        print(made.stdout + made.stderr)
        return 1
    with open(good, "rb") as f:
        src = f.read()
    header_end = tensor_data_offset(good)
    tally: collections.Counter = collections.Counter()
    wrong = []
    for name, at, how in cases(len(src), header_end, args.quick):
        data = bytearray(src)
        if how == "xor":
            data[at] ^= 0xFF
        elif how == "ff":
            data[at] = 0xFF
        else:
            data = data[:at]
        path = os.path.join(work, "damaged.gguf")
        with open(path, "wb") as f:
            f.write(bytes(data))
        try:
            done = subprocess.run([sys.executable, "-m", "nxc.models.qwen3", "encode", path, "a photo of a cat",
                                   "-o", os.path.join(work, "out.npy")], capture_output=True, text=True,
                                  timeout=120, cwd=work)
        except subprocess.TimeoutExpired:
            wrong.append((name, "no answer in 120 s", ""))
            continue
        out = done.stdout + done.stderr
        if done.returncode < 0:
            wrong.append((name, f"killed by signal {-done.returncode}", out))
        elif any(f in out for f in FAULTS):
            wrong.append((name, "a traceback or a fault in the reader", out))
        elif done.returncode == 0:
            tally["encoded"] += 1
        elif len(out.strip().splitlines()) == 1 and "error: " in out:
            tally["one-line error"] += 1
        else:
            wrong.append((name, f"exit {done.returncode}, not one error line", out))
    total = sum(tally.values()) + len(wrong)
    print(f"{total} damaged files (header {header_end:,} of {len(src):,} bytes): "
          + ", ".join(f"{n} {what}" for what, n in tally.most_common()) + f", {len(wrong)} wrong")
    for name, why, out in wrong:
        print(f"WRONG {name}: {why}\n" + "\n".join("    " + line for line in out.splitlines()[-15:]))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
