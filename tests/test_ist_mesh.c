/* test_ist_mesh.c - queries between an inner sphere tree (a closed shape)
 * and a mesh BVH (an open mesh): distance, tolerance, collide and
 * contacts, in both argument orders, against a brute force over every
 * triangle pair (and, for a closed shape wholly around the open mesh, the
 * generalized winding number); budgeted answers' bounds; coherent paths
 * through the fronts; what an unprepared tree answers; penetration volume
 * stays undefined. Shapes are procedural: no data files. */
#include <string.h>

#include "check.h"
#include "prox.h"
#include "check_prox.h"
#include "check_ist.h"

/* ---- shapes ---- */

/* the upper half of a sphere of radius r as an open shell (rings x sectors) */
static prox_mesh *hemisphere_shell(double r, int rings, int sectors)
{
    const int nv = 1 + rings * sectors;
    prox_vec3 *v = malloc(sizeof *v * (size_t)nv);
    uint32_t(*t)[3] = malloc(sizeof *t * (size_t)(2 * rings * sectors));
    v[0] = prox_v3(0, 0, r);
    for (int i = 1; i <= rings; i++)
        for (int j = 0; j < sectors; j++) {
            double th = 0.5 * M_PI * i / rings, ph = 2 * M_PI * j / sectors;
            v[1 + (i - 1) * sectors + j] = prox_v3(r * sin(th) * cos(ph), r * sin(th) * sin(ph), r * cos(th));
        }
    uint32_t k = 0;
    for (int j = 0; j < sectors; j++) {
        t[k][0] = 0, t[k][1] = (uint32_t)(1 + j), t[k][2] = (uint32_t)(1 + (j + 1) % sectors), k++;
    }
    for (int i = 1; i < rings; i++)
        for (int j = 0; j < sectors; j++) {
            uint32_t a = (uint32_t)(1 + (i - 1) * sectors + j), b = (uint32_t)(1 + (i - 1) * sectors + (j + 1) % sectors);
            uint32_t c = a + (uint32_t)sectors, d = b + (uint32_t)sectors;
            t[k][0] = a, t[k][1] = c, t[k][2] = d, k++;
            t[k][0] = a, t[k][1] = d, t[k][2] = b, k++;
        }
    prox_mesh *m = prox_mesh_from_arrays(v, (uint32_t)nv, (const uint32_t(*)[3])t, k);
    free(v);
    free(t);
    return m;
}

static prox_mesh *single_triangle(double s)
{
    prox_vec3 v[3] = {prox_v3(-s, -0.6 * s, 0.1 * s), prox_v3(s, -0.4 * s, -0.2 * s), prox_v3(0.1 * s, s, 0.05 * s)};
    const uint32_t t[1][3] = {{0, 1, 2}};
    return prox_mesh_from_arrays(v, 3, t, 1);
}

/* ---- the reference: every triangle pair ---- */

typedef struct ref {
    double dist;       /* least triangle-pair distance, 0 where they meet or the open mesh lies inside */
    int intersect;     /* some triangle pair meets */
    int inside;        /* no pair meets and the open mesh's first vertex is inside the closed shape */
    uint32_t n_pairs;  /* meeting pairs, (closed tri, open tri) in `pairs` (up to cap) */
    uint32_t (*pairs)[2];
} ref;

/* closed mesh A at pose xa, open mesh B at pose xb (world) */
static void brute(const prox_mesh *A, const prox_xform *xa, const prox_mesh *B, const prox_xform *xb, ref *r, uint32_t cap)
{
    r->inside = 0;
    r->dist = check_mesh_pair_dist(A, xa, B, xb, r->pairs, cap, &r->n_pairs);
    r->intersect = r->n_pairs > 0;
    if (!r->intersect) {
        /* B's first vertex in A's frame, by the winding number (not the BVH's ray parity) */
        prox_xform ia = prox_xform_inverse(xa);
        prox_vec3 v = prox_xform_point(&ia, prox_xform_point(xb, B->vertices[0]));
        if (prox_winding_number(A->vertices, (const uint32_t(*)[3])A->triangles, A->triangle_count, v) > 0.5) {
            r->inside = 1;
            r->dist = 0;
        }
    }
}

