#!/usr/bin/env python3
"""Check one generated module N times: for counting the front end's instructions.

Timings on a shared machine swing by 1.5x; an instruction count does not.
Run it under callgrind with 0 and with 1 check and subtract (the difference
is one parse + check, without interpreter start-up or the parser set-up):

    for n in 0 1; do
      PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        "$(python3 -c 'import sys; print(sys.executable)')" bench/frontend_once.py --checks $n 2>&1 | grep Collected
    done

(`sys.executable` because valgrind must see the interpreter itself, not a
shell shim such as pyenv's.)
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nxc.syntax import loader, parse  # noqa: E402
from nxc.diagnostics import Diagnostics  # noqa: E402
from nxc.check.frontend import check_file  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checks", type=int, default=1, help="how many times to check the module (default 1)")
    ap.add_argument("--lines", type=int, default=10_000, help="size of the generated module (default 10000)")
    args = ap.parse_args()
    from run_bench import synthetic_module      # the bench's generator, so the figures compare
    loader.USE_PARSE_CACHE = False
    parse.warm_up()                             # set-up outside the counted difference
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gen.nx")
        with open(path, "w") as f:
            f.write(synthetic_module(args.lines))
        for _ in range(args.checks):
            check_file(path, diags=Diagnostics())
    return 0


if __name__ == "__main__":
    sys.exit(main())
