/* gen_poses.c - poses of B near A for the benchmarks.
 *
 *   gen_poses A B N SEED random     N random poses, gap uniform in (0, 0.1] of
 *                                   the normalized size (unit bbox diagonal)
 *   gen_poses A B N SEED coherent   a path of N small steps, gap 1%..9%
 *   gen_poses A B N SEED penetrate LO HI   poses whose distance is 0 (overlap),
 *                                   placed along random directions at a depth
 *                                   fraction in [LO, HI] of the separation
 *   gen_poses A B N SEED volume LO HI [SAMPLES]   overlapping poses whose
 *                                   intersection volume is a fraction f, uniform
 *                                   in [LO, HI], of min(vol A, vol B)
 *
 * Both meshes are normalized as `prox --normalize` does. Gaps are exact:
 * the placement bisects the translation along a random direction with
 * libprox's exact distance query.
 *
 * Volume placement. The intersection volume is estimated by point sampling,
 * independently of the inner sphere trees that the benchmark measures: a
 * fixed set of about SAMPLES (default 100000) points inside B (one jittered
 * point per cell of a grid over B's bounding box, kept when B's BVH says it
 * is inside, so vol(A^B) = vol B * inside-A fraction uses B's exact mesh
 * volume), each tested against A with prox_bvh_contains_point (exact ray
 * parity on the triangles). The sample set stays the same for every
 * translation, so the estimate is a deterministic step function of the
 * translation and bisection on it is well defined. CGAL's corefinement
 * would be exact but takes 30-500 ms per evaluation, too slow for ~25
 * evaluations a pose. Independent random points would give a relative
 * error of about sqrt((1 - f) / (f * SAMPLES)), 3% at f = 1%; the jittered
 * grid does better (run_ist.sh reports the estimate against CGAL at every
 * pose), and the benchmark reports the fraction CGAL measures, not the
 * target.
 * Along a random direction d (B rotated by a random q), the translation s*d
 * is scanned from s = 1 (the unit-diagonal meshes are apart) inwards on a
 * 1/16 subset of the samples to the first step whose volume reaches the
 * target, bisected on the subset, then on all samples: the outermost
 * placement with that volume.
 * A (q, d) whose overlap at s = 0 (on 1/64 of the samples, less 0.03 for
 * their noise) or anywhere along the scan does not reach the target is drawn
 * again (a rotated, elongated or knotted mesh may overlap itself
 * much less than 50% there), so heavy sets favour rotations that keep
 * much of the shape in place; the count of redraws is printed in a
 * comment line after the poses. stderr gets one line per pose:
 * target and estimated fraction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/cli/geom.h"
#include "prox.h"
#include "bench_util.h"
#include "prox_bvh.h"


static prox_vec3 rand_dir(void)
{
    for (;;) {
        prox_vec3 v = prox_v3(2 * bench_urand() - 1, 2 * bench_urand() - 1, 2 * bench_urand() - 1);
        double l = prox_v3_len(v);
        if (l > 0.1 && l <= 1)
            return prox_v3_scale(v, 1 / l);
    }
}

static prox_quat rand_quat(void)
{
    prox_quat q = {2 * bench_urand() - 1, 2 * bench_urand() - 1, 2 * bench_urand() - 1, 2 * bench_urand() - 1};
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

/* Volume of A ^ B by a fixed point sample of B (see the file comment). */
typedef struct vol_sampler {
    const prox_bvh *a;
    prox_vec3 *pts_b;  /* samples inside B, B's frame, shuffled */
    prox_vec3 *pts_rb; /* the same rotated by the current q */
    size_t n;
    double frac_per_point; /* vol B / min(vol A, vol B) / n */
} vol_sampler;

