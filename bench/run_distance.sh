#!/bin/sh
# run_distance.sh: prox distance (mesh BVH and inner sphere trees) against
# FCL (OBBRSS, fcl::distance) on the libcgal-demo meshes, random poses with a
# gap of 0..10% of the size and a coherent path; same poses, same run.
# Also: held-out poses (seeds 11 13 17 19) for the IST's error, the IST
# with --fast (prox_query.precise off) on both pose sets, budgeted IST
# queries and flat plates.
set -eu
BUILD=${BUILD:-build}
B=$BUILD/bench
N_RANDOM=${N_RANDOM:-200}
N_PATH=${N_PATH:-500}
out=bench/results/distance.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p bench/results
: > "$tmp/fast"
: > "$tmp/fast_held"
stat() { sed -n 's/.*median_us=\([0-9.]*\) p99_us=\([0-9.]*\) max_us=\([0-9.]*\).*/\1 \2 \3/p' "$1" | tail -n 1; }
# relative errors |prox - FCL| / FCL over the poses FCL finds apart (first
# column of each output: the distance)
rel_errs() { paste "$1" "$2" | awk '{ f=$1; i=$5; if (f > 0) { r=(i-f)/f; if (r<0) r=-r; print r } }' | sort -g; }
max_err() { rel_errs "$1" "$2" | tail -n 1 | awk '{ printf "%.2g", $1 }'; }
# how many of prox's answers (second file) are below FCL's exact distance
# (first file) by more than rounding: an IST distance never should be
below() { paste "$1" "$2" | awk '$5 < $1 * (1 - 1e-9) { b++ } END { printf "%d", b }'; }
# median / p90 / p95 / p99 / max of them
ist_errs() {
    rel_errs "$1" "$2" | awk '{ e[NR]=$1 } END { n=NR; q(0.5); q(0.90); q(0.95); q(0.99); printf "%.4f\n", e[n] }
        function q(f,  k) { k=int(n*f)+1; if (k>n) k=n; printf "%.4f ", e[k] }'
}
{
echo "# Distance: prox vs FCL (same meshes, poses and run)"
echo
echo "Machine: $(nproc) cores, $(uname -m); meshes normalised to a unit bounding-box diagonal."
echo "Times per query in microseconds (median / p99 / max). Ratio = FCL / prox (higher is better for prox)."
echo "BVH max rel err: largest |prox - FCL| / FCL over the poses. IST: inner sphere tree (default resolution and"
echo "query, \`--precise\`; build time not counted), error against FCL's exact distance."
echo
echo "| mesh | poses | FCL med/p99/max | prox BVH med/p99/max | BVH ratio med, p99 | BVH max rel err | prox IST med/p99/max | IST ratio med, p99 | IST rel err median / p90 / p95 / p99 / max |"
echo "|---|---|---|---|---|---|---|---|---|"
} > "$out"
for m in bunny00 armadillo knot1 fandisk elephant; do
    f=data/meshes/$m.off
    [ -f "$f" ] || { echo "missing $f: run make data" >&2; exit 1; }
    "$BUILD/prox" build "$f" -o "$tmp/$m.ist" --normalize > "$tmp/$m.build" 2>&1
    for kind in random coherent; do
        n=$N_RANDOM; [ $kind = coherent ] && n=$N_PATH
        "$B/gen_poses" "$f" "$f" $n 7 $kind > "$tmp/poses" 2>/dev/null
        coh=""; [ $kind = coherent ] && coh="--coherent"
        "$B/fcl_distance" "$f" "$f" "$tmp/poses" --normalize > "$tmp/fcl.out" 2> "$tmp/fcl.err"
        "$BUILD/prox" distance "$f" "$f" "$tmp/poses" --normalize $coh > "$tmp/bvh.out" 2> "$tmp/bvh.err"
        "$BUILD/prox" distance "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/poses" $coh > "$tmp/ist.out" 2> "$tmp/ist.err"
        "$BUILD/prox" distance "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/poses" $coh --fast > "$tmp/istf.out" 2> "$tmp/istf.err"
        set -- $(stat "$tmp/fcl.err"); fm=$1 fp=$2 fx=$3
        set -- $(stat "$tmp/bvh.err"); bm=$1 bp=$2 bx=$3
        set -- $(stat "$tmp/ist.err"); im=$1 ip=$2 ix=$3
        if [ $kind = random ]; then cp "$tmp/poses" "$tmp/$m.rposes"; cp "$tmp/fcl.out" "$tmp/$m.rfcl"; fi
        ie=$(ist_errs "$tmp/fcl.out" "$tmp/ist.out")
        set -- $(stat "$tmp/istf.err")
        echo "| $m | $kind ($n) | $im / $ip / $ix | $1 / $2 / $3 | $(awk "BEGIN{printf \"%.1f, %.1f\", $fm/$1, $fp/$2}") | $(echo "$ie" | awk '{print $4 " / " $5}') | $(ist_errs "$tmp/fcl.out" "$tmp/istf.out" | awk '{print $4 " / " $5}') | $(paste "$tmp/ist.out" "$tmp/istf.out" "$tmp/fcl.out" | awk '$5 > $1 {w++} $5 < $1 {b++} $5 < $9 * (1 - 1e-9) {l++} END {printf "%d, %d, %d", w, b, l}') |" >> "$tmp/fast"
        errs="$(max_err "$tmp/fcl.out" "$tmp/bvh.out") $ie"
        set -- $errs
        echo "| $m | $kind ($n) | $fm / $fp / $fx | $bm / $bp / $bx | $(awk "BEGIN{printf \"%.2f, %.2f\", $fm/$bm, $fp/$bp}") | $1 | $im / $ip / $ix | $(awk "BEGIN{printf \"%.1f, %.1f\", $fm/$im, $fp/$ip}") | $2 / $3 / $4 / $5 / $6 |" >> "$out"
        echo "distance: $m $kind done" >&2
    done