/* distance of world point p to mesh m at pose x, over every triangle */
static double surface_dist(const prox_mesh *m, const prox_xform *x, prox_vec3 p)
{
    prox_xform ix = prox_xform_inverse(x);
    return check_mesh_surface_dist(m, prox_xform_point(&ix, p));
}

/* ---- fixtures ---- */

/* the two shapes, their trees (the IST prepared) and an engine for them */
typedef struct fixture {
    prox_mesh *closed, *open;
    prox_ist *ist;
    prox_bvh *bvh;
    prox_bank *bank;
    prox_engine *e;
    const char *name;
} fixture;

static prox_engine *engine_new(prox_bank **bank)
{
    *bank = prox_bank_create();
    prox_bank_register_defaults(*bank);
    return prox_engine_create(NULL, *bank);
}

/* 0, or -1 (a failed check); f is to be freed either way (it owns the shapes) */
static int fixture_make(fixture *f, prox_mesh *closed, prox_mesh *open, const char *name)
{
    memset(f, 0, sizeof *f);
    f->closed = closed, f->open = open, f->name = name;
    CHECK(closed && open, "%s: shapes", name);
    if (!closed || !open)
        return -1;
    f->ist = check_ist_build(closed, 64, 0, 0, 0);
    f->bvh = prox_bvh_build(open);
    f->e = engine_new(&f->bank);
    char err[256] = "";
    const int ok = f->ist && f->bvh && f->e && prox_ist_prepare_mesh(f->ist, err, sizeof err) == 0;
    CHECK(ok, "%s: trees and engine: %s", name, err);
    return ok ? 0 : -1;
}

static void fixture_free(fixture *f)
{
    prox_engine_destroy(f->e);
    prox_bank_destroy(f->bank);
    prox_ist_free(f->ist);
    prox_bvh_free(f->bvh);
    prox_mesh_free(f->closed);
    prox_mesh_free(f->open);
}

/* a pose of the open mesh near the closed shape (centred at the origin,
 * about `size` across): a random rotation and a translation within `reach` */
static prox_xform near_pose(unsigned long long *s, double reach)
{
    prox_quat q = check_rng_rotation(s);
    prox_vec3 t = check_rng_v3(s, -reach, reach);
    return prox_xform_from_pose(t, q);
}

/* the fixture's pair, the IST at xa first (order 0) or second (1) */
static prox_object_pair pair_of(const fixture *f, const prox_xform *xa, const prox_xform *xb, int order, prox_cache *cache)
{
    if (order == 0)
        return (prox_object_pair){prox_ist_tree(f->ist), prox_bvh_tree(f->bvh), *xa, *xb, cache};
    return (prox_object_pair){prox_bvh_tree(f->bvh), prox_ist_tree(f->ist), *xb, *xa, cache};
}

/* one query of kind k, the IST first (order 0) or second (1) */
static int run_pair(prox_engine *e, const prox_query *q, const fixture *f, const prox_xform *xa, const prox_xform *xb, int order,
                    prox_cache *cache, prox_result *r)
{
    prox_object_pair p = pair_of(f, xa, xb, order, cache);
    return prox_query_run(e, q, &p, 1, r);
}

