#!/usr/bin/env bash
# The long differential run: COUNT generated programs (default 20000) split over
# JOBS niced workers (default 2) on disjoint seed ranges, each running
# bench/difftest.py (C -O0, -O2, -O2 --march x86-64, checked C, Python, every C
# build at 1, 2, 3 and 7 threads; the odd-numbered workers also C -O2 with
# --soft-f32 on every SOFT_EVERY-th batch, default 3) in chunks of CHUNK programs
# (default 600), each chunk with its own JSON counts, so that a run cut short
# still has the counts of its finished chunks. No chunk starts after STOP_AT
# (seconds since the epoch; default: none). EXTRA is passed to every
# difftest.py (e.g. EXTRA=--kernels-only: issue 28's threaded kernel loops only).
# Logs, per-chunk JSON counts and any disagreeing programs go to OUT (default
# difftest-long/). Prints the combined counts at the end; exit status 0 only if
# no chunk found a disagreement, a fold mismatch or an invalid program.
#
#   bash bench/difftest_long.sh                       # 20000 programs, 2 workers
#   COUNT=2000 JOBS=1 FIRST=500000 OUT=/tmp/dt bash bench/difftest_long.sh
#   COUNT=5000 EXTRA=--kernels-only STOP_AT=$(date -d 21:40 +%s) bash bench/difftest_long.sh
set -u
cd "$(dirname "$0")/.."
COUNT=${COUNT:-20000}
JOBS=${JOBS:-2}
FIRST=${FIRST:-100000}
BATCH=${BATCH:-30}
CHUNK=${CHUNK:-600}
STOP_AT=${STOP_AT:-0}
EXTRA=${EXTRA:-}
OUT=${OUT:-difftest-long}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
per=$(( (COUNT + JOBS - 1) / JOBS ))
worker() {      # worker j: seeds [$2, $2 + $3) in chunks
    local j=$1 seed=$2 n=$3 extra=$4 c=0 st=0
    while (( n > 0 )); do
        if (( STOP_AT > 0 && $(date +%s) >= STOP_AT )); then
            echo "worker $j: STOP_AT reached, $n programs not run" >> "$OUT/worker$j.log"; break
        fi
        local m=$(( n < CHUNK ? n : CHUNK ))
        nice -n 10 "$PY" bench/difftest.py --count "$m" --seed "$seed" --batch "$BATCH" $extra $EXTRA \
            --save "$OUT/failures" --json "$OUT/worker$j.$c.json" >> "$OUT/worker$j.log" 2>&1 || st=1
        seed=$(( seed + m )); n=$(( n - m )); c=$(( c + 1 ))
    done
    return $st
}
pids=()
for ((j = 0; j < JOBS; j++)); do
    seed=$(( FIRST + j * per ))
    n=$(( per < COUNT - j * per ? per : COUNT - j * per ))
    extra=""
    if (( j % 2 == 1 )); then extra="--soft-f32 --soft-every ${SOFT_EVERY:-3}"; fi
    worker "$j" "$seed" "$n" "$extra" &
    pids+=($!)
    echo "worker $j: seeds $seed..$(( seed + n - 1 )) $extra $EXTRA (pid $!, log $OUT/worker$j.log)"
done
status=0
for pid in "${pids[@]}"; do
    wait "$pid" || status=1
done
"$PY" - "$OUT" <<'PYEOF'
import glob, json, sys
tot = {"tried": 0, "disagreements": [], "fold_mismatches": [], "invalid": [], "seconds": 0.0, "chunks": 0}
per_worker = {}
for f in sorted(glob.glob(sys.argv[1] + "/worker*.json")):
    d = json.load(open(f))
    tot["tried"] += d["tried"]
    tot["chunks"] += 1
    w = f.rsplit("/", 1)[-1].split(".")[0]
    per_worker[w] = per_worker.get(w, 0.0) + d["seconds"]
    for k in ("disagreements", "fold_mismatches", "invalid"):
        tot[k] += d[k]
tot["seconds"] = max(per_worker.values(), default=0.0)
print(f"long run: {tot['tried']} programs in {tot['chunks']} chunks, {tot['seconds']:.0f} s (wall, longest worker): "
      f"{len(tot['disagreements'])} disagreements {tot['disagreements'][:20]}, "
      f"{len(tot['fold_mismatches'])} fold mismatches, {len(tot['invalid'])} invalid")
json.dump(tot, open(sys.argv[1] + "/summary.json", "w"), indent=1)
PYEOF
exit $status
