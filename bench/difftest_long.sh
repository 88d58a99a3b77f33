#!/usr/bin/env bash
# The long differential run: COUNT generated programs (default 20000) split over
# JOBS niced workers (default 2) on disjoint seed ranges, each running
# bench/difftest.py (C -O0, C -O2, Python; the odd-numbered workers also C -O2
# with --soft-f32 on every SOFT_EVERY-th batch, default 3). Logs, per-worker JSON counts and any disagreeing programs go
# to OUT (default difftest-long/). Prints the combined counts at the end; exit
# status 0 only if no worker found a disagreement, a fold mismatch or an invalid
# program.
#
#   bash bench/difftest_long.sh                       # 20000 programs, 2 workers
#   COUNT=2000 JOBS=1 FIRST=500000 OUT=/tmp/dt bash bench/difftest_long.sh
set -u
cd "$(dirname "$0")/.."
COUNT=${COUNT:-20000}
JOBS=${JOBS:-2}
FIRST=${FIRST:-100000}
BATCH=${BATCH:-30}
OUT=${OUT:-difftest-long}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
per=$(( (COUNT + JOBS - 1) / JOBS ))
pids=()
for ((j = 0; j < JOBS; j++)); do
    seed=$(( FIRST + j * per ))
    n=$(( per < COUNT - j * per ? per : COUNT - j * per ))
    extra=""
    if (( j % 2 == 1 )); then extra="--soft-f32 --soft-every ${SOFT_EVERY:-3}"; fi
    nice -n 10 "$PY" bench/difftest.py --count "$n" --seed "$seed" --batch "$BATCH" $extra \
        --save "$OUT/failures" --json "$OUT/worker$j.json" > "$OUT/worker$j.log" 2>&1 &
    pids+=($!)
    echo "worker $j: seeds $seed..$(( seed + n - 1 )) $extra (pid $!, log $OUT/worker$j.log)"
done
status=0
for pid in "${pids[@]}"; do
    wait "$pid" || status=1
done
"$PY" - "$OUT" <<'EOF'
import glob, json, sys
tot = {"tried": 0, "disagreements": [], "fold_mismatches": [], "invalid": [], "seconds": 0.0}
for f in sorted(glob.glob(sys.argv[1] + "/worker*.json")):
    d = json.load(open(f))
    tot["tried"] += d["tried"]
    tot["seconds"] = max(tot["seconds"], d["seconds"])
    for k in ("disagreements", "fold_mismatches", "invalid"):
        tot[k] += d[k]
print(f"long run: {tot['tried']} programs in {tot['seconds']:.0f} s (wall, longest worker): "
      f"{len(tot['disagreements'])} disagreements {tot['disagreements'][:20]}, "
      f"{len(tot['fold_mismatches'])} fold mismatches, {len(tot['invalid'])} invalid")
json.dump(tot, open(sys.argv[1] + "/summary.json", "w"), indent=1)
EOF
exit $status
