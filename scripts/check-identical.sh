#!/usr/bin/env bash
# check-identical.sh: two wavetrace binaries produce the same observable output.
#
#   scripts/check-identical.sh OLD_BINARY NEW_BINARY [--quick]
#   e.g. scripts/check-identical.sh /path/to/old/wavetrace target/release/wavetrace
#
# Every case runs once with OLD and once with NEW, in the same (temporary) directory, with the
# same arguments; each run must exit 0, both runs must write the same set of files, and each
# file must match byte for byte:
#   - hit files (trace --out), BVH images (bvh --dump), PNG/EXR images (render, heatmaps):
#     compared raw with cmp;
#   - JSON (trace/render --stats, bvh --json, profile --json, bench --json): compared byte for
#     byte after the values of the host-timing fields below are replaced by a placeholder
#     (keys, key order, formatting and every other value still count);
#   - profile CSV and the text printed on stdout/stderr: compared after the host-time
#     columns/figures below are masked.
# Masked because they vary between two runs of the same binary or name the host, never
# because they are model output:
#   trace --stats    build_seconds, trace_seconds, report.host.{cpu, seconds, rays_per_second,
#                    instructions_per_second, box_tests_per_second},
#                    report.host.box_rate_share_of_peak[*][1]
#   trace stdout     "BVH built in X s", "traced in X s", the host emulation block's CPU name,
#                    seconds and rates
#   bvh --json       load_seconds, build_seconds, encode_seconds, build_encode_cpu_seconds,
#                    validate_seconds, repeat_build_encode_seconds
#   bvh table        the "load (parse) s", "build s", "encode s", "build+encode CPU s",
#                    "build+encode s", "validate s" lines' values
#   profile          reference_seconds, variants[*].host_seconds; CSV column host_seconds;
#                    table column "host s" and "canonical reference X s"
#   render           stats.seconds; "BVH N bytes in X s", "in X s:", "X Mrays/s"
#   bench            cpu, build_seconds, rows[*].{best_rays_per_second, median_rays_per_second,
#                    best_ns_per_lane_step, seconds}; table columns best/median Mr/s, ns/step,
#                    "BVH built in X s", "host CPU:" line
# Thread counts are not masked: every case passes --threads explicitly.
#
# Output: one line per case ("ok   ...", "DIFF ...: the first differing file and JSON key or
# line", "FAIL ...: a run exited non-zero or did not write an expected file"), then a summary.
# Exit 0 only if every case matched; 1 otherwise; 2 on a usage or internal error. --quick runs
# a small subset (well under a minute).
#
# Needs bash, coreutils, cmp, python3 (standard library). The inputs are those of the checkout
# holding this script: the shared data at <repo>/../shared/data/scenes and the scenes under
# <repo>/scenes; output paths are relative to the run directory, so they read the same in both
# runs. Cases with --simd avx2 are skipped (and counted as such) on a CPU without AVX2.
# Runtime on 2 cores: about 4 minutes for the full set, 10-20 seconds with --quick.
#
# An OLD binary from any commit:
#   git worktree add /tmp/old <commit> && (cd /tmp/old && cargo build --release)
#   scripts/check-identical.sh /tmp/old/target/release/wavetrace target/release/wavetrace
#   git worktree remove /tmp/old
set -euo pipefail

usage() {
    echo "usage: $0 OLD_BINARY NEW_BINARY [--quick]" >&2
    exit 2
}

quick=0
bins=()
for arg in "$@"; do
    case $arg in
        --quick) quick=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) usage ;;
        *) bins+=("$arg") ;;
    esac
