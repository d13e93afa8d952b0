#!/bin/sh
# run_ist.sh: inner sphere trees on the libcgal-demo meshes.
#  1. build time and sphere count versus resolution;
#  2. penetration volume against CGAL's exact intersection volume, light and
#     heavy penetrations, full query and budgets of 25..400 us (error curve,
#     gnuplot PNG), query times and deadline overshoot.
set -eu
BUILD=${BUILD:-build}
B=$BUILD/bench
N=${N_PEN:-20}
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
        tri=$(sed -n 's/.*(\([0-9]*\) triangles.*/\1/p' "$tmp/b"); sp=$(sed -n 's/^spheres: //p' "$tmp/b")
        vi=$(sed -n 's/.*(\([0-9]*\) voxels inside)/\1/p' "$tmp/b"); cv=$(sed -n 's/^covered_volume_fraction: \([0-9.]*\).*/\1/p' "$tmp/b")
        bt=$(sed -n 's/^build_seconds: //p' "$tmp/b"); mb=$(awk "BEGIN{printf \"%.1f\", $(sed -n 's/^tree_bytes: //p' "$tmp/b")/1048576}")
        echo "| $m | $tri | $s | $sp | $vi | $cv | $bt | $mb |" >> "$out"
    done
done
# fine targets: spheres down to a quarter voxel (and a finer grid) reach 100k on ~100k-triangle meshes
for run in "bunny00 --spheres 100000 --min-radius 0.25" "refined_elephant --spheres 100000 --min-radius 0.25 --voxels 12000000"; do
    set -- $run; m=$1; shift
    "$BUILD/prox" build data/meshes/$m.off -o "$tmp/x.ist" --normalize "$@" > "$tmp/b" 2>&1 || { echo "| $m | | $* | build failed | | | | |" >> "$out"; continue; }
    tri=$(sed -n 's/.*(\([0-9]*\) triangles.*/\1/p' "$tmp/b"); sp=$(sed -n 's/^spheres: //p' "$tmp/b")
    vi=$(sed -n 's/.*(\([0-9]*\) voxels inside)/\1/p' "$tmp/b"); cv=$(sed -n 's/^covered_volume_fraction: \([0-9.]*\).*/\1/p' "$tmp/b")
    bt=$(sed -n 's/^build_seconds: //p' "$tmp/b"); mb=$(awk "BEGIN{printf \"%.1f\", $(sed -n 's/^tree_bytes: //p' "$tmp/b")/1048576}")
    echo "| $m | $tri | ${*#--spheres } | $sp | $vi | $cv | $bt | $mb |" >> "$out"
done
{
echo
echo "## Penetration volume vs CGAL exact intersection volume"
echo
echo "Poses: B pushed into A along random directions by a fraction of the touching distance (light 0-10%, heavy 10-50%)."
echo "Error = |prox - CGAL| / CGAL. The IST measures its sphere model (secondary spheres, Weller & Zachmann 4.2.1)."
echo
echo "| mesh | set | CGAL volume / smaller volume (median) | CGAL med us | budget | prox med/p99/max us | error median / p95 / max | complete |"
echo "|---|---|---|---|---|---|---|---|"
} >> "$out"
: > "$tmp/curve"
for m in knot1 elephant fandisk bunny00 armadillo; do
    f=data/meshes/$m.off
    "$BUILD/prox" build "$f" -o "$tmp/$m.ist" --normalize > /dev/null 2>&1
    vol=$("$BUILD/prox" info "$f" | sed -n 's/^volume: //p'); diag=$("$BUILD/prox" info "$f" | awk '/bbox_min/{a=$2;b=$3;c=$4} /bbox_max/{printf "%.17g", sqrt(($2-a)^2+($3-b)^2+($4-c)^2)}')
    nvol=$(awk "BEGIN{printf \"%.17g\", $vol/($diag*$diag*$diag)}")
    for set in light heavy; do
        lo=0.0; hi=0.1; [ $set = heavy ] && { lo=0.1; hi=0.5; }
        "$B/gen_poses" "$f" "$f" $N 11 penetrate $lo $hi > "$tmp/poses" 2>/dev/null
        "$B/cgal_volume" "$f" "$f" "$tmp/poses" > "$tmp/cgal.out" 2> "$tmp/cgal.err" || true
        set -- $(stat "$tmp/cgal.err"); cm=${1:-nan}
        for budget in 0 25 50 100 200 400; do
            bflag=""; [ $budget -gt 0 ] && bflag="--budget-us $budget"
            "$BUILD/prox" penvol "$tmp/$m.ist" "$tmp/$m.ist" "$tmp/poses" $bflag > "$tmp/p.out" 2> "$tmp/p.err"
            set -- $(stat "$tmp/p.err")
            res=$(paste "$tmp/cgal.out" "$tmp/p.out" | awk -v nv="$nvol" '
                $1 > 0 { e=($5-$1)/$1; if (e<0) e=-e; n++; er[n]=e; fr[n]=$1/nv; c+=$8 }
                END { for (a=1;a<=n;a++) for (b=a+1;b<=n;b++) { if (er[b]<er[a]) {t=er[a];er[a]=er[b];er[b]=t} if (fr[b]<fr[a]) {t=fr[a];fr[a]=fr[b];fr[b]=t} }
                      if (n==0) { print "nan nan nan nan 0 0"; exit }
                      i95=int(n*0.95)+1; if (i95>n) i95=n
                      printf "%.3f %.4f %.4f %.4f %d %d", fr[int(n/2)+1], er[int(n/2)+1], er[i95], er[n], c, n }')
            set -- $1 $2 $3 $res
            bl=full; [ $budget -gt 0 ] && bl="$budget us"
            echo "| $m | $set | $4 | $cm | $bl | $1 / $2 / $3 | $5 / $6 / $7 | $8 of $9 |" >> "$out"
            echo "$m $set $budget $5 $6" >> "$tmp/curve"
        done
        echo "ist: $m $set done" >&2
    done
done
# error vs budget (median over meshes of the median error), and a plot
{
echo
echo "## Error versus budget (median over meshes of each mesh's median error)"
echo
echo "| budget us | light | heavy |"
echo "|---|---|---|"
for b in 25 50 100 200 400 0; do
    l=$(awk -v b=$b '$2=="light" && $3==b {print $4}' "$tmp/curve" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
    h=$(awk -v b=$b '$2=="heavy" && $3==b {print $4}' "$tmp/curve" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
    bl=$b; [ $b = 0 ] && bl=full
    echo "| $bl | $l | $h |"
    [ $b != 0 ] && echo "$b $l $h" >> "$tmp/plot.dat"
done
} >> "$out"
if command -v gnuplot >/dev/null 2>&1; then
    gnuplot -e "set terminal png size 800,500; set output 'bench/results/ist_error_vs_budget.png'; set logscale x 2; set xlabel 'budget (us)'; set ylabel 'median relative error vs CGAL'; set title 'IST penetration volume: error vs time budget'; plot '$tmp/plot.dat' using 1:2 with linespoints title 'light (0-10%)', '' using 1:3 with linespoints title 'heavy (10-50%)'" \
        && echo "\nPlot: bench/results/ist_error_vs_budget.png" >> "$out"
fi
cat "$out"
