#!/usr/bin/env bash
# The GPU session of the CUDA backend in one go (docs/cuda.md), on a machine with an NVIDIA
# GPU, its driver, the CUDA libraries (or JAX's CUDA wheels), Python with JAX and NumPyro,
# and no Rust toolchain. Needs target/gpu-bundle from dev/gpu/build.sh (carry that path).
#
#   1. the backend's tests, GPU ones included (device streams, GPU step = CPU step for the
#      same ε, a short SMI fit against the CPU fit);
#   2. `smi bench --device cuda` on boston, boston-1h, mnist-1 S = 55 and S = 10, with the
#      particles on the device and again with `--host-update` (the update on the host);
#   3. NumPyro's SMI step on the same GPU (python/bench/numpyro_gpu.py);
#   4. whole runs on the GPU: `smi reproduce uci --device cuda` (boston splits 0-2, SMI at the
#      paper's settings) and one epoch of `smi reproduce mnist --device cuda` (one layer, SMI),
#      on the data the bundle carries;
#   5. smi bench on the machine's CPU cores for reference;
#   6. one table.
#
# Seven files go to $OUT (the device tool's folder; at most 8 come back) or target/gpu-run:
# summary.txt, tests.log, logs.txt, bench.jsonl, numpyro_gpu.jsonl, uci.jsonl, mnist.jsonl.
# Every stage runs even when an earlier one fails; the exit status is that of the first failure.
# Time limits in seconds (for a short device lease): TEST_TIMEOUT (300), BENCH_TIMEOUT per bench
# line (120), NUMPYRO_TIMEOUT (420), UCI_TIMEOUT (240), MNIST_TIMEOUT (240); NUMPYRO=0, UCI=0,
# MNIST=0, CPU_BENCH=0 skip a stage; UCI_SETS and UCI_SPLITS choose the UCI units.
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=target/gpu-bundle
out=${OUT:-target/gpu-run}
mkdir -p "$out"
py=${PYTHON:-python3}
status=0
logs=$out/logs.txt
: >"$logs"
fail() { echo "FAILED: $1" | tee -a "$out/summary.txt"; [ "$status" = 0 ] && status=1; }

if [ ! -x "$bundle/smi" ] || [ ! -x "$bundle/smi_models_tests" ]; then
    echo "no $bundle: run dev/gpu/build.sh on the build machine and carry $bundle" >&2
    exit 2
fi
echo "bundle built from commit $(cat "$bundle/COMMIT" 2>/dev/null)" | tee "$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
    tee -a "$out/summary.txt" || fail "nvidia-smi"

