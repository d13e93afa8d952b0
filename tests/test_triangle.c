/* test_triangle.c - triangle primitives against dense sampling and hand-made cases. */
#include "check.h"
#include "prox.h"
#include "check_prox.h"

static prox_vec3 rv(unsigned long long *s, double a) { return check_rng_v3(s, -a, a); }

/* distance from p to triangle T by sampling T densely (upper bound on the truth) */
static double sampled_tri_tri(const prox_vec3 P[3], const prox_vec3 Q[3], int n)
{
    double best = INFINITY;
    for (int i = 0; i <= n; i++)
        for (int j = 0; i + j <= n; j++) {
            double u = (double)i / n, v = (double)j / n;
            prox_vec3 p = prox_v3_add(P[0], prox_v3_add(prox_v3_scale(prox_v3_sub(P[1], P[0]), u), prox_v3_scale(prox_v3_sub(P[2], P[0]), v)));
            prox_vec3 c;
            double d = sqrt(prox_point_triangle_dist2(p, Q[0], Q[1], Q[2], &c));
            if (d < best)
                best = d;
        }
    return best;
}

static int on_triangle(prox_vec3 x, const prox_vec3 T[3])
{
    prox_vec3 c;
    return prox_point_triangle_dist2(x, T[0], T[1], T[2], &c) < 1e-18;
}

static void test_point_triangle_regions(void)
{
    prox_vec3 a = prox_v3(0, 0, 0), b = prox_v3(1, 0, 0), c = prox_v3(0, 1, 0), q;
    struct { prox_vec3 p, want; } cases[] = {
        {{-1, -1, 1}, {0, 0, 0}},     /* vertex a */
        {{2, -0.5, 0}, {1, 0, 0}},    /* vertex b */
        {{-0.2, 3, -1}, {0, 1, 0}},   /* vertex c */
        {{0.5, -1, 2}, {0.5, 0, 0}},  /* edge ab */
        {{-1, 0.5, 0}, {0, 0.5, 0}},  /* edge ac */
        {{1, 1, 0}, {0.5, 0.5, 0}},   /* edge bc */
        {{0.2, 0.2, 5}, {0.2, 0.2, 0}}, /* face */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double d2 = prox_point_triangle_dist2(cases[i].p, a, b, c, &q);
        CHECK_NEAR(prox_v3_dist(q, cases[i].want), 0.0, 1e-12, "closest point");
        CHECK_NEAR(d2, prox_v3_len2(prox_v3_sub(cases[i].p, cases[i].want)), 1e-12, "distance");
    }
    /* degenerate triangle: a segment */
    double d2 = prox_point_triangle_dist2(prox_v3(0.5, 1, 0), a, b, prox_v3(2, 0, 0), &q);
    CHECK_NEAR(d2, 1.0, 1e-12, "collinear triangle");
}

static void test_random_pairs_vs_sampling(void)
{
    unsigned long long s = 42;
    for (int it = 0; it < 1500; it++) {
        prox_vec3 P[3], Q[3], off = rv(&s, it % 3 == 0 ? 0.3 : 2.0);
        for (int k = 0; k < 3; k++) {
            P[k] = rv(&s, 1);
            Q[k] = prox_v3_add(rv(&s, 1), off);
        }
        prox_vec3 p, q;
        double d = prox_triangle_distance(P, Q, &p, &q);
        CHECK(on_triangle(p, P) && on_triangle(q, Q), "witnesses on their triangles (it %d)", it);
        CHECK_NEAR(prox_v3_dist(p, q), d, 1e-9, "witness distance equals distance");
        double samp = sampled_tri_tri(P, Q, 24);
        double samp2 = sampled_tri_tri(Q, P, 24);
        double sm = samp < samp2 ? samp : samp2;
        CHECK(d <= sm + 1e-9, "exact %.9g <= sampled %.9g (it %d)", d, sm, it);
        /* sampling step bound: grid spacing of the longest edge / n */
        double h = 0;
        for (int k = 0; k < 3; k++) {
            double e1 = prox_v3_dist(P[k], P[(k + 1) % 3]), e2 = prox_v3_dist(Q[k], Q[(k + 1) % 3]);
            h = fmax(h, fmax(e1, e2));
        }
        CHECK(d >= sm - 2 * h / 24 - 1e-9, "exact %.9g close to sampled %.9g", d, sm);
        int hit = prox_triangle_intersect(P, Q);
        CHECK(hit == (d <= 1e-9) || fabs(d) < 1e-7, "intersect %d agrees with distance %.3g", hit, d);
    }
}

