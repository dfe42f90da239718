#!/usr/bin/env bash
# Replays the reproducers of the hardening review against the release binary: each must
# exit with the expected code, name what is wrong on stderr, and leave no output behind.
# Run from the repository root after `cargo build --release` (CI does).
set -uo pipefail
cd "${REPO:-$(dirname "$0")/..}"
BIN=${WAVETRACE:-${CARGO_TARGET_DIR:-$PWD/target}/release/wavetrace}
SCENES=../shared/data/scenes
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
d=$work/d
mkdir -p "$d"
failures=0
cases=0

# check NAME CODE NEEDLES ABSENT -- COMMAND...
# NEEDLES: words that must all be on stderr, separated by '|'; ABSENT: files that must not
# exist afterwards, separated by '|' ('' for none). No file named *.partial may be left.
check() {
    local name=$1 code=$2 needles=$3 absent=$4
    shift 5
    cases=$((cases + 1))
    local err
    err=$("$@" 2>&1 >/dev/null)
    local got=$?
    local problem=""
    [ "$got" = "$code" ] || problem="exit $got, expected $code"
    local IFS='|'
    for n in $needles; do
        case "$err" in *"$n"*) ;; *) problem="$problem; no '$n' in: $err" ;; esac
    done
    for f in $absent; do
        [ -e "$f" ] && problem="$problem; $f was left"
    done
    unset IFS
    if find "$work" -name '*.partial' | grep -q .; then
        problem="$problem; a .partial file was left"
        find "$work" -name '*.partial' -delete
    fi
    if [ -n "$problem" ]; then
        echo "FAIL $name: $problem"
        failures=$((failures + 1))
    else
        echo "ok   $name"
    fi
}

tri='v 0 0 0
v 1 0 0
v 0 1 0
'
printf '%sf 1 2 3\n' "$tri" > "$work/tri.obj"
"$BIN" rays "$work/tri.obj" --kind primary --size 8x8 -o "$work/tri.rays" > /dev/null 2>&1 || exit 1
camera='[camera]
eye = [0.0, 0.5, 3.0]
look_at = [0.0, 0.5, 0.0]
vfov_deg = 40.0

[film]
width = 4
height = 4
'

# 1. Several outputs: a later one failing leaves none of the earlier ones.
check "render --stats into a missing directory" 2 "--stats|missing" "$d/o.png" -- \
    "$BIN" render scenes/cornell/cornell.toml --spp 1 --out "$d/o.png" --stats "$d/missing/s.json"
check "render --heatmap into a missing directory" 2 "--heatmap|missing" "$d/o.png" -- \
    "$BIN" render scenes/cornell/cornell.toml --spp 1 --out "$d/o.png" --heatmap "$d/missing/h.png"
check "trace --stats into a missing directory" 2 "--stats" "$d/o.hits" -- \
    "$BIN" trace "$work/tri.obj" --rays "$work/tri.rays" --out "$d/o.hits" --stats "$d/missing/s.json"
check "profile --json into a missing directory" 2 "--json" "$d/p.csv" -- \
    "$BIN" profile "$work/tri.obj" --size 8x8 --csv "$d/p.csv" --json "$d/missing/p.json"

# 2. tiling verify: array sizes beyond 32 bits, and an empty case list.
for size in 4294967297 1099511627776; do
    printf '{"cases": [{"id": "LINEAR.2D.R32.big", "swizzle": "LINEAR", "dim": "2D", "format": "R32", "width": 4, "height": 4, "array_size": %s, "mip_levels": 1, "surface": {}, "mips": [{}]}]}' \
        "$size" > "$work/big.json"
    check "tiling verify array_size $size" 2 "array_size" "" -- "$BIN" tiling verify "$work/big.json"
done
printf '{"meta": {}, "cases": []}' > "$work/empty.json"
check "tiling verify with no cases" 2 "empty.json" "" -- "$BIN" tiling verify "$work/empty.json"

# 3. isa: a malformed vector is bad input (exit 2), and --out is not written.
printf '{"cat":"x"}\n' > "$work/m.jsonl"
check "isa on a malformed vector" 2 "m.jsonl:1" "" -- "$BIN" isa "$work/m.jsonl"
check "isa --check on a malformed vector" 2 "m.jsonl:1" "" -- "$BIN" isa --check "$work/m.jsonl"
check "isa --out on a malformed vector" 2 "m.jsonl:1" "$d/g.jsonl" -- \
    "$BIN" isa "$work/m.jsonl" --out "$d/g.jsonl"
