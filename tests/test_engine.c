/* test_engine.c - the query engine on a toy tree type (a binary hierarchy of
 * bounding spheres over random small spheres, PROX_TREE_USER0/USER1) with
 * handlers for every kind, checked against brute force over all leaf pairs:
 * single pairs and forests, budgets, a tiny queue, the run-time bank, (B, A)
 * swaps, cache seeding, and (plain builds) zero allocation in queries. */
#include <time.h>

#include "check.h"
#include "prox.h"
#include "check_prox.h"

#include "check_alloc.h"

/* ---- the toy tree ---- */

#define MAXS 256
typedef struct toy {
    uint32_t n;              /* leaf spheres */
    prox_vec3 sc[MAXS];      /* sphere centres */
    double sr[MAXS];         /* sphere radii */
    uint32_t nn;             /* nodes */
    prox_vec3 c[2 * MAXS];   /* node bounding sphere */
    double r[2 * MAXS];
    int32_t kid[2 * MAXS][2]; /* -1: leaf */
    uint32_t leaf[2 * MAXS]; /* leaf node -> sphere id */
    uint32_t node_of[MAXS];  /* sphere id -> leaf node */
    uint32_t count[2 * MAXS]; /* leaves below */
    double vmax[2 * MAXS];   /* largest leaf volume below */
    prox_tree tree;
} toy;

static double ball_vol(double r) { return 4.0 / 3.0 * M_PI * r * r * r; }

static uint32_t toy_build_rec(toy *t, uint32_t *ids, uint32_t n)
{
    uint32_t me = t->nn++;
    prox_vec3 lo = prox_v3(1e300, 1e300, 1e300), hi = prox_v3(-1e300, -1e300, -1e300);
    for (uint32_t i = 0; i < n; i++) {
        lo = prox_v3_min(lo, t->sc[ids[i]]);
        hi = prox_v3_max(hi, t->sc[ids[i]]);
    }
    prox_vec3 ctr = prox_v3_scale(prox_v3_add(lo, hi), 0.5);
    double R = 0, vm = 0;
    for (uint32_t i = 0; i < n; i++) {
        double d = prox_v3_dist(ctr, t->sc[ids[i]]) + t->sr[ids[i]];
        R = d > R ? d : R;
        vm = ball_vol(t->sr[ids[i]]) > vm ? ball_vol(t->sr[ids[i]]) : vm;
    }
    t->c[me] = ctr;
    t->r[me] = R;
    t->count[me] = n;
    t->vmax[me] = vm;
    if (n == 1) {
        t->kid[me][0] = t->kid[me][1] = -1;
        t->leaf[me] = ids[0];
        t->node_of[ids[0]] = me;
        return me;
    }
    int ax = 0;
    prox_vec3 ext = prox_v3_sub(hi, lo);
    if (ext.y > prox_v3_get(ext, ax))
        ax = 1;
    if (ext.z > prox_v3_get(ext, ax))
        ax = 2;
    for (uint32_t i = 1; i < n; i++) /* insertion sort along the axis */
        for (uint32_t j = i; j > 0 && prox_v3_get(t->sc[ids[j]], ax) < prox_v3_get(t->sc[ids[j - 1]], ax); j--) {
            uint32_t tmp = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = tmp;
        }
    uint32_t h = n / 2;
    int32_t k0 = (int32_t)toy_build_rec(t, ids, h);
    int32_t k1 = (int32_t)toy_build_rec(t, ids + h, n - h);
    t->kid[me][0] = k0;
    t->kid[me][1] = k1;
    return me;
}

static void toy_build(toy *t, uint32_t type, uint32_t n, double spread, double rmin, double rmax,
                      unsigned long long *s)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    for (uint32_t i = 0; i < n; i++) {
        t->sc[i] = check_rng_v3(s, -spread, spread);
        t->sr[i] = check_rng_uniform(s, rmin, rmax);
    }
    uint32_t ids[MAXS];
    for (uint32_t i = 0; i < n; i++)
        ids[i] = i;
    t->tree.type = type;
    t->tree.root = toy_build_rec(t, ids, n);
    t->tree.impl = t;
    t->tree.com = prox_v3(0.1, -0.2, 0.05);
}

/* ---- the handlers ---- */

static double extra_offset; /* the replacement handler adds this to every distance */

static double lens(double ra, double rb, double d)
{
    if (d >= ra + rb)
        return 0;
    double rs = ra < rb ? ra : rb, rl = ra < rb ? rb : ra;
    if (d <= rl - rs)
        return ball_vol(rs);
    double s = ra + rb - d;
    return M_PI * s * s * (d * d + 2 * d * (ra + rb) - 3 * (ra - rb) * (ra - rb)) / (12 * d);
}

/* the pairs the toy handler pushed and the engine has not expanded yet,
 * with their keys (test_order) */
#define REC_MAX 16384
static struct {
    int on;
    uint32_t n;
    uint32_t na[REC_MAX], nb[REC_MAX];
    double key[REC_MAX];
    long expansions, out_of_order, first_pair;
} rec;

static void rec_push(uint32_t na, uint32_t nb, double key)
{
    if (rec.on && rec.n < REC_MAX)
        rec.na[rec.n] = na, rec.nb[rec.n] = nb, rec.key[rec.n] = key, rec.n++;
}