done
[[ ${#bins[@]} -eq 2 ]] || usage

abs_bin() {
    local p=$1
    [[ -f $p && -x $p ]] || { echo "$0: not an executable file: $p" >&2; exit 2; }
    echo "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"
}
OLD=$(abs_bin "${bins[0]}")
NEW=$(abs_bin "${bins[1]}")

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA=$(cd "$REPO/../shared/data/scenes" 2>/dev/null && pwd) || {
    echo "$0: shared data not found at $REPO/../shared/data/scenes" >&2; exit 2; }
SCENES=$REPO/scenes
for f in bunny.obj.gz sponza.obj.gz dragon.obj.gz bunny_primary.rays bunny_diffuse.rays \
         sponza_primary.rays sponza_diffuse.rays; do
    [[ -f $DATA/$f ]] || { echo "$0: missing $DATA/$f" >&2; exit 2; }
done
for f in cornell/cornell.toml bunny/bunny.toml sky/sky.toml; do
    [[ -f $SCENES/$f ]] || { echo "$0: missing $SCENES/$f" >&2; exit 2; }
done

if grep -qw avx2 /proc/cpuinfo 2>/dev/null; then have_avx2=1; else have_avx2=0; fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/check-identical.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'echo "$0: internal error at line $LINENO (exit status $?)" >&2; exit 2' ERR

# ---------------------------------------------------------------------------------------------
# Normaliser: `norm.py KIND FILE OUT` writes FILE with its host-timing values masked to OUT;
# `norm.py --explain KIND OLD NEW` describes the first difference of two files.
cat > "$TMP/norm.py" <<'PY'
import csv, io, json, json.decoder, os, re, struct, sys

MASK = '"<host>"'

# JSON value paths to mask, per subcommand; '*' matches any array index.
JSON_MASKS = {
    'trace': [
        'build_seconds', 'trace_seconds',
        'report/host/cpu', 'report/host/seconds', 'report/host/rays_per_second',
        'report/host/instructions_per_second', 'report/host/box_tests_per_second',
        'report/host/box_rate_share_of_peak/*/1',
    ],
    'bvh': [
        'load_seconds', 'build_seconds', 'encode_seconds', 'build_encode_cpu_seconds',
        'validate_seconds', 'repeat_build_encode_seconds',
    ],
    'profile': ['reference_seconds', 'variants/*/host_seconds'],
    'render': ['stats/seconds'],
    'bench': [
        'cpu', 'build_seconds', 'rows/*/best_rays_per_second',
        'rows/*/median_rays_per_second', 'rows/*/best_ns_per_lane_step', 'rows/*/seconds',
    ],
}

# CSV columns to mask, per subcommand.
CSV_MASKS = {'profile': ['host_seconds']}

NUM = r'[-+0-9.eE]+|inf|NaN'

# Text (stdout/stderr) substitutions, per subcommand, applied line by line.
TEXT_MASKS = {
    'trace': [
        (r'BVH built in (%s) s' % NUM, 'BVH built in <host> s'),
        (r'traced in (%s) s' % NUM, 'traced in <host> s'),
    ],
    'bvh': [
        (r'^((?:load \(parse\)|build|encode|build\+encode CPU|build\+encode|validate) s)\s.*$',
         r'\1 <host>'),
    ],
    'profile': [
        (r'^(\s*\d+\s.*\S)\s+(%s)$' % NUM, r'\1 <host>'),
        (r'canonical reference (%s) s' % NUM, 'canonical reference <host> s'),
    ],
    'render': [
        (r'BVH (\d+) bytes in (%s) s' % NUM, r'BVH \1 bytes in <host> s'),
        (r' in (%s) s: ' % NUM, ' in <host> s: '),
        (r', (%s) Mrays/s' % NUM, ', <host> Mrays/s'),
    ],
    'bench': [
        (r'BVH built in (%s) s' % NUM, 'BVH built in <host> s'),
        (r'^host CPU: .*$', 'host CPU: <host>'),
        (r'^(\S+\s+\S+\s+\S+\s+\d+)\s+(%s)\s+(%s)\s+(%s)\s+(%s)$' % (NUM, NUM, NUM, NUM),
         r'\1 <host> <host> \4 <host>'),
    ],
}


def mask_trace_host_block(lines):
    """trace: the 'host emulation (CPU, N threads, X s)' block measures the host."""
    out, in_block = [], False
    for line in lines:
        m = re.match(r'^host emulation \((.*), (\d+ threads?), (%s) s\)$' % NUM, line)
        if m:
            in_block = True
            out.append('host emulation (<host>, %s, <host> s)' % m.group(2))
            continue
        if in_block:
            if line.strip() == '':
                in_block = False
            else:
                line = re.sub(r'\s+(%s)( %%)?$' % NUM, r' <host>\2', line)
        out.append(line)
    return out


# --- JSON with byte spans --------------------------------------------------------------------

WS = re.compile(r'[ \t\n\r]*')
SCALAR = re.compile(r'-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null')


def parse_spans(s):
    """Parse JSON text s; return [(path, start, end)] for every value (path: tuple)."""
    spans = []

    def value(i, path):
        i = WS.match(s, i).end()
        start = i
        c = s[i]
        if c == '{':
            i = WS.match(s, i + 1).end()
            if s[i] == '}':
                i += 1
            else:
                while True:
                    if s[i] != '"':
                        raise ValueError('key expected at %d' % i)
                    key, i = json.decoder.scanstring(s, i + 1)
                    i = WS.match(s, i).end()
                    if s[i] != ':':
                        raise ValueError(': expected at %d' % i)
                    i = value(i + 1, path + (key,))
                    i = WS.match(s, i).end()
                    if s[i] == ',':
                        i = WS.match(s, i + 1).end()
                        continue
                    if s[i] != '}':
                        raise ValueError('} expected at %d' % i)
                    i += 1
                    break
        elif c == '[':
            i = WS.match(s, i + 1).end()
            n = 0
            if s[i] == ']':
                i += 1
            else:
                while True:
                    i = value(i, path + (n,))
                    n += 1
                    i = WS.match(s, i).end()
                    if s[i] == ',':
                        i += 1
                        continue
                    if s[i] != ']':
                        raise ValueError('] expected at %d' % i)
                    i += 1
                    break
        elif c == '"':
            _, i = json.decoder.scanstring(s, i + 1)
        else:
            m = SCALAR.match(s, i)
            if not m:
                raise ValueError('value expected at %d' % i)
            i = m.end()
        spans.append((path, start, i))
        return i

    end = value(0, ())
    if s[WS.match(s, end).end():] != '':
        raise ValueError('trailing data at %d' % end)
    return spans


def matches(path, pattern):
    pat = pattern.split('/')
    return len(pat) == len(path) and all(
        p == '*' and isinstance(k, int) or p == str(k) for p, k in zip(pat, path))


def mask_json(s, kind):
    spans = parse_spans(s)
    hits = sorted((a, b) for path, a, b in spans
                  if any(matches(path, p) for p in JSON_MASKS.get(kind, [])))
    out, pos = [], 0
    for a, b in hits:
        if a < pos:          # inside a value already masked
            continue
        out.append(s[pos:a])
        out.append(MASK)
        pos = b
    out.append(s[pos:])
    return ''.join(out)


def is_json(name, s):
    return name.endswith('.json') or (os.path.basename(name) == 'stdout'
                                      and s.lstrip().startswith('{'))


def mask_csv(s, kind):
    cols = CSV_MASKS.get(kind, [])
    lines = s.split('\n')
    if not cols or not lines:
        return s
    header = lines[0].split(',')
    idx = [header.index(c) for c in cols if c in header]
    out = [lines[0]]
    for line in lines[1:]:
        quoted = '"' in line
        f = next(csv.reader([line])) if quoted else line.split(',')
        if len(f) == len(header):
            for i in idx:
                f[i] = '<host>'
        if quoted:
            buf = io.StringIO()
            csv.writer(buf, lineterminator='').writerow(f)
            out.append(buf.getvalue())
        else:
            out.append(','.join(f))
    return '\n'.join(out)


def mask_text(s, kind):
    lines = s.split('\n')
    if kind == 'trace':
        lines = mask_trace_host_block(lines)
    for pat, rep in TEXT_MASKS.get(kind, []):
        rx = re.compile(pat)
        lines = [rx.sub(rep, line) for line in lines]
    return '\n'.join(lines)


def normalise(kind, name, data):
    try:
        s = data.decode('utf-8')
    except UnicodeDecodeError:
        return data
    if is_json(name, s):
        try:
            return mask_json(s, kind).encode()
        except (ValueError, IndexError):
            return data          # not valid JSON: compared raw, reported as such
    if name.endswith('.csv'):
        return mask_csv(s, kind).encode()
    return mask_text(s, kind).encode()


# --- explaining a difference -----------------------------------------------------------------

class Raw(str):
    pass


def flatten(o, path=''):
    if isinstance(o, dict):
        if not o:
            yield path or '/', '{}'
        for k, v in o.items():
            yield from flatten(v, path + '/' + k)
    elif isinstance(o, list):
        if not o:
            yield path or '/', '[]'
        for i, v in enumerate(o):
            yield from flatten(v, '%s[%d]' % (path, i))
    elif isinstance(o, Raw):
        yield path or '/', str(o)
    else:
        yield path or '/', json.dumps(o)


def load_raw(s):
    return json.loads(s, parse_float=Raw, parse_int=Raw,
                      parse_constant=Raw, object_pairs_hook=dict)


def pair(x, y, width=100):
    """'old X, new Y', cut to a window around the first differing character."""
    if len(x) > width or len(y) > width:
        i = next((k for k in range(min(len(x), len(y))) if x[k] != y[k]), min(len(x), len(y)))
        lo = max(0, i - width // 3)
        cut = lambda v: ('...' if lo else '') + v[lo:lo + width] + ('...' if len(v) > lo + width else '')
        x, y = cut(x), cut(y)
    return 'old %r, new %r' % (x, y)


def first_line_diff(a, b):
    la, lb = a.split('\n'), b.split('\n')
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else '<end of file>'
        y = lb[i] if i < len(lb) else '<end of file>'
        if x != y:
            return 'line %d: %s' % (i + 1, pair(x, y))
    return 'same lines, bytes differ'


def explain_json(a, b):
    try:
        fa = list(flatten(load_raw(a)))
    except ValueError as e:
        return 'old is not valid JSON (%s)' % e
    try:
        fb = list(flatten(load_raw(b)))
    except ValueError as e:
        return 'new is not valid JSON (%s)' % e
    for i in range(max(len(fa), len(fb))):
        x = fa[i] if i < len(fa) else None
        y = fb[i] if i < len(fb) else None
        if x != y:
            if x and y and x[0] == y[0]:
                return 'key %s: %s' % (x[0], pair(x[1], y[1]))
            return 'key %s (old) / %s (new)' % (
                '%s = %s' % (x[0], x[1][:80]) if x else '<none>',
                '%s = %s' % (y[0], y[1][:80]) if y else '<none>')
    return 'same keys and values, formatting differs: ' + first_line_diff(a, b)


def explain_binary(name, a, b):
    n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    msg = 'byte %d of %d (old) / %d (new)' % (n, len(a), len(b))
    if name.endswith('.hits') and n < min(len(a), len(b)):
        r = n // 8
        ta, ia = struct.unpack_from('<fI', a, r * 8) if len(a) >= r * 8 + 8 else (None, None)
        tb, ib = struct.unpack_from('<fI', b, r * 8) if len(b) >= r * 8 + 8 else (None, None)
        msg += '; ray %d: old t=%r id=%r, new t=%r id=%r' % (r, ta, ia, tb, ib)
    return msg


def main():
    if sys.argv[1] == '--explain':
        kind, old, new = sys.argv[2:5]
        name = os.path.basename(old)
        a = open(old, 'rb').read()
        b = open(new, 'rb').read()
        text = name in ('stdout', 'stderr') or name.endswith(('.json', '.csv'))
        if text:
            na, nb = normalise(kind, old, a), normalise(kind, new, b)
            try:
                sa, sb = na.decode(), nb.decode()
            except UnicodeDecodeError:
                print(explain_binary(name, na, nb))
                return
            if is_json(old, sa):
                print(explain_json(sa, sb))
            else:
                print(first_line_diff(sa, sb))
        else:
            print(explain_binary(name, a, b))
        return
    kind, src, dst = sys.argv[1:4]
    with open(src, 'rb') as f:
        data = f.read()
    with open(dst, 'wb') as f:
        f.write(normalise(kind, src, data))


main()
PY

# ---------------------------------------------------------------------------------------------
RUN_TIMEOUT=600
ncase=0; nok=0; ndiff=0; nfail=0; nskip=0
failed=()

# needs_normalising FILE: stdout, stderr, JSON and CSV outputs go through norm.py.
needs_normalising() {
    case $(basename "$1") in
        stdout|stderr|*.json|*.csv) return 0 ;;
        *) return 1 ;;
    esac
}

# run_side BINARY DIR ARGS...: run in the shared run directory, then move the outputs to DIR.
# A run that takes longer than RUN_TIMEOUT is killed (exit status 124: reported as FAIL).
run_side() {
    local bin=$1 dest=$2; shift 2
    local run=$TMP/run rc=0
    rm -rf "$run"; mkdir -p "$run"
    (cd "$run" && exec timeout "$RUN_TIMEOUT" "$bin" "$@" >stdout 2>stderr) || rc=$?
    echo "$rc" > "$run/.exit-status"
    mv "$run" "$dest"
}

# case_ LABEL KIND EXPECTED ARGS...: run `wavetrace ARGS...` with OLD and NEW; compare every
# output. KIND (trace, bvh, profile, render, bench) selects the masks; EXPECTED lists the
# files (space-separated) that both runs must have written. Output paths in ARGS are relative
# (the run directory).
case_() {
    local label=$1 kind=$2 expected=$3; shift 3
    local id old new ro rn f
    ncase=$((ncase + 1))
    id=$(printf '%03d' "$ncase")
    old=$TMP/old.$id; new=$TMP/new.$id
    run_side "$OLD" "$old" "$@"
    run_side "$NEW" "$new" "$@"
    ro=$(cat "$old/.exit-status"); rn=$(cat "$new/.exit-status")
    if [[ $ro != 0 || $rn != 0 ]]; then
        local why="old exit $ro, new exit $rn"
        [[ $rn != 0 ]] && why+=": new stderr: $(tail -n 1 "$new/stderr" | cut -c1-160)"
        [[ $rn == 0 ]] && why+=": old stderr: $(tail -n 1 "$old/stderr" | cut -c1-160)"
        report FAIL "$label" "$why" "$@"
        rm -rf "$old" "$new"
        return
    fi
    local side missing=""
    for f in $expected; do
        for side in old new; do
            [[ $side == old && -s $old/$f ]] && continue
            [[ $side == new && -s $new/$f ]] && continue
            missing+="${missing:+, }$side did not write $f"
        done
    done
    if [[ -n $missing ]]; then
        report FAIL "$label" "$missing" "$@"
        rm -rf "$old" "$new"
        return
    fi
    local lo ln
    lo=$(cd "$old" && find . -type f ! -name .exit-status | LC_ALL=C sort)
    ln=$(cd "$new" && find . -type f ! -name .exit-status | LC_ALL=C sort)
    if [[ $lo != "$ln" ]]; then
        local only
        only=$( (diff <(echo "$lo") <(echo "$ln") || true) | grep '^[<>]' \
               | sed 's/^< /only in old: /; s/^> /only in new: /' | head -n 3 | paste -sd ';' -)
        report DIFF "$label" "files differ: $only" "$@"
        rm -rf "$old" "$new"
        return
    fi
    local first="" ndiffer=0
    while IFS= read -r f; do
        f=${f#./}
        local same=1
        if needs_normalising "$f"; then
            python3 "$TMP/norm.py" "$kind" "$old/$f" "$TMP/a.norm"
            python3 "$TMP/norm.py" "$kind" "$new/$f" "$TMP/b.norm"
            cmp -s "$TMP/a.norm" "$TMP/b.norm" || same=0
        else
            cmp -s "$old/$f" "$new/$f" || same=0
        fi
        if [[ $same == 0 ]]; then
            ndiffer=$((ndiffer + 1))
            if [[ -z $first ]]; then
                first="$f: $(python3 "$TMP/norm.py" --explain "$kind" "$old/$f" "$new/$f")"
            fi
        fi
    done <<< "$lo"
    if [[ $ndiffer -gt 0 ]]; then
        [[ $ndiffer -gt 1 ]] && first+=" (and $((ndiffer - 1)) more file(s))"
        report DIFF "$label" "$first" "$@"
    else
        report ok "$label"
    fi
    rm -rf "$old" "$new"
}

report() {
    local status=$1 label=$2
    case $status in
        ok)   nok=$((nok + 1));   printf 'ok   %s\n' "$label" ;;
        DIFF) ndiff=$((ndiff + 1)); failed+=("$label"); printf 'DIFF %s: %s\n' "$label" "$3" ;;
        FAIL) nfail=$((nfail + 1)); failed+=("$label"); printf 'FAIL %s: %s\n' "$label" "$3" ;;
    esac
    if [[ $status != ok ]]; then
        shift 3
        printf '       wavetrace'; printf ' %q' "$@"; printf '\n'
    fi
}