check "isa --check on a README" 2 "README.md" "" -- "$BIN" isa --check README.md

# 4 and 5. Signals: bvh and trace stop on SIGINT (130) and SIGTERM (143) and write nothing.
signal() { # signal NAME SIGNAL CODE OUT -- COMMAND...
    local name=$1 sig=$2 code=$3 out=$4
    shift 5
    cases=$((cases + 1))
    "$@" > /dev/null 2> "$work/signal.err" &
    local pid=$!
    sleep 0.4
    kill "-$sig" "$pid" 2> /dev/null
    wait "$pid"
    local got=$?
    if [ "$got" = "$code" ] && [ ! -e "$out" ] && ! find "$work" -name '*.partial' | grep -q .; then
        echo "ok   $name"
    else
        echo "FAIL $name: exit $got (expected $code), $(cat "$work/signal.err")"
        [ -e "$out" ] && echo "     $out was left"
        failures=$((failures + 1))
    fi
}
for sig in INT:130 TERM:143; do
    signal "bvh interrupted by SIG${sig%:*}" "${sig%:*}" "${sig#*:}" "$d/x.bvh" -- \
        "$BIN" bvh "$SCENES/dragon.obj.gz" --threads 1 --splits --dump "$d/x.bvh"
    signal "trace interrupted by SIG${sig%:*}" "${sig%:*}" "${sig#*:}" "$d/x.hits" -- \
        "$BIN" trace "$SCENES/dragon.obj.gz" --threads 1 --splits \
        --rays "$SCENES/sponza_diffuse.rays" --out "$d/x.hits"
done

# 6. Parse errors name file:line.
printf '%svt 0 x\nf 1 2 3\n' "$tri" > "$work/vt.obj"
check "a bad texture coordinate" 2 "vt.obj:4:" "" -- "$BIN" bvh "$work/vt.obj"
mkdir -p "$work/nan"
printf 'v 0 0 0\nv 1 nan 0\nv 0 1 0\nf 1 2 3\n' > "$work/nan/m.obj"
printf '%s\n[[mesh]]\nobj = "m.obj"\n' "$camera" > "$work/nan/scene.toml"
check "render of a NaN vertex" 2 "m.obj:2:" "$d/n.png" -- \
    "$BIN" render "$work/nan/scene.toml" --spp 1 --out "$d/n.png"
check "bvh of a NaN vertex (the same rule)" 2 "m.obj:2:" "" -- "$BIN" bvh "$work/nan/m.obj"
{ printf '%s' "$camera"; printf '# caf\xe9\n'; } > "$work/latin1.toml"
check "a scene file that is not UTF-8" 2 "latin1.toml:9:|UTF-8" "$d/l.png" -- \
    "$BIN" render "$work/latin1.toml" --out "$d/l.png"

# 7. Lenient input is refused.
check "bvh of a file with no triangles" 2 "README.md" "" -- "$BIN" bvh README.md
printf '%s' "$tri" > "$work/points.obj"
check "an OBJ without faces" 2 "points.obj" "" -- "$BIN" bvh "$work/points.obj"
printf '%s' "$camera" > "$work/emptyscene.toml"
check "trace of a scene with nothing in it" 2 "emptyscene.toml" "$d/e.hits" -- \
    "$BIN" trace "$work/emptyscene.toml" --rays "$work/tri.rays" --out "$d/e.hits"
printf '%sf 1 2\n' "$tri" > "$work/two.obj"
check "a 2-vertex face" 2 "two.obj:4:" "" -- "$BIN" bvh "$work/two.obj"
printf '%sf 1/1 2/2 3/3\n' "$tri" > "$work/vtindex.obj"
check "a texture coordinate index out of range" 2 "vtindex.obj:4:" "" -- "$BIN" bvh "$work/vtindex.obj"
mkdir -p "$work/self"
printf '%s\n[[mesh]]\nobj = "scene.toml"\n' "$camera" > "$work/self/scene.toml"
check "a scene that is its own OBJ" 2 "mesh[0].obj" "$d/s.png" -- \
    "$BIN" render "$work/self/scene.toml" --out "$d/s.png"
check "--threads 4294967296" 2 "--threads" "" -- "$BIN" bvh "$work/tri.obj" --threads 4294967296
check "--chains with one triangle per node" 2 "--chains|--tris-per-node" "" -- \
    "$BIN" bvh "$work/tri.obj" --chains --tris-per-node 1

echo "$cases reproducers, $failures failed"
[ "$failures" = 0 ]
