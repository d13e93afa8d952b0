/* test_bvh.c - mesh queries through the engine against brute force over all
 * triangle pairs: distance, tolerance, collide, contacts; nesting; forests;
 * budgets; coherence; the run-time bank. */
#include "check.h"
#include "prox.h"
#include "prox_bvh.h"

typedef struct brute {
    double dist;
    int overlap; /* any triangle pair intersects */
    uint32_t pairs; /* intersecting triangle pairs */
} brute;

static brute brute_force(const prox_mesh *A, const prox_xform *xa, const prox_mesh *B, const prox_xform *xb)
{
    brute r = {INFINITY, 0, 0};
    for (uint32_t i = 0; i < A->triangle_count; i++) {
        prox_vec3 P[3];
        for (int k = 0; k < 3; k++)
            P[k] = prox_xform_point(xa, A->vertices[A->triangles[i][k]]);
        for (uint32_t j = 0; j < B->triangle_count; j++) {
            prox_vec3 Q[3], p, q;
            for (int k = 0; k < 3; k++)
                Q[k] = prox_xform_point(xb, B->vertices[B->triangles[j][k]]);
            double d = prox_triangle_distance(P, Q, &p, &q);
            if (d < r.dist)
                r.dist = d;
            if (prox_triangle_intersect(P, Q)) {
                r.overlap = 1;
                r.pairs++;
            }
        }
    }
    return r;
}

static prox_xform random_pose(unsigned long long *s, double spread)
{
    prox_quat q = {check_rng_uniform(s, -1, 1), check_rng_uniform(s, -1, 1), check_rng_uniform(s, -1, 1),
                   check_rng_uniform(s, -1, 1)};
    return prox_xform_from_pose(
        prox_v3(check_rng_uniform(s, -spread, spread), check_rng_uniform(s, -spread, spread), check_rng_uniform(s, -spread, spread)), q);
}

static prox_bank *bank;
static prox_engine *engine;

static void run_pair(const prox_tree *a, const prox_xform *xa, const prox_tree *b, const prox_xform *xb, prox_query q,
                     prox_result *r, prox_cache *cache)
{
    prox_object_pair p = {a, b, *xa, *xb, cache};
    CHECK(prox_query_run(engine, &q, &p, 1, r) == 0, "query runs");
}

static void check_shapes(const char *label, prox_mesh *A, prox_mesh *B, int poses, double spread, unsigned long long seed)
{
    prox_bvh *ba = prox_bvh_build(A), *bb = prox_bvh_build(B);
    unsigned long long s = seed;
    prox_contact contacts[4096];
    for (int i = 0; i < poses; i++) {
        prox_xform xa = random_pose(&s, 0.2), xb = random_pose(&s, spread);
        brute ref = brute_force(A, &xa, B, &xb);
        int solid_overlap = ref.overlap;
        /* nested closed meshes: a vertex inside the other counts */
        if (!solid_overlap && A->closed && B->closed) {
            prox_vec3 vb = prox_xform_inv_point(&xa, prox_xform_point(&xb, B->vertices[0]));
            prox_vec3 va = prox_xform_inv_point(&xb, prox_xform_point(&xa, A->vertices[0]));
            solid_overlap = prox_mesh_contains_point(A, vb) || prox_mesh_contains_point(B, va);
        }
        double want = solid_overlap ? 0.0 : ref.dist;
        prox_result r;
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r, NULL);
        CHECK(fabs(r.value - want) <= 1e-9 * (1 + want), "%s pose %d distance %.12g vs brute %.12g", label, i, r.value, want);
        CHECK(r.complete && r.lower <= want + 1e-12 && r.upper >= want - 1e-12, "%s bounds", label);
        if (!solid_overlap) {
            CHECK_NEAR(prox_v3_dist(r.point_a, r.point_b), r.value, 1e-9, "witness points realise the distance");
        }
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_COLLIDE), &r, NULL);
        CHECK((int)r.value == solid_overlap, "%s pose %d collide %g vs %d", label, i, r.value, solid_overlap);
        prox_query tq = prox_query_default(PROX_QUERY_TOLERANCE);
        tq.tolerance = 0.1;
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, tq, &r, NULL);
        if (fabs(want - 0.1) > 1e-9)
            CHECK((int)r.value == (want < 0.1), "%s tolerance %g vs distance %g", label, r.value, want);
        prox_query cq = prox_query_default(PROX_QUERY_CONTACTS);
        cq.contacts = contacts;
        cq.max_contacts = 4096;
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, cq, &r, NULL);
        CHECK(r.contact_count == ref.pairs && r.complete, "%s contacts %u vs brute %u", label, r.contact_count, ref.pairs);
    }
    prox_bvh_free(ba);
    prox_bvh_free(bb);
}

static void test_sphere_sphere(void)
{
    prox_mesh *A = prox_mesh_make_sphere(0.5, 2), *B = prox_mesh_make_sphere(0.3, 1);
    check_shapes("sphere", A, B, 60, 1.0, 11);
    prox_mesh_free(A);
    prox_mesh_free(B);
}