skip() {
    nskip=$((nskip + 1))
    printf 'skip %s (%s)\n' "$1" "$2"
}

# ---------------------------------------------------------------------------------------------
# trace: ray file through the wave model; compares the hit file, --stats JSON and stdout.
trace() {   # trace LABEL_SUFFIX MESH SET SIMD THREADS EXTRA...
    local suffix=$1 mesh=$2 set=$3 simd=$4 threads=$5; shift 5
    local label="trace ${mesh}_${set} $suffix"
    if [[ $simd == avx2 && $have_avx2 == 0 ]]; then
        skip "$label" "CPU lacks avx2"; return
    fi
    case_ "$label" trace "out.hits stats.json" trace "$DATA/$mesh.obj.gz" --rays "$DATA/${mesh}_$set.rays" \
        --out out.hits --stats stats.json --simd "$simd" --threads "$threads" "$@"
}

trace_matrix() {
    local mesh set wave simd t
    for mesh in bunny sponza; do
        for set in primary diffuse; do
            for wave in 32 64; do
                for simd in portable avx2; do
                    for t in 1 2; do
                        trace "w$wave $simd t$t" "$mesh" "$set" "$simd" "$t" --wave "$wave"
                    done
                done
            done
        done
    done
    # the by-lane schedule (an independent host order: same hits and counters)
    trace "w32 avx2 t2 by-lane" bunny primary avx2 2 --schedule by-lane
    trace "w64 avx2 t2 by-lane" bunny primary avx2 2 --wave 64 --schedule by-lane
    trace "w32 portable t1 by-lane" bunny diffuse portable 1 --schedule by-lane
    trace "w32 avx2 t2 by-lane" sponza diffuse avx2 2 --schedule by-lane
    trace "w64 portable t2 by-lane" sponza diffuse portable 2 --wave 64 --schedule by-lane
    # build and report options
    local opts pair
    for pair in "bunny diffuse" "sponza primary"; do
        # shellcheck disable=SC2086
        set -- $pair
        while IFS= read -r opts; do
            # shellcheck disable=SC2086
            trace "w32 auto t2 $opts" "$1" "$2" auto 2 $opts
        done <<'OPTS'
--box fp16 --tris-per-node 4
--box fp32 --tris-per-node 1
--chains --tris-per-node 4
--chains --tris-per-node 2 --box fp16
--mode 0
--order bfs
--grow 6
--splits
--optimize
--max-area-growth 0.2
--raw-t
--target series-s
OPTS
    done
    trace "w64 auto t2 --splits --optimize --order bfs --grow 3" sponza diffuse auto 2 \
        --wave 64 --splits --optimize --order bfs --grow 3
}

