/* gen_plates.c - bench helper for flat contact (a tool face over a
 * table): gen_plates OUT.off N SEED [SQUARES]
 *
 * Writes a plate 0.6 x 0.6 x 0.05 centred at the origin, every face cut
 * into SQUARES x SQUARES squares (default 24; prox_mesh_make_tiled_box),
 * to OUT.off, and N poses of a copy of it above itself to stdout (the
 * POSES format: tx ty tz qw qx qy qz): turned by an angle uniform in
 * [0, 0.02] rad about a random horizontal axis, shifted by up to 0.05 in
 * x and y, and lifted to z = 0.05 + g + 0.43 t for a gap g uniform in
 * [0.002, 0.02] and the tilt t (0.43 bounds the drop of a corner, half
 * the plate's diagonal), so the faces stay nearly parallel and apart.
 * The exact distances come from the peers (FCL, the mesh BVH). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "prox.h"
#include "bench_util.h"

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: gen_plates OUT.off N SEED [SQUARES]\n");
        return 2;
    }
    char *end;
    long n = strtol(argv[2], &end, 10);
    if (*end || n < 1 || n > 1000000) {
        fprintf(stderr, "gen_plates: N is 1 to 1000000, got '%s'\n", argv[2]);
        return 2;
    }
    const unsigned long long seed = strtoull(argv[3], &end, 10);
    if (*end) {
        fprintf(stderr, "gen_plates: SEED is a number, got '%s'\n", argv[3]);
        return 2;
    }
    bench_rng = seed * 0x9e3779b97f4a7c15ull + 1;
    long squares = 24;
    if (argc == 5) {
        squares = strtol(argv[4], &end, 10);
        if (*end || squares < 1 || squares > 1024) {
            fprintf(stderr, "gen_plates: SQUARES is 1 to 1024, got '%s'\n", argv[4]);
            return 2;
        }
    }
    prox_mesh *m = prox_mesh_make_tiled_box(prox_v3(0.3, 0.3, 0.025), (int)squares);
    if (!m) {
        fprintf(stderr, "gen_plates: out of memory\n");
        return 1;
    }
    int bad = bench_write_off(argv[1], m) != 0; /* says why on stderr */
    prox_mesh_free(m);
    if (bad)
        return 1;
    for (long i = 0; i < n; i++) {
        double t = 0.02 * bench_urand(), phi = 2 * M_PI * bench_urand(), g = 0.002 + 0.018 * bench_urand();
        double x = 0.1 * bench_urand() - 0.05, y = 0.1 * bench_urand() - 0.05;
        prox_quat q = prox_quat_axis_angle(prox_v3(cos(phi), sin(phi), 0), t);
        printf("%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", x, y, 0.05 + g + 0.43 * t, q.w, q.x, q.y, q.z);
    }
    return 0;
}
