#!/usr/bin/env bash
# Runs every command of README.md after its quick start, in order, exactly as written, with
# the release binary on PATH (what `cargo install --path .` gives a user), from the
# repository root; each must exit 0. Commands are the lines of the ```sh blocks (a line
# ending in a backslash continues on the next).
#
#   bash scripts/readme-commands.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --quiet
export PATH="${CARGO_TARGET_DIR:-$root/target}/release:$PATH"

mapfile -t commands < <(awk '
    /^## Concepts/ { started = 1 }
    !started { next }
    /^```sh$/ { inblock = 1; next }
    /^```/ { inblock = 0; next }
    inblock {
        line = $0
        if (sub(/\\$/, "", line)) { pending = pending line; next }
        print pending line
        pending = ""
    }
' README.md)

if [ "${#commands[@]}" -lt 10 ]; then
    echo "readme-commands: found only ${#commands[@]} commands in README.md" >&2
    exit 1
fi
failed=0
for cmd in "${commands[@]}"; do
    [ -z "${cmd// }" ] && continue
    start=$(date +%s.%N)
    if bash -c "$cmd" >/tmp/readme-command.out 2>&1; then
        printf 'ok   %6.1f s  %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$cmd"
    else
        code=$?
        printf 'FAIL (exit %d)  %s\n' "$code" "$cmd"
        tail -n 20 /tmp/readme-command.out
        failed=$((failed + 1))
    fi
done
echo "readme-commands: ${#commands[@]} commands, $failed failed"
[ "$failed" -eq 0 ]
