#!/usr/bin/env bash
# A before and an after binary of `smi bench`, alternated round by round on the same pinned CPUs,
# for a quiet comparison (issue 17: "before and after in one run"; on a many-core machine the
# pinned cores see no neighbour, which a 2-vCPU VM cannot give).
#
#   dev/bench/pinned.sh OUT BEFORE_BIN AFTER_BIN
#
# Environment (defaults in brackets):
#   LINES        items config:method:draws:threads:rounds, run in this order
#                ["boston:smi::2:7 boston:smi::1:5 mnist-1:smi:55:2:5 mnist-1:smi:55:1:3
#                  boston:smi::16:3 mnist-1:smi:55:16:3"]
#   CPUS2        CPUs for lines of 2 threads [two of this process's CPUs on different cores
#                (per /sys topology), CPU 0 left out where more than two]; CPUS1 for 1 thread
#                [the first of CPUS2]; other thread counts are not pinned
#   MIN_SECONDS  timed seconds per measurement [2]
#   BUDGET       seconds after which no new line starts [unlimited]
# Writes OUT/pinned.jsonl (smi bench's JSON lines with "binary", "round", "cpus" and "cpu"
# added), OUT/pinned.log (stderr) and OUT/pinned.md (median of the rounds' medians per binary,
# the median of the rounds' after/before ratios, and the fastest median of each).
set -uo pipefail
if [ $# -ne 3 ]; then
    echo "usage: dev/bench/pinned.sh OUT BEFORE_BIN AFTER_BIN" >&2
    exit 2
fi
out=$1
before=$2
after=$3
mkdir -p "$out"
lines=${LINES:-"boston:smi::2:7 boston:smi::1:5 mnist-1:smi:55:2:5 mnist-1:smi:55:1:3 boston:smi::16:3 mnist-1:smi:55:16:3"}
cpus2=${CPUS2:-$(python3 - <<'PY'
import os
def siblings(c):
    path = f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"
    try:
        text = open(path).read().strip()
    except OSError:
        return {c}
    out = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
cpus = sorted(os.sched_getaffinity(0))
pick = []
for c in cpus:
    if c == 0 and len(cpus) > 2:
        continue
    if all(c not in siblings(p) for p in pick):
        pick.append(c)
    if len(pick) == 2:
        break
print(",".join(map(str, pick)))
PY
)}
cpus1=${CPUS1:-${cpus2%%,*}}
budget=${BUDGET:-0}
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/"//g')
echo "cpu: $cpu; $(nproc) CPUs; before: $before; after: $after; 2 threads on $cpus2, 1 on $cpus1" |
    tee "$out/pinned.log"
status=0
start=$SECONDS

one() { # label binary config method draws threads round
    local args=(bench --config "$3" --method "$4" --threads "$6" --warmup 3
        --min-seconds "${MIN_SECONDS:-2}")
    [ -n "$5" ] && args+=(--draws "$5")
    local pin=() cpus=all line
    case $6 in
    1) pin=(taskset -c "$cpus1") cpus=$cpus1 ;;
    2) pin=(taskset -c "$cpus2") cpus=$cpus2 ;;
    esac
    if line=$(timeout 120 "${pin[@]}" "$2" "${args[@]}" 2>>"$out/pinned.log"); then
        echo "$line" | grep '^{' |
            sed "s/^{/{\"binary\":\"$1\",\"round\":$7,\"cpus\":\"$cpus\",\"cpu\":\"$cpu\",/" \
                >>"$out/pinned.jsonl"
    else
        echo "FAILED: $1 ${args[*]}" | tee -a "$out/pinned.log"
        status=1
    fi
}

for item in $lines; do
    if [ "$budget" -gt 0 ] && [ $((SECONDS - start)) -ge "$budget" ]; then
        echo "budget of $budget s spent: $item and later lines not run" | tee -a "$out/pinned.log"
        break
    fi
    IFS=: read -r config method draws threads rounds <<<"$item"
    for r in $(seq "${rounds:-3}"); do
        one before "$before" "$config" "$method" "$draws" "$threads" "$r"
        one after "$after" "$config" "$method" "$draws" "$threads" "$r"
    done
done

python3 - "$out" <<'EOF' | tee "$out/pinned.md"
import json, pathlib, statistics as st, sys
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for l in (out / "pinned.jsonl").read_text().splitlines() if l.strip()]
keys = []
for r in rows:
    k = (r["config"], r["method"], r["S"], r["threads"], r["cpus"])
    if k not in keys:
        keys.append(k)
print(f"{rows[0]['cpu'] if rows else '?'}: ms per step (smi bench medians), rounds alternated\n")
print("| config | method | S | threads | CPUs | rounds | before | after | after/before | fastest before / after |")
print("|---|---|--:|--:|---|--:|--:|--:|--:|--:|")
for k in keys:
    sel = [r for r in rows if (r["config"], r["method"], r["S"], r["threads"], r["cpus"]) == k]
    b = {r["round"]: r["ms_per_step"] for r in sel if r["binary"] == "before"}
    a = {r["round"]: r["ms_per_step"] for r in sel if r["binary"] == "after"}
    both = sorted(set(a) & set(b))
    if not both:
        continue
    ratio = st.median(a[i] / b[i] for i in both)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {len(both)} | "
          f"{st.median(b[i] for i in both):.3f} | {st.median(a[i] for i in both):.3f} | "
          f"{ratio:.3f} ({1 / ratio:.2f}×) | {min(b.values()):.3f} / {min(a.values()):.3f} |")
EOF
exit "$status"