# bvh: build + encode; compares the image (--dump) and the JSON (or the table) on stdout.
bvh() {     # bvh MESH LABEL_SUFFIX EXTRA...
    local mesh=$1 suffix=$2; shift 2
    case_ "bvh $mesh $suffix" bvh "bvh.img stdout" bvh "$DATA/$mesh.obj.gz" --dump bvh.img "$@"
}

bvh_matrix() {
    local mesh
    for mesh in bunny sponza dragon; do
        bvh "$mesh" "default t2 json" --threads 2 --json
        bvh "$mesh" "default t1 json" --threads 1 --json
        bvh "$mesh" "default t2 table" --threads 2
        bvh "$mesh" "fp16 4-tris" --threads 2 --json --box fp16 --tris-per-node 4
        bvh "$mesh" "fp32 1-tri" --threads 2 --json --box fp32 --tris-per-node 1
        bvh "$mesh" "chains 4-tris" --threads 2 --json --chains --tris-per-node 4
        bvh "$mesh" "bfs" --threads 2 --json --order bfs
        bvh "$mesh" "splits" --threads 2 --json --splits
        bvh "$mesh" "optimize" --threads 2 --json --optimize
    done
    for mesh in bunny sponza; do
        bvh "$mesh" "chains 2-tris fp16" --threads 2 --json --chains --tris-per-node 2 --box fp16
        bvh "$mesh" "mode 0" --threads 2 --json --mode 0
        bvh "$mesh" "grow 6" --threads 2 --json --grow 6
        bvh "$mesh" "mixed 0.2" --threads 2 --json --max-area-growth 0.2
        bvh "$mesh" "splits optimize table" --threads 2 --splits --optimize
    done
    bvh bunny "repeat 3 table" --threads 2 --repeat 3
    bvh bunny "repeat 3 json" --threads 2 --repeat 3 --json
}