static void toy_expand_impl(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double add)
{
    const toy *A = p->a->impl, *B = p->b->impl;
    uint32_t kind = p->query->kind;
    if (A->kid[na][0] < 0 && B->kid[nb][0] < 0) {
        uint32_t la = A->leaf[na], lb = B->leaf[nb];
        prox_vec3 ca = A->sc[la], cb = prox_xform_point(&p->b_in_a, B->sc[lb]);
        double cd = prox_v3_dist(ca, cb), d = cd - A->sr[la] - B->sr[lb];
        prox_vec3 u = cd > 0 ? prox_v3_scale(prox_v3_sub(cb, ca), 1.0 / cd) : prox_v3(1, 0, 0);
        prox_ctx_count(c, 0, 1);
        if (kind == PROX_QUERY_DISTANCE || kind == PROX_QUERY_TOLERANCE) {
            /* distances are >= 0: overlapping leaves offer 0 (the contract's "d <= 0 means overlap") */
            prox_ctx_offer_distance(c, p, (d > 0 ? d : 0) + add, prox_v3_madd(ca, u, A->sr[la]), prox_v3_madd(cb, u, -B->sr[lb]), la,
                                    lb);
        } else if (kind == PROX_QUERY_PENVOL) {
            double v = lens(A->sr[la], B->sr[lb], cd);
            if (v > 0)
                prox_ctx_add_volume(c, p, v, u, prox_v3_scale(prox_v3_add(ca, cb), 0.5), la, lb);
        } else if (d <= 0) {
            prox_ctx_report_overlap(c, p, la, lb, prox_v3_scale(prox_v3_add(ca, cb), 0.5));
        }
        return;
    }
    /* split the larger non-leaf node */
    int split_a = B->kid[nb][0] < 0 || (A->kid[na][0] >= 0 && A->r[na] >= B->r[nb]);
    for (int k = 0; k < 2; k++) {
        uint32_t ca_n = split_a ? (uint32_t)A->kid[na][k] : na, cb_n = split_a ? nb : (uint32_t)B->kid[nb][k];
        prox_vec3 ca = A->c[ca_n], cb = prox_xform_point(&p->b_in_a, B->c[cb_n]);
        double cd = prox_v3_dist(ca, cb);
        double key = cd - A->r[ca_n] - B->r[cb_n];
        prox_ctx_count(c, 1, 0);
        if (kind == PROX_QUERY_PENVOL) {
            if (key >= 0)
                continue;
            double vm = A->vmax[ca_n] < B->vmax[cb_n] ? A->vmax[ca_n] : B->vmax[cb_n];
            double ub = (double)A->count[ca_n] * B->count[cb_n] * vm;
            prox_ctx_push_vol(c, p, ca_n, cb_n, -ub, 0.5 * ub, ub);
            rec_push(ca_n, cb_n, -ub);
        } else {
            prox_ctx_push(c, p, ca_n, cb_n, key + add);
            rec_push(ca_n, cb_n, key + add);
        }
    }
}

static void toy_expand(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    toy_expand_impl(c, p, na, nb, 0.0);
}
static void toy_expand_alt(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    toy_expand_impl(c, p, na, nb, extra_offset);
}

static void toy_seed(prox_ctx *c, const prox_pairstate *p)
{
    const toy *A = p->a->impl, *B = p->b->impl;
    const prox_cache *k = p->cache;
    if (k->leaf_a < A->n && k->leaf_b < B->n)
        toy_expand(c, p, A->node_of[k->leaf_a], B->node_of[k->leaf_b]);
}

static prox_handler toy_handler(void)
{
    prox_handler h;
    memset(&h, 0, sizeof h);
    h.name = "toy";
    h.expand = toy_expand;
    h.seed = toy_seed;
    return h;
}

static void register_toy(prox_bank *bank)
{
    prox_handler h = toy_handler();
    for (uint32_t k = 0; k < PROX_QUERY_KIND_COUNT; k++) {
        prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_USER0, k, &h);
        prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_USER1, k, &h); /* (USER1, USER0) served swapped */
    }
}

/* ---- brute force (world frame) ---- */

typedef struct brute {
    double dmin;
    uint32_t la, lb;
    long overlaps;
    double vol;
    prox_vec3 force, torque; /* on B, about B's com */
} brute;

static brute brute_pair(const toy *A, const prox_xform *pa, const toy *B, const prox_xform *pb)
{
    brute r = {INFINITY, 0, 0, 0, 0, {0, 0, 0}, {0, 0, 0}};
    prox_vec3 com = prox_xform_point(pb, B->tree.com);
    for (uint32_t i = 0; i < A->n; i++)
        for (uint32_t j = 0; j < B->n; j++) {
            prox_vec3 ca = prox_xform_point(pa, A->sc[i]), cb = prox_xform_point(pb, B->sc[j]);
            double cd = prox_v3_dist(ca, cb), d = cd - A->sr[i] - B->sr[j];
            if ((d > 0 ? d : 0) < r.dmin)
                r.dmin = d > 0 ? d : 0, r.la = i, r.lb = j;
            r.overlaps += d <= 0;
            double v = lens(A->sr[i], B->sr[j], cd);
            if (v > 0) {
                prox_vec3 u = cd > 0 ? prox_v3_scale(prox_v3_sub(cb, ca), 1.0 / cd) : prox_xform_vector(pa, prox_v3(1, 0, 0));
                prox_vec3 f = prox_v3_scale(u, v);
                prox_vec3 pt = prox_v3_scale(prox_v3_add(ca, cb), 0.5);
                r.vol += v;
                r.force = prox_v3_add(r.force, f);
                r.torque = prox_v3_add(r.torque, prox_v3_cross(prox_v3_sub(pt, com), f));
            }
        }
    return r;
}

static prox_xform random_pose(unsigned long long *s, double dist)
{
    /* each vector's z drawn first, as gcc drew them as arguments (check_prox.h) */
    double az = check_rng_uniform(s, -1, 1) + 1e-3, ay = check_rng_uniform(s, -1, 1), ax = check_rng_uniform(s, -1, 1);
    prox_vec3 axis = prox_v3_normalize(prox_v3(ax, ay, az));
    prox_quat q = prox_quat_axis_angle(axis, check_rng_uniform(s, 0, 6.28));
    double dz = check_rng_uniform(s, -1, 1) + 1e-3, dy = check_rng_uniform(s, -1, 1), dx = check_rng_uniform(s, -1, 1);
    prox_vec3 dir = prox_v3_normalize(prox_v3(dx, dy, dz));
    return prox_xform_from_pose(prox_v3_scale(dir, dist), q);
}

static toy TA[3], TB[3];
static prox_bank *bank;
static prox_engine *eng;

static void setup(void)
{
    unsigned long long s = 42;
    for (int i = 0; i < 3; i++) {
        toy_build(&TA[i], PROX_TREE_USER0, 60 + 40 * (uint32_t)i, 1.0, 0.05, 0.2, &s);
        toy_build(&TB[i], PROX_TREE_USER1, 80 + 30 * (uint32_t)i, 0.8, 0.05, 0.2, &s);
        TB[i].tree.type = PROX_TREE_USER0; /* same type: served unswapped */
    }
    bank = prox_bank_create();
    register_toy(bank);
    eng = prox_engine_create(NULL, bank);
}

static double rel_tol(double v) { return 1e-9 * (1 + fabs(v)); }

