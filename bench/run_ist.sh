#!/bin/sh
# run_ist.sh: inner sphere trees on the libcgal-demo meshes.
#  1. build time and sphere count versus resolution;
#  2. penetration volume against CGAL's exact intersection volume, light and
#     heavy penetrations (issue 3's sets: the intersection is 0.5-10% and
#     10-50% of the smaller mesh's volume, placed by gen_poses' volume mode),
#     full query and budgets of 25..400 us (error curve, gnuplot PNG), query
#     times;
#  3. deadline overshoot at a 200 us budget: the heavy poses repeated to at
#     least N_OVER (default 1200) queries per mesh, wall and thread CPU time.
# N_PEN (default 30) poses per set.
set -eu
BUILD=${BUILD:-build}
B=$BUILD/bench
N=${N_PEN:-30}
N_OVER=${N_OVER:-1200}
LIGHT="0.005 0.10"
HEAVY="0.10 0.50"
out=bench/results/ist.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p bench/results
stat() { sed -n 's/.*median_us=\([0-9.]*\) p99_us=\([0-9.]*\) max_us=\([0-9.]*\).*/\1 \2 \3/p' "$1" | tail -n 1; }
{
echo "# Inner sphere trees: build and penetration volume"
echo
echo "## Build (prox build, default resolution unless given; meshes normalised)"
echo
echo "| mesh | triangles | --spheres | spheres | voxels inside | inner/mesh volume | build s | tree MB |"
echo "|---|---|---|---|---|---|---|---|"
} > "$out"
for m in bunny00 armadillo knot1 fandisk elephant; do
    for s in 1000 4096 16000 100000; do
        "$BUILD/prox" build data/meshes/$m.off -o "$tmp/x.ist" --normalize --spheres $s > "$tmp/b" 2>&1 || { echo "| $m | | $s | build failed | | | | |" >> "$out"; continue; }
        tri=$(sed -n 's/.*(\([0-9]*\) triangles.*/\1/p' "$tmp/b"); sp=$(sed -n 's/^spheres: \([0-9]*\).*/\1/p' "$tmp/b")
        vi=$(sed -n 's/.*(\([0-9]*\) voxels inside)/\1/p' "$tmp/b"); cv=$(sed -n 's/^covered_volume_fraction: \([0-9.]*\).*/\1/p' "$tmp/b")
        bt=$(sed -n 's/^build_seconds: //p' "$tmp/b"); mb=$(awk "BEGIN{printf \"%.1f\", $(sed -n 's/^tree_bytes: //p' "$tmp/b")/1048576}")
        echo "| $m | $tri | $s | $sp | $vi | $cv | $bt | $mb |" >> "$out"
    done
done
# fine targets: spheres down to a quarter voxel (and a finer grid) reach 100k
# on ~100k-triangle meshes. The libcgal-demo meshes stop at 88,928 triangles:
# knot1 split twice at its edge midpoints (102,400 triangles) and bunny00
# once (301,632) are the same shapes with 100k triangles and more.
"$B/subdivide" data/meshes/knot1.off "$tmp/knot1_x16.off" 2
"$B/subdivide" data/meshes/bunny00.off "$tmp/bunny00_x4.off" 1
for run in "bunny00 --spheres 100000 --min-radius 0.25" "refined_elephant --spheres 100000 --min-radius 0.25 --voxels 12000000" \
    "knot1_x16 --spheres 100000 --min-radius 0.25 --voxels 6000000" "bunny00_x4 --spheres 100000 --min-radius 0.25"; do
    set -- $run; m=$1; shift
    f=data/meshes/$m.off
    [ -f "$f" ] || f=$tmp/$m.off
    "$BUILD/prox" build "$f" -o "$tmp/x.ist" --normalize "$@" > "$tmp/b" 2>&1 || { echo "| $m | | $* | build failed | | | | |" >> "$out"; continue; }
    tri=$(sed -n 's/.*(\([0-9]*\) triangles.*/\1/p' "$tmp/b"); sp=$(sed -n 's/^spheres: \([0-9]*\).*/\1/p' "$tmp/b")
    vi=$(sed -n 's/.*(\([0-9]*\) voxels inside)/\1/p' "$tmp/b"); cv=$(sed -n 's/^covered_volume_fraction: \([0-9.]*\).*/\1/p' "$tmp/b")
    bt=$(sed -n 's/^build_seconds: //p' "$tmp/b"); mb=$(awk "BEGIN{printf \"%.1f\", $(sed -n 's/^tree_bytes: //p' "$tmp/b")/1048576}")
    echo "| $m | $tri | ${*#--spheres } | $sp | $vi | $cv | $bt | $mb |" >> "$out"
