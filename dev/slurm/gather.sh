#!/usr/bin/env bash
# Gathers the records of a Slurm array of `smi reproduce EXPERIMENT` (dev/slurm/uci-array.sbatch)
# into $SMI_OUT/EXPERIMENT.jsonl and rebuilds the tables (smi report --out $SMI_OUT). A record
# already there (the same line) is not appended again, so gathering twice changes nothing.
#
#   sbatch --dependency=afterany:$jid dev/slurm/gather.sh uci
#
# Environment: SMI_BIN (default: smi on PATH), SMI_OUT (default: runs/<experiment>).
#SBATCH --job-name=smi-gather
#SBATCH --cpus-per-task=1
#SBATCH --time=00:30:00
set -euo pipefail
experiment=${1:-uci}
smi=${SMI_BIN:-smi}
out=${SMI_OUT:-runs/$experiment}
shopt -s nullglob
shards=("$out"/shards/*/"$experiment".jsonl)
if [ ${#shards[@]} -eq 0 ]; then
    echo "gather: no shard records under $out/shards/*/$experiment.jsonl" >&2
    exit 1
fi
touch "$out/$experiment.jsonl"
before=$(wc -l < "$out/$experiment.jsonl")
# Lines of the shards not yet in the gathered file, in shard order, each once.
awk -v gathered="$out/$experiment.jsonl" \
    'BEGIN { while ((getline line < gathered) > 0) seen[line] = 1 } !seen[$0]++' \
    "${shards[@]}" > "$out/.$experiment.new"
cat "$out/.$experiment.new" >> "$out/$experiment.jsonl"
rm -f "$out/.$experiment.new"
after=$(wc -l < "$out/$experiment.jsonl")
echo "gather: $((after - before)) new records from ${#shards[@]} shards into $out/$experiment.jsonl" >&2
"$smi" report --out "$out"