/* ---- tests ---- */

static void test_single_pair_all_kinds(void)
{
    unsigned long long s = 7;
    int n_overlap = 0, n_sep = 0;
    for (int it = 0; it < 200; it++) {
        const toy *A = &TA[it % 3], *B = &TB[(it / 3) % 3];
        prox_xform pa = random_pose(&s, check_rng_uniform(&s, 0, 1));
        prox_xform pb = random_pose(&s, check_rng_uniform(&s, 0, 4.5));
        brute bf = brute_pair(A, &pa, B, &pb);
        prox_object_pair op = {&A->tree, &B->tree, pa, pb, NULL};
        prox_result r;
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        CHECK(prox_query_run(eng, &q, &op, 1, &r) == 0, "run");
        CHECK_NEAR(r.value, bf.dmin, rel_tol(bf.dmin), "distance");
        CHECK(r.complete && r.lower <= bf.dmin + 1e-12 && r.upper >= bf.dmin - 1e-12, "bounds %g %g", r.lower, r.upper);
        if (bf.dmin > 0) {
            n_sep++;
            CHECK_NEAR(prox_v3_dist(r.point_a, r.point_b), bf.dmin, 1e-9, "witness gap");
            prox_vec3 ca = prox_xform_point(&pa, A->sc[r.leaf_a]), cb = prox_xform_point(&pb, B->sc[r.leaf_b]);
            CHECK_NEAR(prox_v3_dist(r.point_a, ca), A->sr[r.leaf_a], 1e-9, "point_a on leaf a (world)");
            CHECK_NEAR(prox_v3_dist(r.point_b, cb), B->sr[r.leaf_b], 1e-9, "point_b on leaf b (world)");
        } else {
            n_overlap++;
            CHECK(r.flags & PROX_RESULT_OVERLAP, "overlap flag");
        }
        /* tolerance, at thresholds on both sides of the answer */
        double tols[2] = {bf.dmin + 0.05, bf.dmin - 0.05};
        for (int k = 0; k < 2; k++) {
            if (tols[k] <= 0)
                continue;
            q = prox_query_default(PROX_QUERY_TOLERANCE);
            q.tolerance = tols[k];
            prox_query_run(eng, &q, &op, 1, &r);
            CHECK(r.value == (bf.dmin < tols[k] ? 1 : 0) && r.complete, "tolerance %g vs %g -> %g", tols[k], bf.dmin,
                  r.value);
        }
        /* collide */
        q = prox_query_default(PROX_QUERY_COLLIDE);
        prox_query_run(eng, &q, &op, 1, &r);
        CHECK(r.value == (bf.overlaps > 0) && r.complete, "collide %g vs %ld overlaps", r.value, bf.overlaps);
        if (bf.overlaps) {
            prox_vec3 ca = prox_xform_point(&pa, A->sc[r.leaf_a]), cb = prox_xform_point(&pb, B->sc[r.leaf_b]);
            CHECK(prox_v3_dist(ca, cb) <= A->sr[r.leaf_a] + B->sr[r.leaf_b] + 1e-12, "collide leaf pair overlaps");
        }
        /* contacts: the exact set */
        prox_contact ct[4096];
        q = prox_query_default(PROX_QUERY_CONTACTS);
        q.contacts = ct;
        q.max_contacts = 4096;
        prox_query_run(eng, &q, &op, 1, &r);
        CHECK(r.contact_count == bf.overlaps && r.complete, "contacts %u vs %ld", r.contact_count, bf.overlaps);
        static unsigned char seen[MAXS][MAXS];
        memset(seen, 0, sizeof seen);
        int bad = 0;
        for (uint32_t i = 0; i < r.contact_count; i++) {
            uint32_t a = ct[i].leaf_a, b = ct[i].leaf_b;
            prox_vec3 ca = prox_xform_point(&pa, A->sc[a]), cb = prox_xform_point(&pb, B->sc[b]);
            bad += seen[a][b]++ > 0 || prox_v3_dist(ca, cb) > A->sr[a] + B->sr[b] + 1e-12;
        }
        CHECK(bad == 0, "%d duplicate or non-overlapping contacts", bad);
        if (bf.overlaps > 1) {
            q.max_contacts = 1;
            prox_query_run(eng, &q, &op, 1, &r);
            CHECK(r.contact_count == 1 && (r.flags & PROX_RESULT_CONTACTS_FULL) && !r.complete, "contacts full");
        }
        /* penetration volume, force, torque */
        q = prox_query_default(PROX_QUERY_PENVOL);
        prox_query_run(eng, &q, &op, 1, &r);
        CHECK_NEAR(r.value, bf.vol, rel_tol(bf.vol), "penvol");
        CHECK(r.complete && fabs(r.lower - bf.vol) <= rel_tol(bf.vol) && fabs(r.upper - bf.vol) <= rel_tol(bf.vol),
              "penvol bounds %g %g %g", r.lower, r.upper, bf.vol);
        CHECK(prox_v3_dist(r.force, bf.force) <= 1e-9, "force");
        CHECK(prox_v3_dist(r.torque, bf.torque) <= 1e-9, "torque");
    }
    CHECK(n_overlap > 20 && n_sep > 20, "both cases covered: %d overlapping, %d separated", n_overlap, n_sep);
}

