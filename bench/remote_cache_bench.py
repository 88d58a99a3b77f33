"""A cache shared between machines (issue 32): what a second machine saves,
and what a dead server costs.

    python bench/remote_cache_bench.py                    # 800 modules, nginx (WebDAV)
    python bench/remote_cache_bench.py --modules 50 --server redis

A random tree (bench/gen_tree.py) and a real server started here
(tests/remote_servers.py: nginx with WebDAV, or redis-server), then
`nxc test TREE -q -j 2 --remote-cache URL`:

0. (--baseline) cold without the remote: what uploading costs run 1;
1. cold: empty local cache, empty server (everything built, and uploaded);
2. second machine: an empty local cache, the server warm (every result
   comes from it: PASS (cached));
3. second machine, --rerun: an empty local cache, every gate run (objects
   and libraries from the server, nothing compiled or linked);
4. the server down, from the first machine's cache without its results
   (every gate runs, from local objects): no remote; a refused port; a
   server that accepts and never answers (--remote-cache-timeout T). The
   wall time may grow by one timeout per run, not one per entry.

CPU is the whole process tree's (user + system, os.wait4), the figure to
compare on a shared machine; the load average is printed beside it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import remote_servers  # noqa: E402  (tests/remote_servers.py: the servers the tests start)
from tree_bench import timed  # noqa: E402


def load() -> str:
    return "load %.1f %.1f %.1f" % os.getloadavg()


def run(label: str, tree: str, cache: str, extra: list[str], rows: list, jobs: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NXC_REMOTE_CACHE") and k != "NXC_RUN_ID"}
    env["NXC_CACHE_DIR"] = cache
    before = load()
    r = timed([sys.executable, "-m", "nxc", "test", tree, "-q", "-j", str(jobs), *extra], env)
    warnings = r["output"].count("nxc: warning: remote cache")
    if r["status"] != 0:
        sys.exit(f"{label}: exit {r['status']}\n{r['output'][-3000:]}")
    row = {"run": label, "wall": r["wall"], "cpu": r["cpu"], "warnings": warnings, "load": before,
           "tail": r["output"].strip().splitlines()[-1]}
    rows.append(row)
    print(f"{label:44} wall {r['wall']:7.2f} s  CPU {r['cpu']:7.2f} s  remote warnings {warnings}  "
          f"[{before}]  {row['tail']}", flush=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", type=int, default=800)
    ap.add_argument("--graph", default="random", choices=["random", "clustered"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--server", default="nginx", choices=["nginx", "redis"])
    ap.add_argument("--timeout", type=float, default=2.0, help="--remote-cache-timeout of the silent-server run")
    ap.add_argument("--out", default="/tmp/nxc-remote-bench")
    ap.add_argument("--baseline", action="store_true",
                    help="first a cold run without the remote (what uploading costs a cold run)")
    args = ap.parse_args(argv)

    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    tree = os.path.join(args.out, "tree")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_tree.py"), tree, "--modules", str(args.modules),
                    "--graph", args.graph, "--seed", str(args.seed)], check=True, stdout=subprocess.DEVNULL)
    key = os.path.join(args.out, "key")
    with open(key, "wb") as f:
        f.write(os.urandom(32).hex().encode())
    start = remote_servers.start_nginx if args.server == "nginx" else remote_servers.start_redis
    server = start(os.path.join(args.out, "server"))
    remote = ["--remote-cache", server.url, "--remote-cache-key-file", key]
    rows: list[dict] = []
    print(f"{args.modules}-module {args.graph} tree, {args.server} at {server.url}, -j {args.jobs}", flush=True)
    local = lambda name: os.path.join(args.out, name)       # noqa: E731
    baseline = None
    if args.baseline:
        baseline = run("0. cold, no remote (empty local)", tree, local("c0"), [], rows, args.jobs)
    try:
        cold = run("1. cold (empty local, empty remote)", tree, local("c1"), remote, rows, args.jobs)
        entries = server.count()
        print(f"   the server holds {entries} entries", flush=True)
        second = run("2. second machine (empty local, warm remote)", tree, local("c2"), remote, rows, args.jobs)
        rerun = run("3. second machine, --rerun", tree, local("c3"), remote + ["--rerun"], rows, args.jobs)
    finally:
        server.stop()

    def without_results(name: str) -> str:
        dest = local(name)
        shutil.copytree(local("c1"), dest, symlinks=True)
        shutil.rmtree(os.path.join(dest, "results"), ignore_errors=True)
        return dest

    base = run("4a. no remote (local objects, no results)", tree, without_results("d1"), [], rows, args.jobs)
    closed = remote_servers.free_port()
    refused = run("4b. the server down (connection refused)", tree, without_results("d2"),
                  ["--remote-cache", f"http://127.0.0.1:{closed}/c", "--remote-cache-key-file", key], rows, args.jobs)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(128)
    try:
        hung = run(f"4c. a silent server (--remote-cache-timeout {args.timeout:g})", tree, without_results("d3"),
                   ["--remote-cache", f"http://127.0.0.1:{silent.getsockname()[1]}/c", "--remote-cache-key-file",
                    key, "--remote-cache-timeout", str(args.timeout)], rows, args.jobs)
    finally:
        silent.close()

    print()
    if baseline is not None:
        print(f"cold with the remote / without, CPU: {cold['cpu']:.2f} / {baseline['cpu']:.2f} s = "
              f"{cold['cpu'] / baseline['cpu']:.1%}")
    print(f"second machine / cold, CPU: {second['cpu']:.2f} / {cold['cpu']:.2f} s = {second['cpu'] / cold['cpu']:.1%}")
    print(f"second machine --rerun / cold, CPU: {rerun['cpu']:.2f} / {cold['cpu']:.2f} s = "
          f"{rerun['cpu'] / cold['cpu']:.1%}")
    print(f"server down, wall time over no remote: refused {refused['wall'] - base['wall']:+.2f} s, "
          f"silent {hung['wall'] - base['wall']:+.2f} s (timeout {args.timeout:g} s); "
          f"warnings {refused['warnings']} and {hung['warnings']}")
    print(load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