static void test_hand_cases(void)
{
    prox_vec3 p, q;
    prox_vec3 P[3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
    /* parallel offset */
    prox_vec3 Q1[3] = {{0, 0, 0.5}, {1, 0, 0.5}, {0, 1, 0.5}};
    CHECK_NEAR(prox_triangle_distance(P, Q1, &p, &q), 0.5, 1e-12, "parallel");
    CHECK(!prox_triangle_intersect(P, Q1), "parallel disjoint");
    /* coplanar overlapping */
    prox_vec3 Q2[3] = {{0.2, 0.2, 0}, {2, 0.2, 0}, {0.2, 2, 0}};
    CHECK_NEAR(prox_triangle_distance(P, Q2, &p, &q), 0.0, 1e-12, "coplanar overlap");
    CHECK(prox_triangle_intersect(P, Q2), "coplanar overlap intersects");
    /* coplanar, one inside the other */
    prox_vec3 Q2b[3] = {{0.1, 0.1, 0}, {0.2, 0.1, 0}, {0.1, 0.2, 0}};
    CHECK_NEAR(prox_triangle_distance(P, Q2b, &p, &q), 0.0, 1e-12, "coplanar contained");
    CHECK(prox_triangle_intersect(P, Q2b), "coplanar contained intersects");
    /* coplanar disjoint */
    prox_vec3 Q3[3] = {{2, 0, 0}, {3, 0, 0}, {2, 1, 0}};
    CHECK_NEAR(prox_triangle_distance(P, Q3, &p, &q), 1.0, 1e-12, "coplanar disjoint");
    CHECK(!prox_triangle_intersect(P, Q3), "coplanar disjoint no hit");
    /* touching at a vertex */
    prox_vec3 Q4[3] = {{1, 0, 0}, {2, 0, 1}, {2, 1, 0}};
    CHECK_NEAR(prox_triangle_distance(P, Q4, &p, &q), 0.0, 1e-12, "touching vertex");
    CHECK(prox_triangle_intersect(P, Q4), "touching vertex intersects");
    /* touching edge to edge */
    prox_vec3 Q5[3] = {{1, 0, 0}, {0, 1, 0}, {1, 1, 1}};
    CHECK_NEAR(prox_triangle_distance(P, Q5, &p, &q), 0.0, 1e-12, "shared edge");
    /* crossing (piercing) */
    prox_vec3 Q6[3] = {{0.2, 0.2, -1}, {0.3, 0.2, 1}, {0.2, 0.3, 1}};
    CHECK_NEAR(prox_triangle_distance(P, Q6, &p, &q), 0.0, 1e-12, "piercing");
    CHECK(prox_triangle_intersect(P, Q6), "piercing intersects");
    CHECK_NEAR(p.z, 0.0, 1e-12, "piercing point in P's plane");
    /* crossing edges, skew */
    prox_vec3 Q7[3] = {{0.5, -1, 1}, {0.5, 1, -1}, {0.5, 1, 1}};
    CHECK_NEAR(prox_triangle_distance(P, Q7, &p, &q), 0.0, 1e-12, "edge through face");
    /* sliver: zero-length edge and collinear */
    prox_vec3 S1[3] = {{0.2, 0.2, 1}, {0.2, 0.2, 1}, {0.4, 0.2, 1}};
    CHECK_NEAR(prox_triangle_distance(P, S1, &p, &q), 1.0, 1e-12, "sliver above");
    prox_vec3 S2[3] = {{0.2, 0.2, -1}, {0.2, 0.2, 0}, {0.2, 0.2, 1}};
    CHECK_NEAR(prox_triangle_distance(P, S2, &p, &q), 0.0, 1e-12, "degenerate segment through face");
    /* edge-edge skew, known answer */
    prox_vec3 E1[3] = {{0, 0, 0}, {1, 0, 0}, {0.5, -1, 0}};
    prox_vec3 E2[3] = {{0.5, 0.5, 1}, {0.5, -0.5, 1}, {0.5, 0, 2}};
    CHECK_NEAR(prox_triangle_distance(E1, E2, &p, &q), 1.0, 1e-12, "skew edges");
}

int main(int argc, char **argv)
{
    (void)argc;
    RUN_TEST(test_point_triangle_regions);
    RUN_TEST(test_random_pairs_vs_sampling);
    RUN_TEST(test_hand_cases);
    return check_summary(argv[0]);
}