static void test_forest(void)
{
    unsigned long long s = 11;
    for (int it = 0; it < 60; it++) {
        prox_object_pair op[3];
        brute bf[3];
        double dmin = INFINITY, vol = 0;
        long overl = 0;
        uint32_t best = 0;
        prox_vec3 f = {0, 0, 0};
        for (int i = 0; i < 3; i++) {
            const toy *A = &TA[i], *B = &TB[(i + it) % 3];
            prox_xform pa = random_pose(&s, 0.3 * i), pb = random_pose(&s, check_rng_uniform(&s, 0.5, 4.5));
            op[i] = (prox_object_pair){&A->tree, &B->tree, pa, pb, NULL};
            bf[i] = brute_pair(A, &pa, B, &pb);
            if (bf[i].dmin < dmin)
                dmin = bf[i].dmin, best = (uint32_t)i;
            vol += bf[i].vol;
            overl += bf[i].overlaps;
            f = prox_v3_add(f, bf[i].force);
        }
        prox_result r;
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_query_run(eng, &q, op, 3, &r);
        CHECK_NEAR(r.value, dmin, rel_tol(dmin), "forest distance = min over pairs");
        CHECK(r.complete, "complete");
        if (dmin > 0) /* at 0 several overlapping pairs tie */
            CHECK(r.pair == best, "best pair %u vs %u", r.pair, best);
        else
            CHECK(bf[r.pair < 3 ? r.pair : 0].dmin == 0, "best pair %u overlaps", r.pair);
        q = prox_query_default(PROX_QUERY_PENVOL);
        prox_query_run(eng, &q, op, 3, &r);
        CHECK_NEAR(r.value, vol, rel_tol(vol), "forest penvol = sum over pairs");
        CHECK(prox_v3_dist(r.force, f) <= 1e-9, "forest force = sum");
        q = prox_query_default(PROX_QUERY_COLLIDE);
        prox_query_run(eng, &q, op, 3, &r);
        CHECK(r.value == (overl > 0), "forest collide");
        prox_contact ct[8192];
        q = prox_query_default(PROX_QUERY_CONTACTS);
        q.contacts = ct;
        q.max_contacts = 8192;
        prox_query_run(eng, &q, op, 3, &r);
        CHECK(r.contact_count == overl, "forest contacts %u vs %ld", r.contact_count, overl);
        long per[3] = {0, 0, 0};
        for (uint32_t i = 0; i < r.contact_count; i++)
            per[ct[i].pair < 3 ? ct[i].pair : 0]++;
        CHECK(per[0] == bf[0].overlaps && per[1] == bf[1].overlaps && per[2] == bf[2].overlaps, "contacts per pair");
    }
}

/* A distance range (max_distance M): below M the answer is the one without
 * it; with nothing closer than M the value and upper bound are +inf and the
 * lower bound is M, certified (the truth is at or beyond it); never more
 * work than without the range. The same through the combined query. */
static void test_max_distance(void)
{
    unsigned long long s = 23;
    int below = 0, beyond = 0;
    for (int it = 0; it < 60; it++) {
        prox_object_pair op[3];
        double dmin = INFINITY;
        for (int i = 0; i < 3; i++) {
            const toy *A = &TA[i], *B = &TB[(i + it) % 3];
            prox_xform pa = random_pose(&s, 0.3 * i), pb = random_pose(&s, check_rng_uniform(&s, 1.5, 4.5));
            op[i] = (prox_object_pair){&A->tree, &B->tree, pa, pb, NULL};
            dmin = fmin(dmin, brute_pair(A, &pa, B, &pb).dmin);
        }
        prox_result r0, r;
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_query_run(eng, &q, op, 3, &r0);
        CHECK_NEAR(r0.value, dmin, rel_tol(dmin), "no range");
        if (!(dmin > 0))
            continue; /* (a range of 0 is none) */
        const double scale[4] = {0.5, 0.999, 1.001, 2.0};
        for (int k = 0; k < 4; k++) {
            q.max_distance = dmin * scale[k];
            CHECK(prox_query_run(eng, &q, op, 3, &r) == 0 && r.complete, "range %g: complete", scale[k]);
            if (dmin < q.max_distance) {
                below++;
                CHECK(fabs(r.value - dmin) <= rel_tol(dmin), "range %g x: the distance below it", scale[k]);
                CHECK(r.upper == r.value && r.lower <= dmin + rel_tol(dmin) && r.pair == r0.pair, "range %g x: bounds, pair", scale[k]);
            } else {
                beyond++;
                CHECK(r.value == INFINITY && r.upper == INFINITY, "range %g x: nothing below it, value %g", scale[k], r.value);
                CHECK(r.lower == q.max_distance && r.lower <= dmin, "range %g x: lower %g is the range", scale[k], r.lower);
            }
            CHECK(r.expansions <= r0.expansions, "range %g x: %llu expansions, %llu without", scale[k],
                  (unsigned long long)r.expansions, (unsigned long long)r0.expansions);
            prox_result rc;
            CHECK(prox_query_combined(eng, &q, op, 3, &rc) == 0 && rc.value == r.value && rc.lower == r.lower, "range %g x: combined",
                  scale[k]);
        }
        /* with rel_err: the lower bound is the range less the error */
        q.max_distance = dmin * 0.5;
        q.rel_err = 0.01;
        CHECK(prox_query_run(eng, &q, op, 3, &r) == 0 && r.value == INFINITY && fabs(r.lower - q.max_distance * 0.99) <= rel_tol(dmin),
              "range with rel_err: lower %g", r.lower);
    }
    CHECK(below >= 40 && beyond >= 40, "both cases: %d below, %d beyond", below, beyond);
}

/* A deadline already past, a tiny one, and a tiny queue: incomplete, flagged,
 * and the truth stays inside [lower, upper]. */
static void test_budgets_and_memory(void)
{
    prox_engine_def d = prox_engine_def_default();
    d.queue_capacity = 6;
    prox_engine *small = prox_engine_create(&d, bank);
    unsigned long long s = 5;
    int incomplete = 0, oom = 0;
    for (int it = 0; it < 80; it++) {
        const toy *A = &TA[2], *B = &TB[2];
        prox_xform pa = prox_xform_identity(), pb = random_pose(&s, check_rng_uniform(&s, 0.3, 3.5));
        prox_object_pair op = {&A->tree, &B->tree, pa, pb, NULL};
        brute bf = brute_pair(A, &pa, B, &pb);
        for (int mode = 0; mode < 3; mode++) {
            for (int kind = 0; kind < 2; kind++) {
                prox_query q = prox_query_default(kind ? PROX_QUERY_PENVOL : PROX_QUERY_DISTANCE);
                prox_engine *e = eng;
                if (mode == 0) {
                    q.deadline_ns = 1; /* long past */
                    q.check_every = 1;
                } else if (mode == 1) {
                    q.deadline_ns = prox_now_ns() + 2000;
                    q.check_every = 1;
                } else {
                    e = small;
                }
                prox_result r;
                CHECK(prox_query_run(e, &q, &op, 1, &r) == 0, "run");
                double truth = kind ? bf.vol : bf.dmin;
                double slack = 1e-9 * (1 + fabs(truth));
                CHECK(r.lower <= truth + slack && truth <= r.upper + slack, "mode %d kind %d: %g in [%g, %g]?", mode,
                      kind, truth, r.lower, r.upper);
                if (mode == 0)
                    CHECK(!r.complete && (r.flags & PROX_RESULT_DEADLINE), "past deadline: incomplete, flagged");
                if (mode == 2 && (r.flags & PROX_RESULT_OUT_OF_MEMORY)) {
                    oom++;
                    CHECK(r.dropped > 0, "drops counted");
                    if (kind)
                        CHECK(!r.complete, "penvol with drops is incomplete");
                }
                incomplete += !r.complete;
            }
        }
    }
    CHECK(oom > 40, "tiny queue overflowed in %d queries", oom);
    CHECK(incomplete > 160, "%d incomplete", incomplete);
    prox_engine_destroy(small);
}