# profile: every variant; compares CSV, JSON, heatmap PNGs and the table on stdout.
profile() { # profile LABEL INPUT EXTRA...
    local label=$1 input=$2; shift 2
    local expected="profile.csv profile.json stdout"
    [[ " $* " == *" --rays primary "* ]] && expected+=" heatmaps/full-stack.png"
    case_ "profile $label" profile "$expected" profile "$input" --csv profile.csv --json profile.json \
        --heatmaps heatmaps "$@"
}

profile_matrix() {
    profile "bunny.obj.gz primary 64x64 t2" "$DATA/bunny.obj.gz" --rays primary --size 64x64 --threads 2
    profile "bunny.obj.gz primary 64x64 t1" "$DATA/bunny.obj.gz" --rays primary --size 64x64 --threads 1
    profile "bunny.obj.gz diffuse 64x64 t2" "$DATA/bunny.obj.gz" --rays diffuse --size 64x64 --threads 2
    profile "bunny.obj.gz diffuse 64x64 seed 7 series-s t2" "$DATA/bunny.obj.gz" --rays diffuse \
        --size 64x64 --seed 7 --target series-s --threads 2
    profile "bunny.obj.gz shadow 48x32 t2" "$DATA/bunny.obj.gz" --rays shadow --size 48x32 --threads 2
    profile "bunny.obj.gz ao 48x32 t2" "$DATA/bunny.obj.gz" --rays ao --size 48x32 --threads 2
    profile "bunny.obj.gz primary camera 40x40 t2" "$DATA/bunny.obj.gz" --rays primary --size 40x40 \
        --camera=-12,6,8,-1,3.5,0,30 --threads 2
    profile "bunny.obj.gz bunny_primary.rays t2" "$DATA/bunny.obj.gz" --rays "$DATA/bunny_primary.rays" \
        --threads 2
    profile "sponza.obj.gz primary 64x64 t2" "$DATA/sponza.obj.gz" --rays primary --size 64x64 --threads 2
    profile "sponza.obj.gz diffuse 64x64 t2" "$DATA/sponza.obj.gz" --rays diffuse --size 64x64 --threads 2
    profile "cornell.toml primary 64x64 t2" "$SCENES/cornell/cornell.toml" --rays primary --size 64x64 --threads 2
    profile "cornell.toml shadow 64x64 t2" "$SCENES/cornell/cornell.toml" --rays shadow --size 64x64 --threads 2
    profile "bunny.toml primary 64x64 t2" "$SCENES/bunny/bunny.toml" --rays primary --size 64x64 --threads 2
    profile "bunny.toml diffuse 64x64 t1" "$SCENES/bunny/bunny.toml" --rays diffuse --size 64x64 --threads 1
    profile "sky.toml ao 64x64 t2" "$SCENES/sky/sky.toml" --rays ao --size 64x64 --threads 2
    profile "sky.toml primary 64x36 t2 some" "$SCENES/sky/sky.toml" --rays primary --size 64x36 \
        --strategies full-stack,fp16,wave64,stackless-trail --threads 2
}

