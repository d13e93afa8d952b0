/* test_bvh.c - mesh queries through the engine against brute force over all
 * triangle pairs: distance, tolerance, collide, contacts; nesting; forests;
 * budgets; coherence; the run-time bank. */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bvh_internal.h"
#include "check.h"
#include "ist_internal.h"
#include "prox.h"
#include "prox_bvh.h"
#include "prox_voxel.h"
#include "check_prox.h"

typedef struct brute {
    double dist;
    int overlap; /* any triangle pair intersects */
    uint32_t pairs; /* intersecting triangle pairs */
    unsigned long long list[4096]; /* the first of them, as (i << 32) | j */
} brute;

static int cmp_u64(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

static brute brute_force(const prox_mesh *A, const prox_xform *xa, const prox_mesh *B, const prox_xform *xb)
{
    brute r;
    memset(&r, 0, sizeof r);
    r.dist = INFINITY;
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
                if (r.pairs < 4096)
                    r.list[r.pairs] = ((unsigned long long)i << 32) | j;
                r.pairs++;
            }
        }
    }
    return r;
}

static prox_xform random_pose(unsigned long long *s, double spread)
{
    prox_quat q = check_rng_quat(s);
    return prox_xform_from_pose(check_rng_v3(s, -spread, spread), q);
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
        if (r.contact_count == ref.pairs && ref.pairs <= 4096) {
            /* the same set of triangle pairs, not just as many */
            static unsigned long long got[4096];
            for (uint32_t k = 0; k < r.contact_count; k++)
                got[k] = ((unsigned long long)contacts[k].leaf_a << 32) | contacts[k].leaf_b;
            qsort(got, r.contact_count, sizeof *got, cmp_u64);
            qsort(ref.list, ref.pairs, sizeof *ref.list, cmp_u64);
            CHECK(memcmp(got, ref.list, sizeof *got * ref.pairs) == 0, "%s pose %d: contact set differs from brute force", label, i);
        }
    }
    prox_bvh_free(ba);
    prox_bvh_free(bb);
}


/* A node record with the given frame, centre and half extents. */
static bvh_node make_node(const prox_mat3 *R, prox_vec3 c, double e0, double e1, double e2)
{
    bvh_node n;
    memset(&n, 0, sizeof n);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            n.R[i][j] = (float)R->m[i][j];
    n.c[0] = (float)c.x, n.c[1] = (float)c.y, n.c[2] = (float)c.z;
    n.e[0] = (float)e0, n.e[1] = (float)e1, n.e[2] = (float)e2;
    n.radius = (float)sqrt(e0 * e0 + e1 * e1 + e2 * e2);
    return n;
}

/* The node's rectangle (axes 0, 1) as two triangles, or its box as 12, in
 * the mesh frame (using the float record exactly as stored). */
static void node_corner(const bvh_node *n, double s0, double s1, double s2, prox_vec3 *out)
{
    double p[3];
    for (int i = 0; i < 3; i++)
        p[i] = n->c[i] + s0 * n->e[0] * n->R[i][0] + s1 * n->e[1] * n->R[i][1] + s2 * n->e[2] * n->R[i][2];
    *out = prox_v3(p[0], p[1], p[2]);
}