static void test_torus_box(void)
{
    prox_mesh *A = prox_mesh_make_torus(0.6, 0.15, 24, 12), *B = prox_mesh_make_box(prox_v3(0.2, 0.1, 0.3));
    check_shapes("torus-box", A, B, 60, 0.9, 12);
    prox_mesh_free(A);
    prox_mesh_free(B);
}

static void test_soup(void)
{
    prox_mesh *A = prox_mesh_make_soup(150, 0.5, 0.2, 5), *B = prox_mesh_make_soup(120, 0.4, 0.2, 6);
    check_shapes("soup", A, B, 40, 0.8, 13);
    prox_mesh_free(A);
    prox_mesh_free(B);
}

static void test_nested(void)
{
    prox_mesh *A = prox_mesh_make_sphere(1.0, 2), *B = prox_mesh_make_sphere(0.2, 1);
    prox_bvh *ba = prox_bvh_build(A), *bb = prox_bvh_build(B);
    prox_xform xa = prox_xform_identity(), xb = prox_xform_from_pose(prox_v3(0.1, 0.2, -0.1), prox_quat_identity());
    brute ref = brute_force(A, &xa, B, &xb);
    CHECK(!ref.overlap && ref.dist > 0.4, "no surface contact, surfaces %.3g apart", ref.dist);
    prox_result r;
    run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r, NULL);
    CHECK(r.value == 0.0 && (r.flags & PROX_RESULT_OVERLAP), "nested distance %g", r.value);
    run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_COLLIDE), &r, NULL);
    CHECK(r.value == 1.0, "nested collide");
    /* swapped order too */
    run_pair(prox_bvh_tree(bb), &xb, prox_bvh_tree(ba), &xa, prox_query_default(PROX_QUERY_COLLIDE), &r, NULL);
    CHECK(r.value == 1.0, "nested collide, inner first");
    prox_bvh_free(ba);
    prox_bvh_free(bb);
    prox_mesh_free(A);
    prox_mesh_free(B);
}

static void test_forest(void)
{
    prox_mesh *M[4] = {prox_mesh_make_sphere(0.3, 2), prox_mesh_make_box(prox_v3(0.2, 0.2, 0.2)),
                       prox_mesh_make_torus(0.3, 0.08, 20, 10), prox_mesh_make_sphere(0.2, 1)};
    prox_bvh *T[4];
    for (int i = 0; i < 4; i++)
        T[i] = prox_bvh_build(M[i]);
    unsigned long long s = 99;
    for (int it = 0; it < 20; it++) {
        prox_object_pair pairs[3];
        double want = INFINITY;
        uint32_t want_pair = 0;
        prox_xform tool = random_pose(&s, 0.5);
        for (int k = 0; k < 3; k++) {
            prox_xform env = random_pose(&s, 1.5);
            pairs[k] = (prox_object_pair){prox_bvh_tree(T[k]), prox_bvh_tree(T[3]), env, tool, NULL};
            brute b = brute_force(M[k], &env, M[3], &tool);
            if (b.dist < want)
                want = b.dist, want_pair = (uint32_t)k;
        }
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_result r;
        CHECK(prox_query_run(engine, &q, pairs, 3, &r) == 0, "forest query");
        CHECK(fabs(r.value - want) < 1e-9 || want <= 0, "forest min %.12g vs %.12g", r.value, want);
        if (want > 0)
            CHECK(r.pair == want_pair, "closest pair index %u vs %u", r.pair, want_pair);
    }
    for (int i = 0; i < 4; i++) {
        prox_bvh_free(T[i]);
        prox_mesh_free(M[i]);
    }
}

static void test_budget_and_memory(void)
{
    prox_mesh *A = prox_mesh_make_sphere(0.5, 4), *B = prox_mesh_make_torus(0.4, 0.1, 64, 32);
    prox_bvh *ba = prox_bvh_build(A), *bb = prox_bvh_build(B);
    unsigned long long s = 5;
    for (int i = 0; i < 10; i++) {
        prox_xform xa = prox_xform_identity(), xb = random_pose(&s, 1.2);
        prox_result full, r;
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &full, NULL);
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        q.deadline_ns = prox_now_ns() - 1; /* already past */
        q.check_every = 1;
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, q, &r, NULL);
        CHECK(!r.complete && (r.flags & PROX_RESULT_DEADLINE), "stopped at the deadline");
        CHECK(r.lower <= full.value + 1e-12 && r.upper >= full.value - 1e-12, "[%g, %g] brackets %g", r.lower, r.upper, full.value);
        /* a few expansions only */
        q.deadline_ns = 0;
        prox_engine_def d = {8, 4};
        prox_engine *small = prox_engine_create(&d, bank);
        prox_object_pair p = {prox_bvh_tree(ba), prox_bvh_tree(bb), xa, xb, NULL};
        prox_query_run(small, &q, &p, 1, &r);
        CHECK(r.lower <= full.value + 1e-12 && r.upper >= full.value - 1e-12, "tiny queue: [%g, %g] brackets %g", r.lower, r.upper, full.value);
        CHECK((r.flags & PROX_RESULT_OUT_OF_MEMORY) || r.complete, "tiny queue flagged");
        prox_engine_destroy(small);
    }
    prox_bvh_free(ba);
    prox_bvh_free(bb);
    prox_mesh_free(A);
    prox_mesh_free(B);
}