# render: compares the image, --stats JSON, --heatmap PNG and stderr.
render() {  # render LABEL SCENE OUT EXTRA...
    local label=$1 scene=$2 out=$3; shift 3
    case_ "render $label" render "$out stats.json heatmap.png" render "$SCENES/$scene/$scene.toml" --out "$out" \
        --stats stats.json --heatmap heatmap.png "$@"
}

render_matrix() {
    local t
    for t in 1 2; do
        render "cornell spp8 t$t" cornell image.png --spp 8 --threads "$t"
        render "bunny spp4 t$t" bunny image.png --spp 4 --threads "$t"
        render "sky spp4 t$t" sky image.png --spp 4 --threads "$t"
    done
    render "cornell spp2 w64 seed3 depth4 series-s exposure1 t2" cornell image.png --spp 2 \
        --wave 64 --seed 3 --max-depth 4 --target series-s --exposure 1 --threads 2
    render "cornell spp2 exr t2" cornell image.exr --spp 2 --threads 2
    render "sky spp2 exr w64 t2" sky image.exr --spp 2 --wave 64 --threads 2
}

# bench: only its non-timing figures (rays, TD clocks per ray, the identity line) count.
bench_case() {  # bench_case LABEL MESH THREADS EXTRA...
    local label=$1 mesh=$2 threads=$3; shift 3
    local simds=(portable)
    [[ $have_avx2 == 1 ]] && simds+=(avx2)
    case_ "bench $label" bench "bench.json stdout" bench "$DATA/$mesh.obj.gz" \
        --rays "$DATA/${mesh}_primary.rays" "$DATA/${mesh}_diffuse.rays" \
        --repeat 1 --threads "$threads" --json bench.json --simd "${simds[@]}" "$@"
}