static int vol_sampler_init(vol_sampler *vs, const cli_geom *A, const cli_geom *B, size_t samples)
{
    memset(vs, 0, sizeof *vs);
    if (!A->mesh || !B->mesh || !A->mesh->closed || !B->mesh->closed) {
        fprintf(stderr, "gen_poses: volume mode needs two closed meshes (not .ist or .vox files)\n");
        return -1;
    }
    vs->a = A->owner;
    const prox_bvh *bb = B->owner;
    prox_vec3 lo = B->mesh->bbox_min, hi = B->mesh->bbox_max, ext = prox_v3_sub(hi, lo);
    double box = ext.x * ext.y * ext.z, vb = B->mesh->volume, va = A->mesh->volume;
    /* grid cell so that about `samples` cells have their point inside B */
    double h = cbrt(vb / (double)samples);
    int nx = (int)ceil(ext.x / h), ny = (int)ceil(ext.y / h), nz = (int)ceil(ext.z / h);
    size_t cap = (size_t)(1.5 * (double)samples) + 1024, n = 0;
    vs->pts_b = malloc(sizeof *vs->pts_b * cap);
    if (!vs->pts_b)
        return -1;
    for (int k = 0; k < nz; k++)
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                prox_vec3 p = prox_v3(lo.x + ext.x * (i + bench_urand()) / nx, lo.y + ext.y * (j + bench_urand()) / ny,
                                      lo.z + ext.z * (k + bench_urand()) / nz);
                if (!prox_bvh_contains_point(bb, p))
                    continue;
                if (n == cap) {
                    prox_vec3 *np = realloc(vs->pts_b, sizeof *np * (cap *= 2));
                    if (!np)
                        return -1;
                    vs->pts_b = np;
                }
                vs->pts_b[n++] = p;
            }
    /* shuffled, so that a prefix is a uniform subsample for the coarse scan */
    for (size_t i = n; i > 1; i--) {
        size_t r = (size_t)(bench_urand() * (double)i);
        prox_vec3 t = vs->pts_b[i - 1];
        vs->pts_b[i - 1] = vs->pts_b[r], vs->pts_b[r] = t;
    }
    vs->pts_rb = malloc(sizeof *vs->pts_rb * (n ? n : 1));
    if (!vs->pts_rb || n == 0)
        return -1;
    vs->n = n;
    vs->frac_per_point = vb / (va < vb ? va : vb) / (double)n;
    fprintf(stderr, "gen_poses: %zu sample points inside B (grid %dx%dx%d over a %.3g box, volume %.4g)\n", n, nx, ny, nz,
            box, vb);
    return 0;
}

static void vol_sampler_free(vol_sampler *vs)
{
    free(vs->pts_b);
    free(vs->pts_rb);
}

static void vol_sampler_rotate(vol_sampler *vs, prox_quat q)
{
    prox_mat3 R = prox_quat_to_m3(q);
    for (size_t i = 0; i < vs->n; i++)
        vs->pts_rb[i] = prox_m3_mul_v(&R, vs->pts_b[i]);
}

/* fraction of min(vol A, vol B) in A ^ B with B at (q, t), from the first m samples */
static double vol_fraction(const vol_sampler *vs, prox_vec3 t, size_t m)
{
    size_t c = 0;
    for (size_t i = 0; i < m; i++)
        c += prox_bvh_contains_point(vs->a, prox_v3_add(vs->pts_rb[i], t)) != 0;
    return (double)c * vs->frac_per_point * (double)vs->n / (double)m;
}

/* translation s along d (B rotated by q) where the overlap fraction is f;
 * -1 if it never reaches f */