static double rect_dist_brute(const bvh_node *a, const bvh_node *b, const prox_xform *b_in_a)
{
    prox_vec3 A[4], B[4];
    static const double s[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
    for (int k = 0; k < 4; k++) {
        node_corner(a, s[k][0], s[k][1], 0, &A[k]);
        node_corner(b, s[k][0], s[k][1], 0, &B[k]);
        B[k] = prox_xform_point(b_in_a, B[k]);
    }
    prox_vec3 TA[2][3] = {{A[0], A[1], A[2]}, {A[0], A[2], A[3]}}, TB[2][3] = {{B[0], B[1], B[2]}, {B[0], B[2], B[3]}};
    double best = INFINITY, d;
    prox_vec3 p, q;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if ((d = prox_triangle_distance(TA[i], TB[j], &p, &q)) < best)
                best = d;
    return best;
}

/* OBB and RSS bounds against brute force: the RSS rectangle distance is
 * exact (triangulated rectangles), the projection RSS bound never exceeds
 * it, the OBB gap never exceeds the distance between the boxes' surfaces,
 * and early-out answers stay on the right side of the threshold. */
static void test_bv_bounds(void)
{
    unsigned long long s = 77;
    int exact = 0;
    for (int it = 0; it < 3000; it++) {
        prox_xform fa = random_pose(&s, 0.3), fb = random_pose(&s, 0.3), X = random_pose(&s, 0.8);
        /* flat, thin and cube-like nodes; some with parallel frames */
        double ea[3] = {check_rng_uniform(&s, 0.01, 0.5), 0, 0}, eb[3] = {check_rng_uniform(&s, 0.01, 0.5), 0, 0};
        ea[1] = ea[0] * check_rng_uniform(&s, 0.05, 1), eb[1] = eb[0] * check_rng_uniform(&s, 0.05, 1);
        ea[2] = (it % 3 == 0) ? 0.0 : ea[1] * check_rng_uniform(&s, 0, 1);
        eb[2] = (it % 3 == 0) ? 0.0 : eb[1] * check_rng_uniform(&s, 0, 1);
        if (it % 7 == 0)
            fb.R = fa.R, X.R = prox_m3_identity();
        bvh_node a = make_node(&fa.R, fa.t, ea[0], ea[1], ea[2]), b = make_node(&fb.R, fb.t, eb[0], eb[1], eb[2]);
        bvh_rel rel = bvh_relative(&a, &b, &X);
        double rd = rect_dist_brute(&a, &b, &X);
        double rss = bvh_rss_gap(&rel, a.e, b.e, INFINITY) + (double)a.e[2] + (double)b.e[2];
        /* float frames are orthonormal only to ~1e-7: that is what the
         * builder's BVH_FLOAT_PAD absorbs; here it bounds the tolerance */
        double tol = 1e-6 * (1 + rd + ea[0] + eb[0]);
        CHECK(fabs(rss - rd) <= tol, "rectangle distance %.12g vs brute %.12g (case %d)", rss, rd, it);
        exact += fabs(rss - rd) <= tol;
        double ap = bvh_rss_gap_approx(&rel, a.e, b.e);
        CHECK(ap <= rss - a.e[2] - b.e[2] + tol, "projection RSS bound %.12g above the exact %.12g", ap,
              rss - a.e[2] - b.e[2]);
        double th = rd - a.e[2] - b.e[2] + check_rng_uniform(&s, -0.05, 0.05);
        double early = bvh_rss_gap(&rel, a.e, b.e, th);
        CHECK(early == -INFINITY || fabs(early - (rss - a.e[2] - b.e[2])) <= 1e-12, "early-out RSS gives the value or nothing");
        CHECK(early != -INFINITY || rss - a.e[2] - b.e[2] < th * (1 + 1e-9) + 1e-12, "early-out RSS only below the threshold");
        /* boxes as meshes: the SAT gap is a lower bound on their distance */
        prox_vec3 va[8], vb[8];
        for (int k = 0; k < 8; k++) {
            node_corner(&a, (k & 1) ? 1 : -1, (k & 2) ? 1 : -1, (k & 4) ? 1 : -1, &va[k]);
            node_corner(&b, (k & 1) ? 1 : -1, (k & 2) ? 1 : -1, (k & 4) ? 1 : -1, &vb[k]);
            vb[k] = prox_xform_point(&X, vb[k]);
        }
        static const int F[12][3] = {{0, 2, 1}, {1, 2, 3}, {4, 5, 6}, {5, 7, 6}, {0, 1, 4}, {1, 5, 4},
                                     {2, 6, 3}, {3, 6, 7}, {0, 4, 2}, {2, 4, 6}, {1, 3, 5}, {3, 7, 5}};
        double bd = INFINITY;
        for (int i = 0; i < 12; i++)
            for (int j = 0; j < 12; j++) {
                prox_vec3 P[3] = {va[F[i][0]], va[F[i][1]], va[F[i][2]]}, Q[3] = {vb[F[j][0]], vb[F[j][1]], vb[F[j][2]]}, p, q;
                double d = prox_triangle_distance(P, Q, &p, &q);
                bd = d < bd ? d : bd;
            }
        double obb = bvh_obb_gap(&rel, a.e, b.e, INFINITY);
        CHECK(obb <= bd + tol, "SAT gap %.12g above the box distance %.12g", obb, bd);
        CHECK(rss - a.e[2] - b.e[2] <= bd + tol, "RSS gap above the box distance");
        double ob0 = bvh_obb_gap(&rel, a.e, b.e, 0.0);
        CHECK((ob0 > 0) == (obb > 0), "overlap test agrees with the full SAT gap");
    }
    CHECK(exact == 3000, "all rectangle distances exact");
}

/* Every node's float box contains all the triangles below it, and the
 * children of a node are adjacent (first child, first child + 1). */
/* every vertex inside its nodes' boxes (bad) and inside their rectangles
 * swept by e[2] (rss_bad); shrunk: nodes whose rectangle is smaller than
 * the box's faces */
static void check_tree_boxes(const prox_bvh *b, uint32_t node, uint32_t *tris, uint32_t *count, int *bad, int *rss_bad,
                             int *shrunk)
{
    uint32_t ch = b->child[node];
    uint32_t first = *count;
    if (bvh_is_leaf(ch))
        tris[(*count)++] = bvh_leaf_triangle(ch);
    else {
        check_tree_boxes(b, ch, tris, count, bad, rss_bad, shrunk);
        check_tree_boxes(b, ch + 1, tris, count, bad, rss_bad, shrunk);
    }
    const bvh_node *n = &b->nodes[node];
    const float *r = b->rect[node];
    *shrunk += r[0] < n->e[0] || r[1] < n->e[1];
    for (uint32_t k = first; k < *count; k++)
        for (int v = 0; v < 3; v++) {
            prox_vec3 p = b->tri[tris[k]][v];
            double d[3] = {p.x - n->c[0], p.y - n->c[1], p.z - n->c[2]}, q[3];
            for (int i = 0; i < 3; i++) {
                q[i] = n->R[0][i] * d[0] + n->R[1][i] * d[1] + n->R[2][i] * d[2];
                if (fabs(q[i]) > (double)n->e[i])
                    (*bad)++;
            }
            double ex = fmax(fabs(q[0]) - r[0], 0), ey = fmax(fabs(q[1]) - r[1], 0);
            if (ex * ex + ey * ey + q[2] * q[2] > (double)n->e[2] * n->e[2] || r[0] > n->e[0] || r[1] > n->e[1])
                (*rss_bad)++;
        }
}

static void test_build_invariants(void)
{
    prox_mesh *M[3] = {prox_mesh_make_torus(0.6, 0.15, 48, 24), prox_mesh_make_soup(500, 1000.0, 3.0, 3),
                       prox_mesh_make_sphere(1e-3, 3)};
    for (int m = 0; m < 3; m++) {
        prox_bvh *b = prox_bvh_build(M[m]);
        CHECK(b && prox_bvh_node_count(b) == 2 * M[m]->triangle_count - 1, "2n-1 nodes");
        uint32_t *tris = malloc(sizeof *tris * M[m]->triangle_count), count = 0;
        int bad = 0, rss_bad = 0, shrunk = 0;
        check_tree_boxes(b, 0, tris, &count, &bad, &rss_bad, &shrunk);
        CHECK(bad == 0 && count == M[m]->triangle_count, "mesh %d: %d vertices outside their node boxes", m, bad);
        CHECK(rss_bad == 0, "mesh %d: %d vertices outside their nodes' swept rectangles", m, rss_bad);
        CHECK(m == 1 || shrunk > (int)M[m]->triangle_count / 4, "mesh %d: %d of %u nodes with a shrunk rectangle", m, shrunk,
              prox_bvh_node_count(b));
        CHECK(prox_bvh_memory_bytes(b) > 64u * prox_bvh_node_count(b), "memory accounted");
        /* each inner node's expansion lanes: its grandchildren (or leaf
         * children), then repeats, with the nodes' fields and rectangles */
        int quad_bad = 0;
        for (uint32_t i = 0; i < b->node_count; i++) {
            uint32_t first = b->child[i], want[4], nw = 0;
            if (bvh_is_leaf(first))
                continue;
            for (uint32_t k = first; k <= first + 1; k++)
                if (bvh_is_leaf(b->child[k]))
                    want[nw++] = k;
                else
                    want[nw++] = b->child[k], want[nw++] = b->child[k] + 1;
            const bvh_quad *q = &b->quad[(first - 1) / 2];
            for (uint32_t l = 0; l < 4; l++) {
                uint32_t id = want[l < nw ? l : nw - 1];
                const float *r = (const float *)&b->nodes[id];
                quad_bad += q->id[l] != id;
                for (int f = 0; f < 16; f++)
                    quad_bad += q->v[f][l] != (f == 12 ? b->rect[id][0] : f == 13 ? b->rect[id][1] : r[f]);
            }
        }
        CHECK(quad_bad == 0, "mesh %d: %d expansion lane fields differ from their nodes", m, quad_bad);
        free(tris);
        prox_bvh_free(b);
        prox_mesh_free(M[m]);
    }
    CHECK(prox_bvh_build(NULL) == NULL, "NULL mesh refused");
    /* a mesh changed by hand after loading: an index past the vertices, a
     * NaN or infinite vertex (an unused one is harmless) */
    prox_mesh *box = prox_mesh_make_box(prox_v3(1, 1, 1));
    prox_bvh *ok = prox_bvh_build(box);
    CHECK(ok != NULL, "the box builds");
    prox_bvh_free(ok);
    box->triangles[5][1] = box->vertex_count;
    CHECK(prox_bvh_build(box) == NULL, "index past the vertices refused");
    box->triangles[5][1] = 0;
    const double bad[2] = {NAN, INFINITY};
    for (int k = 0; k < 2; k++) {
        prox_vec3 keep = box->vertices[3];
        box->vertices[3].y = bad[k];
        CHECK(prox_bvh_build(box) == NULL, "vertex %g refused", bad[k]);
        box->vertices[3] = keep;
    }
    prox_mesh_free(box);
}

/* Ray-parity containment against the mesh's winding number, at random
 * points and at points on axis-aligned lines through vertices (grazing). */
static void test_contains(void)
{
    prox_mesh *M[2] = {prox_mesh_make_torus(0.6, 0.25, 32, 16), prox_mesh_make_box(prox_v3(0.5, 0.3, 0.2))};
    unsigned long long s = 31;
    for (int m = 0; m < 2; m++) {
        prox_bvh *b = prox_bvh_build(M[m]);
        int agree = 0, n = 400;
        for (int i = 0; i < n; i++) {
            double pz = check_rng_uniform(&s, -0.4, 0.4), py = check_rng_uniform(&s, -1, 1), px = check_rng_uniform(&s, -1, 1);
            prox_vec3 p = prox_v3(px, py, pz); /* z drawn first, as gcc drew them as arguments (check_prox.h) */
            if (i % 4 == 0) /* the first ray (bvh.c's direction) passes through a vertex */
                p = prox_v3_madd(M[m]->vertices[i % M[m]->vertex_count], prox_v3(0.5773, 0.5774, 0.5775),
                                 -check_rng_uniform(&s, 0.05, 0.5));
            if (i % 8 == 1) /* on the surface's plane through a vertex, slightly inside or outside */
                p = prox_v3_scale(M[m]->vertices[i % M[m]->vertex_count], 1.0 + check_rng_uniform(&s, -0.01, 0.01));
            agree += prox_bvh_contains_point(b, p) == prox_mesh_contains_point(M[m], p);
        }
        CHECK(agree == n, "mesh %d: %d of %d containment answers agree with the winding number", m, agree, n);
        prox_bvh_free(b);
        prox_mesh_free(M[m]);
    }
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

/* Small meshes far from the origin, at gaps down to 1e-6 of their size:
 * the distance expansions bound four node pairs at a time in float (centre
 * offsets formed in double, a margin subtracted); those keys must never
 * prune the closest triangle pair (answers equal brute force). */
static void test_far_small(void)
{
    prox_mesh *A = prox_mesh_make_torus(0.6, 0.15, 24, 12), *B = prox_mesh_make_sphere(0.3, 2);
    prox_vec3 ca = prox_v3(60, -45, 30), cb = prox_v3(-70, 20, 55);
    prox_mesh_transform(A, 0.01, ca);
    prox_mesh_transform(B, 0.01, cb);
    prox_bvh *ba = prox_bvh_build(A), *bb = prox_bvh_build(B);
    unsigned long long s = 77;
    prox_xform xa = prox_xform_identity();
    int near = 0;
    for (int i = 0; i < 60; i++) {
        prox_quat q = check_rng_quat(&s);
        prox_xform rot = prox_xform_from_pose(prox_v3(0, 0, 0), q);
        /* B's centre onto A's, then pushed out along a random direction to a
         * gap of about 1e-6..1e-2 of the size (or into contact) */
        prox_vec3 dir = prox_v3_normalize(check_rng_v3(&s, -1, 1));
        double want = 0.015 * pow(10.0, check_rng_uniform(&s, -6, -1)), push = 0.03;
        prox_vec3 base = prox_v3_sub(ca, prox_xform_point(&rot, cb));
        prox_xform xb;
        prox_result r;
        for (int k = 0; k < 3; k++) { /* distance is 1-Lipschitz: each step stays >= want */
            xb = prox_xform_from_pose(prox_v3_add(base, prox_v3_scale(dir, push)), q);
            run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r, NULL);
            push -= r.value - want;
        }
        xb = prox_xform_from_pose(prox_v3_add(base, prox_v3_scale(dir, push)), q);
        brute ref = brute_force(A, &xa, B, &xb);
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r, NULL);
        CHECK(!ref.overlap, "far pose %d: the pushes keep a gap", i);
        near += ref.dist < 1e-4;
        CHECK(fabs(r.value - ref.dist) <= 1e-12 + 1e-9 * ref.dist, "far pose %d distance %.15g vs brute %.15g", i, r.value,
              ref.dist);
    }
    CHECK(near >= 20, "poses within 1e-4 (1%% of the size): %d", near);
    prox_bvh_free(ba);
    prox_bvh_free(bb);
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

/* prox_triangle_distance_below (the leaf test of the distance descent):
 * never cut short when the distance is below the threshold, then bit for
 * bit prox_triangle_distance; when cut short, a lower bound at or above the
 * threshold whose axis really separates the triangles by that much. Pairs
 * of all kinds: large and small triangles, near and far apart, far from the
 * origin, thresholds around the distance. */
static void test_triangle_below(void)
{
    unsigned long long s = 91;
    int cut = 0, exact_below = 0;
    for (int it = 0; it < 20000; it++) {
        double size = it % 4 == 0 ? 1.0 : (it % 4 == 1 ? 0.05 : 0.005), far = it % 3 == 0 ? 90.0 : 0.0;
        prox_vec3 base = prox_v3(far, -0.5 * far, 0.25 * far), off = prox_v3(0, 0, 0), P[3], Q[3];
        double reach = check_rng_uniform(&s, 0.0, 0.2);
        off = check_rng_v3(&s, -reach, reach);
        for (int k = 0; k < 3; k++) {
            P[k] = prox_v3_add(base, check_rng_v3(&s, -size, size));
            Q[k] = prox_v3_add(prox_v3_add(base, off), check_rng_v3(&s, -size, size));
        }
        prox_vec3 p0, q0, p1, q1, axis;
        double d = prox_triangle_distance(P, Q, &p0, &q0);
        double below = d * check_rng_uniform(&s, 0.5, 1.5) + (it % 7 == 0 ? d : 0.0);
        if (it % 11 == 0)
            below = d; /* exactly at the distance */
        int exact = -1;
        double g = prox_triangle_distance_below(P, Q, below, &p1, &q1, &axis, &exact);
        CHECK(exact == 0 || exact == 1, "exact flag set");
        if (exact) {
            CHECK(g == d && prox_v3_dist(p0, p1) == 0 && prox_v3_dist(q0, q1) == 0,
                  "pair %d: %.17g vs prox_triangle_distance %.17g", it, g, d);
            exact_below += d < below;
            continue;
        }
        cut++;
        CHECK(!(d < below), "pair %d cut short although %.17g < %.17g", it, d, below);
        CHECK(g >= below && g <= d, "pair %d: bound %.17g outside [%.17g, %.17g]", it, g, below, d);
        double pm = -INFINITY, qm = INFINITY;
        for (int k = 0; k < 3; k++) {
            pm = fmax(pm, prox_v3_dot(axis, P[k]));
            qm = fmin(qm, prox_v3_dot(axis, Q[k]));
        }
        CHECK(fabs(prox_v3_len(axis) - 1) < 1e-12 && qm - pm >= g - 1e-12 * (1 + far),
              "pair %d: the axis separates by %.17g, the bound says %.17g", it, qm - pm, g);
    }
    CHECK(cut > 2000 && exact_below > 2000, "both ways covered: %d cut short, %d exact below", cut, exact_below);
    fprintf(stderr, "    %d of 20000 cut short\n", cut);
}

/* prox_xform_motion_bound (what lets front entries go untested): no point of the
 * ball moves farther than it says, for rigid steps of every size and for
 * poses that are not rotations (a stretch, a reflection: the Frobenius
 * fallback); and for rotations it is the spectral bound, sqrt 2 below the
 * Frobenius one (what the fronts gain from it). */
static void test_motion_bound(void)
{
    unsigned long long s = 5;
    int bad = 0, tight = 0, n = 0;
    for (int it = 0; it < 3000; it++) {
        double c[3];
        for (int k = 0; k < 3; k++)
            c[k] = check_rng_uniform(&s, -1, 1);
        double r = check_rng_uniform(&s, 0.01, 1), ang = it % 3 == 0 ? 1e-4 : (it % 3 == 1 ? 0.05 : 2.5);
        prox_xform X0 = random_pose(&s, 1.0);
        /* the step D: its angle, its axis's y and x, then its translation
         * (z, y, x): the order gcc drew them in as arguments (check_prox.h) */
        double turn = ang * check_rng_uniform(&s, 0.1, 1), ay = check_rng_uniform(&s, -1, 1), ax = check_rng_uniform(&s, -1, 1);
        prox_quat dq = prox_quat_axis_angle(prox_v3_normalize(prox_v3(ax, ay, 0.3)), turn);
        prox_xform D = prox_xform_from_pose(check_rng_v3(&s, -0.1, 0.1), dq);
        prox_xform X1 = prox_xform_mul(&D, &X0);
        if (it % 10 == 3) /* not a rotation: stretched along one axis */
            for (int j = 0; j < 3; j++)
                X1.R.m[0][j] *= 1.3;
        if (it % 10 == 7) /* a reflection */
            for (int j = 0; j < 3; j++)
                X1.R.m[2][j] = -X1.R.m[2][j];
        double b = prox_xform_motion_bound(&X0, &X1, prox_v3(c[0], c[1], c[2]), r), worst = 0;
        /* the farthest point: c plus r along M's top right singular vector
         * (found by power iteration on M^T M), and random points */
        prox_mat3 M;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                M.m[i][j] = X1.R.m[i][j] - X0.R.m[i][j];
        prox_vec3 v = prox_v3(0.3, -0.5, 0.8);
        for (int k = 0; k < 60; k++) {
            prox_vec3 w = prox_m3_tmul_v(&M, prox_m3_mul_v(&M, v));
            if (prox_v3_len(w) > 0)
                v = prox_v3_normalize(w);
        }
        for (int k = 0; k < 202; k++) {
            prox_vec3 u = k < 2 ? prox_v3_scale(v, k ? -1.0 : 1.0)
                                : prox_v3_normalize(check_rng_v3(&s, -1, 1));
            prox_vec3 p = prox_v3_add(prox_v3(c[0], c[1], c[2]), prox_v3_scale(u, r));
            double d = prox_v3_dist(prox_xform_point(&X1, p), prox_xform_point(&X0, p));
            worst = d > worst ? d : worst;
        }
        bad += worst > b * (1 + 1e-12) + 1e-15;
        if (it % 10 != 3 && it % 10 != 7 && it % 3 != 0) { /* a pure rotation about the ball's centre */
            double c0[3] = {0, 0, 0}, f2 = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    f2 += M.m[i][j] * M.m[i][j];
            prox_xform X2 = X1;
            X2.t = X0.t;
            double bb = prox_xform_motion_bound(&X0, &X2, prox_v3(c0[0], c0[1], c0[2]), r);
            n++;
            tight += bb <= sqrt(f2) * r * (M_SQRT1_2 + 1e-6);
        }
    }
    CHECK(bad == 0, "%d of 3000 balls moved farther than the bound", bad);
    CHECK(n >= 10 && tight == n, "spectral, not Frobenius, for rotations: %d of %d", tight, n);
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

/* distance fronts: a coherent path (with a jump) answered from the last
 * traversal front equals the answer from the root bit for bit; a front too large for its buffer, and a cache moved to
 * another pair, fall back to the roots and stay exact */
static void test_front_coherence(void)
{
    prox_mesh *A = prox_mesh_make_torus(0.4, 0.12, 64, 32), *B = prox_mesh_make_sphere(0.3, 3);
    prox_mesh *C = prox_mesh_make_box(prox_v3(0.3, 0.2, 0.1));
    prox_bvh *ba = prox_bvh_build(A), *bb = prox_bvh_build(B), *bc = prox_bvh_build(C);
    prox_front_entry big[2 * 8192], tiny[8];
    prox_cache cf = {0}, ct = {0}, cs = {0};
    cf.front = big, cf.front_capacity = 2 * 8192;
    ct.front = tiny, ct.front_capacity = 8;
    prox_xform xa = prox_xform_identity();
    uint64_t root_exp = 0, front_exp = 0, seed_exp = 0;
    int used = 0;
    for (int i = 0; i < 120; i++) {
        double t = 0.02 * i + (i >= 60 ? 0.7 : 0.0); /* a jump half way */
        prox_xform xb = prox_xform_from_pose(prox_v3(0.86 * cos(t), 0.86 * sin(t), 0.05 * sin(3 * t) + 0.02),
                                             prox_quat_axis_angle(prox_v3(0.3, 1, 0.2), 0.05 * i));
        prox_result r0, rf, rt, rs;
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rs, &cs);
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r0, NULL);
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rf, &cf);
        run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rt, &ct);
        CHECK(rf.value == r0.value && rf.complete, "front: %.17g vs from the root %.17g (step %d)", rf.value, r0.value, i);
        CHECK(rt.value == r0.value, "tiny front buffer: %.17g vs %.17g", rt.value, r0.value);
        used += cf.front_valid != 0;
        if (i > 0)
            root_exp += r0.expansions, front_exp += rf.expansions, seed_exp += rs.expansions;
        if (i % 20 == 7) { /* the front cache borrowed by another pair for one query */
            prox_result rc, rc0;
            run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bc), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rc, &cf);
            run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bc), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rc0, NULL);
            CHECK(rc.value == rc0.value, "front of another pair ignored: %.17g vs %.17g", rc.value, rc0.value);
        }
    }
    CHECK(used > 60, "fronts kept on most steps (%d of 120)", used);
    CHECK(ct.front_valid == 0, "a front larger than its buffer is dropped");
    /* speed is for the benchmark (bench/results/distance.md); here the
     * counts are only reported: a front pair whose BV bound drops below the
     * best although its parent's would not can cost expansions a descent
     * from the root never makes */
    CHECK(seed_exp <= root_exp, "the cached pair saves expansions: %llu vs %llu", (unsigned long long)seed_exp,
          (unsigned long long)root_exp);
    fprintf(stderr, "    fronts: %llu expansions from the root, %llu with the cached pair, %llu from the fronts\n",
            (unsigned long long)root_exp, (unsigned long long)seed_exp, (unsigned long long)front_exp);
    prox_bvh_free(ba);
    prox_bvh_free(bb);
    prox_bvh_free(bc);
    prox_mesh_free(A);
    prox_mesh_free(B);
    prox_mesh_free(C);
}