static void test_bank_replace(void)
{
    unsigned long long s = 9;
    const toy *A = &TA[0], *B = &TB[0];
    prox_xform pa = prox_xform_identity(), pb = random_pose(&s, 3.0);
    prox_object_pair op = {&A->tree, &B->tree, pa, pb, NULL};
    brute bf = brute_pair(A, &pa, B, &pb);
    CHECK(bf.dmin > 0, "separated");
    prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
    prox_result r;
    prox_query_run(eng, &q, &op, 1, &r);
    CHECK_NEAR(r.value, bf.dmin, 1e-12, "original handler");
    prox_handler alt = toy_handler();
    alt.name = "toy+1";
    alt.expand = toy_expand_alt;
    extra_offset = 1.0;
    prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_DISTANCE, &alt);
    CHECK(!strcmp(prox_bank_get(bank, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_DISTANCE)->name, "toy+1"), "get");
    prox_query_run(eng, &q, &op, 1, &r);
    CHECK_NEAR(r.value, bf.dmin + 1.0, 1e-12, "replaced handler answers");
    prox_handler orig = toy_handler();
    prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_DISTANCE, &orig);
    prox_query_run(eng, &q, &op, 1, &r);
    CHECK_NEAR(r.value, bf.dmin, 1e-12, "switched back");
    prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_DISTANCE, NULL);
    CHECK(prox_bank_get(bank, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_DISTANCE) == NULL, "removed");
    CHECK(prox_query_run(eng, &q, &op, 1, &r) == 0 && (r.flags & PROX_RESULT_NO_HANDLER) && r.expansions == 0,
          "missing handler flagged and skipped");
    /* a forest with one pair lacking a handler: the others still answer */
    prox_object_pair two[2] = {op, {&TA[1].tree, &TB[1].tree, pa, pb, NULL}};
    TB[1].tree.type = PROX_TREE_USER1;
    brute b2 = brute_pair(&TA[1], &pa, &TB[1], &pb);
    prox_query_run(eng, &q, two, 2, &r);
    CHECK((r.flags & PROX_RESULT_NO_HANDLER) && fabs(r.value - b2.dmin) <= 1e-12, "forest skips the pair");
    TB[1].tree.type = PROX_TREE_USER0;
    prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_DISTANCE, &orig);
    /* a type or kind past the bank's table: nothing set (the table's
     * neighbours unchanged), nothing found, and a tree of such a type in a
     * query is a pair with no handler, not a read past the table */
    prox_handler other = toy_handler();
    other.name = "out of range";
    static const prox_handler *before[PROX_TREE_TYPE_COUNT][PROX_TREE_TYPE_COUNT][PROX_QUERY_KIND_COUNT];
    static prox_handler before_h[PROX_TREE_TYPE_COUNT][PROX_TREE_TYPE_COUNT][PROX_QUERY_KIND_COUNT];
    for (uint32_t a = 0; a < PROX_TREE_TYPE_COUNT; a++)
        for (uint32_t b = 0; b < PROX_TREE_TYPE_COUNT; b++)
            for (uint32_t k = 0; k < PROX_QUERY_KIND_COUNT; k++)
                if ((before[a][b][k] = prox_bank_get(bank, a, b, k)))
                    before_h[a][b][k] = *before[a][b][k];
    prox_bank_set(bank, PROX_TREE_TYPE_COUNT, PROX_TREE_USER0, PROX_QUERY_DISTANCE, &other);
    prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_TYPE_COUNT, PROX_QUERY_DISTANCE, &other);
    prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_KIND_COUNT, &other);
    int changed = 0;
    for (uint32_t a = 0; a < PROX_TREE_TYPE_COUNT; a++)
        for (uint32_t b = 0; b < PROX_TREE_TYPE_COUNT; b++)
            for (uint32_t k = 0; k < PROX_QUERY_KIND_COUNT; k++) {
                const prox_handler *now = prox_bank_get(bank, a, b, k);
                changed += now != before[a][b][k] || (now && memcmp(now, &before_h[a][b][k], sizeof *now) != 0);
            }
    CHECK(changed == 0, "%d entries in range changed by sets out of range", changed);
    const prox_handler *kept = prox_bank_get(bank, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_DISTANCE);
    CHECK(kept && !strcmp(kept->name, orig.name), "the handler in range unchanged: '%s'", kept ? kept->name : "(none)");
    CHECK(prox_bank_get(bank, PROX_TREE_TYPE_COUNT, PROX_TREE_USER0, PROX_QUERY_DISTANCE) == NULL &&
              prox_bank_get(bank, PROX_TREE_USER0, PROX_TREE_TYPE_COUNT, PROX_QUERY_DISTANCE) == NULL &&
              prox_bank_get(bank, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_KIND_COUNT) == NULL &&
              prox_bank_get(NULL, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_DISTANCE) == NULL,
          "nothing found out of range");
    prox_bank_set(NULL, PROX_TREE_USER0, PROX_TREE_USER0, PROX_QUERY_DISTANCE, &other); /* (no bank: nothing to do) */
    const uint32_t type_b = TB[0].tree.type;
    TB[0].tree.type = PROX_TREE_TYPE_COUNT + 5;
    CHECK(prox_query_run(eng, &q, &op, 1, &r) == 0 && (r.flags & PROX_RESULT_NO_HANDLER) && r.expansions == 0,
          "a tree type past the table: no handler (flags %u)", r.flags);
    TB[0].tree.type = type_b;
}

