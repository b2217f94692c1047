#!/usr/bin/env bash
# The GPU session of the CUDA backend in one go (docs/cuda.md), on a machine with an NVIDIA
# GPU, its driver, the CUDA libraries (or JAX's CUDA wheels), Python with JAX and NumPyro,
# and no Rust toolchain. Needs target/gpu-bundle from dev/gpu/build.sh (carry that path).
#
#   1. the backend's tests, GPU ones included (device streams, GPU step = CPU step for the
#      same ε, a short SMI fit against the CPU fit);
#   2. `smi bench --device cuda` (and --device cpu for reference) on boston, boston-1h,
#      mnist-1 S = 55 and S = 10;
#   3. NumPyro's SMI step on the same GPU (python/bench/numpyro_gpu.py);
#   4. one table of the three.
#
# Logs and JSON lines go to $OUT (the device tool's folder) or target/gpu-run. Every stage
# runs even when an earlier one fails; the exit status is that of the first failure.
# Time limits in seconds (for a short device lease): TEST_TIMEOUT (300), BENCH_TIMEOUT per bench
# line (120), NUMPYRO_TIMEOUT (420); NUMPYRO=0 skips stage 3 (its figures already measured).
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=target/gpu-bundle
out=${OUT:-target/gpu-run}
mkdir -p "$out"
py=${PYTHON:-python3}
status=0
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

# 2. smi bench on the GPU, then on the CPU (all cores) for reference
lines=("boston" "boston-1h" "mnist-1 --draws 55" "mnist-1 --draws 10")
for device in cuda cpu; do
    for line in "${lines[@]}"; do
        # shellcheck disable=SC2086 # the line holds two words for mnist
        timeout "${BENCH_TIMEOUT:-120}" "$bundle/smi" bench --method smi --device "$device" --config $line \
            --warmup 5 --min-seconds 2 >>"$out/bench_$device.jsonl" 2>>"$out/bench.log" ||
            fail "smi bench --device $device --config $line (see bench.log)"
    done
done

# 3. NumPyro on the same GPU (compile excluded)
if [ "${NUMPYRO:-1}" != 0 ]; then
    echo "== NumPyro" | tee -a "$out/summary.txt"
    PYTHONUNBUFFERED=1 timeout "${NUMPYRO_TIMEOUT:-420}" "$py" python/bench/numpyro_gpu.py --steps 50 --repeat 3 \
        >"$out/numpyro_gpu.jsonl" 2>"$out/numpyro.log" || fail "numpyro_gpu.py (see numpyro.log)"
fi

# 4. one table
"$py" - "$out" <<'EOF' | tee -a "$out/summary.txt"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
def load(name):
    p = out / name
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip()] if p.exists() else []
def key(r):
    return (r["config"], r["S"])
gpu = {key(r): r for r in load("bench_cuda.jsonl")}
cpu = {key(r): r for r in load("bench_cpu.jsonl")}
npy = {key(r): r for r in load("numpyro_gpu.jsonl")}
card = next(iter(npy.values()), {}).get("device", "?")
print(f"\nSMI step, ms (smi: median of timed steps; NumPyro: jitted lax.scan of update, {card})\n")
print("| config | S | smi --device cuda | smi --device cpu | NumPyro GPU | NumPyro / smi cuda | ≥ 3× |")
print("|---|--:|--:|--:|--:|--:|---|")
for k in [("boston", 100), ("boston-1h", 100), ("mnist-1", 55), ("mnist-1", 10)]:
    g, c, n = gpu.get(k), cpu.get(k), npy.get(k)
    f = lambda r: f"{r['ms_per_step']:.3f}" if r else "–"
    ratio = n["ms_per_step"] / g["ms_per_step"] if g and n else None
    met = "–" if ratio is None else ("yes" if ratio >= 3 else "**no**")
    rs = f"{ratio:.1f}×" if ratio else "–"
    print(f"| {k[0]} | {k[1]} | {f(g)} | {f(c)} | {f(n)} | {rs} | {met} |")
EOF
exit "$status"