/* distance fronts along long paths of small steps: the answer from the
 * front equals the answer from the roots at every step. The tori tumble
 * against each other so that front pairs far from the closest pair come
 * near it over many steps (a front kept with too small a motion bound, or
 * keys lifted by the drift, would miss them), and the drift grows past its
 * rebase point many times on every path. */
static void test_front_drift(void)
{
    prox_mesh *A = prox_mesh_make_torus(0.4, 0.1, 48, 24), *B = prox_mesh_make_torus(0.25, 0.08, 40, 20);
    prox_bvh *ba = prox_bvh_build(A), *bb = prox_bvh_build(B);
    static prox_front_entry store[2 * 16384];
    prox_xform xa = prox_xform_identity();
    int rebased = 0, steps = 0, mismatches = 0;
    for (int path = 0; path < 4; path++) {
        prox_cache cf = {0};
        cf.front = store, cf.front_capacity = 2 * 16384;
        double last_drift = 0;
        for (int i = 0; i < 600; i++) {
            /* paths 0, 1: a slow tumble along an orbit; 2, 3: B rocks back
             * and forth about one pose (the front stays, the drift grows) */
            double t = path < 2 ? 0.0015 * i + path : path + 0.02 * sin(0.3 * i);
            double ang = path < 2 ? 0.006 * i + path : path + 0.1 * sin(0.2 * i);
            prox_vec3 axis = prox_v3(sin(path + 1.0), 0.4, cos(2.0 * path)), c = prox_v3(0.65 * cos(t), 0.2 * sin(3 * t), 0.65 * sin(t));
            prox_xform xb = prox_xform_from_pose(c, prox_quat_axis_angle(prox_v3_normalize(axis), ang));
            prox_result r0, rf;
            run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r0, NULL);
            run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bb), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rf, &cf);
            mismatches += rf.value != r0.value;
            CHECK(rf.value == r0.value && rf.complete, "path %d step %d: front %.17g vs roots %.17g", path, i, rf.value,
                  r0.value);
            rebased += cf.front_drift < last_drift && cf.front_valid;
            last_drift = cf.front_drift;
            steps++;
        }
    }
    /* a ring rocking over a ball: its closest part swings from one side to
     * the other, into front pairs whose bounds were kept for many steps */
    prox_mesh *S = prox_mesh_make_sphere(0.5, 4), *R = prox_mesh_make_torus(0.3, 0.04, 64, 16);
    prox_bvh *bs = prox_bvh_build(S), *br = prox_bvh_build(R);
    for (int path = 0; path < 2; path++) {
        prox_cache cf = {0};
        cf.front = store, cf.front_capacity = 2 * 16384;
        double last_drift = 0;
        for (int i = 0; i < 600; i++) {
            double a = 0.15 * sin(0.1 * i) + 0.05 * path, h = 0.495 + 0.01 * path;
            prox_xform xb = prox_xform_from_pose(prox_v3(0.01 * sin(0.05 * i), 0, h), prox_quat_axis_angle(prox_v3(1, 0.1 * path, 0), a));
            prox_result r0, rf;
            run_pair(prox_bvh_tree(bs), &xa, prox_bvh_tree(br), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r0, NULL);
            run_pair(prox_bvh_tree(bs), &xa, prox_bvh_tree(br), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rf, &cf);
            mismatches += rf.value != r0.value;
            CHECK(rf.value == r0.value && rf.complete, "ring path %d step %d: front %.17g vs roots %.17g", path, i,
                  rf.value, r0.value);
            rebased += cf.front_drift < last_drift && cf.front_valid;
            last_drift = cf.front_drift;
            steps++;
        }
    }
    /* a small ball rolling around the torus' outside: a front that stays
     * small, a drift that passes the rebase point (half B's size) often */
    prox_mesh *P = prox_mesh_make_sphere(0.05, 3);
    prox_bvh *bp = prox_bvh_build(P);
    for (int path = 0; path < 2; path++) {
        prox_cache cf = {0};
        cf.front = store, cf.front_capacity = 2 * 16384;
        double last_drift = 0;
        for (int i = 0; i < 600; i++) {
            double t = 0.006 * i + path, r = 0.57 + 0.015 * sin(0.07 * i), z = 0.03 * sin(0.05 * i + path);
            prox_xform xb = prox_xform_from_pose(prox_v3(r * cos(t), r * sin(t), z), prox_quat_axis_angle(prox_v3(0, 0, 1), 3 * t));
            prox_result r0, rf;
            run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bp), &xb, prox_query_default(PROX_QUERY_DISTANCE), &r0, NULL);
            run_pair(prox_bvh_tree(ba), &xa, prox_bvh_tree(bp), &xb, prox_query_default(PROX_QUERY_DISTANCE), &rf, &cf);
            mismatches += rf.value != r0.value;
            CHECK(rf.value == r0.value && rf.complete, "ball path %d step %d: front %.17g vs roots %.17g", path, i,
                  rf.value, r0.value);
            rebased += cf.front_drift < last_drift && cf.front_valid;
            last_drift = cf.front_drift;
            steps++;
        }
    }
    prox_bvh_free(bp);
    prox_mesh_free(P);
    prox_bvh_free(bs);
    prox_bvh_free(br);
    prox_mesh_free(S);
    prox_mesh_free(R);
    CHECK(rebased >= 8, "drift rebased %d times", rebased);
    fprintf(stderr, "    %d steps, drift restarted or rebased %d times, %d mismatches\n", steps, rebased, mismatches);
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
    prox_handler h = {.name = "counting", .expand = counting_expand};
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


