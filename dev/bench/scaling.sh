#!/usr/bin/env bash
# Thread scaling of `smi bench` on a many-core machine (issue 17: "measure it there"): every
# line at each thread count, optionally against a second (before) binary at some of them,
# alternating the two binaries line by line so that both see the same machine state.
#
#   dev/bench/scaling.sh OUT AFTER_BIN [BEFORE_BIN]
#
# Environment (defaults in brackets):
#   THREADS         thread counts for AFTER_BIN ["1 2 4 8 16"]
#   BEFORE_THREADS  thread counts for BEFORE_BIN ["2 16"]
#   LINES           config:method[:draws] items ["boston:smi boston-1h:smi mnist-1:smi:55
#                   mvn-100:smi wave-100-1h:smi boston:svgd"]
#   MIN_SECONDS     timed seconds per line [1.5]
# Writes OUT/scaling.jsonl (smi bench's JSON lines, each with "binary": "after"/"before" and
# "cpu" added), OUT/scaling.log (stderr) and OUT/scaling.md (ms/step by thread count).
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: dev/bench/scaling.sh OUT AFTER_BIN [BEFORE_BIN]" >&2
    exit 2
fi
out=$1
after=$2
before=${3:-}
mkdir -p "$out"
threads=${THREADS:-"1 2 4 8 16"}
bthreads=${BEFORE_THREADS:-"2 16"}
lines=${LINES:-"boston:smi boston-1h:smi mnist-1:smi:55 mvn-100:smi wave-100-1h:smi boston:svgd"}
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/"//g')
echo "cpu: $cpu; $(nproc) CPUs; after: $after; before: ${before:-none}" | tee "$out/scaling.log"
status=0

one() { # label binary config method draws threads
    local args=(bench --config "$3" --method "$4" --threads "$6" --warmup 3
        --min-seconds "${MIN_SECONDS:-1.5}")
    [ -n "$5" ] && args+=(--draws "$5")
    local line
    if line=$(timeout 90 "$2" "${args[@]}" 2>>"$out/scaling.log"); then
        echo "$line" | grep '^{' |
            sed "s/^{/{\"binary\":\"$1\",\"cpu\":\"$cpu\",/" >>"$out/scaling.jsonl"
    else
        echo "FAILED: $1 ${args[*]}" | tee -a "$out/scaling.log"
        status=1
    fi
}

for item in $lines; do
    IFS=: read -r config method draws <<<"$item"
    for t in $threads; do
        one after "$after" "$config" "$method" "${draws:-}" "$t"
        if [ -n "$before" ] && [[ " $bthreads " == *" $t "* ]]; then
            one before "$before" "$config" "$method" "${draws:-}" "$t"
        fi
    done
done

python3 - "$out" <<'PY' | tee "$out/scaling.md"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for l in (out / "scaling.jsonl").read_text().splitlines() if l.strip()]
if not rows:
    sys.exit("no lines measured")
threads = sorted({r["threads"] for r in rows})
print(f"`smi bench`, median ms per step; {rows[0]['cpu']}\n")
print("| binary | config | method | S | " + " | ".join(f"{t} thr" for t in threads)
      + " | 2 → max thr |")
print("|---|---|---|--:|" + "--:|" * len(threads) + "--:|")
seen = []
for r in rows:
    k = (r["binary"], r["config"], r["method"], r["S"])
    if k not in seen:
        seen.append(k)
for k in seen:
    by_t = {r["threads"]: r["ms_per_step"] for r in rows
            if (r["binary"], r["config"], r["method"], r["S"]) == k}
    cells = [f"{by_t[t]:.3f}" if t in by_t else "–" for t in threads]
    top = max(by_t)
    gain = f"{by_t[2] / by_t[top]:.2f}×" if 2 in by_t and top != 2 else "–"
    print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(cells) + f" | {gain} |")
PY
exit "$status"