done
# Held-out poses: the refinement's constants (ist_distance.c) were chosen on
# the seed-7 poses above, so its errors are measured again on poses no
# choice saw: N_HELD random poses and an N_HELD-pose path for each seed.
# Seed 11 was held out until the chain stop and the search (then
# --precise, now the default) were tuned on it
# (2026-11-23), seeds 13 and 17 until their worst poses were traced
# (2026-11-24: places whose chains reached nothing, IST_NOEND_*); seeds
# 19 and 23 have been tuned on by nothing (19 was measured through the
# later changes, 23 drawn while the last of them, the deferred pairs of
# IST_DEFER_BELOW, was traced on the tests' bumpy spheres, and measured
# only after); 11, 13 and 17 stay for comparison.
N_HELD=${N_HELD:-1000}
HELD_SEEDS=${HELD_SEEDS:-11 13 17 19 23}
{
echo
echo "IST rel err on held-out poses (gen_poses seeds $HELD_SEEDS; the table above uses seed 7, the poses the IST"
echo "refinement was tuned on; seed 11 has been tuned on since 2026-11-23, seeds 13 and 17 since 2026-11-24, seeds 19 and 23 never):"
echo "median / p90 / p95 / p99 / max, then the poses below FCL's exact distance (must be 0)"
echo
printf "| mesh |"; for sd in $HELD_SEEDS; do printf " seed %s random (%s) | seed %s coherent (%s) |" $sd $N_HELD $sd $N_HELD; done; echo
printf "|---|"; for sd in $HELD_SEEDS; do printf -- "---|---|"; done; echo
} >> "$out"
for m in bunny00 armadillo knot1 fandisk elephant; do
    f=data/meshes/$m.off
    row="| $m |"
    frow="| $m |"
    for sd in $HELD_SEEDS; do
        for kind in random coherent; do
            "$B/gen_poses" "$f" "$f" $N_HELD $sd $kind > "$tmp/poses" 2>/dev/null
            coh=""; [ $kind = coherent ] && coh="--coherent"
            "$B/fcl_distance" "$f" "$f" "$tmp/poses" --normalize > "$tmp/fcl.out" 2> "$tmp/fcl.err"
            "$BUILD/prox" distance "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/poses" $coh > "$tmp/ist.out" 2> "$tmp/ist.err"
            "$BUILD/prox" distance "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/poses" $coh --fast > "$tmp/istf.out" 2> "$tmp/istf.err"
            row="$row $(ist_errs "$tmp/fcl.out" "$tmp/ist.out" | sed 's| | / |g'), $(below "$tmp/fcl.out" "$tmp/ist.out") |"
            frow="$frow $(ist_errs "$tmp/fcl.out" "$tmp/istf.out" | awk '{print $4 " / " $5}'), $(below "$tmp/fcl.out" "$tmp/istf.out") |"
        done
    done
    echo "$row" >> "$out"
    echo "$frow" >> "$tmp/fast_held"
    echo "distance: $m held-out done" >&2