/* ---- the prox tool: prox distance / prox collide against brute force ---- */

static char prox_bin[1024];


static void test_cli(void)
{
    char dir[] = "/tmp/prox-bvh-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    FILE *t = fopen(prox_bin, "r");
    if (!t) {
        CHECK(0, "prox tool not found at %s (build it first)", prox_bin);
        return;
    }
    fclose(t);
    /* B is off-centre so that --normalize moves it */
    prox_mesh *A = prox_mesh_make_torus(0.6, 0.2, 16, 8), *B = prox_mesh_make_sphere(0.3, 1);
    prox_mesh_transform(B, 1.0, prox_v3(0.2, -0.1, 0.3));

    char pa[256], pb[256], pp[256], cmd[4096];
    snprintf(pa, sizeof pa, "%s/a.obj", dir);
    snprintf(pb, sizeof pb, "%s/b.obj", dir);
    snprintf(pp, sizeof pp, "%s/poses.txt", dir);
    check_write_obj(pa, A);
    check_write_obj(pb, B);
    enum { N = 12 };
    prox_xform X[N];
    unsigned long long s = 4242;
    FILE *f = fopen(pp, "w");
    fprintf(f, "# test poses\n\n");
    for (int i = 0; i < N; i++) {
        prox_quat q = check_rng_rotation(&s);
        double tz = check_rng_uniform(&s, -0.5, 0.5), ty = check_rng_uniform(&s, -1.2, 1.2), tx = check_rng_uniform(&s, -1.2, 1.2);
        prox_vec3 tr = prox_v3(tx, ty, tz); /* z drawn first, as gcc drew them as arguments (check_prox.h) */
        if (i == 0)
            tr = prox_v3(-0.2, 0.1, -0.3), q = prox_quat_identity(); /* B's centre in the torus hole */
        fprintf(f, "%.17g %.17g %.17g %.17g %.17g %.17g %.17g  # pose %d\n", tr.x, tr.y, tr.z, q.w, q.x, q.y, q.z, i);
        X[i] = prox_xform_from_pose(tr, q);
    }
    fclose(f);
    char out[64][256], err[256];
    int n;
    for (int norm = 0; norm < 2; norm++) {
        /* the documented --normalize arithmetic, applied here independently */
        /* the reference reads the files with the same loader (assimp keeps
         * float coordinates, so the written doubles come back rounded) */
        prox_mesh *An = NULL, *Bn = NULL;
        char lerr[256];
        if (prox_mesh_load(pa, &An, lerr, sizeof lerr) || prox_mesh_load(pb, &Bn, lerr, sizeof lerr)) {
            CHECK(0, "reload: %s", lerr);
            prox_mesh_free(An);
            break;
        }
        if (norm)
            for (int k = 0; k < 2; k++) {
                prox_mesh *m = k ? Bn : An;
                prox_vec3 c = prox_v3_scale(prox_v3_add(m->bbox_min, m->bbox_max), 0.5);
                double sc = 1.0 / prox_v3_dist(m->bbox_min, m->bbox_max);
                for (uint32_t v = 0; v < m->vertex_count; v++)
                    m->vertices[v] = prox_v3_add(prox_v3_scale(m->vertices[v], sc), prox_v3_scale(c, -sc));
                prox_mesh_analyze(m);
            }
        const char *kinds[2] = {"distance", "collide"};
        double want_d[N];
        prox_xform id = prox_xform_identity();
        for (int i = 0; i < N; i++) {
            brute ref = brute_force(An, &id, Bn, &X[i]);
            int nested = !ref.overlap && (prox_mesh_contains_point(An, prox_xform_point(&X[i], Bn->vertices[0])) ||
                                          prox_mesh_contains_point(Bn, prox_xform_inv_point(&X[i], An->vertices[0])));
            want_d[i] = (ref.overlap || nested) ? 0.0 : ref.dist;
        }
        for (int k = 0; k < 2; k++) {
            snprintf(cmd, sizeof cmd, "%s %s %s %s %s %s", prox_bin, kinds[k], pa, pb, pp, norm ? "--normalize" : "");
            int rc = check_run_cmd(cmd, out, 64, &n, err);
            CHECK(rc == 0 && n == N, "prox %s: exit %d, %d lines", kinds[k], rc, n);
            CHECK(strncmp(err, "queries=12 median_us=", 21) == 0 && strstr(err, " p99_us=") && strstr(err, " max_us="),
                  "timing line: %s", err);
            for (int i = 0; i < n && i < N; i++) {
                double v, lo, up;
                int complete;
                CHECK(sscanf(out[i], "%lf %lf %lf %d", &v, &lo, &up, &complete) == 4, "line '%s'", out[i]);
                double want = want_d[i];
                if (k == 0)
                    CHECK(fabs(v - want) <= 1e-9 * (1 + want) && complete == 1 && lo <= v && up >= v,
                          "norm %d pose %d: prox distance %.17g vs brute %.17g", norm, i, v, want);
                else
                    CHECK(v == (want == 0.0 ? 1.0 : 0.0) && complete == 1, "norm %d pose %d: collide %g, distance %g", norm, i, v, want);
            }
        }
        /* --coherent gives the same answers */
        char out2[64][256];
        int n2;
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --coherent %s", prox_bin, pa, pb, pp, norm ? "--normalize" : "");
        check_run_cmd(cmd, out2, 64, &n2, err);
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s %s", prox_bin, pa, pb, pp, norm ? "--normalize" : "");
        check_run_cmd(cmd, out, 64, &n, err);
        CHECK(n == n2 && n == N, "coherent line count");
        for (int i = 0; i < n && i < n2; i++)
            CHECK(strcmp(out[i], out2[i]) == 0, "--coherent line %d: %s vs %s", i, out2[i], out[i]);
        /* --order best: the same exact distances (a different descent) */
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --order best %s", prox_bin, pa, pb, pp, norm ? "--normalize" : "");
        check_run_cmd(cmd, out2, 64, &n2, err);
        CHECK(n2 == N, "--order best line count %d", n2);
        for (int i = 0; i < n2 && i < N; i++) {
            double v = NAN;
            CHECK(sscanf(out2[i], "%lf", &v) == 1 && fabs(v - want_d[i]) <= 1e-9 * (1 + want_d[i]),
                  "--order best pose %d: %.17g vs brute %.17g", i, v, want_d[i]);
        }
        /* --times: one `wall_us cpu_us` line per query, the answers unchanged */
        char tpath[300];
        snprintf(tpath, sizeof tpath, "%s/times.txt", dir);
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --times %s %s", prox_bin, pa, pb, pp, tpath, norm ? "--normalize" : "");
        check_run_cmd(cmd, out2, 64, &n2, err);
        CHECK(n2 == N && strcmp(out2[0], out[0]) == 0, "--times keeps stdout");
        FILE *tf = fopen(tpath, "r");
        int tl = 0;
        double w, cpu;
        while (tf && fscanf(tf, "%lf %lf", &w, &cpu) == 2) {
            CHECK(w >= 0 && cpu >= 0 && isfinite(w) && isfinite(cpu), "times line %d: %g %g", tl, w, cpu);
            tl++;
        }
        if (tf)
            fclose(tf);
        remove(tpath);
        CHECK(tl == N, "--times wrote %d lines for %d queries", tl, N);
        prox_mesh_free(An);
        prox_mesh_free(Bn);
    }
    /* the query options against the default answers (exact, checked
     * against brute force above) */
    {
        double ref[N];
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s", prox_bin, pa, pb, pp);
        CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n == N, "reference run");
        for (int i = 0; i < N; i++)
            ref[i] = i < n ? atof(out[i]) : NAN;
        char out2[64][256];
        int n2;
        /* --order depth and auto: the same exact distances */
        const char *orders[2] = {"depth", "auto"};
        for (int k = 0; k < 2; k++) {
            snprintf(cmd, sizeof cmd, "%s distance %s %s %s --order %s", prox_bin, pa, pb, pp, orders[k]);
            CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 0 && n2 == N, "--order %s: %s", orders[k], err);
            for (int i = 0; i < n2 && i < N; i++)
                CHECK(fabs(atof(out2[i]) - ref[i]) <= 1e-12 * (1 + ref[i]), "--order %s pose %d: %s vs %.17g", orders[k], i, out2[i], ref[i]);
        }
        /* --rel-err 0.2: within 20% above, its lower bound below the exact */
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --rel-err 0.2", prox_bin, pa, pb, pp);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 0 && n2 == N, "--rel-err: %s", err);
        for (int i = 0; i < n2 && i < N; i++) {
            double v = NAN, lo = NAN, up = NAN;
            int c = 0;
            sscanf(out2[i], "%lf %lf %lf %d", &v, &lo, &up, &c);
            CHECK(v >= ref[i] - 1e-12 && v <= ref[i] * 1.2 + 1e-12 && lo <= ref[i] + 1e-12 && lo >= v * 0.8 - 1e-12 && c == 1,
                  "--rel-err 0.2 pose %d: %s, exact %.17g", i, out2[i], ref[i]);
        }
        /* --max-distance: exact below it, inf beyond with the range as
         * the certified lower bound */
        double mid = 0;
        for (int i = 0; i < N; i++)
            mid += ref[i] / N;
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --max-distance %.17g", prox_bin, pa, pb, pp, mid);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 0 && n2 == N, "--max-distance: %s", err);
        int below = 0, beyond = 0;
        for (int i = 0; i < n2 && i < N; i++) {
            double v = NAN, lo = NAN, up = NAN;
            int c = 0;
            sscanf(out2[i], "%lf %lf %lf %d", &v, &lo, &up, &c);
            if (ref[i] < mid * (1 - 1e-9)) {
                below++;
                CHECK(fabs(v - ref[i]) <= 1e-12 * (1 + ref[i]) && c == 1, "--max-distance pose %d: %s, exact %.17g", i, out2[i], ref[i]);
            } else if (ref[i] > mid * (1 + 1e-9)) {
                beyond++;
                CHECK(isinf(v) && v > 0 && lo >= mid * (1 - 1e-12) && lo <= ref[i] && c == 1, "--max-distance %g pose %d: '%s', exact %.17g",
                      mid, i, out2[i], ref[i]);
            }
        }
        CHECK(below > 0 && beyond > 0, "--max-distance %g: %d poses below, %d beyond", mid, below, beyond);
        /* --ist builds the inner sphere trees prox build would: the same
         * answers as the .ist files it writes */
        char ia[300], ib[300];
        snprintf(ia, sizeof ia, "%s/a.ist", dir);
        snprintf(ib, sizeof ib, "%s/b.ist", dir);
        snprintf(cmd, sizeof cmd, "%s build %s -o %s --spheres 300 && %s build %s -o %s --spheres 300", prox_bin, pa, ia, prox_bin, pb, ib);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 0, "prox build: %s", err);
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --ist --spheres 300", prox_bin, pa, pb, pp);
        CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n == N, "--ist: %s", err);
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s", prox_bin, ia, ib, pp);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 0 && n2 == N, ".ist files: %s", err);
        for (int i = 0; i < n && i < n2; i++) {
            CHECK(!strcmp(out[i], out2[i]), "pose %d: --ist '%s', the built files '%s'", i, out[i], out2[i]);
            CHECK(atof(out[i]) >= ref[i] * (1 - 1e-9), "pose %d: the inner sphere trees' %s below the exact %.17g", i, out[i], ref[i]);
        }
        remove(ia), remove(ib);
        /* refusals and the timing line's count */
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --rel-err 1", prox_bin, pa, pb, pp);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 2 && strstr(err, "--rel-err is a fraction in [0, 1), got '1'"), "--rel-err 1: %s", err);
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --ist --spheres 200000000", prox_bin, pa, pb, pp);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 2 && strstr(err, "--spheres is at most 100000000"), "--spheres 2e8: %s", err);
        char first[256];
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s extra", prox_bin, pa, pb, pp);
        CHECK(check_run_cmd2(cmd, out2, 64, &n2, first, err) == 2 && n2 == 0, "too many arguments: exit 2");
        CHECK(strstr(first, "prox distance: too many arguments"), "too many arguments: '%s'", first);
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --times %s/no/such/folder/t.txt", prox_bin, pa, pb, pp, dir);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 1 && n2 == N && strstr(err, "queries=12 "), "--times unwritable: %d answers, '%s'", n2,
              err);
        char pe[300];
        snprintf(pe, sizeof pe, "%s/empty.txt", dir);
        FILE *fe = fopen(pe, "w");
        if (fe)
            fputs("# no poses\n\n", fe), fclose(fe);
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s", prox_bin, pa, pb, pe);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 0 && n2 == 0 && strstr(err, "queries=0 median_us=0"), "no poses: '%s'", err);
        fe = fopen(pe, "w");
        if (fe)
            fputs("0 0 0 1 0 0 0\n1e16 0 0 1 0 0 0\n", fe), fclose(fe);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 1 && n2 == 0 && strstr(err, "empty.txt:2: a translation beyond 1e+15"),
              "a translation beyond reach: '%s'", err);
        remove(pe);
        /* a voxel map on one side: distance to its cells, and a query it
         * has no handler for refused by name */
        char pv[300];
        snprintf(pv, sizeof pv, "%s/map.vox", dir);
        prox_voxmap_def vd = {0.1, prox_v3(1, 1, 1), {4, 4, 4}, 64};
        prox_voxmap *vm = prox_voxmap_create(&vd, err, sizeof err);
        CHECK(vm && prox_voxmap_set(vm, 0, 0, 0, PROX_VOXEL_OBSTACLE) == PROX_VOXEL_OK && prox_voxmap_save(vm, pv, err, sizeof err) == 0,
              "a map: %s", err);
        prox_voxmap_free(vm);
        fe = fopen(pe, "w");
        if (fe)
            fputs("0 0 0 1 0 0 0\n", fe), fclose(fe);
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s", prox_bin, pv, pb, pe);
        CHECK(check_run_cmd(cmd, out2, 64, &n2, err) == 0 && n2 == 1, "map-mesh distance: %s", err);
        /* against brute force between B as read back and the cell
         * [1, 1.1]^3 as a box mesh */
        prox_mesh *cell = prox_mesh_make_box(prox_v3(0.05, 0.05, 0.05)), *Br = NULL;
        prox_mesh_transform(cell, 1.0, prox_v3(1.05, 1.05, 1.05));
        char lerr[256];
        CHECK(prox_mesh_load(pb, &Br, lerr, sizeof lerr) == 0, "reload: %s", lerr);
        prox_xform id = prox_xform_identity();
        const double dv = n2 == 1 ? atof(out2[0]) : NAN, want = Br ? brute_force(cell, &id, Br, &id).dist : NAN;
        CHECK(fabs(dv - want) <= 1e-9 * (1 + want), "map-mesh distance %.17g, brute force %.17g", dv, want);
        prox_mesh_free(cell), prox_mesh_free(Br);
        snprintf(cmd, sizeof cmd, "%s penvol %s %s %s", prox_bin, pv, pv, pe);
        CHECK(check_run_cmd2(cmd, out2, 64, &n2, first, err) == 1 && n2 == 0, "penvol map-map: exit 1");
        CHECK(strstr(first, "prox: no penvol query between these geometry types"), "penvol map-map: '%s'", first);
        remove(pv), remove(pe);
    }
    /* errors: one line, exit 2 for arguments, 1 for files */
    snprintf(cmd, sizeof cmd, "%s distance %s %s", prox_bin, pa, pb);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 2 && strstr(err, "usage"), "missing argument: %s", err);
    snprintf(cmd, sizeof cmd, "%s distance %s %s %s --budget-us x", prox_bin, pa, pb, pp);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 2 && strstr(err, "--budget-us"), "bad budget: %s", err);
    snprintf(cmd, sizeof cmd, "%s distance %s %s %s --order fast", prox_bin, pa, pb, pp);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 2 && strstr(err, "--order is auto, best or depth"), "bad order: %s", err);
    /* an option of another command, which it would ignore, is refused and
     * named (exit 2; the first line says why, the last is the usage) */
    const char *wrong[][3] = {{"distance", "--boxes", ""},        {"collide", "--spheres", " 100"},
                              {"collide", "--coherent", ""},      {"penvol", "--precise", ""},
                              {"penvol", "--max-distance", " 1"}, {"distance", "--spheres", " 100"}};
    for (int k = 0; k < 6; k++) {
        char first[256];
        snprintf(cmd, sizeof cmd, "%s %s %s %s %s %s%s", prox_bin, wrong[k][0], pa, pb, pp, wrong[k][1], wrong[k][2]);
        CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 2 && strstr(err, "usage: prox ") && n == 0, "%s %s: exit, usage: %s",
              wrong[k][0], wrong[k][1], err);
        char want[128];
        if (k < 5)
            snprintf(want, sizeof want, "prox %s: %s is not an option of %s", wrong[k][0], wrong[k][1], wrong[k][0]);
        else
            snprintf(want, sizeof want, "prox distance: --spheres sizes the inner sphere trees built from meshes: it needs --ist");
        CHECK(strstr(first, want), "%s %s: first line '%s', want '%s'", wrong[k][0], wrong[k][1], first, want);
    }
    {
        char first[256];
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --frob", prox_bin, pa, pb, pp);
        check_run_cmd2(cmd, out, 64, &n, first, err);
        CHECK(strstr(first, "unknown option '--frob'"), "unknown option: '%s'", first);
    }
    snprintf(cmd, sizeof cmd, "%s collide %s %s/missing.obj %s", prox_bin, pa, dir, pp);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 1 && strstr(err, "missing.obj"), "missing mesh: %s", err);
    f = fopen(pp, "w");
    fprintf(f, "0 0 0 1 0 0 0\n0 0 0 1 0 zero 0\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s distance %s %s %s", prox_bin, pa, pb, pp);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 1 && strstr(err, "poses.txt:2"), "bad pose line named: %s", err);
    /* a budget too small to finish still brackets the answer */
    f = fopen(pp, "w");
    fprintf(f, "0.9 0.4 0.1 1 0 0 0\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s distance %s %s %s", prox_bin, pa, pb, pp);
    check_run_cmd(cmd, out, 64, &n, err);
    double full = n == 1 ? atof(out[0]) : -1;
    snprintf(cmd, sizeof cmd, "%s distance %s %s %s --budget-us 0.001", prox_bin, pa, pb, pp);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n == 1, "budgeted run");
    double v, lo, up;
    int complete;
    if (n == 1 && sscanf(out[0], "%lf %lf %lf %d", &v, &lo, &up, &complete) == 4)
        CHECK(lo <= full + 1e-12 && up >= full - 1e-12 && isfinite(v), "budget: [%g, %g] brackets %g (complete %d)", lo, up, full, complete);
    remove(pa), remove(pb), remove(pp), rmdir(dir);
    prox_mesh_free(A);
    prox_mesh_free(B);
}