done
# pct FILE P: nearest-rank P-quantile (P in 0..1) of a file of numbers; min
# and max are P=0 and P=1
pct() { sort -g "$1" | awk -v p="$2" '{a[NR]=$1} END { if (NR==0) { print "nan"; exit } i=int(p*NR+0.999999); if (i<1) i=1; if (i>NR) i=NR; print a[i] }'; }
{
echo
echo "## Penetration volume vs CGAL exact intersection volume"
echo
echo "Poses (\`gen_poses A A N SEED volume LO HI\`): B = A under a random rotation, pushed in along a random direction"
echo "until a point-sampled estimate of the intersection volume (100k fixed points inside B, libprox's BVH point-in-mesh"
echo "test, independent of the inner sphere trees) is a fraction f of the mesh volume, f uniform in [LO, HI]:"
echo "light $(echo $LIGHT | sed 's/ /../'), heavy $(echo $HEAVY | sed 's/ /../'). Draws that cannot reach f are drawn again (heavy sets"
echo "favour rotations that keep much of the shape in place). The column \"CGAL fraction\" is what CGAL measures at the"
echo "poses: exact intersection volume / mesh volume, median [min..max]. $N poses per set; meshes normalised."
echo "Error = |prox - CGAL| / CGAL, median / p95 / max over the poses. The IST measures its sphere model (secondary"
echo "spheres, Weller & Zachmann 4.2.1), default resolution. Times: wall clock, query only."
echo
echo "| mesh | set | CGAL fraction | CGAL med ms | budget | prox med / p99 / max us | error median / p95 / max | complete |"
echo "|---|---|---|---|---|---|---|---|"
} >> "$out"
: > "$tmp/curve"
: > "$tmp/targets"
: > "$tmp/over"
: > "$tmp/sets"
: > "$tmp/coh"
for m in knot1 elephant fandisk bunny00 armadillo; do
    f=data/meshes/$m.off
    "$BUILD/prox" build "$f" -o "$tmp/$m.ist" --normalize > /dev/null 2>&1
    vol=$("$BUILD/prox" info "$f" | sed -n 's/^volume: //p'); diag=$("$BUILD/prox" info "$f" | awk '/bbox_min/{a=$2;b=$3;c=$4} /bbox_max/{printf "%.17g", sqrt(($2-a)^2+($3-b)^2+($4-c)^2)}')
    nvol=$(awk "BEGIN{printf \"%.17g\", $vol/($diag*$diag*$diag)}")
    for set in light heavy; do
        range=$LIGHT; [ $set = heavy ] && range=$HEAVY
        "$B/gen_poses" "$f" "$f" $N 11 volume $range > "$tmp/poses.$set" 2> "$tmp/gen.err" || { echo "gen_poses failed: $(tail -n 1 "$tmp/gen.err")" >&2; exit 1; }
        redrawn=$(sed -n 's/.*sample points, \([0-9]*\) (q, d) redrawn.*/\1/p' "$tmp/poses.$set")
        "$B/cgal_volume" "$f" "$f" "$tmp/poses.$set" > "$tmp/cgal.$set" 2> "$tmp/cgal.err" || true
        cm=$(sed -n 's/.*median_us=\([0-9.]*\).*/\1/p' "$tmp/cgal.err" | tail -n 1); cm=$(awk "BEGIN{printf \"%.0f\", ${cm:-0}/1000}")
        awk -v nv="$nvol" '$4 == 1 {print $1/nv}' "$tmp/cgal.$set" > "$tmp/frac"
        frac="$(printf '%.3f' "$(pct "$tmp/frac" 0.5)") [$(printf '%.3f' "$(pct "$tmp/frac" 0)")..$(printf '%.3f' "$(pct "$tmp/frac" 1)")]"
        echo "ist: $m $set: CGAL fraction $frac, $redrawn draws redone" >&2
        # the sampled estimate at each pose against CGAL: how exact the placement is
        sed -n 's/^pose [0-9]*: target [0-9.]* sampled \([0-9.]*\)$/\1/p' "$tmp/gen.err" | paste - "$tmp/cgal.$set" \
            | awk -v nv="$nvol" '$5 == 1 && $2 > 0 { e=$1/($2/nv)-1; print (e<0 ? -e : e) }' > "$tmp/place"
        echo "$m $set $range $redrawn $(pct "$tmp/place" 0.5) $(pct "$tmp/place" 1)" >> "$tmp/sets"
        for budget in 0 25 50 100 200 400; do
            bflag=""; [ $budget -gt 0 ] && bflag="--budget-us $budget"
            "$BUILD/prox" penvol "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/poses.$set" $bflag > "$tmp/p.out" 2> "$tmp/p.err"
            set -- $(stat "$tmp/p.err")
            tmed=$1 t99=$2 tmax=$3
            # only poses CGAL handled (complete=1, volume > 0)
            paste "$tmp/cgal.$set" "$tmp/p.out" | awk '$4 == 1 && $1 > 0 { e=($5-$1)/$1; print (e<0 ? -e : e) }' > "$tmp/err"
            n=$(wc -l < "$tmp/err"); c=$(paste "$tmp/cgal.$set" "$tmp/p.out" | awk '$4 == 1 && $1 > 0 {c+=$8} END {print c+0}')
            em=$(pct "$tmp/err" 0.5); e95=$(pct "$tmp/err" 0.95); emax=$(pct "$tmp/err" 1)
            bl=full; [ $budget -gt 0 ] && bl="$budget us"
            printf '| %s | %s | %s | %s | %s | %.1f / %.1f / %.1f | %.4f / %.4f / %.4f | %s of %s |\n' $m $set "$frac" "$cm" "$bl" \
                $tmed $t99 $tmax $em $e95 $emax $c $n >> "$out"
            echo "$m $set $budget $em $e95" >> "$tmp/curve"
            echo "$m $set $budget $tmed $em $e95 $emax" >> "$tmp/targets"
        done
    done
    # overshoot at a 200 us budget: the heavy poses, repeated to >= N_OVER queries
    reps=$(( (N_OVER + N - 1) / N ))
    : > "$tmp/rep"; i=0; while [ $i -lt $reps ]; do grep -v '^#' "$tmp/poses.heavy" >> "$tmp/rep"; i=$((i+1)); done
    "$BUILD/prox" penvol "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/rep" --budget-us 200 --times "$tmp/times" > /dev/null 2> "$tmp/p.err"
    awk '{print $1-200}' "$tmp/times" > "$tmp/ow"; awk '{print $2-200}' "$tmp/times" > "$tmp/oc"
    nq=$(wc -l < "$tmp/times")
    # the machine's own stalls, probed right after for as long as the queries ran: the share of
    # deadlines that land in a stall with more than 10 us of it left
    o10=$(awk '$1 > 10 { n++ } END { printf "%.4f", n / NR }' "$tmp/ow")
    secs=$(awk '{ s += $1 } END { printf "%.3f", s / 1e6 }' "$tmp/times")
    probe=$("$B/stall_probe" "$secs")
    p10=$(echo "$probe" | sed -n 's/.*p_over_10us=\([0-9.]*\).*/\1/p')
    g10=$(echo "$probe" | sed -n 's/.*gaps_10us=\([0-9]*\).*/\1/p')
    echo "$m $nq $(pct "$tmp/ow" 0.5) $(pct "$tmp/ow" 0.99) $(pct "$tmp/ow" 0.999) $(pct "$tmp/ow" 1) $(pct "$tmp/oc" 0.5) $(pct "$tmp/oc" 0.99) $(pct "$tmp/oc" 0.999) $(pct "$tmp/oc" 1) $o10 $p10 $(awk "BEGIN{printf \"%.0f\", $g10 / $secs}")" >> "$tmp/over"
    # coherence: 3 paths of 200 small steps from light poses (a slide of 0.06% of the size and a turn of
    # 0.002 rad about z per step), every query from the roots and with --coherent (the contact front)
    grep -v '^#' "$tmp/poses.light" | head -n 3 | awk '{
        for (i = 0; i < 200; i++) { a = 0.001 * i; c = cos(a); s = sin(a)
            printf "%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", $1 + 0.0005 * i, $2 + 0.0003 * i, $3,
                c*$4 - s*$7, c*$5 - s*$6, c*$6 + s*$5, c*$7 + s*$4 } }' > "$tmp/path"
    "$BUILD/prox" penvol "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/path" > "$tmp/path.root" 2> "$tmp/pr.err"
    "$BUILD/prox" penvol "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/path" --coherent > "$tmp/path.coh" 2> "$tmp/pc.err"
    dmax=$(paste "$tmp/path.root" "$tmp/path.coh" | awk '{ d = $5 - $1; if (d < 0) d = -d; r = $1 > 0 ? d / $1 : d; if (r > m) m = r } END { printf "%.1e", m + 0 }')
    nz=$(awk '$1 > 0' "$tmp/path.root" | wc -l)
    echo "$m $(wc -l < "$tmp/path") $nz $(stat "$tmp/pr.err") $(stat "$tmp/pc.err") $dmax" >> "$tmp/coh"
    echo "ist: $m done" >&2