static double place_volume(vol_sampler *vs, prox_vec3 d, prox_quat q, double f)
{
    enum { STEPS = 40 };
    vol_sampler_rotate(vs, q);
    size_t coarse = vs->n / 16 > 4096 ? vs->n / 16 : vs->n;
    double lo = -1, hi = 1;
    /* most draws that miss a large f miss it at s = 0 already: one cheap look */
    size_t tiny = vs->n / 64 > 1024 ? vs->n / 64 : vs->n; /* +-1.3% at f = 0.5 */
    if (vol_fraction(vs, prox_v3(0, 0, 0), tiny) < f - 0.03)
        return -1;
    for (int k = STEPS - 1; k >= 0; k--) {
        double s = (double)k / STEPS;
        if (vol_fraction(vs, prox_v3_scale(d, s), coarse) >= f) {
            lo = s, hi = (double)(k + 1) / STEPS;
            break;
        }
        if (k == 0)
            return -1;
    }
    for (int i = 0; i < 8; i++) { /* to 1/40/256 = 1e-4 of the size on the subset */
        double mid = 0.5 * (lo + hi);
        if (vol_fraction(vs, prox_v3_scale(d, mid), coarse) >= f)
            lo = mid;
        else
            hi = mid;
    }
    /* on all samples: widen until [lo, hi] brackets (the subset can be off), then bisect */
    double w = hi - lo;
    while (lo > 0 && vol_fraction(vs, prox_v3_scale(d, lo), vs->n) < f)
        hi = lo, lo = lo - w > 0 ? lo - w : 0, w *= 2;
    if (vol_fraction(vs, prox_v3_scale(d, lo), vs->n) < f)
        return -1;
    while (hi < 1 && vol_fraction(vs, prox_v3_scale(d, hi), vs->n) >= f)
        lo = hi, hi = hi + w < 1 ? hi + w : 1, w *= 2;
    for (int i = 0; i < 4; i++) { /* to ~6e-6 of the size */
        double mid = 0.5 * (lo + hi);
        if (vol_fraction(vs, prox_v3_scale(d, mid), vs->n) >= f)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

static void emit(prox_vec3 t, prox_quat q) { printf("%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", t.x, t.y, t.z, q.w, q.x, q.y, q.z); }

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: gen_poses A B N SEED random|coherent|penetrate LO HI|volume LO HI [SAMPLES]\n");
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
    bench_rng = strtoull(argv[4], NULL, 10) * 2654435761ull + 1;
    const char *mode = argv[5];
    printf("# %s vs %s, %d %s poses, seed %s, both normalized to a unit bbox diagonal\n", argv[1], argv[2], n, mode, argv[4]);
    if (!strcmp(mode, "random")) {
        for (int i = 0; i < n; i++) {
            prox_quat q = rand_quat();
            prox_vec3 d = rand_dir();
            double gap = 0.1 * (1e-3 + (1 - 1e-3) * bench_urand());
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
            double f = lo + (hi - lo) * bench_urand();
            emit(prox_v3_scale(d, s * (1 - f)), q);
        }
    } else if (!strcmp(mode, "volume") && (argc == 8 || argc == 9)) {
        double lo = atof(argv[6]), hi = atof(argv[7]);
        long samples = argc == 9 ? atol(argv[8]) : 100000;
        if (!(lo > 0 && lo <= hi && hi < 1) || samples < 1000) {
            fprintf(stderr, "gen_poses: volume needs 0 < LO <= HI < 1 and SAMPLES >= 1000\n");
            return 2;
        }
        vol_sampler vs;
        if (vol_sampler_init(&vs, &A, &B, (size_t)samples)) {
            fprintf(stderr, "gen_poses: cannot sample B's volume\n");
            return 1;
        }
        int redraws = 0;
        for (int i = 0; i < n; i++) {
            double f = lo + (hi - lo) * bench_urand(), s;
            prox_quat q;
            prox_vec3 d;
            for (;;) {
                q = rand_quat(), d = rand_dir();
                if ((s = place_volume(&vs, d, q, f)) >= 0)
                    break;
                if (++redraws > 1000 * (i + 1)) {
                    fprintf(stderr, "gen_poses: %d random (rotation, direction) draws never reached an overlap of %.3f; "
                            "lower HI\n", redraws, f);
                    return 1;
                }
            }
            vol_sampler_rotate(&vs, q);
            prox_vec3 t = prox_v3_scale(d, s);
            fprintf(stderr, "pose %d: target %.4f sampled %.4f\n", i, f, vol_fraction(&vs, t, vs.n));
            emit(t, q);
        }
        printf("# volume fractions uniform in [%g, %g] of min(vol A, vol B), %zu sample points, %d (q, d) redrawn\n", lo, hi,
               vs.n, redraws);
        vol_sampler_free(&vs);
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