# cudarc loads libcuda, libcublas and libnvrtc by name at run time (libX.so or libX.so.12):
# find the installed ones (toolkit, ldconfig, JAX's nvidia-* wheels) and link them under the
# names it tries; their folders go on LD_LIBRARY_PATH for their own dependencies.
links=$(mktemp -d)
site=$("$py" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null || true)
find_lib() {
    local name=$1 dir
    for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
        /usr/lib/x86_64-linux-gnu $(for s in $site; do echo "$s"/nvidia/*/lib; done); do
        for f in "$dir/lib$name.so" "$dir"/lib"$name".so.[0-9]*; do
            [ -e "$f" ] && { echo "$f"; return 0; }
        done
    done
    ldconfig -p 2>/dev/null | awk -v n="lib$name.so" '$1 ~ "^"n {print $NF; exit}'
}
libpath=$links
for name in nvrtc cublas cublasLt; do
    f=$(find_lib "$name")
    if [ -n "$f" ]; then
        ln -sf "$f" "$links/lib$name.so"
        libpath="$libpath:$(dirname "$f")"
        echo "lib$name: $f" | tee -a "$out/summary.txt"
    else
        echo "lib$name: not found" | tee -a "$out/summary.txt"
    fi
done
export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# 1. tests: the cuda module's, the GPU ones (ignored elsewhere) included; NVRTC must load
echo "== tests" | tee -a "$out/summary.txt"
SMI_EXPECT_NVRTC=1 timeout "${TEST_TIMEOUT:-300}" "$bundle/smi_models_tests" cuda --include-ignored \
    --test-threads 1 >"$out/tests.log" 2>&1 || fail "tests (see tests.log)"
grep -E "^test |test result" "$out/tests.log" | tee -a "$out/summary.txt"

# 2. smi bench on the GPU (the particles on the device, then the update on the host as before,
#    in the same run), then on the CPU (all cores) for reference; one JSON line per case in
#    bench.jsonl, its "device" field saying which
lines=("boston" "boston-1h" "mnist-1 --draws 55" "mnist-1 --draws 10")
bench() {
    local device=$1; shift
    for line in "${lines[@]}"; do
        # shellcheck disable=SC2086 # the line holds two words for mnist
        timeout "${BENCH_TIMEOUT:-120}" "$bundle/smi" bench --method smi --device "$device" "$@" \
            --config $line --warmup 5 --min-seconds 2 >>"$out/bench.jsonl" 2>>"$logs" ||
            fail "smi bench --device $device $* --config $line (see logs.txt)"
    done
}
echo "== bench (GPU)" | tee -a "$out/summary.txt"
bench cuda --profile
bench cuda --host-update --profile

# 3. NumPyro on the same GPU (compile excluded)
if [ "${NUMPYRO:-1}" != 0 ]; then
    echo "== NumPyro" | tee -a "$out/summary.txt"
    PYTHONUNBUFFERED=1 timeout "${NUMPYRO_TIMEOUT:-420}" "$py" python/bench/numpyro_gpu.py --steps 50 --repeat 3 \
        >"$out/numpyro_gpu.jsonl" 2>>"$logs" || fail "numpyro_gpu.py (see logs.txt)"
fi

# 4. whole runs on the GPU, at the paper's settings: UCI SMI units (60 000 steps or early
#    stopping) and one MNIST epoch of one-layer SMI; the data travels in the bundle
data=$bundle/data
scratch=$(mktemp -d)
if [ -d "$data/uci" ] && [ "${UCI:-1}" != 0 ]; then
    echo "== UCI on the GPU: ${UCI_SETS:-boston} splits ${UCI_SPLITS:-0-2}" | tee -a "$out/summary.txt"
    start=$(date +%s)
    SMI_NO_PROGRESS=1 timeout "${UCI_TIMEOUT:-240}" "$bundle/smi" reproduce uci --datasets "${UCI_SETS:-boston}" \
        --splits "${UCI_SPLITS:-0-2}" --methods smi --device cuda --data-dir "$data" \
        --out "$scratch/uci" >>"$logs" 2>&1 || fail "reproduce uci --device cuda (see logs.txt)"
    echo "uci wall seconds: $(( $(date +%s) - start ))" | tee -a "$out/summary.txt"
    cp "$scratch/uci/uci.jsonl" "$out/uci.jsonl" 2>/dev/null
fi
if [ -d "$data/mnist" ] && [ "${MNIST:-1}" != 0 ]; then
    echo "== MNIST one epoch on the GPU" | tee -a "$out/summary.txt"
    start=$(date +%s)
    SMI_NO_PROGRESS=1 timeout "${MNIST_TIMEOUT:-240}" "$bundle/smi" reproduce mnist --layers 1 --methods smi \
        --epochs 1 --device cuda --data-dir "$data" --out "$scratch/mnist" >>"$logs" 2>&1 ||
        fail "reproduce mnist --device cuda (see logs.txt)"
    echo "mnist wall seconds: $(( $(date +%s) - start ))" | tee -a "$out/summary.txt"
    cp "$scratch/mnist/mnist.jsonl" "$out/mnist.jsonl" 2>/dev/null
fi

# 5. smi on the machine's CPU cores, for reference
if [ "${CPU_BENCH:-1}" != 0 ]; then
    echo "== bench (CPU)" | tee -a "$out/summary.txt"
    bench cpu
fi

# 6. one table
"$py" - "$out" <<'EOF2' | tee -a "$out/summary.txt"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
def load(name):
    p = out / name
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip().startswith("{")] if p.exists() else []
def key(r):
    return (r["config"], r["S"])
bench = load("bench.jsonl")
gpu = {key(r): r for r in bench if r.get("device") == "cuda"}
host = {key(r): r for r in bench if r.get("device") == "cuda+host-update"}
cpu = {key(r): r for r in bench if r.get("device") == "cpu"}
npy = {key(r): r for r in load("numpyro_gpu.jsonl")}
card = next(iter(npy.values()), {}).get("device", "?")
print(f"\nSMI step, ms (smi: median of timed steps; NumPyro: jitted lax.scan of update, {card})\n")
print("| config | S | smi cuda | smi cuda, update on the host | smi cpu | NumPyro GPU | NumPyro / smi cuda | ≥ 3× |")
print("|---|--:|--:|--:|--:|--:|--:|---|")
for k in [("boston", 100), ("boston-1h", 100), ("mnist-1", 55), ("mnist-1", 10)]:
    g, h, c, n = gpu.get(k), host.get(k), cpu.get(k), npy.get(k)
    f = lambda r: f"{r['ms_per_step']:.3f}" if r else "–"
    ratio = n["ms_per_step"] / g["ms_per_step"] if g and n else None
    met = "–" if ratio is None else ("yes" if ratio >= 3 else "**no**")
    rs = f"{ratio:.1f}×" if ratio else "–"
    print(f"| {k[0]} | {k[1]} | {f(g)} | {f(h)} | {f(c)} | {f(n)} | {rs} | {met} |")
for name in ("uci.jsonl", "mnist.jsonl"):
    for r in load(name):
        print(name, r.get("dataset", ""), r.get("split", ""), r.get("method"), r.get("config"),
              json.dumps(r.get("metrics")), "seconds", r.get("seconds"))
EOF2
exit "$status"