static int cmp_pair(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

/* every kind on `poses` random poses (and the poses moved to touch and to
 * just overlap), both orders, against the brute force */
static void check_fixture(fixture *f, int poses, double reach, unsigned long long seed)
{
    prox_engine *e = f->e;
    enum { CAP = 20000 };
    ref r = {0};
    r.pairs = malloc(sizeof *r.pairs * CAP);
    prox_contact *ct = malloc(sizeof *ct * CAP);
    uint32_t(*got)[2] = malloc(sizeof *got * CAP);
    CHECK(r.pairs && ct && got, "%s: memory", f->name);
    if (!r.pairs || !ct || !got) {
        free(r.pairs), free(ct), free(got);
        return;
    }
    unsigned long long s = seed;
    int n_overlap = 0, n_inside = 0, n_touch = 0, n_apart = 0, n_cut_short = 0;
    double worst_rel = 0;
    for (int i = 0; i < 3 * poses; i++) {
        /* the IST at the identity (the engine's frame is then bit for bit the
         * reference's, so touching poses compare exactly) or anywhere */
        prox_xform xa = prox_xform_identity(), xb;
        if (i % 3 == 0) {
            xb = near_pose(&s, 2 * reach); /* most apart */
        } else {
            /* a new pose within reach, moved along its closest direction (the
             * engine's witnesses, by the brute force's distance) to touch
             * (i % 3 == 1) or to overlap by a little (2) */
            xb = near_pose(&s, reach);
            ref r0 = r;
            r0.pairs = NULL;
            brute(f->closed, &xa, f->open, &xb, &r0, 0);
            prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
            prox_result res;
            run_pair(e, &q, f, &xa, &xb, 0, NULL, &res);
            if (r0.dist > 0 && isfinite(r0.dist) && res.value > 0) {
                prox_vec3 dir = prox_v3_scale(prox_v3_sub(res.point_a, res.point_b), 1.0 / res.value);
                double move = i % 3 == 1 ? r0.dist : r0.dist + 1e-3 * reach;
                xb.t = prox_v3_madd(xb.t, dir, move);
            }
        }
        if (i % 5 == 4) { /* both posed */
            xa = near_pose(&s, 0.2 * reach);
            prox_xform rel = xb;
            xb = prox_xform_mul(&xa, &rel);
        }
        brute(f->closed, &xa, f->open, &xb, &r, CAP);
        if (r.n_pairs <= CAP)
            qsort(r.pairs, r.n_pairs, sizeof *r.pairs, cmp_pair);
        const int exact_frame = i % 5 != 4;
        const double scale = 1.0 + reach;
        if (r.inside)
            n_inside++;
        else if (i % 3 == 1 && r.dist <= 1e-9 * scale)
            n_touch++; /* (touching triangles meet, by the reference's test, or nearly) */
        else if (r.intersect)
            n_overlap++;
        else
            n_apart++;
        for (int order = 0; order < 2; order++) {
            prox_result res;
            /* distance */
            prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
            int rc = run_pair(e, &q, f, &xa, &xb, order, NULL, &res);
            const double tol = 1e-9 * fmax(r.dist, scale);
            CHECK(rc == 0 && res.complete && !(res.flags & PROX_RESULT_NO_HANDLER), "%s pose %d order %d: rc %d flags %#x", f->name, i,
                  order, rc, res.flags);
            CHECK(fabs(res.value - r.dist) <= tol, "%s pose %d order %d: distance %.17g, brute force %.17g (inside %d)", f->name, i, order,
                  res.value, r.dist, r.inside);
            if (r.dist > 1e-6 * scale)
                worst_rel = fmax(worst_rel, fabs(res.value - r.dist) / r.dist);
            CHECK(res.lower <= r.dist + tol && res.upper >= r.dist - tol, "%s pose %d: bounds [%g, %g] around %g", f->name, i, res.lower,
                  res.upper, r.dist);
            /* the witnesses: on the surfaces (caller order), as far apart as the value */
            const prox_xform *xp = order == 0 ? &xa : &xb, *xq = order == 0 ? &xb : &xa;
            const prox_mesh *mp = order == 0 ? f->closed : f->open, *mq = order == 0 ? f->open : f->closed;
            if (res.value == 0) {
                /* an overlap's witness: one point of both solids (on the open
                 * mesh, in or on the closed shape) */
                const prox_xform *xc = order == 0 ? xp : xq, *xo = order == 0 ? xq : xp;
                prox_xform ic = prox_xform_inverse(xc);
                prox_vec3 w = prox_xform_point(&ic, res.point_a);
                const double on_c = check_mesh_surface_dist(f->closed, w), on_o = surface_dist(f->open, xo, res.point_a);
                const double wn = prox_winding_number(f->closed->vertices, (const uint32_t(*)[3])f->closed->triangles,
                                                      f->closed->triangle_count, w);
                CHECK(prox_v3_dist(res.point_a, res.point_b) <= 1e-12 * scale && on_o <= 1e-9 * scale && (on_c <= 1e-9 * scale || wn > 0.5),
                      "%s pose %d order %d: an overlap's witness %g from the open mesh, %g from the closed one (winding %g)", f->name, i,
                      order, on_o, on_c, wn);
            } else {
                CHECK(surface_dist(mp, xp, res.point_a) <= 1e-9 * scale && surface_dist(mq, xq, res.point_b) <= 1e-9 * scale,
                      "%s pose %d order %d: witnesses off the surfaces by %g, %g", f->name, i, order, surface_dist(mp, xp, res.point_a),
                      surface_dist(mq, xq, res.point_b));
                CHECK(fabs(prox_v3_dist(res.point_a, res.point_b) - res.value) <= tol, "%s pose %d: witnesses %.17g apart, value %.17g",
                      f->name, i, prox_v3_dist(res.point_a, res.point_b), res.value);
            }
            /* collide: exact against the reference where the frames agree bit for bit, away from touching otherwise */
            const int sure = exact_frame || r.inside || r.dist > 1e-7 * scale || (r.intersect && res.value == 0 && r.n_pairs > 2);
            q = prox_query_default(PROX_QUERY_COLLIDE);
            rc = run_pair(e, &q, f, &xa, &xb, order, NULL, &res);
            const int want = r.intersect || r.inside;
            CHECK(rc == 0 && res.complete, "%s pose %d: collide incomplete", f->name, i);
            if (sure)
                CHECK((res.value == 1) == want, "%s pose %d order %d: collide %g, brute force %d (inside %d, distance %g)", f->name, i,
                      order, res.value, want, r.inside, r.dist);
            /* tolerance at a random threshold */
            q = prox_query_default(PROX_QUERY_TOLERANCE);
            q.tolerance = check_rng_uniform(&s, 0, 0.5 * reach);
            rc = run_pair(e, &q, f, &xa, &xb, order, NULL, &res);
            if (fabs(r.dist - q.tolerance) > tol && sure)
                CHECK(rc == 0 && (res.value == 1) == (r.dist < q.tolerance), "%s pose %d order %d: tolerance %g says %g, distance %g", f->name,
                      i, order, q.tolerance, res.value, r.dist);
            /* contacts: the set of meeting triangle pairs */
            q = prox_query_default(PROX_QUERY_CONTACTS);
            q.contacts = ct;
            q.max_contacts = CAP;
            rc = run_pair(e, &q, f, &xa, &xb, order, NULL, &res);
            if (sure && r.n_pairs <= CAP) {
                /* (a count past the capacity is a failure, never read past got) */
                const uint32_t n = res.contact_count < CAP ? res.contact_count : CAP;
                for (uint32_t k = 0; k < n; k++) {
                    got[k][0] = order == 0 ? ct[k].leaf_a : ct[k].leaf_b;
                    got[k][1] = order == 0 ? ct[k].leaf_b : ct[k].leaf_a;
                }
                qsort(got, n, sizeof *got, cmp_pair);
                int same = rc == 0 && res.contact_count == r.n_pairs && res.complete && (n == 0 || !memcmp(got, r.pairs, sizeof *got * n));
                CHECK(same, "%s pose %d order %d: rc %d, %u contacts, brute force %u (complete %d)", f->name, i, order, rc,
                      res.contact_count, r.n_pairs, res.complete);
            }
            /* a budget that ends at once: the bounds still hold */
            q = prox_query_default(PROX_QUERY_DISTANCE);
            q.check_every = 1;
            q.deadline_ns = prox_now_ns() + (uint64_t)(i % 4) * 2000;
            rc = run_pair(e, &q, f, &xa, &xb, order, NULL, &res);
            CHECK(rc == 0 && res.lower <= r.dist + tol && res.upper >= r.dist - tol && res.value >= r.dist - tol,
                  "%s pose %d order %d: budgeted [%g, %g] value %g, distance %g", f->name, i, order, res.lower, res.upper, res.value, r.dist);
            CHECK(!res.complete || fabs(res.value - r.dist) <= tol, "%s pose %d: a complete budgeted answer is exact", f->name, i);
            n_cut_short += !res.complete;
        }
    }
    fprintf(stderr, "    %s: %d apart, %d touching, %d meeting, %d inside; worst relative distance error %.3g\n", f->name, n_apart, n_touch,
            n_overlap, n_inside, worst_rel);
    CHECK(n_apart > 0 && n_overlap > 0 && n_touch > 0, "%s: the poses cover apart (%d), touching (%d) and meeting (%d)", f->name,
          n_apart, n_touch, n_overlap);
    /* the budgeted bounds above were tried on answers the budget cut short
     * (a deadline at the call's start, every fourth pose, ends any query
     * that needs more than its seed), not only on complete ones */
    CHECK(n_cut_short > 0, "%s: %d budgeted answers cut short", f->name, n_cut_short);
    free(r.pairs);
    free(ct);
    free(got);
}

/* ---- tests ---- */

static void test_sphere_vs_bumpy_patch(void)
{
    fixture f;
    if (fixture_make(&f, prox_mesh_make_sphere(0.3, 2), check_mesh_height_field(8, 0.5, 0.08), "sphere/patch") == 0)
        check_fixture(&f, 60, 0.45, 11);
    fixture_free(&f);
}

static void test_torus_vs_hemisphere_shell(void)
{
    fixture f;
    if (fixture_make(&f, prox_mesh_make_torus(0.3, 0.1, 16, 8), hemisphere_shell(0.25, 5, 12), "torus/shell") == 0)
        check_fixture(&f, 60, 0.4, 23);
    fixture_free(&f);
}

static void test_box_vs_single_triangle(void)
{
    fixture f;
    if (fixture_make(&f, prox_mesh_make_tiled_box(prox_v3(0.2, 0.15, 0.1), 2), single_triangle(0.12), "box/triangle") == 0)
        check_fixture(&f, 60, 0.3, 37);
    fixture_free(&f);
}

/* an open mesh wholly inside the closed shape: no triangles meet, yet the
 * two overlap (distance 0, collide 1) in both orders; the contacts (pairs
 * of meeting triangles) are none */
static void test_open_mesh_inside(void)
{
    fixture f;
    if (fixture_make(&f, prox_mesh_make_sphere(0.5, 2), single_triangle(0.1), "inside") != 0) {
        fixture_free(&f);
        return;
    }
    prox_engine *e = f.e;
    prox_xform xa = prox_xform_identity(), xb = prox_xform_from_pose(prox_v3(0.05, -0.02, 0.1), prox_quat_identity());
    ref r = {0};
    brute(f.closed, &xa, f.open, &xb, &r, 0);
    CHECK(r.inside && !r.intersect, "the reference sees it inside");
    prox_contact ct[8];
    for (int order = 0; order < 2; order++) {
        prox_result res;
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        int rc = run_pair(e, &q, &f, &xa, &xb, order, NULL, &res);
        CHECK(rc == 0 && res.complete && res.value == 0 && (res.flags & PROX_RESULT_OVERLAP), "order %d: rc %d, distance %g flags %#x",
              order, rc, res.value, res.flags);
        q = prox_query_default(PROX_QUERY_COLLIDE);
        rc = run_pair(e, &q, &f, &xa, &xb, order, NULL, &res);
        CHECK(rc == 0 && res.complete && res.value == 1, "order %d: rc %d, collide %g", order, rc, res.value);
        q = prox_query_default(PROX_QUERY_TOLERANCE);
        q.tolerance = 1e-6;
        rc = run_pair(e, &q, &f, &xa, &xb, order, NULL, &res);
        CHECK(rc == 0 && res.complete && res.value == 1, "order %d: rc %d, within tolerance %g", order, rc, res.value);
        q = prox_query_default(PROX_QUERY_CONTACTS);
        q.contacts = ct;
        q.max_contacts = 8;
        rc = run_pair(e, &q, &f, &xa, &xb, order, NULL, &res);
        CHECK(rc == 0 && res.complete && res.contact_count == 0, "order %d: rc %d, %u contacts (no triangles meet)", order, rc,
              res.contact_count);
    }
    fixture_free(&f);
}

/* A path of small steps with a cache and a front (the coherent path that
 * the service takes): every answer equals the brute force, in both orders
 * sharing one cache, and the fronts are used (fewer expansions than from
 * the roots) */
static void test_coherent_path(void)
{
    fixture f;
    if (fixture_make(&f, prox_mesh_make_sphere(0.3, 2), check_mesh_height_field(10, 0.6, 0.06), "path") != 0) {
        fixture_free(&f);
        return;
    }
    prox_engine *e = f.e;
    static prox_front_entry front[4096];
    prox_cache cache;
    memset(&cache, 0, sizeof cache);
    cache.front = front;
    cache.front_capacity = 4096;
    prox_xform xa = prox_xform_identity();
    uint64_t exp_cached = 0, exp_cold = 0;
    int fronts_seen = 0;
    for (int i = 0; i < 120; i++) {
        double t = i / 120.0;
        prox_quat qr = prox_quat_normalize((prox_quat){1.0, 0.1 * sin(3 * t), 0.2 * t, 0.05});
        prox_xform xb = prox_xform_from_pose(prox_v3(0.1 * sin(4 * t), 0.05 * cos(3 * t), 0.42 - 0.1 * t), qr);
        ref r = {0};
        brute(f.closed, &xa, f.open, &xb, &r, 0);
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_result res, cold;
        const int order = (i / 30) % 2; /* 30 steps one way round, 30 the other, one cache */
        run_pair(e, &q, &f, &xa, &xb, order, &cache, &res);
        fronts_seen += cache.front_valid != 0;
        run_pair(e, &q, &f, &xa, &xb, order, NULL, &cold);
        CHECK(fabs(res.value - r.dist) <= 1e-9 * fmax(r.dist, 1.0) && res.complete, "step %d order %d: coherent %.17g, brute force %.17g",
              i, order, res.value, r.dist);
        CHECK(res.value == cold.value, "step %d: coherent %.17g, from the roots %.17g", i, res.value, cold.value);
        exp_cached += res.expansions;
        exp_cold += cold.expansions;
    }
    fprintf(stderr, "    path: %llu expansions coherent, %llu from the roots; a front kept after %d of 120 steps\n",
            (unsigned long long)exp_cached, (unsigned long long)exp_cold, fronts_seen);
    CHECK(fronts_seen > 100 && exp_cached < exp_cold, "the fronts are kept (%d) and save work (%llu vs %llu expansions)", fronts_seen,
          (unsigned long long)exp_cached, (unsigned long long)exp_cold);
    fixture_free(&f);
}

/* The combined query (the service's) with a cache and a front, through
 * an overlap and back: overlapping, the cached pair decides the query at
 * its seed (no traversal, no front recorded). Such a query made an empty
 * front valid, and the next query, back apart, started from it and pushed
 * nothing: certified "nothing within the range" at a distance inside it.
 * Every answer here is the brute force's. */
static void test_combined_through_overlap(void)
{
    fixture f;
    if (fixture_make(&f, prox_mesh_make_sphere(0.02, 2), check_mesh_height_field(4, 0.1, 0.0), "through") != 0) {
        fixture_free(&f);
        return;
    }
    prox_engine *e = f.e;
    static prox_front_entry front[1 << 14];
    prox_cache cache;
    memset(&cache, 0, sizeof cache);
    cache.front = front;
    cache.front_capacity = 1 << 14;
    /* (the wall's heights above the ball in test_rt_loop's open wall test:
     * the margin's push moves the tool down a little, then the wall cuts it) */
    const double zs[] = {0.022, 0.022909054, 0.02341822, 0.02300999, 0.022826934, 0.01100726, 0.01, 0.01, 0.022, 0.022, 0.0219};
    const prox_xform xa = prox_xform_identity();
    for (int order = 0; order < 2; order++)
        for (int i = 0; i < (int)(sizeof zs / sizeof zs[0]); i++) {
            prox_xform xb = prox_xform_from_pose(prox_v3(0.003, -0.001, zs[i]), prox_quat_identity());
            ref r = {0};
            brute(f.closed, &xa, f.open, &xb, &r, 0);
            prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
            q.max_distance = 0.005;
            q.rel_err = 1e-3;
            prox_object_pair p = pair_of(&f, &xa, &xb, order, &cache);
            prox_result res;
            prox_query_combined(e, &q, &p, 1, &res);
            if (r.dist == 0)
                CHECK((res.flags & PROX_RESULT_OVERLAP) && (res.flags & PROX_RESULT_NO_HANDLER), "order %d step %d: overlap, flags %#x",
                      order, i, res.flags);
            else
                CHECK(res.value >= r.dist - 1e-12 && res.value <= r.dist * (1 + 1e-3) + 1e-12 && res.lower <= r.dist,
                      "order %d step %d: %.12g [%g, %g], brute force %.12g", order, i, res.value, res.lower, res.upper, r.dist);
        }
    fixture_free(&f);
}

/* Penetration volume is not defined against an open mesh: no handler
 * (the flag), and the combined query reports the overlap itself, value 0
 * (the service faults on it); apart, the combined query is the distance. */
static void test_penvol_undefined(void)
{
    fixture f;
    if (fixture_make(&f, prox_mesh_make_sphere(0.3, 2), check_mesh_height_field(6, 0.5, 0.05), "penvol") != 0) {
        fixture_free(&f);
        return;
    }
    prox_engine *e = f.e;
    prox_xform xa = prox_xform_identity(), xin = prox_xform_from_pose(prox_v3(0, 0, 0.1), prox_quat_identity()),
               xout = prox_xform_from_pose(prox_v3(0, 0, 0.5), prox_quat_identity());
    for (int order = 0; order < 2; order++) {
        prox_result res;
        prox_query q = prox_query_default(PROX_QUERY_PENVOL);
        run_pair(e, &q, &f, &xa, &xin, order, NULL, &res);
        CHECK(res.flags & PROX_RESULT_NO_HANDLER, "order %d: penetration volume has no handler: flags %#x", order, res.flags);
        q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_object_pair p = pair_of(&f, &xa, &xin, order, NULL);
        prox_query_combined(e, &q, &p, 1, &res);
        CHECK((res.flags & PROX_RESULT_NO_HANDLER) && (res.flags & PROX_RESULT_OVERLAP) && res.value == 0,
              "order %d: combined, overlapping: flags %#x value %g", order, res.flags, res.value);
        ref r = {0};
        brute(f.closed, &xa, f.open, &xout, &r, 0);
        p = pair_of(&f, &xa, &xout, order, NULL);
        prox_query_combined(e, &q, &p, 1, &res);
        CHECK(!(res.flags & (PROX_RESULT_NO_HANDLER | PROX_RESULT_OVERLAP)) && fabs(res.value - r.dist) <= 1e-9,
              "order %d: combined, apart: flags %#x value %.17g, brute force %.17g", order, res.flags, res.value, r.dist);
    }
    fixture_free(&f);
}

/* A tree never prepared (prox_ist_prepare_mesh) answers nothing certain
 * in either order: lower bound 0, incomplete, never a distance it did not
 * measure; prepared
 * (twice: the second is a no-op) it answers; its memory counts the BVH. */
static void test_unprepared(void)
{
    prox_mesh *c = prox_mesh_make_sphere(0.3, 1), *o = single_triangle(0.2);
    prox_ist *t = check_ist_build(c, 32, 0, 0, 0);
    prox_bvh *b = prox_bvh_build(o);
    prox_bank *bank;
    prox_engine *e = engine_new(&bank);
    if (t && b && e) {
        CHECK(!prox_ist_mesh_ready(t), "not prepared after a build");
        prox_ist_stats s0, s1;
        prox_ist_get_stats(t, &s0);
        prox_object_pair p = {prox_ist_tree(t), prox_bvh_tree(b), prox_xform_identity(),
                              prox_xform_from_pose(prox_v3(0, 0, 0.6), prox_quat_identity()), NULL};
        const prox_object_pair swapped = {p.b, p.a, p.pose_b, p.pose_a, NULL};
        for (int order = 0; order < 2; order++)
            for (uint32_t k = 0; k < 4; k++) { /* collide, contacts, distance, tolerance */
                prox_query q = prox_query_default((prox_query_kind)k);
                q.max_distance = 10;
                q.tolerance = 1;
                prox_result r;
                prox_query_run(e, &q, order ? &swapped : &p, 1, &r);
                CHECK(!r.complete && r.lower == 0 && (r.flags & PROX_RESULT_DEADLINE),
                      "kind %u order %d unprepared: complete %d lower %g flags %#x", k, order, r.complete, r.lower, r.flags);
            }
        char err[256];
        CHECK(prox_ist_prepare_mesh(t, err, sizeof err) == 0 && prox_ist_prepare_mesh(t, err, sizeof err) == 0 && prox_ist_mesh_ready(t),
              "prepared: %s", err);
        prox_ist_get_stats(t, &s1);
        CHECK(s0.mesh_bvh_bytes == 0 && s1.mesh_bvh_bytes > 0 && s1.memory_bytes == s0.memory_bytes + s1.mesh_bvh_bytes,
              "memory %zu -> %zu with the BVH's %zu", s0.memory_bytes, s1.memory_bytes, s1.mesh_bvh_bytes);
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_result r;
        prox_query_run(e, &q, &p, 1, &r);
        ref rf = {0};
        brute(c, &p.pose_a, o, &p.pose_b, &rf, 0);
        CHECK(r.complete && fabs(r.value - rf.dist) <= 1e-9, "prepared: %.17g, brute force %.17g", r.value, rf.dist);
        /* a saved and loaded tree comes back unprepared */
        char path[] = "/tmp/test_ist_mesh_XXXXXX";
        const int fd = mkstemp(path);
        CHECK(fd >= 0, "mkstemp %s", path);
        prox_ist *u = NULL;
        if (fd >= 0) {
            close(fd);
            CHECK(prox_ist_save(t, path, err, sizeof err) == 0 && prox_ist_load(path, &u, err, sizeof err) == 0, "save, load: %s", err);
            remove(path);
        }
        CHECK(u && !prox_ist_mesh_ready(u), "a loaded tree is not prepared");
        const int ready = u && prox_ist_prepare_mesh(u, err, sizeof err) == 0;
        CHECK(ready, "the loaded tree prepared: %s", u ? err : "no tree");
        if (ready) {
            p.a = prox_ist_tree(u);
            prox_query_run(e, &q, &p, 1, &r);
            CHECK(r.complete && fabs(r.value - rf.dist) <= 1e-9, "loaded, prepared: %.17g, brute force %.17g", r.value, rf.dist);
        }
        prox_ist_free(u);
    }
    CHECK(t && b && e, "trees and engine");
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_ist_free(t);
    prox_bvh_free(b);
    prox_mesh_free(c);
    prox_mesh_free(o);
}

int main(int argc, char **argv)
{
    (void)argc;
    RUN_TEST(test_sphere_vs_bumpy_patch);
    RUN_TEST(test_torus_vs_hemisphere_shell);
    RUN_TEST(test_box_vs_single_triangle);
    RUN_TEST(test_open_mesh_inside);
    RUN_TEST(test_coherent_path);
    RUN_TEST(test_combined_through_overlap);
    RUN_TEST(test_penvol_undefined);
    RUN_TEST(test_unprepared);
    return check_summary(argv[0]);
}