/* the number after `key` in the first of out's n lines that starts with
 * it (prox build's report), NaN if none does */
static double report_value(char out[][256], int n, const char *key)
{
    size_t k = strlen(key);
    for (int i = 0; i < n; i++)
        if (!strncmp(out[i], key, k))
            return atof(out[i] + k);
    return NAN;
}

/* The prox tool's own arguments: the command table (usage, --help, an
 * unknown command), the query commands' options without a value, a poses
 * file it cannot open or read, more poses than its first allocation, poses
 * from stdin, and prox build's grid options, --normalize and the thin-part
 * warning. Exit 2 for arguments, 1 for files, one line saying why. */
static void test_cli_args(void)
{
    char dir[] = "/tmp/prox-cli-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char pa[300], pp[300], ist[300], cmd[4096], out[320][256], first[256], err[256];
    int n;
    snprintf(pa, sizeof pa, "%s/box.obj", dir);
    snprintf(pp, sizeof pp, "%s/poses.txt", dir);
    snprintf(ist, sizeof ist, "%s/out.ist", dir);
    prox_mesh *box = prox_mesh_make_box(prox_v3(0.5, 0.5, 0.5));
    check_write_obj(pa, box);

    /* the command table: no command is a usage error on stderr, --help and
     * -h the same text on stdout, an unknown command named */
    snprintf(cmd, sizeof cmd, "%s", prox_bin);
    CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 2 && n == 0, "prox alone: exit 2, nothing on stdout (%d lines)", n);
    CHECK(!strcmp(first, "usage: prox COMMAND ARGS...\n") && strstr(err, ".vox voxel maps."), "prox alone: usage on stderr: '%s' ... '%s'",
          first, err);
    static const char *const listed[] = {"  info MESH ",
                                         "  distance A B POSES [--coherent]",
                                         "  collide A B POSES [--normalize] [--boxes]",
                                         "  penvol A B POSES [--budget-us N]",
                                         "  build MESH -o OUT.ist [--spheres N] [--voxels N]",
                                         "  voxels CLOUD -o MAP.vox --cell S [--class obstacle|unknown]   point cloud (.xyz, .ply, .obj"};
    const char *help[2] = {"--help", "-h"};
    for (int h = 0; h < 2; h++) {
        snprintf(cmd, sizeof cmd, "%s %s", prox_bin, help[h]);
        CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && err[0] == 0 && n > 0 && !strcmp(out[0], "usage: prox COMMAND ARGS...\n"),
              "prox %s: exit 0, the usage on stdout, nothing on stderr ('%s')", help[h], err);
        for (size_t k = 0; k < sizeof listed / sizeof listed[0]; k++) {
            int found = 0;
            for (int i = 0; i < n; i++)
                found += !strncmp(out[i], listed[k], strlen(listed[k]));
            CHECK(found == 1, "prox %s lists '%s' once (%d)", help[h], listed[k], found);
        }
    }
    snprintf(cmd, sizeof cmd, "%s frob %s", prox_bin, pa);
    CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 2 && n == 0 &&
              !strcmp(first, "prox: unknown command 'frob' (prox --help lists them)\n"),
          "unknown command: '%s'", first);

    /* an option that takes a value, given last without one; '--' alone */
    {
        FILE *f = fopen(pp, "w");
        if (f)
            fputs("2 0 0 1 0 0 0\n", f), fclose(f);
        static const char *const novalue[][3] = {{"distance", "--times", "prox distance: --times needs a file name\n"},
                                                 {"collide", "--order", "prox collide: --order needs auto, best or depth\n"},
                                                 {"penvol", "--budget-us", "prox penvol: --budget-us needs a value\n"},
                                                 {"distance", "--max-distance", "prox distance: --max-distance needs a value\n"},
                                                 {"collide", "--", "prox collide: unknown option '--'\n"}};
        for (size_t k = 0; k < sizeof novalue / sizeof novalue[0]; k++) {
            snprintf(cmd, sizeof cmd, "%s %s %s %s %s %s", prox_bin, novalue[k][0], pa, pa, pp, novalue[k][1]);
            char want_usage[64];
            snprintf(want_usage, sizeof want_usage, "usage: prox %s A B POSES ", novalue[k][0]);
            CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 2 && n == 0 && !strcmp(first, novalue[k][2]) &&
                      !strncmp(err, want_usage, strlen(want_usage)),
                  "prox %s ... %s: exit 2, '%s' then '%s'", novalue[k][0], novalue[k][1], first, err);
        }
    }
    /* a --times file whose writes fail (a full device), the one-pose file
     * above: the answer, then the reason when it is closed, exit 1 */
    if (access("/dev/full", W_OK) == 0) {
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s --times /dev/full", prox_bin, pa, pa, pp);
        CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 1 && n == 1 && atof(out[0]) == 1 &&
                  !strcmp(first, "prox: /dev/full: No space left on device (per-query times not written)\n") && !strncmp(err, "queries=1 ", 10),
              "--times /dev/full: %d answers, '%s' ... '%s'", n, first, err);
    }
    /* files it cannot have: exit 1, the path named with the system's reason */
    {
        char want[400];
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s/nope.txt", prox_bin, pa, pa, dir);
        snprintf(want, sizeof want, "prox: %s/nope.txt: No such file or directory\n", dir);
        CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 1 && n == 0 && !strcmp(first, want), "a missing poses file: '%s'", first);
        /* A missing (B present): nothing answered */
        snprintf(cmd, sizeof cmd, "%s collide %s/nope.obj %s %s", prox_bin, dir, pa, pp);
        snprintf(want, sizeof want, "%s/nope.obj", dir);
        CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 1 && n == 0 && !strncmp(first, "prox: ", 6) && strstr(first, want),
              "a missing A: '%s'", first);
        /* a pose line longer than the reader's 4094 characters, line 2 */
        FILE *f = fopen(pp, "w");
        if (f) {
            fputs("2 0 0 1 0 0 0\n2", f);
            for (int i = 0; i < 2100; i++)
                fputs(" 0", f);
            fputc('\n', f);
            fclose(f);
        }
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s", prox_bin, pa, pa, pp);
        snprintf(want, sizeof want, "prox: %s:2: line longer than 4094 characters\n", pp);
        CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 1 && n == 0 && !strcmp(first, want), "a long pose line: '%s'", first);
        /* a NUL byte in a pose line, line 2: the reader ended the line at
         * it, and "2 0 0 1 0 0 0\0 5" was answered as the pose before it */
        f = fopen(pp, "wb");
        if (f) {
            static const char nul_pose[] = "2 0 0 1 0 0 0\n2 0 0 1 0 0 0\0 5\n";
            fwrite(nul_pose, 1, sizeof nul_pose - 1, f);
            fclose(f);
        }
        snprintf(want, sizeof want, "prox: %s:2: a NUL byte in the line (binary data in a text file?)\n", pp);
        CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 1 && n == 0 && !strcmp(first, want), "a NUL in a pose line: '%s'", first);
    }
    /* 300 poses, more than the reader's first 256: every answer, in the
     * file's order. Two unit cubes, B moved along x by 1.5 + i/1000 and
     * not rotated: their distance is exactly that less 1 */
    {
        enum { NP = 300 };
        FILE *f = fopen(pp, "w");
        for (int i = 0; f && i < NP; i++)
            fprintf(f, "%.17g 0 0 1 0 0 0\n", 1.5 + i / 1000.0);
        if (f)
            fclose(f);
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s", prox_bin, pa, pa, pp);
        CHECK(check_run_cmd(cmd, out, 320, &n, err) == 0 && n == NP && !strncmp(err, "queries=300 ", 12), "300 poses: %d answers, '%s'", n,
              err);
        int bad = 0;
        for (int i = 0; i < n && i < NP; i++) {
            const double want = 1.5 + i / 1000.0 - 1.0, v = atof(out[i]);
            if (!(fabs(v - want) <= 1e-12)) {
                if (!bad)
                    CHECK(0, "pose %d: distance '%s', want %.17g", i, out[i], want);
                bad++;
            }
        }
        CHECK(bad == 0, "300 poses: %d answers wrong", bad);
        /* the same file on stdin ('-'): the same lines */
        char out2[320][256];
        int n2;
        snprintf(cmd, sizeof cmd, "%s distance %s %s - < %s", prox_bin, pa, pa, pp);
        CHECK(check_run_cmd(cmd, out2, 320, &n2, err) == 0 && n2 == n, "poses on stdin: %d answers for %d", n2, n);
        for (int i = 0; i < n && i < n2; i++)
            if (strcmp(out[i], out2[i])) {
                CHECK(0, "poses on stdin, line %d: '%s', from the file '%s'", i, out2[i], out[i]);
                break;
            }
    }

    /* prox build: no -o is a usage error and writes nothing */
    snprintf(cmd, sizeof cmd, "%s build %s", prox_bin, pa);
    CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 2 && n == 0 && !strcmp(first, "prox build: no output file given (-o OUT.ist)\n") &&
              !strncmp(err, "usage: prox build MESH -o OUT.ist", strlen("usage: prox build MESH -o OUT.ist")),
          "prox build without -o: '%s' then '%s'", first, err);
    /* each other usage error says what was wrong first, then the usage */
    {
        const char *args[4][2] = {{"", "prox build: no mesh given\n"},
                                  {"MESH -o OUT --voxels", "prox build: --voxels needs a value\n"},
                                  {"MESH MESH -o OUT", "prox build: one mesh at a time"},
                                  {"MESH -o OUT --fast", "prox build: unknown option '--fast'\n"}};
        for (int k = 0; k < 4; k++) {
            char a[1024] = "";
            const char *r = args[k][0];
            /* MESH stands for the mesh file, OUT for a path in this test's
             * folder (one a refusal that went wrong would write) */
            for (const char *m; (m = strpbrk(r, "MO")); r = m + (*m == 'M' ? 4 : 3))
                snprintf(a + strlen(a), sizeof a - strlen(a), "%.*s%s", (int)(m - r), r, *m == 'M' ? pa : ist);
            snprintf(a + strlen(a), sizeof a - strlen(a), "%s", r);
            snprintf(cmd, sizeof cmd, "%s build %s", prox_bin, a);
            CHECK(check_run_cmd2(cmd, out, 64, &n, first, err) == 2 && n == 0 && !strncmp(first, args[k][1], strlen(args[k][1])) &&
                      !strncmp(err, "usage: prox build", strlen("usage: prox build")),
                  "prox build %s: '%s' then '%s'", args[k][0], first, err);
        }
    }
    /* --voxels N: about N voxels in the bounding box (a unit cube here), so
     * a voxel size near N^(-1/3); the default, 200000 at 300 spheres */
    {
        const long vox[2] = {20000, 0};
        for (int k = 0; k < 2; k++) {
            char opt[64] = "";
            if (vox[k])
                snprintf(opt, sizeof opt, "--voxels %ld", vox[k]);
            snprintf(cmd, sizeof cmd, "%s build %s -o %s --spheres 300 %s", prox_bin, pa, ist, opt);
            CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0, "prox build %s: %s", opt, err);
            const double vs = report_value(out, n, "voxel_size: "), want = cbrt(1.0 / (vox[k] ? (double)vox[k] : 200000.0));
            CHECK(fabs(vs - want) <= 0.05 * want, "prox build %s: voxel size %.6g, want about %.6g", opt, vs, want);
            /* the default build is also the one without --normalize (below) */
            double vol = NAN;
            if (!vox[k])
                CHECK(n > 0 && sscanf(out[0], "mesh: %*s (12 triangles, volume %lf)", &vol) == 1 && fabs(vol - 1) <= 1e-9,
                      "without --normalize: '%s', want volume 1", n > 0 ? out[0] : "");
        }
    }
    /* --min-radius R (voxel sizes): no inner sphere smaller, where the
     * default 0.5 has some (thin-part spheres off: they are not packed) */
    {
        const char *radius[2] = {"2", "0.5"};
        double smallest[2] = {NAN, NAN};
        for (int k = 0; k < 2; k++) {
            snprintf(cmd, sizeof cmd, "%s build %s -o %s --spheres 300 --thin-gap -1 --min-radius %s", prox_bin, pa, ist, radius[k]);
            CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0, "prox build --min-radius %s: %s", radius[k], err);
            prox_ist *t = NULL;
            char lerr[256];
            CHECK(prox_ist_load(ist, &t, lerr, sizeof lerr) == 0, "load %s: %s", ist, lerr);
            if (!t)
                continue;
            double rmin = INFINITY;
            for (uint32_t i = 0; i < t->sphere_count; i++)
                rmin = t->spheres[i].r < rmin ? t->spheres[i].r : rmin;
            smallest[k] = rmin / t->voxel_size;
            prox_ist_free(t);
        }
        CHECK(smallest[0] >= 2 * (1 - 1e-6), "--min-radius 2: the smallest sphere %.4g voxel sizes", smallest[0]);
        CHECK(smallest[1] >= 0.5 * (1 - 1e-6) && smallest[1] < 2, "--min-radius 0.5: the smallest sphere %.4g voxel sizes", smallest[1]);
    }
    /* --normalize: the mesh scaled to a unit bounding-box diagonal, so the
     * cube of side 1 (diagonal sqrt 3) has volume 3^(-3/2); without it
     * (the default --voxels build above) volume 1 */
    snprintf(cmd, sizeof cmd, "%s build %s -o %s --spheres 300 --normalize", prox_bin, pa, ist);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n > 0, "prox build --normalize: %s", err);
    {
        double vol = NAN;
        CHECK(n > 0 && sscanf(out[0], "mesh: %*s (12 triangles, volume %lf)", &vol) == 1 && fabs(vol - pow(3, -1.5)) <= 1e-5,
              "--normalize: '%s', want volume %.6g", n > 0 ? out[0] : "", pow(3, -1.5));
    }
    /* the thin-part warning: the cube and, 1 to 2 beyond it along x, a
     * plate 0.01 thick, too thin for a voxel centre inside. With the
     * thin-part pass off (--thin-gap -1) the plate has no sphere: its far
     * edge lies at least 2 from every sphere (all inside the cube), and
     * prox build warns (above 8 voxel sizes); with the pass on (the
     * default, and --thin-gap 4) the plate gets spheres and no warning */
    {
        prox_vec3 v[16];
        uint32_t tri[24][3];
        for (uint32_t i = 0; i < 8; i++) {
            v[i] = box->vertices[i];
            v[8 + i] = prox_v3(box->vertices[i].x + 2, box->vertices[i].y, box->vertices[i].z * 0.01);
        }
        for (uint32_t t = 0; t < 12; t++)
            for (int k = 0; k < 3; k++)
                tri[t][k] = box->triangles[t][k], tri[12 + t][k] = box->triangles[t][k] + 8;
        prox_mesh *two = prox_mesh_from_arrays(v, 16, (const uint32_t (*)[3])tri, 24);
        char p2[300];
        snprintf(p2, sizeof p2, "%s/two.obj", dir);
        CHECK(two && two->closed && two->triangle_count == 24, "the cube and the plate: one closed mesh");
        if (two)
            check_write_obj(p2, two);
        prox_mesh_free(two);
        const char *gap[3] = {"--thin-gap -1", "", "--thin-gap 4"};
        for (int k = 0; k < 3; k++) {
            snprintf(cmd, sizeof cmd, "%s build %s -o %s --spheres 300 %s", prox_bin, p2, ist, gap[k]);
            int rc = check_run_cmd2(cmd, out, 64, &n, first, err);
            const double vs = report_value(out, n, "voxel_size: "), sg = report_value(out, n, "surface_gap: ");
            unsigned spheres = 0, thin = 0;
            int said = 0; /* the spheres line read: thin below is its count, not a default */
            for (int i = 0; i < n; i++)
                said += sscanf(out[i], "spheres: %u (%u of them in thin parts)", &spheres, &thin) == 2;
            CHECK(said == 1, "'%s': one line 'spheres: N (M of them in thin parts)' (%d)", gap[k], said);
            if (k == 0) {
                char want[160];
                snprintf(want, sizeof want, "prox build: warning: parts of the surface lie up to %.1f voxel sizes from every inner sphere",
                         sg / vs);
                CHECK(rc == 0 && thin == 0 && sg >= 2 && sg <= 2.2 && !strncmp(first, want, strlen(want)) && strstr(first, "--thin-gap -1"),
                      "--thin-gap -1: exit %d, %u thin spheres, surface gap %g (voxel %g), stderr '%s'", rc, thin, sg, vs, first);
            } else
                CHECK(rc == 0 && thin > 0 && sg / vs < 8 && first[0] == 0, "'%s': exit %d, %u thin spheres, gap %.3g voxel sizes, stderr '%s'",
                      gap[k], rc, thin, sg / vs, first);
        }
        remove(p2);
    }
    prox_mesh_free(box);
    remove(pa), remove(pp), remove(ist), rmdir(dir);
}

