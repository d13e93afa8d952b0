/* gen_convex.c - the convex shapes and poses of Arcila, Dinas and Banon's
 * experiments (section 7, Table 1) for `make bench-boxes`.
 *
 *   gen_convex shapes DIR           writes DIR/{cube,octahedron,dodecahedron,
 *                                   eneagonal}.off (triangles, %.17g)
 *   gen_convex poses A B N SEED P   N poses of B relative to A (at the
 *                                   identity): rotation uniform (Shoemake),
 *                                   translation uniform in a ball whose
 *                                   radius makes the collision probability P
 *
 * Shapes, all centred on the origin, sizes as tests/test_boxes.c and the
 * README's measurement: cube of half side 0.5, octahedron of radius 0.8,
 * regular dodecahedron on the cube of half side 0.4 (20 vertices, 12
 * pentagons; Table 1's row has 12 vertices and 20 faces, an icosahedron's
 * counts, so vertices and faces look swapped there), and the "eneagonal"
 * prism: a regular 9-gon of circumradius 0.5, height 1 (18 vertices; Table
 * 1's 36 edges and 20 faces are this prism with its side quads split in
 * two triangles).
 *
 * The paper places the pair in a "circular experiment space" of two sizes
 * giving collision probabilities of 25% and 75%. Here the space is a ball
 * about A; its radius is found by bisection on 4000 calibration poses
 * (drawn from their own stream, not among the N written) with libprox's
 * box-hierarchy collide. Both shapes contain the origin and are convex, so
 * along any direction the colliding translations are an interval from 0:
 * the calibration fraction falls monotonically with the radius. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/cli/geom.h"
#include "prox.h"
#include "bench_util.h"
#include "../tests/convex_shapes.h"

/* ---- shapes (tests/convex_shapes.h: the builders test_boxes uses) ---- */

/* m as a triangle OFF file dir/name.off; m is freed */
static int write_off(const char *dir, const char *name, prox_mesh *m)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.off", dir, name);
    int rc = m ? bench_write_off(path, m) : -1;
    prox_mesh_free(m);
    return rc;
}

static int write_shapes(const char *dir)
{
    int rc = write_off(dir, "cube", prox_mesh_make_box(prox_v3(0.5, 0.5, 0.5)));
    rc |= write_off(dir, "octahedron", make_octahedron(0.8));
    rc |= write_off(dir, "dodecahedron", make_dodecahedron(0.4));
    rc |= write_off(dir, "eneagonal", make_prism(9, 0.5, 1.0));
    if (rc)
        fprintf(stderr, "gen_convex: cannot write the shapes into %s (does the folder exist?)\n", dir);
    return rc ? 1 : 0;
}

/* ---- poses ---- */

/* Uniform rotation (Shoemake's subgroup algorithm). */
static prox_quat rand_quat(void)
{
    double u1 = bench_urand(), u2 = 2 * M_PI * bench_urand(), u3 = 2 * M_PI * bench_urand();
    double a = sqrt(1 - u1), b = sqrt(u1);
    return (prox_quat){b * cos(u3), a * sin(u2), a * cos(u2), b * sin(u3)};
}

/* Uniform in the unit ball. */
static prox_vec3 rand_ball(void)
{
    for (;;) {
        prox_vec3 v = prox_v3(2 * bench_urand() - 1, 2 * bench_urand() - 1, 2 * bench_urand() - 1);
        if (prox_v3_dot(v, v) <= 1)
            return v;
    }
}

enum { CALIB = 4000 };

/* Fraction of the calibration poses (unit-ball points u, rotations q) that
 * collide with the translation scaled by r. */
static double collide_fraction(prox_engine *e, const prox_tree *ta, const prox_tree *tb, const prox_vec3 *u,
                               const prox_quat *q, double r)
{
    int hits = 0;
    for (int i = 0; i < CALIB; i++) {
        prox_query qq = prox_query_default(PROX_QUERY_COLLIDE);
        prox_object_pair p = {ta, tb, prox_xform_identity(), prox_xform_from_pose(prox_v3_scale(u[i], r), q[i]), NULL};
        prox_result res;
        if (prox_query_run(e, &qq, &p, 1, &res) == 0 && (res.flags & PROX_RESULT_OVERLAP))
            hits++;
    }
    return (double)hits / CALIB;
}

static int write_poses(const char *a, const char *b, int n, unsigned long long seed, double prob)
{
    char err[512];
    cli_geom_opts o = {0, 0, 0, 1};
    cli_geom A, B;
    if (cli_geom_load(a, &o, &A, err, sizeof err) || cli_geom_load(b, &o, &B, err, sizeof err)) {
        fprintf(stderr, "gen_convex: %s\n", err);
        return 1;
    }
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine *e = prox_engine_create(NULL, bank);
    static prox_vec3 u[CALIB];
    static prox_quat q[CALIB];
    if (!bank || !e) {
        fprintf(stderr, "gen_convex: out of memory\n");
        return 1;
    }
    bench_rng = seed * 2654435761ull + 0x9e3779b97f4a7c15ull; /* the calibration stream */
    for (int i = 0; i < CALIB; i++)
        u[i] = rand_ball(), q[i] = rand_quat();
    double lo = 0, hi = 1;
    while (collide_fraction(e, A.tree, B.tree, u, q, hi) > prob && hi < 1e6)
        hi *= 2;
    for (int it = 0; it < 40; it++) {
        double mid = 0.5 * (lo + hi);
        if (collide_fraction(e, A.tree, B.tree, u, q, mid) > prob)
            lo = mid;
        else
            hi = mid;
    }
    double r = hi;
    printf("# %s vs %s: %d poses of B, seed %llu; rotation uniform, translation uniform in a ball of radius %.6g"
           " (collision fraction %.3f on %d calibration poses, target %.2f)\n",
           a, b, n, seed, r, collide_fraction(e, A.tree, B.tree, u, q, r), CALIB, prob);
    bench_rng = seed * 2654435761ull + 1;
    for (int i = 0; i < n; i++) {
        prox_vec3 t = prox_v3_scale(rand_ball(), r);
        prox_quat qq = rand_quat();
        printf("%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", t.x, t.y, t.z, qq.w, qq.x, qq.y, qq.z);
    }
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    cli_geom_free(&A);
    cli_geom_free(&B);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "shapes"))
        return write_shapes(argv[2]);
    if (argc == 7 && !strcmp(argv[1], "poses")) {
        int n = atoi(argv[4]);
        double p = atof(argv[6]);
        if (n < 1 || !(p > 0 && p < 1)) {
            fprintf(stderr, "gen_convex: poses needs N >= 1 and 0 < P < 1 (got '%s', '%s')\n", argv[4], argv[6]);
            return 2;
        }
        return write_poses(argv[2], argv[3], n, strtoull(argv[5], NULL, 10), p);
    }
    fprintf(stderr, "usage: gen_convex shapes DIR\n       gen_convex poses A B N SEED P\n");
    return 2;
}
