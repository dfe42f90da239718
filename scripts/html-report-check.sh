#!/usr/bin/env bash
# html-report-check.sh: the HTML pages of `profile --html` and `trace --html`, opened in
# headless Chromium.
#
#   scripts/html-report-check.sh [OUT_DIR]        (default: target/html-report)
#   WAVETRACE=/path/to/wavetrace scripts/html-report-check.sh   (skip the release build)
#
# 1. Installs Debian's chromium with apt-get when /usr/bin/chromium is missing (fails if it
#    cannot).
# 2. Builds the release binary (cargo does nothing when it is up to date), and writes a
#    profile page and a trace page of the shipped Cornell box scene at 64x64 into a temporary
#    directory.
# 3. Loads each page in headless Chromium (--dump-dom) and checks what its own script left on
#    <body>: data-status="ok" (the sort handlers were built), data-errors="" (no uncaught error
#    and no console.error), and that the charts are there: the <svg> count, each variant name
#    of the profile's JSON inside the charts, the busiest-TD lines of the trace.
# 4. Takes a screenshot of each page into OUT_DIR (profile.png, trace.png) and checks that
#    each is a PNG of a plausible size.
#
# Prints one line per check and exits 0 only if every check passed; 1 on any failure.

set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/html-report}
chromium=/usr/bin/chromium

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
ok() {
    echo "ok   $*"
}

# 1. Chromium.
if [ ! -x "$chromium" ]; then
    command -v apt-get >/dev/null || fail "$chromium is missing and there is no apt-get to install it"
    echo "installing chromium with apt-get"
    apt-get update -qq || fail "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null ||
        fail "apt-get install chromium failed"
    [ -x "$chromium" ] || fail "chromium installed but $chromium is missing"
fi
ok "chromium: $("$chromium" --version 2>/dev/null || echo unknown)"

# 2. The binary and the two pages.
bin=${WAVETRACE:-}
if [ -z "$bin" ]; then
    (cd "$root" && cargo build --release --quiet --bin wavetrace) || fail "cargo build --release"
    bin=${CARGO_TARGET_DIR:-$root/target}/release/wavetrace
fi
[ -x "$bin" ] || fail "$bin is not an executable"
mkdir -p "$out" || fail "cannot create $out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

scene=$root/scenes/cornell/cornell.toml
strategies=full-stack,restart-1,fp16,wave64
"$bin" profile "$scene" --size 64x64 --strategies "$strategies" --threads 2 \
    --html "$work/profile.html" --json "$work/profile.json" >"$work/profile.txt" 2>&1 ||
    fail "wavetrace profile: $(tail -3 "$work/profile.txt")"
"$bin" rays "$scene" --kind diffuse --size 64x64 -o "$work/diffuse.rays" >"$work/rays.txt" 2>&1 ||
    fail "wavetrace rays: $(tail -3 "$work/rays.txt")"
"$bin" trace "$scene" --rays "$work/diffuse.rays" -o "$work/diffuse.hits" --threads 2 \
    --html "$work/trace.html" --json "$work/trace.json" >"$work/trace.txt" 2>&1 ||
    fail "wavetrace trace: $(tail -3 "$work/trace.txt")"
ok "wrote profile.html ($(wc -c <"$work/profile.html") bytes), trace.html ($(wc -c <"$work/trace.html") bytes)"

# Headless Chromium with nothing of its own on the network and a fresh profile each time.
browse() {
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --user-data-dir="$(mktemp -d -p "$work")" "$@"
}

# The <body> start tag of the rendered DOM in file $1.
body_tag() {
    grep -o '<body[^>]*>' "$1" | head -n 1
}

# Writes the lines of every <svg> element of the rendered DOM in file $1 to file $2 (a file,
# not a pipe into `grep -q`, which would end awk early and trip pipefail).
svg_lines() {
    awk '/<svg/ { inside = 1 } inside { print } /<\/svg>/ { inside = 0 }' "$1" >"$2"
}

# 3. The pages as the browser built them.
check_dom() {
    local name=$1 min_svgs=$2
    local dom=$work/$name.dom.html
    browse --dump-dom "file://$work/$name.html" >"$dom" 2>"$work/$name.chromium.log" ||
        fail "$name: chromium --dump-dom exited non-zero (see its log: $(tail -2 "$work/$name.chromium.log"))"
    [ -s "$dom" ] || fail "$name: chromium dumped an empty DOM"
    local body
    body=$(body_tag "$dom")
    [[ $body == *'data-status="ok"'* ]] || fail "$name: the page's script did not finish: $body"
    [[ $body == *'data-errors=""'* ]] || fail "$name: errors recorded: $body"
    local svgs
    svgs=$(grep -o '<svg' "$dom" | wc -l)
    [ "$svgs" -ge "$min_svgs" ] || fail "$name: $svgs <svg> elements, expected at least $min_svgs"
    ok "$name: script ran (status ok, no errors), $svgs charts"
}

check_dom profile 5
handlers=$(body_tag "$work/profile.dom.html" | grep -o 'data-sort-handlers="[0-9]*"' | grep -o '[0-9]*')
[ "${handlers:-0}" -ge 26 ] || fail "profile: ${handlers:-no} sort handlers, expected one per column (26)"
ok "profile: $handlers sort handlers"
svg_lines "$work/profile.dom.html" "$work/profile.svg.txt"
names=$(grep -o '"name": "[^"]*"' "$work/profile.json" | sed 's/"name": "\(.*\)"/\1/')
[ "$(echo "$names" | wc -l)" -eq 4 ] || fail "profile: expected 4 variants in the JSON, got: $names"
for name in $names; do
    grep -qxF "$name" "$work/profile.svg.txt" ||
        fail "profile: variant $name is not labelled in any chart"
    grep -qF "<tr data-key=\"$name\">" "$work/profile.dom.html" ||
        fail "profile: variant $name has no row in the table"
done
ok "profile: every variant ($(echo $names | tr ' ' ',')) has a table row and chart labels"

check_dom trace 4
svg_lines "$work/trace.dom.html" "$work/trace.svg.txt"
for max in $(grep -o '"td_clocks_max": [0-9]*' "$work/trace.json" | grep -o '[0-9]*$'); do
    grep -qF "busiest TD: $max clocks" "$work/trace.svg.txt" ||
        fail "trace: no TD chart marks the busiest TD at $max clocks"
done
grep -qF 'Hit rate by cache level' "$work/trace.dom.html" || fail "trace: no memory model chart"
ok "trace: per-TD charts of both consoles, memory model charts"

# 4. Screenshots.
for name in profile trace; do
    png=$out/$name.png
    rm -f "$png"
    browse --hide-scrollbars --window-size=1280,3600 --screenshot="$png" \
        "file://$work/$name.html" >"$work/$name.shot.log" 2>&1 ||
        fail "$name: chromium --screenshot exited non-zero"
    [ -f "$png" ] || fail "$name: no screenshot at $png"
    size=$(wc -c <"$png")
    [ "$size" -gt 50000 ] || fail "$name: screenshot $png is only $size bytes"
    [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ||
        fail "$name: $png is not a PNG"
    ok "$name: screenshot $png ($size bytes)"
done
echo "html report check passed in ${SECONDS} s"