static void test_swap(void)
{
    unsigned long long s = 13;
    toy *B = &TB[1];
    B->tree.type = PROX_TREE_USER1; /* only (USER0, USER1) is registered */
    for (int it = 0; it < 40; it++) {
        const toy *A = &TA[1];
        prox_xform pa = random_pose(&s, 0.5), pb = random_pose(&s, check_rng_uniform(&s, 0.5, 4));
        prox_object_pair ab = {&A->tree, &B->tree, pa, pb, NULL}, ba = {&B->tree, &A->tree, pb, pa, NULL};
        prox_result r1, r2;
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_query_run(eng, &q, &ab, 1, &r1);
        prox_query_run(eng, &q, &ba, 1, &r2);
        CHECK(!(r2.flags & PROX_RESULT_NO_HANDLER), "served swapped");
        CHECK_NEAR(r1.value, r2.value, 1e-12, "same distance");
        if (r1.value > 0) {
            CHECK(prox_v3_dist(r1.point_a, r2.point_b) < 1e-9 && prox_v3_dist(r1.point_b, r2.point_a) < 1e-9,
                  "witness points swapped");
            CHECK(r1.leaf_a == r2.leaf_b && r1.leaf_b == r2.leaf_a, "leaf ids swapped");
        }
        q = prox_query_default(PROX_QUERY_PENVOL);
        prox_query_run(eng, &q, &ba, 1, &r2);
        brute bf = brute_pair(B, &pb, A, &pa); /* the caller's order: force on A about A's com */
        CHECK_NEAR(r2.value, bf.vol, rel_tol(bf.vol), "swapped penvol");
        CHECK(prox_v3_dist(r2.force, bf.force) <= 1e-9, "swapped force acts on the caller's B");
        CHECK(prox_v3_dist(r2.torque, bf.torque) <= 1e-9, "swapped torque about the caller's B");
        prox_contact ct[4096];
        q = prox_query_default(PROX_QUERY_CONTACTS);
        q.contacts = ct;
        q.max_contacts = 4096;
        prox_query_run(eng, &q, &ba, 1, &r2);
        int bad = 0;
        for (uint32_t i = 0; i < r2.contact_count; i++) {
            prox_vec3 ca = prox_xform_point(&pb, B->sc[ct[i].leaf_a]), cb = prox_xform_point(&pa, A->sc[ct[i].leaf_b]);
            bad += prox_v3_dist(ca, cb) > B->sr[ct[i].leaf_a] + A->sr[ct[i].leaf_b] + 1e-12;
        }
        CHECK(r2.contact_count == bf.overlaps && bad == 0, "swapped contacts in the caller's order");
    }
    B->tree.type = PROX_TREE_USER0;
}

static void test_cache_seeding(void)
{
    unsigned long long s = 17;
    uint64_t with = 0, without = 0;
    for (int it = 0; it < 40; it++) {
        const toy *A = &TA[2], *B = &TB[2];
        prox_xform pa = prox_xform_identity(), pb = random_pose(&s, check_rng_uniform(&s, 2.5, 4));
        prox_cache cache;
        memset(&cache, 0, sizeof cache);
        prox_object_pair op = {&A->tree, &B->tree, pa, pb, &cache};
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_result r;
        prox_query_run(eng, &q, &op, 1, &r);
        CHECK(cache.valid && cache.leaf_a == r.leaf_a && cache.leaf_b == r.leaf_b && cache.kind == PROX_QUERY_DISTANCE &&
                  cache.last_value == r.value,
              "cache filled");
        op.pose_b.t = prox_v3_add(op.pose_b.t, prox_v3(0.002, -0.001, 0.001)); /* a nearby pose */
        brute bf = brute_pair(A, &op.pose_a, B, &op.pose_b);
        prox_query_run(eng, &q, &op, 1, &r);
        CHECK_NEAR(r.value, bf.dmin, rel_tol(bf.dmin), "seeded answer exact");
        with += r.expansions;
        q.use_cache = 0;
        prox_query_run(eng, &q, &op, 1, &r);
        without += r.expansions;
    }
    fprintf(stderr, "    expansions on nearby poses: %llu with cache, %llu without\n", (unsigned long long)with,
            (unsigned long long)without);
    CHECK(with < without, "seeding saves expansions: %llu vs %llu", (unsigned long long)with,
          (unsigned long long)without);
}

/* An expansion in smallest-key order: no pair still waiting has a smaller
 * key than the one expanded (pairs the engine drops unexpanded, pruned,
 * have keys no better than the best so far, so never below a later
 * expansion's). */
static void rec_expand(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    if (rec.expansions++ == 0)
        rec.first_pair = p->index;
    for (uint32_t k = 0; k < rec.n; k++)
        if (rec.na[k] == na && rec.nb[k] == nb) {
            double key = rec.key[k];
            rec.n--;
            rec.na[k] = rec.na[rec.n], rec.nb[k] = rec.nb[rec.n], rec.key[k] = rec.key[rec.n];
            for (uint32_t m = 0; m < rec.n; m++)
                if (rec.key[m] < key - 1e-12) {
                    rec.out_of_order++;
                    break;
                }
            break;
        }
    toy_expand(c, p, na, nb);
}

/* The traversal order (prox_query.order): best first expands in key order,
 * for distance and for penetration volume (Algorithm 3's priority), depth
 * first does not; AUTO is best first for penetration volume under a
 * deadline only; the exact answers agree; a depth-first forest under a
 * deadline starts with its first root pair (the roots' pushes are turned
 * around). Fails on the queue of earlier revisions, which ran every query
 * depth first. */