done
# The IST distance with --fast (prox_query.precise off: no search for
# another local minimum near the answer), timed in the same runs as the
# table above, and on the held-out poses.
{
echo
echo "IST distance with \`--fast\` (without the default's search for another local minimum near the answer), the poses"
echo "of the first table, run right after the default IST queries: times med / p99 / max us, ratio = FCL / fast,"
echo "rel err p99 / max against FCL (default, fast), and poses where fast is higher than the default, lower, and"
echo "below FCL's exact distance (the last must be 0; the default refines as fast does and adds the search, so fast is never lower on the same pose and cache, but on paths each mode keeps its own cache)"
echo
echo "| mesh | poses | IST med/p99/max | IST --fast med/p99/max | fast ratio med, p99 | IST rel err p99 / max | fast rel err p99 / max | higher, lower, below exact |"
echo "|---|---|---|---|---|---|---|---|"
cat "$tmp/fast"
echo
echo "Held-out poses (seeds $HELD_SEEDS, as above) with \`--fast\`: rel err p99 / max, poses below exact"
echo
printf "| mesh |"; for sd in $HELD_SEEDS; do printf " seed %s random (%s) | seed %s coherent (%s) |" $sd $N_HELD $sd $N_HELD; done; echo
printf "|---|"; for sd in $HELD_SEEDS; do printf -- "---|---|"; done; echo
cat "$tmp/fast_held"
} >> "$out"
# Budgeted IST distance (the time-critical query: the best answer found by
# the deadline) on the seed-7 random poses: how far above the exact
# distance it lands, and how many queries complete.
{
echo
echo "Budgeted IST distance (\`--budget-us\`), the random poses above: rel err p90 / p99 / max against FCL's exact"
echo "distance, queries complete of $N_RANDOM, query time p99 (us)"
echo
echo "| mesh | 25 us | 50 us | 100 us | 200 us |"
echo "|---|---|---|---|---|"
} >> "$out"
for m in bunny00 armadillo knot1 fandisk elephant; do
    row="| $m |"
    for b in 25 50 100 200; do
        "$BUILD/prox" distance "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/$m.rposes" --budget-us $b > "$tmp/ist.out" 2> "$tmp/ist.err"
        e=$(rel_errs "$tmp/$m.rfcl" "$tmp/ist.out" | awk '{ e[NR]=$1 } END { n=NR; q(0.90); q(0.99); printf "%.4f", e[n] }
            function q(f,  k) { k=int(n*f)+1; if (k>n) k=n; printf "%.4f / ", e[k] }')
        done_n=$(awk '$4 == 1' "$tmp/ist.out" | wc -l)
        set -- $(stat "$tmp/ist.err")
        row="$row $e, $done_n, $(printf %.0f "$2") |"
    done
    echo "$row" >> "$out"
    echo "distance: $m budgeted done" >&2
done
# Flat contact (a tool face over a table): two tiled plates nearly
# parallel (gen_plates: 0.6 x 0.6 x 0.05, 24 x 24 squares a face, tilts up
# to 0.02 rad, gaps 0.002-0.02), where every facing pair of surface pieces
# comes about as close as the closest (README, known limitations).
N_PLATES=${N_PLATES:-40}
"$B/gen_plates" "$tmp/plate.off" "$N_PLATES" 7 > "$tmp/plate.poses"
"$BUILD/prox" build "$tmp/plate.off" -o "$tmp/plate.ist" --spheres 4096 > "$tmp/plate.build" 2>&1
"$B/fcl_distance" "$tmp/plate.off" "$tmp/plate.off" "$tmp/plate.poses" > "$tmp/fcl.out" 2> "$tmp/fcl.err"
"$BUILD/prox" distance "$tmp/plate.off" "$tmp/plate.off" "$tmp/plate.poses" > "$tmp/bvh.out" 2> "$tmp/bvh.err"
"$BUILD/prox" distance "$tmp/plate.ist" "$tmp/plate.ist" "$tmp/plate.poses" > "$tmp/ist.out" 2> "$tmp/ist.err"
"$BUILD/prox" distance "$tmp/plate.ist" "$tmp/plate.ist" "$tmp/plate.poses" --budget-us 200 > "$tmp/istb.out" 2> "$tmp/istb.err"
set -- $(stat "$tmp/fcl.err"); fm=$1 fp=$2 fx=$3
set -- $(stat "$tmp/bvh.err"); bm=$1 bp=$2 bx=$3
set -- $(stat "$tmp/ist.err"); im=$1 ip=$2 ix=$3
set -- $(stat "$tmp/istb.err"); jm=$1 jp=$2 jx=$3
{
echo
echo "Flat contact: two tiled plates nearly parallel (\`gen_plates\`: 0.6 x 0.6 x 0.05, 24 x 24 squares a face, tilted up"
echo "to 0.02 rad, gaps 0.002-0.02; $N_PLATES poses; IST at 4096 spheres). Times med / p99 / max us; rel err max against FCL."
echo
echo "| FCL | prox BVH | BVH max rel err | prox IST | IST ratio med, p99 | IST max rel err | IST --budget-us 200 | its max rel err |"
echo "|---|---|---|---|---|---|---|---|"
echo "| $fm / $fp / $fx | $bm / $bp / $bx | $(max_err "$tmp/fcl.out" "$tmp/bvh.out") | $im / $ip / $ix | $(awk "BEGIN{printf \"%.2f, %.2f\", $fm/$im, $fp/$ip}") | $(max_err "$tmp/fcl.out" "$tmp/ist.out") | $jm / $jp / $jx | $(max_err "$tmp/fcl.out" "$tmp/istb.out") |"
} >> "$out"
echo "distance: plates done" >&2
cat "$out"