static void test_coherence(void)
{
    prox_mesh *A = prox_mesh_make_sphere(0.5, 4), *B = prox_mesh_make_torus(0.4, 0.1, 96, 48);
    prox_bvh *ba = prox_bvh_build(A), *bb = prox_bvh_build(B);
    prox_cache cache = {0};
    prox_xform xa = prox_xform_identity();
    uint64_t cold = 0, warm = 0;
    for (int i = 0; i < 50; i++) {
        prox_xform xb = prox_xform_from_pose(prox_v3(1.05 + 0.001 * i, 0.1, 0.0), prox_quat_axis_angle(prox_v3(0, 1, 0), 0.01 * i));
        prox_result rc, rw;
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rc, NULL);
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rw, &cache);
        CHECK(rc.value == rw.value, "same answer with the cache");
        if (i > 0) {
            cold += rc.expansions;
            warm += rw.expansions;
        }
    }
    CHECK(warm < cold, "cache saves expansions: %llu vs %llu", (unsigned long long)warm, (unsigned long long)cold);
    fprintf(stderr, "    coherence: %llu expansions cold, %llu with the cache\n", (unsigned long long)cold, (unsigned long long)warm);
    prox_bvh_free(ba);
    prox_bvh_free(bb);
    prox_mesh_free(A);
    prox_mesh_free(B);
}

static int replacement_calls;
static void counting_expand(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    (void)na, (void)nb;
    replacement_calls++;
    prox_ctx_offer_distance(c, p, 42.0, prox_v3(0, 0, 0), prox_v3(42, 0, 0), 0, 0);
}

static void test_bank_replace(void)
{
    prox_mesh *A = prox_mesh_make_box(prox_v3(0.5, 0.5, 0.5));
    prox_bvh *ba = prox_bvh_build(A);
    prox_xform xa = prox_xform_identity(), xb = prox_xform_from_pose(prox_v3(2, 0, 0), prox_quat_identity());
    prox_result r;
    run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(ba), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r, NULL);
    CHECK_NEAR(r.value, 1.0, 1e-12, "built-in handler");
    prox_handler saved = *prox_bank_get(bank, PROX_TREE_MESH, PROX_TREE_MESH, PROX_QUERY_DISTANCE);
    prox_handler h = {"counting", NULL, NULL, counting_expand, NULL, NULL};
    prox_bank_set(bank, PROX_TREE_MESH, PROX_TREE_MESH, PROX_QUERY_DISTANCE, &h);
    run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(ba), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r, NULL);
    CHECK(r.value == 42.0 && replacement_calls == 1, "replacement answers (%g, %d calls)", r.value, replacement_calls);
    prox_bank_set(bank, PROX_TREE_MESH, PROX_TREE_MESH, PROX_QUERY_DISTANCE, NULL);
    run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(ba), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r, NULL);
    CHECK(r.flags & PROX_RESULT_NO_HANDLER, "removed handler is reported");
    prox_bank_set(bank, PROX_TREE_MESH, PROX_TREE_MESH, PROX_QUERY_DISTANCE, &saved);
    run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(ba), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r, NULL);
    CHECK_NEAR(r.value, 1.0, 1e-12, "restored handler");
    prox_bvh_free(ba);
    prox_mesh_free(A);
}

static void test_bad_input(void)
{
    prox_mesh *A = prox_mesh_make_box(prox_v3(0.5, 0.5, 0.5));
    prox_bvh *ba = prox_bvh_build(A);
    prox_xform xa = prox_xform_identity(), xb = xa;
    xb.t.x = NAN;
    prox_object_pair p = {prox_bvh_tree(ba), prox_bvh_tree(ba), xa, xb, NULL};
    prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
    prox_result r;
    CHECK(prox_query_run(engine, &q, &p, 1, &r) == -1 && (r.flags & PROX_RESULT_BAD_INPUT), "NaN pose refused");
    p.b = NULL;
    CHECK(prox_query_run(engine, &q, &p, 1, &r) == -1, "NULL tree refused");
    prox_bvh_free(ba);
    prox_mesh_free(A);
}

int main(int argc, char **argv)
{
    (void)argc;
    bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    engine = prox_engine_create(NULL, bank);
    RUN_TEST(test_sphere_sphere);
    RUN_TEST(test_torus_box);
    RUN_TEST(test_soup);
    RUN_TEST(test_nested);
    RUN_TEST(test_forest);
    RUN_TEST(test_budget_and_memory);
    RUN_TEST(test_coherence);
    RUN_TEST(test_bank_replace);
    RUN_TEST(test_bad_input);
    prox_engine_destroy(engine);
    prox_bank_destroy(bank);
    return check_summary(argv[0]);
}