done
{
echo
echo "Placement: the sampled volume estimate at each pose against CGAL's (|estimate / CGAL - 1|), and the random"
echo "(rotation, direction) draws redone because they could not reach their target."
echo
echo "| mesh | set | target f | estimate vs CGAL median / max | draws redone |"
echo "|---|---|---|---|---|"
awk '{ printf "| %s | %s | %s..%s | %.4f / %.4f | %s |\n", $1, $2, $3, $4, $6, $7, $5 }' "$tmp/sets"
echo
echo "## Deadline overshoot at a 200 us budget (heavy poses, repeated)"
echo
echo "Overshoot = query time - 200 us (negative: finished early), nearest-rank percentiles. Wall: CLOCK_MONOTONIC,"
echo "what the deadline is checked against, includes any preemption of the thread. CPU: the thread's CPU time"
echo "(CLOCK_THREAD_CPUTIME_ID), which leaves out time the guest scheduler gave to other threads, but on this"
echo "VM not time the host took the virtual CPU away. \`prox penvol --budget-us 200 --times FILE\`."
echo "Machine stalls: \`bench/stall_probe\` spins on the clock right after each mesh's run, for as long as its queries"
echo "took, and counts gaps (the thread not running) over 10 us per second; a deadline at a random moment lands in"
echo "such a gap with more than 10 us of it left with the probability given (sum of max(0, gap - 10 us) / time):"
echo "the share of queries the machine alone would push more than 10 us over, whatever the query does."
echo
echo "| mesh | queries | wall p50 / p99 / p99.9 / max us | CPU p50 / p99 / p99.9 / max us | queries > 10 us over | machine stalls > 10 us: per s, predicted share |"
echo "|---|---|---|---|---|---|"
awk '{ printf "| %s | %d | %.1f / %.1f / %.1f / %.1f | %.1f / %.1f / %.1f / %.1f | %.2f%% | %d/s, %.2f%% |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 100 * $11, $13, 100 * $12 }' "$tmp/over"
echo
echo "## Coherence: penetration volume along paths (prox penvol --coherent)"
echo
echo "Three paths of 200 steps per mesh from light poses (each step slides B by 0.06% of the size and turns it by"
echo "0.002 rad about z; B stays in contact). From the roots: every query a full traversal. Coherent: the contact"
echo "front (leaf pairs within 1% of the smaller root radius, recorded with the pose; replayed while B has moved"
echo "less than that, recorded anew otherwise). Max rel diff: largest |coherent - roots| / roots over the path."
echo
echo "| mesh | queries (overlapping) | from the roots med / p99 / max us | coherent med / p99 / max us | median ratio | max rel diff |"
echo "|---|---|---|---|---|---|"
awk '{ printf "| %s | %d (%d) | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.2f | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $4 / $7, $10 }' "$tmp/coh"
echo
echo "## Issue 3 targets"
echo
echo "Light: full query median <= 100 us and error <= 2% (shown: median and p95 error). Heavy at a 200 us budget:"
echo "error <= 5% (median and p95) and overshoot p99.9 <= 10 us (wall and CPU)."
echo
echo "| mesh | light full median us | light full error med / p95 | heavy 200 us error med / p95 | heavy full error med / p95 | overshoot p99.9 wall / CPU us |"
echo "|---|---|---|---|---|---|"
for m in knot1 elephant fandisk bunny00 armadillo; do
    lt=$(awk -v m=$m '$1==m && $2=="light" && $3==0 {printf "%.1f", $4}' "$tmp/targets")
    le=$(awk -v m=$m '$1==m && $2=="light" && $3==0 {printf "%.4f / %.4f", $5, $6}' "$tmp/targets")
    he=$(awk -v m=$m '$1==m && $2=="heavy" && $3==200 {printf "%.4f / %.4f", $5, $6}' "$tmp/targets")
    hf=$(awk -v m=$m '$1==m && $2=="heavy" && $3==0 {printf "%.4f / %.4f", $5, $6}' "$tmp/targets")
    ov=$(awk -v m=$m '$1==m {printf "%.1f / %.1f", $5, $9}' "$tmp/over")
    echo "| $m | $lt | $le | $he | $hf | $ov |"
done
} >> "$out"
# error vs budget (median over meshes of each mesh's median error), and a plot
{
echo
echo "## Error versus budget (median over meshes of each mesh's median / p95 error)"
echo
echo "| budget us | light median | light p95 | heavy median | heavy p95 |"
echo "|---|---|---|---|---|"
: > "$tmp/plot.dat"
for b in 25 50 100 200 400 0; do
    row=""
    for set in light heavy; do
        for col in 4 5; do
            v=$(awk -v b=$b -v s=$set -v c=$col '$2==s && $3==b {print $c}' "$tmp/curve" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
            row="$row $(printf '%.4f' "$v")"
        done
    done
    bl=$b; [ $b = 0 ] && bl=full
    echo "| $bl |$(echo $row | sed 's/ / | /g; s/^/ /') |"
    [ $b != 0 ] && echo "$b$row" >> "$tmp/plot.dat"
done
} >> "$out"
if command -v gnuplot >/dev/null 2>&1; then
    gnuplot -e "set terminal png size 800,500; set output 'bench/results/ist_error_vs_budget.png'; set logscale x 2; set logscale y; set xlabel 'budget (us)'; set ylabel 'relative error vs CGAL (median over meshes)'; set title 'IST penetration volume: error vs time budget'; set key top right; plot '$tmp/plot.dat' using 1:2 with linespoints title 'light (0.5-10%), median', '' using 1:3 with linespoints dt 2 title 'light, p95', '' using 1:4 with linespoints title 'heavy (10-50%), median', '' using 1:5 with linespoints dt 2 title 'heavy, p95'" \
        && printf '\nPlot: bench/results/ist_error_vs_budget.png\n' >> "$out"
fi
cat "$out"
