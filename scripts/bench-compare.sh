#!/usr/bin/env bash
# Trace speed of two wavetrace binaries on the shared ray sets, alternating in the same
# rounds, one thread pinned to one core: per ray set, each binary's median Mrays/s and the
# median of the per-round ratios (NEW / OLD). Results are the binaries' own `bench` best of
# `--repeat` traces a round; hits and counters are checked by `bench` itself.
#
#   scripts/bench-compare.sh OLD_BINARY NEW_BINARY [ROUNDS] [REPEAT] [CORE]
#
# Defaults: 5 rounds, 5 traces a round, core 1. Extra `bench` options can be given in
# BENCH_OPTS (e.g. BENCH_OPTS="--wave 64" or "--simd portable").
set -euo pipefail
old=$1
new=$2
rounds=${3:-5}
repeat=${4:-5}
core=${5:-1}
repo=$(cd "$(dirname "$0")/.." && pwd)
scenes=$repo/../shared/data/scenes
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for round in $(seq 1 "$rounds"); do
    for which in old new; do
        bin=${!which}
        for scene in bunny sponza; do
            # shellcheck disable=SC2086
            taskset -c "$core" "$bin" bench "$scenes/$scene.obj.gz" \
                --rays "$scenes/${scene}_primary.rays" "$scenes/${scene}_diffuse.rays" \
                --repeat "$repeat" --threads 1 ${BENCH_OPTS:-} \
                --json "$out/$which-$scene-$round.json" >/dev/null
        done
    done
done
python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rates = {}
for which in ("old", "new"):
    for scene in ("bunny", "sponza"):
        for r in range(1, rounds + 1):
            report = json.load(open(f"{out}/{which}-{scene}-{r}.json"))
            for row in report["rows"]:
                name = row["rays_file"].rsplit("/", 1)[-1].removesuffix(".rays")
                rates.setdefault((name, which), []).append(row["best_rays_per_second"] / 1e6)
print(f"{'ray set':18} {'old Mr/s':>9} {'new Mr/s':>9} {'ratio':>7}  per-round ratios")
worst = None
for name in sorted({n for n, _ in rates}):
    old, new = rates[(name, "old")], rates[(name, "new")]
    ratios = [n / o for o, n in zip(old, new)]
    median = statistics.median(ratios)
    worst = median if worst is None else min(worst, median)
    print(f"{name:18} {statistics.median(old):9.3f} {statistics.median(new):9.3f} "
          f"{median:7.3f}  {' '.join(f'{x:.3f}' for x in ratios)}")
print(f"lowest median ratio: {worst:.3f}")
EOF