/* prox distance and prox collide of a and b at the poses in file poses:
 * a line each (value lower upper complete), the distance want[i] within
 * 1e-12, the bounds around it, collide 1 where want[i] is 0, complete */
static void expect_distance_collide(const char *a, const char *b, const char *poses, const double *want, int count, const char *what)
{
    char cmd[2048], err[512], out[16][256];
    for (int kind = 0; kind < 2; kind++) {
        int n = 0;
        snprintf(cmd, sizeof cmd, "%s %s %s %s %s", prox_bin, kind ? "collide" : "distance", a, b, poses);
        CHECK(check_run_cmd(cmd, out, 16, &n, err) == 0 && n == count, "%s, %s: %d lines, %s", what, kind ? "collide" : "distance", n, err);
        for (int i = 0; i < n && i < count; i++) {
            double v = NAN, lo = NAN, up = NAN;
            int c = 0;
            const int ok = sscanf(out[i], "%lf %lf %lf %d", &v, &lo, &up, &c) == 4 && c == 1 &&
                           (kind ? v == (want[i] == 0) : fabs(v - want[i]) <= 1e-12 && lo <= v && up >= v);
            CHECK(ok, "%s, %s pose %d: '%s', want %.17g", what, kind ? "collide" : "distance", i, out[i], want[i]);
        }
    }
}

