#!/bin/sh
# run_distance.sh: prox distance (mesh BVH and inner sphere trees) against
# FCL (OBBRSS, fcl::distance) on the libcgal-demo meshes, random poses with a
# gap of 0..10% of the size and a coherent path; same poses, same run.
set -eu
BUILD=${BUILD:-build}
B=$BUILD/bench
N_RANDOM=${N_RANDOM:-200}
N_PATH=${N_PATH:-500}
out=bench/results/distance.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p bench/results
stat() { sed -n 's/.*median_us=\([0-9.]*\) p99_us=\([0-9.]*\) max_us=\([0-9.]*\).*/\1 \2 \3/p' "$1" | tail -n 1; }
{
echo "# Distance: prox vs FCL (same meshes, poses and run)"
echo
echo "Machine: $(nproc) cores, $(uname -m); meshes normalised to a unit bounding-box diagonal."
echo "Times per query in microseconds (median / p99 / max). Ratio = FCL / prox (higher is better for prox)."
echo "BVH max rel err: largest |prox - FCL| / FCL over the poses. IST: inner sphere tree (default resolution, build"
echo "time not counted), error against FCL's exact distance."
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
        set -- $(stat "$tmp/fcl.err"); fm=$1 fp=$2 fx=$3
        set -- $(stat "$tmp/bvh.err"); bm=$1 bp=$2 bx=$3
        set -- $(stat "$tmp/ist.err"); im=$1 ip=$2 ix=$3
        errs=$(paste "$tmp/fcl.out" "$tmp/bvh.out" "$tmp/ist.out" | awk '
            { f=$1; b=$5; i=$9; if (f > 0) { e=(b-f)/f; if (e<0) e=-e; if (e>eb) eb=e; r=(i-f)/f; if (r<0) r=-r; n++; ie[n]=r } }
            END { for (a=1;a<=n;a++) for (c=a+1;c<=n;c++) if (ie[c]<ie[a]) {t=ie[a];ie[a]=ie[c];ie[c]=t}
                  i99=int(n*0.99)+1; if (i99>n) i99=n; i90=int(n*0.90)+1; i95=int(n*0.95)+1; if (i95>n) i95=n
                  printf "%.2g %.4f %.4f %.4f %.4f %.4f", eb, ie[int(n/2)+1], ie[i90], ie[i95], ie[i99], ie[n] }')
        set -- $errs
        echo "| $m | $kind ($n) | $fm / $fp / $fx | $bm / $bp / $bx | $(awk "BEGIN{printf \"%.2f, %.2f\", $fm/$bm, $fp/$bp}") | $1 | $im / $ip / $ix | $(awk "BEGIN{printf \"%.1f, %.1f\", $fm/$im, $fp/$ip}") | $2 / $3 / $4 / $5 / $6 |" >> "$out"
        echo "distance: $m $kind done" >&2
    done
done
cat "$out"