static void test_order(void)
{
    prox_handler h;
    memset(&h, 0, sizeof h);
    h.name = "toy, recorded";
    h.expand = rec_expand;
    for (uint32_t k = 0; k < PROX_QUERY_KIND_COUNT; k++)
        prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_USER0, k, &h);
    unsigned long long s = 31;
    long out_of_order[2][3] = {{0}}, expansions[2][3] = {{0}};
    for (int it = 0; it < 40; it++) {
        const toy *A = &TA[it % 3], *B = &TB[(it / 3) % 3];
        prox_xform pa = prox_xform_identity(), pb = random_pose(&s, check_rng_uniform(&s, 0.2, 2.5));
        prox_object_pair op = {&A->tree, &B->tree, pa, pb, NULL};
        for (int kind = 0; kind < 2; kind++) {
            double value[3];
            for (int order = 0; order < 3; order++) {
                prox_query q = prox_query_default(kind ? PROX_QUERY_PENVOL : PROX_QUERY_DISTANCE);
                q.order = (uint32_t)order;
                if (kind)
                    q.deadline_ns = prox_now_ns() + 10000000000ull; /* ten seconds: never reached */
                memset(&rec, 0, sizeof rec);
                rec.on = 1;
                rec_push(A->tree.root, B->tree.root, 0.0);
                prox_result r;
                CHECK(prox_query_run(eng, &q, &op, 1, &r) == 0 && r.complete, "run");
                rec.on = 0;
                value[order] = r.value;
                out_of_order[kind][order] += rec.out_of_order;
                expansions[kind][order] += rec.expansions;
            }
            CHECK(fabs(value[1] - value[2]) <= rel_tol(value[1]) && fabs(value[0] - value[1]) <= rel_tol(value[1]),
                  "kind %d: the orders agree (%.17g %.17g %.17g)", kind, value[0], value[1], value[2]);
        }
    }
    for (int kind = 0; kind < 2; kind++) {
        CHECK(expansions[kind][1] > 400 && out_of_order[kind][1] == 0, "kind %d best first: %ld of %ld expansions out of key order",
              kind, out_of_order[kind][1], expansions[kind][1]);
        CHECK(out_of_order[kind][2] > 20, "kind %d depth first: %ld of %ld expansions out of key order", kind,
              out_of_order[kind][2], expansions[kind][2]);
    }
    CHECK(out_of_order[0][0] > 20, "auto, distance: depth first (%ld out of order)", out_of_order[0][0]);
    CHECK(out_of_order[1][0] == 0, "auto, penetration volume with a deadline: best first (%ld out of order)", out_of_order[1][0]);

    /* a forest of three pairs under a deadline: the roots are visited in
     * pair order (no root bounds here), and depth first the first pair's
     * is expanded first */
    prox_object_pair ops[3];
    for (int i = 0; i < 3; i++)
        ops[i] = (prox_object_pair){&TA[i].tree, &TB[i].tree, prox_xform_identity(), random_pose(&s, 1.0), NULL};
    prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
    q.order = PROX_ORDER_DEPTH_FIRST;
    q.deadline_ns = prox_now_ns() + 10000000000ull;
    memset(&rec, 0, sizeof rec);
    prox_result r;
    CHECK(prox_query_run(eng, &q, ops, 3, &r) == 0 && r.complete, "forest run");
    CHECK(rec.first_pair == 0, "depth first under a deadline starts with pair 0, not %ld", rec.first_pair);

    q.order = 3;
    CHECK(prox_query_run(eng, &q, ops, 3, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "unknown order refused");
    h = toy_handler();
    for (uint32_t k = 0; k < PROX_QUERY_KIND_COUNT; k++)
        prox_bank_set(bank, PROX_TREE_USER0, PROX_TREE_USER0, k, &h);
}

