#!/usr/bin/env bash
# run.sh DIR LABEL [PATTERN]: run every test program in DIR (matching PATTERN),
# print each program's summary, then one total line `N passed, N failed`.
# A program that crashes, times out or prints no summary counts as one failure.
set -u
dir=$1; label=$2; pattern=${3:-test_*}
passed=0; failed=0
for t in "$dir"/$pattern; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    out=$(cd "$(dirname "$0")/.." && timeout "${TEST_TIMEOUT:-300}" "$t" 2>/tmp/hapticd-test-$$.err)
    rc=$?
    line=$(printf '%s\n' "$out" | grep -E '^[A-Za-z0-9_.-]+: [0-9]+ passed, [0-9]+ failed$' | tail -n 1)
    if [ -n "$line" ]; then
        p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1/')
        f=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\2/')
        if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    else
        p=0; f=1
    fi
    passed=$((passed + p)); failed=$((failed + f))
    if [ $rc -ne 0 ] || [ "$f" -ne 0 ]; then
        echo "[$label] $name: FAILED (exit $rc)"
        grep -v '^  ok ' /tmp/hapticd-test-$$.err | tail -n 40 | sed 's/^/    /'
    else
        echo "[$label] $name: $p passed"
    fi
done
rm -f /tmp/hapticd-test-$$.err
echo "$label: $passed passed, $failed failed"
