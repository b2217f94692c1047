#!/usr/bin/env bash
# Builds what dev/gpu/run.sh runs on a GPU machine (which has no Rust toolchain), here on an
# x86-64 Linux machine: the `smi` binary and the smi-models test binary, both with the `cuda`
# feature, stripped into target/gpu-bundle/ (the one path to carry; see docs/cuda.md).
#
#   dev/gpu/build.sh          # then run dev/gpu/run.sh on the GPU machine, carrying
#                             # target/gpu-bundle (the binaries, and boston and MNIST from
#                             # $SMI_DATA_DIR or ../shared/data for the whole runs)
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle=target/gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle"
cargo build --release -p smi-cli --features cuda
cp target/release/smi "$bundle/smi"
# the test binary's path has a hash in it: ask cargo for it
tests=$(cargo test --release -p smi-models --features cuda --lib --no-run \
    --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and \
            m["target"]["name"] == "smi_models" and m["profile"]["test"]:
        print(m["executable"])')
if [ -z "$tests" ]; then
    echo "dev/gpu/build.sh: no smi-models test binary found" >&2
    exit 1
fi
cp "$tests" "$bundle/smi_models_tests"
# unstripped (release has debug = 1) the two are ~150 MB, over the 64 MiB a carry may hold
strip "$bundle/smi" "$bundle/smi_models_tests"
# the data of the whole runs (dev/gpu/run.sh stage 4): boston and MNIST, ~11 MB
data=${SMI_DATA_DIR:-../shared/data}
if [ -d "$data/uci/bostonHousing" ] && [ -d "$data/mnist" ]; then
    mkdir -p "$bundle/data/uci"
    cp -r "$data/uci/bostonHousing" "$bundle/data/uci/"
    cp -r "$data/mnist" "$bundle/data/"
    chmod -R u+w "$bundle/data"
else
    echo "dev/gpu/build.sh: no boston or MNIST under $data (SMI_DATA_DIR): the GPU run skips its whole runs" >&2
fi
size=$(du -sm "$bundle" | cut -f1)
if [ "$size" -gt 60 ]; then
    echo "dev/gpu/build.sh: $bundle is $size MiB, more than a carry may hold (64 MiB)" >&2
    exit 1
fi
git rev-parse HEAD > "$bundle/COMMIT" 2>/dev/null || echo unknown > "$bundle/COMMIT"
du -sh "$bundle"/*
echo "carry: $bundle (run dev/gpu/run.sh on the GPU machine)"
