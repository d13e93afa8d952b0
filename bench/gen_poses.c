/* gen_poses.c - poses of B near A for the benchmarks.
 *
 *   gen_poses A B N SEED random     N random poses, gap uniform in (0, 0.1] of
 *                                   the normalized size (unit bbox diagonal)
 *   gen_poses A B N SEED coherent   a path of N small steps, gap 1%..9%
 *   gen_poses A B N SEED penetrate LO HI   poses whose distance is 0 (overlap),
 *                                   placed along random directions at a depth
 *                                   fraction in [LO, HI] of the separation
 *
 * Both meshes are normalized as `prox --normalize` does. Gaps are exact:
 * the placement bisects the translation along a random direction with
 * libprox's exact distance query. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/cli/geom.h"
#include "prox.h"
#include "prox_bvh.h"

static unsigned long long rng = 1;
static double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static prox_vec3 rand_dir(void)
{
    for (;;) {
        prox_vec3 v = prox_v3(2 * urand() - 1, 2 * urand() - 1, 2 * urand() - 1);
        double l = prox_v3_len(v);
        if (l > 0.1 && l <= 1)
            return prox_v3_scale(v, 1 / l);
    }
}

static prox_quat rand_quat(void)
{
    prox_quat q = {2 * urand() - 1, 2 * urand() - 1, 2 * urand() - 1, 2 * urand() - 1};
    return prox_quat_normalize(q);
}

static prox_engine *eng;
static const prox_tree *TA, *TB;

static double dist_at(prox_vec3 t, prox_quat q)
{
    prox_query qq = prox_query_default(PROX_QUERY_DISTANCE);
    prox_object_pair p = {TA, TB, prox_xform_identity(), prox_xform_from_pose(t, q), NULL};
    prox_result r;
    prox_query_run(eng, &qq, &p, 1, &r);
    return r.value;
}

/* translation s along dir such that the distance is `gap` */
static double place(prox_vec3 dir, prox_quat q, double gap)
{
    double lo = 0, hi = 2;
    while (dist_at(prox_v3_scale(dir, hi), q) < gap)
        hi *= 2;
    for (int i = 0; i < 48; i++) {
        double mid = 0.5 * (lo + hi);
        if (dist_at(prox_v3_scale(dir, mid), q) < gap)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

static void emit(prox_vec3 t, prox_quat q) { printf("%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", t.x, t.y, t.z, q.w, q.x, q.y, q.z); }

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: gen_poses A B N SEED random|coherent|penetrate [LO HI]\n");
        return 2;
    }
    char err[512];
    cli_geom_opts o = {1, 0, 0};
    cli_geom A, B;
    if (cli_geom_load(argv[1], &o, &A, err, sizeof err) || cli_geom_load(argv[2], &o, &B, err, sizeof err)) {
        fprintf(stderr, "gen_poses: %s\n", err);
        return 1;
    }
    TA = A.tree, TB = B.tree;
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    eng = prox_engine_create(NULL, bank);
    int n = atoi(argv[3]);
    rng = strtoull(argv[4], NULL, 10) * 2654435761ull + 1;
    const char *mode = argv[5];
    printf("# %s vs %s, %d %s poses, seed %s, both normalized to a unit bbox diagonal\n", argv[1], argv[2], n, mode, argv[4]);
    if (!strcmp(mode, "random")) {
        for (int i = 0; i < n; i++) {
            prox_quat q = rand_quat();
            prox_vec3 d = rand_dir();
            double gap = 0.1 * (1e-3 + (1 - 1e-3) * urand());
            emit(prox_v3_scale(d, place(d, q, gap)), q);
        }
    } else if (!strcmp(mode, "coherent")) {
        prox_vec3 d = rand_dir(), axis = rand_dir(), raxis = rand_dir();
        prox_quat q = rand_quat();
        for (int i = 0; i < n; i++) {
            /* direction turns 0.2 degrees a step, B turns 0.3 degrees */
            prox_quat dq = prox_quat_axis_angle(axis, 0.0035);
            prox_mat3 R = prox_quat_to_m3(dq);
            d = prox_v3_normalize(prox_m3_mul_v(&R, d));
            q = prox_quat_normalize(prox_quat_mul(prox_quat_axis_angle(raxis, 0.005), q));
            double gap = 0.05 + 0.04 * sin(0.01 * i);
            emit(prox_v3_scale(d, place(d, q, gap)), q);
        }
    } else if (!strcmp(mode, "penetrate") && argc == 8) {
        double lo = atof(argv[6]), hi = atof(argv[7]);
        for (int i = 0; i < n; i++) {
            prox_quat q = rand_quat();
            prox_vec3 d = rand_dir();
            double s = place(d, q, 1e-9); /* just touching */
            double f = lo + (hi - lo) * urand();
            emit(prox_v3_scale(d, s * (1 - f)), q);
        }
    } else {
        fprintf(stderr, "gen_poses: unknown mode '%s'\n", mode);
        return 2;
    }
    prox_engine_destroy(eng);
    prox_bank_destroy(bank);
    cli_geom_free(&A);
    cli_geom_free(&B);
    return 0;
}