static void test_bad_input(void)
{
    prox_xform pa = prox_xform_identity(), pb = prox_xform_identity();
    pb.t.x = NAN;
    prox_object_pair op = {&TA[0].tree, &TB[0].tree, pa, pb, NULL};
    prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
    prox_result r;
    CHECK(prox_query_run(eng, &q, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "NaN pose");
    pb.t.x = INFINITY;
    op.pose_b = pb;
    CHECK(prox_query_combined(eng, &q, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "inf pose (combined)");
    op.pose_b = prox_xform_identity();
    op.b = NULL;
    CHECK(prox_query_run(eng, &q, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "NULL tree");
    op.b = &TB[0].tree;
    q.kind = 99;
    CHECK(prox_query_run(eng, &q, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "bad kind");
    /* a query or result missing (the combined query read *q first: SEGV) */
    q = prox_query_default(PROX_QUERY_DISTANCE);
    CHECK(prox_query_combined(eng, NULL, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "NULL query (combined)");
    CHECK(prox_query_run(eng, &q, &op, 1, NULL) == -1, "NULL result");
    /* rel_err outside [0, 1), a tolerance not finite (NaN bounds, every
     * pair pruned, or none) */
    const double bad_rel[] = {NAN, 1.0, 2.0, -0.1};
    for (int i = 0; i < 4; i++) {
        q.rel_err = bad_rel[i];
        CHECK(prox_query_run(eng, &q, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "rel_err %g", bad_rel[i]);
    }
    q.rel_err = 0;
    const double bad_range[] = {NAN, -1.0, -INFINITY};
    for (int i = 0; i < 3; i++) {
        q.max_distance = bad_range[i];
        CHECK(prox_query_run(eng, &q, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "max_distance %g", bad_range[i]);
    }
    q.max_distance = INFINITY;
    CHECK(prox_query_run(eng, &q, &op, 1, &r) == 0 && isfinite(r.value), "an infinite range is no range");
    q = prox_query_default(PROX_QUERY_TOLERANCE);
    q.tolerance = NAN;
    CHECK(prox_query_run(eng, &q, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "NaN tolerance");
    /* poses that do not rotate (3 I, 0, a reflection) or translate beyond
     * PROX_MAX_TRANSLATION (squared distances overflowed: x = 1e300 came
     * back as an "exact" 1.34e154) */
    q = prox_query_default(PROX_QUERY_DISTANCE);
    prox_xform bad[5];
    for (int i = 0; i < 5; i++)
        bad[i] = prox_xform_identity();
    for (int k = 0; k < 3; k++)
        bad[0].R.m[k][k] = 3.0, bad[1].R.m[k][k] = 0.0;
    bad[2].R.m[2][2] = -1;
    bad[3].t.x = 1e300;
    bad[4].t.y = -2e15; /* an inner sphere tree answered +inf at 1e30, "complete" */
    /* and prox_xform_check says why (the service's messages rest on it) */
    const prox_xform_fault why[5] = {PROX_XFORM_NOT_ROTATION, PROX_XFORM_NOT_ROTATION, PROX_XFORM_NOT_ROTATION,
                                     PROX_XFORM_TOO_FAR, PROX_XFORM_TOO_FAR};
    for (int i = 0; i < 5; i++) {
        op.pose_b = bad[i];
        CHECK(prox_query_run(eng, &q, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "bad pose %d", i);
        CHECK(prox_xform_check(&bad[i]) == why[i], "bad pose %d: fault %d, want %d", i, (int)prox_xform_check(&bad[i]),
              (int)why[i]);
    }
    /* not finite wins over the rest: a NaN anywhere, an inf translation */
    for (int k = 0; k < 12; k++) {
        prox_xform x = prox_xform_identity();
        double *slot = k < 9 ? &x.R.m[k / 3][k % 3] : (k == 9 ? &x.t.x : k == 10 ? &x.t.y : &x.t.z);
        *slot = k % 2 ? NAN : -INFINITY;
        CHECK(prox_xform_check(&x) == PROX_XFORM_NOT_FINITE, "non-finite slot %d: fault %d", k, (int)prox_xform_check(&x));
        op.pose_b = x;
        CHECK(prox_query_run(eng, &q, &op, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "non-finite slot %d", k);
    }
    op.pose_b = prox_xform_from_pose(prox_v3(0, 0, PROX_MAX_TRANSLATION), prox_quat_normalize((prox_quat){1, 2, 3, 4}));
    CHECK(prox_xform_check(&op.pose_b) == PROX_XFORM_OK, "a rotation from a quaternion at the largest translation is fine");
    CHECK(prox_query_run(eng, &q, &op, 1, &r) == 0, "a rotation from a quaternion at the largest translation passes");
    op.pose_b = prox_xform_from_pose(prox_v3(0, 0, 0), prox_quat_normalize((prox_quat){1, 2, 3, 4}));
    CHECK(prox_query_run(eng, &q, &op, 1, &r) == 0, "a rotation from a quaternion passes");
}

static void sort_doubles(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

/* The combined query: distance when separated, -penvol when overlapping;
 * under a deadline it stops within one expansion + check interval. */
static void test_combined_and_overshoot(void)
{
    unsigned long long s = 23;
    int sep = 0, ovl = 0;
    for (int it = 0; it < 100; it++) {
        const toy *A = &TA[2], *B = &TB[2];
        prox_xform pa = prox_xform_identity(), pb = random_pose(&s, check_rng_uniform(&s, 0.0, 4));
        prox_object_pair op = {&A->tree, &B->tree, pa, pb, NULL};
        brute bf = brute_pair(A, &pa, B, &pb);
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_result r;
        CHECK(prox_query_combined(eng, &q, &op, 1, &r) == 0, "combined");
        if (bf.overlaps) {
            ovl++;
            CHECK((r.flags & PROX_RESULT_OVERLAP) && fabs(r.value + bf.vol) <= rel_tol(bf.vol), "-penvol %g vs %g",
                  r.value, -bf.vol);
            CHECK(r.lower <= -bf.vol + 1e-12 && -bf.vol <= r.upper + 1e-12, "combined bounds");
        } else {
            sep++;
            CHECK(!(r.flags & PROX_RESULT_OVERLAP) && fabs(r.value - bf.dmin) <= rel_tol(bf.dmin), "distance");
        }
    }
    CHECK(sep > 10 && ovl > 10, "both cases: %d separated, %d overlapping", sep, ovl);
    /* overshoot past the deadline: measured and reported (no timing assertion) */
    enum { NQ = 2000 };
    static double over[NQ], cpu_over[NQ];
    for (int it = 0; it < NQ; it++) {
        prox_xform pa = prox_xform_identity(), pb = random_pose(&s, 0.2);
        prox_object_pair op = {&TA[2].tree, &TB[2].tree, pa, pb, NULL};
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_result r;
        struct timespec c0, c1;
        uint64_t t0 = prox_now_ns();
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        q.deadline_ns = t0 + 5000;
        prox_query_combined(eng, &q, &op, 1, &r);
        uint64_t t1 = prox_now_ns();
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        over[it] = t1 > q.deadline_ns ? (double)(t1 - q.deadline_ns) * 1e-3 : 0;
        double cpu = (double)(c1.tv_sec - c0.tv_sec) * 1e6 + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-3;
        cpu_over[it] = cpu > 5.0 ? cpu - 5.0 : 0;
    }
    sort_doubles(cpu_over, NQ);
    sort_doubles(over, NQ);
    fprintf(stderr,
            "    combined query, 5 us deadline, default check interval: wall overshoot p50 %.2f p99 %.2f max %.2f us;"
            " thread CPU over 5 us p50 %.2f p99 %.2f max %.2f us\n",
            over[NQ / 2], over[NQ * 99 / 100], over[NQ - 1], cpu_over[NQ / 2], cpu_over[NQ * 99 / 100],
            cpu_over[NQ - 1]);
}

static void test_no_allocation(void)
{
#ifdef CHECK_ALLOC_ON
    unsigned long long s = 29;
    prox_contact ct[4096];
    prox_cache cache;
    memset(&cache, 0, sizeof cache);
    check_alloc_counting = 1;
    atomic_store(&check_alloc_calls, 0);
    for (int it = 0; it < 50; it++) {
        prox_xform pa = prox_xform_identity(), pb = random_pose(&s, check_rng_uniform(&s, 0, 3));
        prox_object_pair op = {&TA[1].tree, &TB[1].tree, pa, pb, &cache};
        for (uint32_t k = 0; k < PROX_QUERY_KIND_COUNT; k++) {
            prox_query q = prox_query_default(k);
            q.contacts = ct;
            q.max_contacts = 4096;
            q.tolerance = 0.1;
            q.deadline_ns = prox_now_ns() + 100000;
            prox_result r;
            prox_query_run(eng, &q, &op, 1, &r);
            prox_query_combined(eng, &q, &op, 1, &r);
        }
    }
    check_alloc_counting = 0;
    long calls = atomic_load(&check_alloc_calls);
    CHECK(calls == 0, "%ld allocator calls during queries", calls);
#endif
}

int main(int argc, char **argv)
{
    (void)argc;
    setup();
    RUN_TEST(test_single_pair_all_kinds);
    RUN_TEST(test_forest);
    RUN_TEST(test_max_distance);
    RUN_TEST(test_budgets_and_memory);
    RUN_TEST(test_bank_replace);
    RUN_TEST(test_swap);
    RUN_TEST(test_cache_seeding);
    RUN_TEST(test_order);
    RUN_TEST(test_bad_input);
    RUN_TEST(test_combined_and_overshoot);
    RUN_TEST(test_no_allocation);
    prox_engine_destroy(eng);
    prox_bank_destroy(bank);
    return check_summary(argv[0]);
}
