#!/usr/bin/env bash
# CPU time of a job split into N shards against the unsharded job, for `render` (Cornell,
# 16 spp) and `profile` (bunny, every variant): user + system seconds of every process,
# summed over the shards (merge excluded), one thread each, alternating in the same rounds.
# Prints each round's figures and the median ratio (shards / whole) per command.
#
#   scripts/shard-overhead.sh [BINARY] [SHARDS] [ROUNDS]
#
# Defaults: target/release/wavetrace, 4 shards, 5 rounds. PROFILE_INPUT names the profiled
# mesh or scene (default: the shared bunny). PROFILE_OPTS gives the profile's options; by
# default its rays are the diffuse bounces of a 2048x2048 camera, written once to a ray file
# by `wavetrace rays` (968,949 rays on the bunny, a 50-second job with the memory model: the
# million-ray set a user shards; a shard's fixed cost is about 0.15 s, so a 12-second job
# split four ways pays about 4 %, a 2-second one 10-15 %). A round then takes two minutes.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$repo/target/release/wavetrace}
shards=${2:-4}
rounds=${3:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cpu() { # CPU seconds (user + system) of one run of wavetrace "$@"
    /usr/bin/time -f '%U %S' -o "$out/t" "$bin" "$@" >/dev/null 2>"$out/err" || {
        cat "$out/err" >&2
        exit 1
    }
    awk '{ printf "%.3f", $1 + $2 }' "$out/t"
}
render=(render "$repo/scenes/cornell/cornell.toml" --spp 16 --threads 1)
input=${PROFILE_INPUT:-$repo/../shared/data/scenes/bunny.obj.gz}
if [ -z "${PROFILE_OPTS+set}" ]; then
    "$bin" rays "$input" --kind diffuse --size 2048x2048 -o "$out/diffuse.rays" 2>/dev/null
    PROFILE_OPTS="--rays $out/diffuse.rays"
fi
# shellcheck disable=SC2206 # PROFILE_OPTS is split into words on purpose
profile=(profile "$input" --strategies all --threads 1 $PROFILE_OPTS)
for job in render profile; do
    declare -n args=$job
    ext=$([ "$job" = render ] && echo exr || echo wtpart)
    ratios=()
    for round in $(seq 1 "$rounds"); do
        if [ "$job" = render ]; then
            whole=$(cpu "${args[@]}" --memory off -o "$out/whole.png")
        else
            whole=$(cpu "${args[@]}" --json "$out/whole.json")
        fi
        sum=0
        for i in $(seq 0 $((shards - 1))); do
            t=$(cpu "${args[@]}" --shard "$i/$shards" -o "$out/part-$i.$ext")
            sum=$(awk -v a="$sum" -v b="$t" 'BEGIN { printf "%.3f", a + b }')
        done
        ratio=$(awk -v a="$sum" -v b="$whole" 'BEGIN { printf "%.4f", a / b }')
        ratios+=("$ratio")
        echo "$job round $round: whole $whole s, $shards shards $sum s, ratio $ratio"
    done
    median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    echo "$job: median CPU-time ratio, $shards shards / whole: $median"
done
