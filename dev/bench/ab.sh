#!/bin/bash
# Alternates a before and an after binary of `smi bench` (3 rounds per config) and prints each run's ms/step.
# Usage: BEFORE=path/to/old-smi [AFTER=target/release/smi] dev/bench/ab.sh
for cfg in "boston --threads 2" "boston --threads 1" "boston-1h --threads 2" "mnist-1 --draws 55 --threads 2" "mnist-1 --draws 10 --threads 2" "wave-100 --threads 2" "mvn-100 --threads 2"; do
  for r in 1 2 3; do
    for b in before after; do
      bin=${BEFORE:?path of the before binary}; [ $b = after ] && bin=${AFTER:-target/release/smi}
      ms=$($bin bench --config $cfg --method smi 2>&1 | grep -o '"ms_per_step":[0-9.]*' | cut -d: -f2)
      echo "$cfg | $b | $ms"
    done
  done
done
