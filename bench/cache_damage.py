"""Damage every file of a warm cache in turn, and check that nxc still says the same.

    python bench/cache_damage.py [--quick] [--damage delete flip ...] [--keep DIR]

A small tree is written to a temporary folder: two libraries (leaf.nx, m.nx,
whose `poke` importers copy), a gate that passes (ok.nx), one that fails
(bad.nx: "returned 7") and one that faults in an imported module (g.nx: a
wild read located at m.nx:4:12, `poke` on its .nx stack). It is run once
with a fresh cache folder, on both backends, and the outcome of every item is
noted. Then, for each file of that cache (lock files aside) and each kind of
damage, the warm cache is put back, that one file is damaged, and

    nxc test . -j 2 --backend both         (what a cached pass says)
    nxc test . -j 2 --backend both --rerun (every gate run again)
    nxc test . -j 2 --backend both         (what the first two left)

must each give the same outcome for every item, the same exit code, the
fault still located, and no traceback; and the Python API
(`nxc.load("m.nx")`, checked and unchecked, whose single-file builds and
cffi modules are entries of their own) must still give mid(3) = 9. Damage: delete, flip (one byte in the
middle), truncate (to half), empty, garbage (two bytes that are not UTF-8
put in front).

--quick: one file of each kind of entry (names with their hex keys folded),
flipped and with garbage in front (the damages that leave a file there but
wrong: what found this bench's defects), and only the --rerun run: the
bounded version the suite runs (tests/test_cache_damage.py).

--remote: the entries damaged are those of a shared cache (nginx with
WebDAV, as tests/remote_servers.py starts it) that the first run filled;
each case then runs from an empty local cache, as a second CI machine does.

Exit status 1 when any case differs; each one is printed with the end of
its output.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LEAF = """func leaf_twice(x: i64) -> i64 { return x * 2 }
func leaf_sum(n: i64) -> i64 {
    var s: i64 = 0
    var i: i64 = 0
    while i < n {
        s = s + i
        i = i + 1
    }
    return s
}
"""
MID = """import "leaf.nx"
func poke(p: *i64, i: i64) -> i64 {
    let q: *i64 = (p as i64 + i * 8) as *i64
    return *q
}
func mid(x: i64) -> i64 { return leaf_twice(x) + leaf_sum(3) }
"""
FAULTS = """import "m.nx"
func main() -> i64 {
    let p: *i64 = 4096 as *i64
    return poke(p, 100000000)
}
"""
PASSES = """import "m.nx"
func main() -> i64 {
    if mid(3) != 9 { return 1 }
    return 0
}
"""
FAILS = """import "leaf.nx"
func main() -> i64 {
    if leaf_twice(2) != 5 { return 7 }
    return 0
}
"""
TREE = {"leaf.nx": LEAF, "m.nx": MID, "g.nx": FAULTS, "ok.nx": PASSES, "bad.nx": FAILS}
API = "import nxc; print(nxc.load('m.nx').mid(3), nxc.load('m.nx', checked=False).mid(3))"
DAMAGES = ("delete", "flip", "truncate", "empty", "garbage")
ITEM = re.compile(r"^\[\s*\d+/\d+\] (\S+(?: \(cached\))?)\s+(\S+)", re.M)


def outcome(code: int, out: str) -> tuple:
    """What a run said: its exit code and {(item, status)} (a cached pass is a pass)."""
    items = frozenset((name, status.replace(" (cached)", "")) for status, name in ITEM.findall(out))
    return code, items


def wrong(out: str) -> str | None:
    """What is wrong with a run's output whatever its items say, or None."""
    if "Traceback" in out:
        return "a traceback"
    if "m.nx:4:12" not in out or "in poke" not in out:
        return "the fault is not located"
    if "returned 7" not in out:
        return "the failing gate's return is not said"
    return None


