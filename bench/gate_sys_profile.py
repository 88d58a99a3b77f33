"""Where a cold gate's system time goes (issue 21, i21k): `run_unit` on a list
of gates in this one process, as a worker of `nxc test` runs them, with the
CPU (user, system) and minor page faults of this process and of each kind of
child it waits for (cc1, as, the linker, the gate's forked child, the gate
host), per gate.

    NXC_CACHE_DIR=/tmp/c python bench/gate_sys_profile.py @/tmp/anti100.txt
    NXC_GATE_HOST=0 NXC_CACHE_DIR=/tmp/c python bench/gate_sys_profile.py @/tmp/anti100.txt   # no gate host

Each child's figures come from os.wait4 (os.waitpid is wrapped for the run):
a child is named by the program it ran (subprocess) or is "gate" (a process
this one forked). With the gate host (nxc/gates/host.py), the gates' children
are the host's, so their CPU is in the "host" row, which is read when the
host is closed at the end. `@FILE` lists the gates, one path a line (see
bench/gate_worker_cpu.py); the cache bounds are those of `nxc test` over the
800-module tree.
"""
from __future__ import annotations

import collections
import os
import resource
import subprocess
import sys
import time

from nxc.cache import expect_entries
from nxc.deep import deep
from nxc.gates import host as gate_host
from nxc.gates.execute import Options, run_unit, warm_up
from gate_worker_cpu import gate_units      # (bench/ is the script's folder, first on sys.path)

_kind_of_pid: dict[int, str] = {}
_totals = collections.defaultdict(lambda: [0, 0.0, 0.0, 0])     # kind -> [count, user, sys, minflt]
_real_waitpid = os.waitpid
_real_popen_init = subprocess.Popen.__init__


def _waitpid(pid, options):
    got, status, usage = os.wait4(pid, options)
    if got:
        t = _totals[_kind_of_pid.pop(got, "gate")]
        t[0] += 1
        t[1] += usage.ru_utime
        t[2] += usage.ru_stime
        t[3] += usage.ru_minflt
    return got, status


def _popen_init(self, args, *a, **kw):
    _real_popen_init(self, args, *a, **kw)
    argv = [args] if isinstance(args, (str, bytes)) else list(args)
    name = os.path.basename(str(argv[0]))
    if "nxc.gates.host" in " ".join(map(str, argv)):
        name = "host"
    _kind_of_pid[self.pid] = name


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    units = gate_units(sys.argv[1])
    expect_entries(800)
    opts = Options(read_results=False, record_results=False)
    warm_up()
    os.waitpid = _waitpid
    subprocess.Popen.__init__ = _popen_init
    gate_host.enable()          # as a worker of nxc test does (NXC_GATE_HOST=0: off)
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()

    @deep
    def run_all():
        for u in units:
            res = run_unit(u, opts)
            if not res[0].passed:
                sys.exit(f"{u.path}: {res[0].status} {res[0].message}")
    run_all()
    wall = time.perf_counter() - t0
    rss = open("/proc/self/statm").read().split()[1]
    gate_host.disable()         # the host's children's figures come with the host's
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    os.waitpid = _real_waitpid
    subprocess.Popen.__init__ = _real_popen_init
    n = len(units)
    print(f"{n} gates, wall {wall / n * 1000:.1f} ms/gate, this process's RSS at the end "
          f"{int(rss) * os.sysconf('SC_PAGE_SIZE') >> 20} MB")
    print(f"{'':10} {'procs':>6} {'user ms':>9} {'sys ms':>9} {'minflt':>9}   (per gate)")
    print(f"{'self':10} {'':>6} {(r1.ru_utime - r0.ru_utime) / n * 1e3:9.1f} "
          f"{(r1.ru_stime - r0.ru_stime) / n * 1e3:9.1f} {(r1.ru_minflt - r0.ru_minflt) / n:9.0f}")
    for kind, (count, user, system, flt) in sorted(_totals.items()):
        print(f"{kind:10} {count / n:6.2f} {user / n * 1e3:9.1f} {system / n * 1e3:9.1f} {flt / n:9.0f}")
    print(f"{'children':10} {'':>6} {(c1.ru_utime - c0.ru_utime) / n * 1e3:9.1f} "
          f"{(c1.ru_stime - c0.ru_stime) / n * 1e3:9.1f} {(c1.ru_minflt - c0.ru_minflt) / n:9.0f}")


if __name__ == "__main__":
    main()
