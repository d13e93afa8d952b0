#!/bin/sh
# run_rt.sh: cyclictest and hapticd back to back, same priority (80) and
# period (1 ms), under the same background load (100k voxel updates/s and
# 10k OSC messages/s into a hapticd instance). Reports both latency
# distributions, hapticd's query overshoot and lost telemetry.
set -eu
BUILD=${BUILD:-build}
SECS=${SECS:-20}
out=bench/results/rt.md
tmp=$(mktemp -d)
mkdir -p bench/results
sink_port=57190; rt_port=57191
# load sink for the cyclictest run: a hapticd without RT priority
"$BUILD/hapticd" --demo --driver null --priority 0 --quiet --osc-port $sink_port --duration $((SECS + 5)) > /dev/null 2>&1 &
sink=$!
sleep 2
"$BUILD/bench/load_gen" $sink_port $SECS 100000 10000 pillar ball 2> "$tmp/load1" &
cyclictest -m -a 1 -p 80 -i 1000 -l $((SECS * 1000)) -t 1 -q -h 20000 > "$tmp/cyc" 2>&1 || true
wait $sink 2>/dev/null || true
# hapticd itself under the same load
"$BUILD/hapticd" --demo --priority 80 --cpu 1 --quiet --osc-port $rt_port --duration $SECS --stats-json "$tmp/stats.json" 2> "$tmp/hap.err" &
hap=$!
sleep 1
"$BUILD/bench/load_gen" $rt_port $((SECS - 2)) 100000 10000 pillar ball 2> "$tmp/load2" &
wait $hap || true
# cyclictest histogram -> percentiles
pct() { awk -v p="$1" '/^[0-9]/ { c[$1+0]=$2; n+=$2 } END { want=p*n; s=0; for (i=0;i<20000;i++) { s+=c[i]; if (s>=want) { print i; exit } } }' "$tmp/cyc"; }
cmin=$(sed -n 's/# Min Latencies: *\([0-9]*\).*/\1/p' "$tmp/cyc"); cavg=$(sed -n 's/# Avg Latencies: *\([0-9]*\).*/\1/p' "$tmp/cyc"); cmax=$(sed -n 's/# Max Latencies: *\([0-9]*\).*/\1/p' "$tmp/cyc")
j() { python3 -c "import json,sys; d=json.load(open('$tmp/stats.json')); print($1)"; }
{
echo "# Wake-up latency: hapticd vs cyclictest (same run, same load)"
echo
echo "$(nproc) cores; SCHED_FIFO 80, 1 ms period, $SECS s each; background load: $(cat "$tmp/load1")"
echo
echo "| | min us | avg us | p50 us | p99 us | p99.9 us | max us |"
echo "|---|---|---|---|---|---|---|"
echo "| cyclictest | $cmin | $cavg | $(pct 0.5) | $(pct 0.99) | $(pct 0.999) | $cmax |"
echo "| hapticd | $(j "round(d['latency_us']['min'],1)") | $(j "round(d['latency_us']['avg'],1)") | $(j "d['latency_us']['p50']") | $(j "d['latency_us']['p99']") | $(j "d['latency_us']['p999']") | $(j "round(d['latency_us']['max'],1)") |"
echo
echo "hapticd: p99 ratio to cyclictest $(j "d['latency_us']['p99']") / $(pct 0.99); query p99 $(j "d['query_us']['p99']") us with a $(j "d['query_us']['budget']") us budget, worst overshoot $(j "d['query_us']['overshoot_max']") us; overruns $(j "d['overruns']") of $(j "d['cycles']") cycles; telemetry: $(j "d['telemetry']['received']") received, $(j "d['telemetry']['gaps']") gaps, $(j "d['drops']['telemetry']") drops; command drops $(j "d['drops']['commands']"), voxel drops $(j "d['drops']['voxels']"); realtime=$(j "d['realtime']") memlocked=$(j "d['memlocked']") cpu_latency_held=$(j "d.get('cpu_latency_held', 0)") ($(j "d['note']"))"
} > "$out"
rm -rf "$tmp"
cat "$out"