def damage(path: str, how: str) -> None:
    if how == "delete":
        os.unlink(path)
        return
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if how == "flip" and data:
        data[len(data) // 2] ^= 0x5A
    elif how == "truncate":
        data = data[:len(data) // 2]
    elif how == "garbage":
        data = b"\xff\xfe" + data
    elif how == "empty":
        data = b""
    with open(path, "wb") as f:
        f.write(bytes(data))


def kind_of(rel: str) -> str:
    return re.sub(r"[0-9a-f]{8,}", "K", rel)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one file per kind, flipped and with garbage, one run")
    ap.add_argument("--remote", action="store_true",
                    help="damage the entries of a shared cache (nginx, WebDAV) instead, each case from an "
                         "empty local cache")
    ap.add_argument("--damage", nargs="+", choices=DAMAGES, default=None,
                    help="which damages (default: all five; with --quick: flip and garbage)")
    ap.add_argument("--keep", help="work in this folder (kept) instead of a temporary one")
    args = ap.parse_args()
    if args.damage is None:
        args.damage = ["flip", "garbage"] if args.quick else list(DAMAGES)
    work = args.keep or tempfile.mkdtemp(prefix="nxc-cache-damage-")
    os.makedirs(work, exist_ok=True)
    tree, cache, warm = (os.path.join(work, n) for n in ("tree", "cache", "warm"))
    os.makedirs(tree, exist_ok=True)
    for name, text in TREE.items():
        with open(os.path.join(tree, name), "w", encoding="utf-8") as f:
            f.write(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NXC_REMOTE_CACHE")}
    env["NXC_CACHE_DIR"] = cache
    server = None
    if args.remote:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import remote_servers           # tests/remote_servers.py: the servers the tests start
        server = remote_servers.start_nginx(os.path.join(work, "server"))
        env.update(NXC_REMOTE_CACHE=server.url, NXC_REMOTE_CACHE_KEY="cache-damage-bench-shared-key")

    def run(*extra) -> tuple[int, str]:
        done = subprocess.run([sys.executable, "-m", "nxc", "test", ".", "-j", "2", "--backend", "both", *extra],
                              cwd=tree, env=env, capture_output=True, text=True, timeout=600)
        return done.returncode, done.stdout + done.stderr

    def api() -> str | None:
        """What is wrong with the API's answer, or None."""
        if args.remote:
            return None                 # nxc.load keeps a local cache only
        done = subprocess.run([sys.executable, "-c", API], cwd=tree, env=env, capture_output=True, text=True,
                              timeout=600)
        return None if done.returncode == 0 and done.stdout == "9 9\n" else \
            f"nxc.load: exit {done.returncode}, {(done.stdout + done.stderr)[-800:]}"

    try:
        for d in (cache, warm):
            shutil.rmtree(d, ignore_errors=True)
        first = run()
        problem = wrong(first[1])
        if problem is not None or first[0] != 1:
            print(f"the undamaged run is not as expected ({problem or f'exit {first[0]}'}):\n{first[1]}")
            return 1
        expected = outcome(*first)
        problem = api()
        if problem is not None:
            print(f"the undamaged API call is not as expected: {problem}")
            return 1
        again = run()
        if outcome(*again) != expected:
            print(f"a second undamaged run differs: {sorted(outcome(*again)[1] ^ expected[1])}, exit {again[0]} "
                  f"and {first[0]}:\n{again[1]}\nthe first:\n{first[1]}")
            return 1
        # What is damaged: the local cache, or the server's entries (each case then from an empty local cache).
        damaged = server.data if server is not None else cache
        shutil.copytree(damaged, warm, symlinks=True)
        files = sorted(os.path.relpath(os.path.join(d, f), warm) for d, _, fs in os.walk(warm) for f in fs
                       if not f.endswith(".lock"))
        cases = [(rel, how) for rel in files for how in args.damage]
        runs = [(), ("--rerun",), ()]
        if args.quick:
            by_kind: dict[str, str] = {}
            for rel in files:
                by_kind.setdefault(kind_of(rel), rel)
            cases = [(rel, how) for rel in sorted(by_kind.values()) for how in args.damage]
            runs = [("--rerun",)]
        bad = 0
        for rel, how in cases:
            shutil.rmtree(cache, ignore_errors=True)
            if server is not None:
                shutil.rmtree(server.data)
            shutil.copytree(warm, damaged, symlinks=True)
            damage(os.path.join(damaged, rel), how)
            for extra in runs:
                code, out = run(*extra)
                problem = wrong(out) or (None if outcome(code, out) == expected else
                                         f"outcomes {sorted(outcome(code, out)[1])}, exit {code}")
                if problem is not None:
                    bad += 1
                    tail = "\n".join("    " + line for line in out.splitlines()[-20:])
                    print(f"DIFFERS: {rel} ({how}), nxc test {' '.join(extra)}: {problem}\n{tail}", flush=True)
                    break
            else:
                problem = api()
                if problem is not None:
                    bad += 1
                    print(f"DIFFERS: {rel} ({how}), {problem}", flush=True)
        where = "shared cache entries" if server is not None else "cache files"
        print(f"{len(expected[1])} items; {len(files)} {where}, {len(cases)} cases ({', '.join(args.damage)}), "
              f"{len(runs)} run{'s' if len(runs) > 1 else ''} each: {bad} differ")
        return 1 if bad else 0
    finally:
        if server is not None:
            server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
