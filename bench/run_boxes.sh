#!/bin/sh
# run_boxes.sh: prox collide --boxes (inner/outer box hierarchies) and prox
# collide (mesh BVH) against FCL (BVHModel<OBBRSS> of the same triangles, and
# fcl::Convex with libccd's GJK) on the convex shapes and pairs of Arcila,
# Dinas and Banon's section 7; same poses, same run.
set -eu
BUILD=${BUILD:-build}
B=$BUILD/bench
N=${N_POSES:-100000}
out=bench/results/boxes.md
shapes=$B/boxes
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p bench/results "$shapes"
"$B/gen_convex" shapes "$shapes"
stat() { sed -n 's/.*median_us=\([0-9.]*\) p99_us=\([0-9.]*\) max_us=\([0-9.]*\).*/\1 \2 \3/p' "$1" | tail -n 1; }
# median time (first column of the times file) of the poses answered $3 (1 collide, 0 apart)
med_by() { paste -d' ' "$1" "$2" | awk -v a="$3" '$1 == a { print $5 }' | sort -g | awk '{ t[NR] = $1 } END { printf "%.2f", NR ? t[int(NR / 2) + 1] : 0 }'; }
# the paper's Table 2 (100000 poses a cell): I_CI / I_CP, large space (25%) then small (75%)
paper() {
    case "$1 $2" in
    "cube cube") echo "28046 / 0|76521 / 0" ;;
    "cube eneagonal") echo "24749 / 654|73816 / 1246" ;;
    "eneagonal eneagonal") echo "15812 / 9259|54138 / 20740" ;;
    "dodecahedron octahedron") echo "16401 / 8503|57783 / 17171" ;;
    esac
}
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
{
echo "# Convex polyhedra: prox collide --boxes vs prox mesh BVH vs FCL (same shapes, poses and run)"
echo
echo "Machine: $(nproc) cores ($cpu), $(uname -m), shared with other work; one run. Command:"
echo "\`make -f bench/bench.mk BUILD=$BUILD bench-boxes\` (bench/run_boxes.sh)."
echo
echo "Shapes (bench/gen_convex.c, written to $shapes, not committed): cube of half side 0.5, octahedron of radius 0.8,"
echo "regular dodecahedron on the cube of half side 0.4, \"eneagonal\" prism (regular 9-gon of circumradius 0.5, height 1)."
echo "Poses: $N per pair and space: B's rotation uniform, its translation uniform in a ball about A (the paper's"
echo "\"circular experiment space\"), of the radius that makes the collision probability 25% (large space) or 75%"
echo "(small space), as the paper's two sizes; the radius is calibrated on 4000 other poses."
echo
echo "Methods: prox boxes = \`prox collide --boxes --stats --times\` (depth 4, the paper's level 4); prox BVH = \`prox"
echo "collide\` (mesh BVH); FCL OBBRSS = fcl::collide with one contact on fcl::BVHModel<OBBRSS> of the same triangles;"
echo "FCL GJK = fcl::collide on fcl::Convex of the same vertices and triangles (FCL $(sed -n 's/.*FCL_VERSION "\(.*\)"/\1/p' /usr/include/fcl/config.h), libccd GJK)."
echo "All read the same OFF files through assimp. Times per query in microseconds (median / p99 / max), query only,"
echo "CLOCK_MONOTONIC around each query in each tool's own loop. Ratio = FCL / prox boxes (higher is better for prox)."
echo "I_CI / I_CP: colliding poses decided by inner boxes / by exact leaf tests (\`--stats\`), next to the paper's"
echo "Table 2 counts (of 100000 poses). Agree: poses where all four answers are equal; a pose where they differ is"
echo "classified by FCL's signed distance (fcl::Convex, GJK / EPA): within 1e-9 of touching counts as touching"
echo "(either answer accepted), anything else as a disagreement (listed below the tables)."
echo
echo "| pair | space | collide | I_CI / I_CP | paper I_CI / I_CP | prox boxes med/p99/max | prox BVH med/p99/max | FCL OBBRSS med/p99/max | FCL GJK med/p99/max | OBBRSS / boxes med, p99 | GJK / boxes med, p99 | agree |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$out"
split="$tmp/split.md"
{
echo
echo "Median microseconds by answer, colliding / apart (the split of the paper's Table 3):"
echo
echo "| pair | space | prox boxes | prox BVH | FCL OBBRSS | FCL GJK |"
echo "|---|---|---|---|---|---|"
} > "$split"
notes="$tmp/notes.md"
: > "$notes"
seed=1
for pair in "cube cube" "eneagonal eneagonal" "cube eneagonal" "dodecahedron octahedron"; do
    set -- $pair
    a=$shapes/$1.off b=$shapes/$2.off name="$1 / $2"
    p_large=$(paper "$1" "$2" | cut -d'|' -f1) p_small=$(paper "$1" "$2" | cut -d'|' -f2)
    for space in large small; do
        prob=0.25 p_ref=$p_large
        [ $space = small ] && prob=0.75 p_ref=$p_small
        "$B/gen_convex" poses "$a" "$b" "$N" $seed $prob > "$tmp/poses.raw"
        seed=$((seed + 1))
        grep -v '^#' "$tmp/poses.raw" > "$tmp/poses"
        "$BUILD/prox" collide "$a" "$b" "$tmp/poses" --boxes --stats --times "$tmp/boxes.t" > "$tmp/boxes.out" 2> "$tmp/boxes.err"
        "$BUILD/prox" collide "$a" "$b" "$tmp/poses" --times "$tmp/bvh.t" > "$tmp/bvh.out" 2> "$tmp/bvh.err"
        "$B/fcl_distance" "$a" "$b" "$tmp/poses" --collide --times "$tmp/obb.t" > "$tmp/obb.out" 2> "$tmp/obb.err"
        "$B/fcl_distance" "$a" "$b" "$tmp/poses" --collide --convex --times "$tmp/gjk.t" > "$tmp/gjk.out" 2> "$tmp/gjk.err"
        set -- $(stat "$tmp/boxes.err"); xm=$1 xp=$2 xx=$3
        set -- $(stat "$tmp/bvh.err"); bm=$1 bp=$2 bx=$3
        set -- $(stat "$tmp/obb.err"); om=$1 op=$2 ox=$3
        set -- $(stat "$tmp/gjk.err"); gm=$1 gp=$2 gx=$3
        set -- $(sed -n 's/.*collisions by inner boxes=\([0-9]*\) by leaf tests=\([0-9]*\).*/\1 \2/p' "$tmp/boxes.err"); ci=$1 cp=$2
        hits=$(awk '$1 == 1' "$tmp/boxes.out" | wc -l)
        # pose number (1-based), the four answers, for every pose where they differ
        paste -d' ' "$tmp/boxes.out" "$tmp/bvh.out" "$tmp/obb.out" "$tmp/gjk.out" |
            awk '!($1 == $5 && $1 == $9 && $1 == $13) { print NR, $1, $5, $9, $13 }' > "$tmp/diff"
        touching=0 wrong=0
        if [ -s "$tmp/diff" ]; then
            awk 'NR == FNR { want[$1] = 1; next } FNR in want' "$tmp/diff" "$tmp/poses" > "$tmp/diff.poses"
            "$B/fcl_distance" "$a" "$b" "$tmp/diff.poses" --convex --signed > "$tmp/diff.dist" 2> /dev/null
            paste -d' ' "$tmp/diff" "$tmp/diff.dist" | while read -r i x v o g d rest; do
                class=disagreement
                awk -v d="$d" 'BEGIN { exit !(d <= 1e-9 && d >= -1e-9) }' && class=touching
                echo "| $name | $space | $i | $x | $v | $o | $g | $d | $class |"
            done >> "$notes"
            touching=$(grep -c "| $name | $space | .*| touching |" "$notes" || true)
            wrong=$(grep -c "| $name | $space | .*| disagreement |" "$notes" || true)
        fi
        agree="$((N - touching - wrong)) of $N"
        [ "$touching" -gt 0 ] && agree="$agree, $touching touching"
        [ "$wrong" -gt 0 ] && agree="$agree, **$wrong disagree**"
        ratio=$(awk "BEGIN { printf \"%.2f, %.2f / %.2f, %.2f\", $om / $xm, $op / $xp, $gm / $xm, $gp / $xp }")
        echo "| $name | $space ($(awk "BEGIN { printf \"%.1f%%\", 100 * $hits / $N }")) | $hits | $ci / $cp | $p_ref | $xm / $xp / $xx | $bm / $bp / $bx | $om / $op / $ox | $gm / $gp / $gx | ${ratio% / *} | ${ratio#* / } | $agree |" >> "$out"
        row="| $name | $space |"
        for m in boxes bvh obb gjk; do
            row="$row $(med_by "$tmp/boxes.out" "$tmp/$m.t" 1) / $(med_by "$tmp/boxes.out" "$tmp/$m.t" 0) |"
        done
        echo "$row" >> "$split"
        echo "boxes: $name $space done" >&2
    done
done
cat "$split" >> "$out"
{
echo
if [ -s "$notes" ]; then
    echo "Poses where the answers differ (1 collide, 0 apart; FCL GJK signed distance: negative is penetration depth):"
    echo
    echo "| pair | space | pose | prox boxes | prox BVH | FCL OBBRSS | FCL GJK | signed distance | class |"
    echo "|---|---|---|---|---|---|---|---|---|"
    cat "$notes"
else
    echo "All four answers agree on every pose."
fi
} >> "$out"
cat "$out"