/* prox with an inner sphere tree (.ist) and an open mesh (a BVH): the
 * pair is measured against the tree's surface (the tool prepares its mesh
 * BVH); without that every answer was incomplete ("inf 0 inf 0"). A cube
 * of side 1 about the origin and a plane of side 4 (two triangles) above
 * it: a level plane at height 0.5 + g is g away, one tilted by th about x
 * through (0, 0, 0.5 + g) is g cos th - 0.5 sin th away, one at 0.4 cuts
 * the cube (distance 0, collide 1); the other order, the plane A at z = 0
 * and the cube B moved up by h: h - 0.5 away, cutting it at h = 0.3. */
static void test_cli_ist_open_mesh(void)
{
    char dir[] = "/tmp/prox-istmesh-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    char pc[256], pi[256], pl[256], pp[256], cmd[2048];
    snprintf(pc, sizeof pc, "%s/cube.obj", dir);
    snprintf(pi, sizeof pi, "%s/cube.ist", dir);
    snprintf(pl, sizeof pl, "%s/plane.off", dir);
    snprintf(pp, sizeof pp, "%s/poses.txt", dir);
    prox_mesh *cube = prox_mesh_make_box(prox_v3(0.5, 0.5, 0.5));
    check_write_obj(pc, cube);
    prox_mesh_free(cube);
    FILE *f = fopen(pl, "w");
    if (f) {
        fputs("OFF\n4 2 0\n-2 -2 0\n2 -2 0\n2 2 0\n-2 2 0\n3 0 1 2\n3 0 2 3\n", f);
        fclose(f);
    }
    const double th = 0.2, g[3] = {0.5, 0.2, 0.01};
    f = fopen(pp, "w");
    if (f) {
        for (int i = 0; i < 3; i++)
            fprintf(f, "0 0 %.17g 1 0 0 0\n", 0.5 + g[i]);
        fprintf(f, "0 0 %.17g %.17g %.17g 0 0\n", 0.5 + g[0], cos(th / 2), sin(th / 2));
        fputs("0 0 0.4 1 0 0 0\n", f);
        fclose(f);
    }
    const double want[5] = {g[0], g[1], g[2], g[0] * cos(th) - 0.5 * sin(th), 0};
    snprintf(cmd, sizeof cmd, "%s build %s -o %s --spheres 200 > /dev/null 2>&1", prox_bin, pc, pi);
    CHECK(system(cmd) == 0, "prox build the cube");
    expect_distance_collide(pi, pl, pp, want, 5, "cube first");
    /* the other order: the plane A, the cube B moved up by h */
    f = fopen(pp, "w");
    if (f) {
        fputs("0 0 1.5 1 0 0 0\n0 0 0.75 1 0 0 0\n0 0 0.3 1 0 0 0\n", f);
        fclose(f);
    }
    const double want_b[3] = {1.0, 0.25, 0};
    expect_distance_collide(pl, pi, pp, want_b, 3, "plane first");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

int main(int argc, char **argv)
{
    (void)argc;
    check_find_prox(argv[0], prox_bin, sizeof prox_bin);
    bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    engine = prox_engine_create(NULL, bank);
    RUN_TEST(test_bv_bounds);
    RUN_TEST(test_build_invariants);
    RUN_TEST(test_contains);
    RUN_TEST(test_sphere_sphere);
    RUN_TEST(test_torus_box);
    RUN_TEST(test_soup);
    RUN_TEST(test_far_small);
    RUN_TEST(test_nested);
    RUN_TEST(test_forest);
    RUN_TEST(test_budget_and_memory);
    RUN_TEST(test_triangle_below);
    RUN_TEST(test_motion_bound);
    RUN_TEST(test_coherence);
    RUN_TEST(test_front_coherence);
    RUN_TEST(test_front_drift);
    RUN_TEST(test_bank_replace);
    RUN_TEST(test_bad_input);
    RUN_TEST(test_cli);
    RUN_TEST(test_cli_args);
    RUN_TEST(test_cli_ist_open_mesh);
    prox_engine_destroy(engine);
    prox_bank_destroy(bank);
    return check_summary(argv[0]);
}