bench_matrix() {
    bench_case "bunny t1 lockstep,by-lane" bunny 1 --schedule lockstep by-lane
    bench_case "sponza t2 w64 fp16 4-tris" sponza 2 --wave 64 --box fp16 --tris-per-node 4
}

quick_set() {
    if [[ $have_avx2 == 1 ]]; then
        trace "w32 avx2 t1" bunny primary avx2 1
    else
        trace "w32 portable t1" bunny primary portable 1
    fi
    trace "w64 portable t2" sponza diffuse portable 2 --wave 64
    trace "w32 auto t2 by-lane" bunny primary auto 2 --schedule by-lane
    trace "w32 auto t2 --box fp16 --tris-per-node 4 --splits" bunny diffuse auto 2 \
        --box fp16 --tris-per-node 4 --splits
    bvh bunny "default t2 json" --threads 2 --json
    bvh sponza "chains 4-tris table" --threads 2 --chains --tris-per-node 4
    profile "bunny.obj.gz primary 32x32 t2" "$DATA/bunny.obj.gz" --rays primary --size 32x32 --threads 2
    render "cornell spp2 t2" cornell image.png --spp 2 --threads 2
    bench_case "bunny t1" bunny 1
}

# ---------------------------------------------------------------------------------------------
echo "old: $OLD"
echo "new: $NEW"
[[ $have_avx2 == 1 ]] || echo "note: this CPU lacks AVX2; --simd avx2 cases are skipped"
start=$SECONDS
if [[ $quick == 1 ]]; then
    quick_set
else
    trace_matrix
    bvh_matrix
    profile_matrix
    render_matrix
    bench_matrix
fi

echo
summary="$ncase cases: $nok identical, $ndiff differ, $nfail failed (exit status or missing output)"
[[ $nskip -gt 0 ]] && summary+=", $nskip skipped"
summary+=" ($((SECONDS - start)) s)"
if [[ $ndiff -eq 0 && $nfail -eq 0 && $ncase -gt 0 ]]; then
    echo "IDENTICAL: $summary"
    exit 0
fi
echo "NOT IDENTICAL: $summary"
for f in "${failed[@]}"; do echo "  $f"; done
exit 1
