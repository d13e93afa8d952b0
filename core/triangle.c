/* triangle.c - exact triangle primitives: point-triangle, triangle-triangle
 * distance with witness points, triangle-triangle intersection.
 *
 * Distance between two triangles is the minimum over their feature pairs:
 * 9 edge-edge pairs, 6 vertex-face pairs, and 6 edge-face crossings (an
 * edge piercing the other face means they intersect: distance 0). For
 * disjoint triangles the minimum is always realized by an edge-edge or a
 * vertex-face pair; for intersecting ones either an edge crosses a face, or
 * (coplanar) two edges cross or a vertex lies inside. Degenerate triangles
 * (zero area) fall back to their edges. All pure, no allocation.
 */
#include <float.h>

#include "prox_mesh.h"
#include "triangle_internal.h"

/* Closest points of segments p1 + s d1 and p2 + t d2, s, t in [0, 1]
 * (Ericson, Real-Time Collision Detection 5.1.9), with a = |d1|^2 and
 * e = |d2|^2 given; returns the squared distance. Handles zero-length
 * segments. */
static inline double seg_seg_pre(prox_vec3 p1, prox_vec3 d1, double a, prox_vec3 p2, prox_vec3 d2, double e, prox_vec3 *c1,
                                 prox_vec3 *c2)
{
    prox_vec3 r = prox_v3_sub(p1, p2);
    double f = prox_v3_dot(d2, r);
    double s, t;
    const double eps = 1e-300;
    if (a <= eps && e <= eps) {
        s = t = 0.0;
    } else if (a <= eps) {
        s = 0.0;
        t = f / e;
        t = t < 0 ? 0 : (t > 1 ? 1 : t);
    } else {
        double c = prox_v3_dot(d1, r);
        if (e <= eps) {
            t = 0.0;
            s = -c / a;
            s = s < 0 ? 0 : (s > 1 ? 1 : s);
        } else {
            double b = prox_v3_dot(d1, d2);
            double denom = a * e - b * b;
            if (denom > 1e-14 * a * e) {
                s = (b * f - c * e) / denom;
                s = s < 0 ? 0 : (s > 1 ? 1 : s);
            } else {
                s = 0.0; /* parallel: any s; endpoints are tried below via clamping of t */
            }
            t = (b * s + f) / e;
            if (t < 0.0) {
                t = 0.0;
                s = -c / a;
                s = s < 0 ? 0 : (s > 1 ? 1 : s);
            } else if (t > 1.0) {
                t = 1.0;
                s = (b - c) / a;
                s = s < 0 ? 0 : (s > 1 ? 1 : s);
            }
        }
    }
    *c1 = prox_v3_madd(p1, d1, s);
    *c2 = prox_v3_madd(p2, d2, t);
    return prox_v3_len2(prox_v3_sub(*c1, *c2));
}

/* the same from the end points (a, e: squared lengths, computed here) */
static double seg_seg(prox_vec3 p1, prox_vec3 q1, prox_vec3 p2, prox_vec3 q2, prox_vec3 *c1, prox_vec3 *c2)
{
    prox_vec3 d1 = prox_v3_sub(q1, p1), d2 = prox_v3_sub(q2, p2);
    return seg_seg_pre(p1, d1, prox_v3_dot(d1, d1), p2, d2, prox_v3_dot(d2, d2), c1, c2);
}

/* the degenerate (zero area) case of point_triangle_dist2: the closest
 * point of its three edges */
double prox_point_triangle_dist2_edges(prox_vec3 p, prox_vec3 a, prox_vec3 b, prox_vec3 c, prox_vec3 *closest)
{
    prox_vec3 best = a, t1, t2;
    double bd = prox_v3_len2(prox_v3_sub(p, a));
    const prox_vec3 e0[3] = {a, b, c}, e1[3] = {b, c, a};
    for (int i = 0; i < 3; i++) {
        double d = seg_seg(p, p, e0[i], e1[i], &t1, &t2);
        if (d < bd) {
            bd = d;
            best = t2;
        }
    }
    if (closest)
        *closest = best;
    return bd;
}

double prox_point_triangle_dist2(prox_vec3 p, prox_vec3 a, prox_vec3 b, prox_vec3 c, prox_vec3 *closest)
{
    return point_triangle_dist2(p, a, b, c, closest);
}

/* Does segment pq cross the (non-degenerate) triangle T's interior or
 * boundary, not lying in its plane? On success *hit is the crossing point. */
static int seg_tri_cross(prox_vec3 p, prox_vec3 q, const prox_vec3 T[3], prox_vec3 *hit)
{
    prox_vec3 e1 = prox_v3_sub(T[1], T[0]), e2 = prox_v3_sub(T[2], T[0]);
    prox_vec3 n = prox_v3_cross(e1, e2);
    double dp = prox_v3_dot(n, prox_v3_sub(p, T[0]));
    double dq = prox_v3_dot(n, prox_v3_sub(q, T[0]));
    if ((dp > 0 && dq > 0) || (dp < 0 && dq < 0) || dp == dq)
        return 0; /* same side, or parallel/in plane (coplanar handled elsewhere) */
    double t = dp / (dp - dq);
    prox_vec3 x = prox_v3_madd(p, prox_v3_sub(q, p), t);
    /* inside test with edge normals */
    for (int i = 0; i < 3; i++) {
        prox_vec3 a = T[i], b = T[(i + 1) % 3];
        if (prox_v3_dot(prox_v3_cross(prox_v3_sub(b, a), prox_v3_sub(x, a)), n) < 0)
            return 0;
    }
    *hit = x;
    return 1;
}

/* Does v = y - x separate P (behind x) from Q (beyond y)? Then no points of
 * the triangles are closer than |v| (the slab between the two planes
 * normal to v through x and y lies between them), and (x, y) is the answer. */
static int separates(const prox_vec3 P[3], const prox_vec3 Q[3], prox_vec3 x, prox_vec3 y)
{
    prox_vec3 v = prox_v3_sub(y, x);
    for (int i = 0; i < 3; i++)
        if (prox_v3_dot(prox_v3_sub(P[i], x), v) > 0 || prox_v3_dot(prox_v3_sub(Q[i], y), v) < 0)
            return 0;
    return 1;
}

/* three signed plane offsets all of one sign (strictly) */
static inline int one_side(const double s[3]) { return (s[0] > 0 && s[1] > 0 && s[2] > 0) || (s[0] < 0 && s[1] < 0 && s[2] < 0); }

/* A separating axis of two triangles that are at least `below` apart: a
 * normal (when the other triangle lies strictly on one side of its plane:
 * tight for a vertex-face closest pair), then the direction of the closest
 * vertex pair (near-tight for small triangles far apart, whose closest pair
 * is mostly a vertex-vertex or vertex-edge pair). Returns the separation
 * along the first axis that shows at least `below`, lowered by far more than
 * the rounding of the projections (so that it never exceeds the distance
 * prox_triangle_distance would compute), with that axis, unit, pointing from
 * P to Q; or -1 when neither does (or a vertex pair is closer than `below`).
 * The nine edge-edge cross products caught few more and cost more than they
 * saved (callgrind, random poses: armadillo +2%, bunny00 +1%, knot1 0%). */
static double separating_axis(const prox_vec3 P[3], const prox_vec3 Q[3], prox_vec3 nP, prox_vec3 nQ, double nP2, double nQ2,
                              int degP, int degQ, const double sP[3], const double sQ[3], double below, prox_vec3 *axis)
{
    double mag = 0;
    for (int k = 0; k < 3; k++) {
        double a = fabs(P[k].x) + fabs(P[k].y) + fabs(P[k].z), b = fabs(Q[k].x) + fabs(Q[k].y) + fabs(Q[k].z);
        mag = a > mag ? a : mag;
        mag = b > mag ? b : mag;
    }
    const double slack = 1e-13 * mag;
    for (int side = 0; side < 2; side++) {
        const double *sv = side ? sP : sQ;
        if ((side ? degQ : degP) || !one_side(sv))
            continue;
        double m = fabs(sv[0]) < fabs(sv[1]) ? fabs(sv[0]) : fabs(sv[1]);
        m = m < fabs(sv[2]) ? m : fabs(sv[2]);
        double len = sqrt(side ? nQ2 : nP2), g = m / len * (1 - 1e-12) - slack;
        if (g >= below) {
            /* Q beyond P's plane along +nP when sQ > 0; P beyond Q's along +nQ when sP > 0 */
            double sgn = (sv[0] > 0) == (side == 0) ? 1.0 : -1.0;
            *axis = prox_v3_scale(side ? nQ : nP, sgn / len);
            return g;
        }
    }
    if (!(below > 0))
        return -1.0;
    {
        double bd = INFINITY;
        prox_vec3 u = {0, 0, 0};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                prox_vec3 w = prox_v3_sub(Q[j], P[i]);
                double d2 = prox_v3_len2(w);
                if (d2 < bd)
                    bd = d2, u = w;
            }
        if (!(bd >= below * below))
            return -1.0; /* a vertex pair is closer than `below`: so is the pair */
        double pm = -INFINITY, qm = INFINITY;
        for (int k = 0; k < 3; k++) {
            double x = prox_v3_dot(u, P[k]), y = prox_v3_dot(u, Q[k]);
            pm = x > pm ? x : pm;
            qm = y < qm ? y : qm;
        }
        double len = sqrt(bd), g = (qm - pm) / len * (1 - 1e-12) - slack;
        if (g >= below) {
            *axis = prox_v3_scale(u, 1.0 / len);
            return g;
        }
    }
    return -1.0;
}

static inline double tri_dist(const prox_vec3 P[3], const prox_vec3 Q[3], double below, prox_vec3 *p_on_P, prox_vec3 *q_on_Q,
                              prox_vec3 *axis, int *exact)
{
    double best = INFINITY; /* (DBL_MAX: squared distances past it overflowed and sqrt(DBL_MAX) came back as exact) */
    prox_vec3 bp = P[0], bq = Q[0], c1, c2;
    /* edges and their squared lengths, once */
    prox_vec3 eP[3], eQ[3];
    double lP[3], lQ[3];
    for (int i = 0; i < 3; i++) {
        eP[i] = prox_v3_sub(P[(i + 1) % 3], P[i]), lP[i] = prox_v3_len2(eP[i]);
        eQ[i] = prox_v3_sub(Q[(i + 1) % 3], Q[i]), lQ[i] = prox_v3_len2(eQ[i]);
    }
    prox_vec3 nP = prox_v3_cross(eP[0], prox_v3_sub(P[2], P[0])), nQ = prox_v3_cross(eQ[0], prox_v3_sub(Q[2], Q[0]));
    double nP2 = prox_v3_len2(nP), nQ2 = prox_v3_len2(nQ);
    /* degenerate (zero area, as point_triangle_flat): fall back to the edges */
    int degP = !(nP2 > 1e-24 * (lP[0] + lP[2]) * (lP[0] + lP[2])), degQ = !(nQ2 > 1e-24 * (lQ[0] + lQ[2]) * (lQ[0] + lQ[2]));
    /* signed plane offsets (times the normals' lengths) of each triangle's
     * vertices from the other's plane */
    double sQ[3], sP[3];
    for (int i = 0; i < 3; i++)
        sQ[i] = prox_v3_dot(nP, prox_v3_sub(Q[i], P[0])), sP[i] = prox_v3_dot(nQ, prox_v3_sub(P[i], Q[0]));
    if (below < INFINITY) {
        prox_vec3 ax;
        double g = separating_axis(P, Q, nP, nQ, nP2, nQ2, degP, degQ, sP, sQ, below, &ax);
        if (g >= below) {
            *exact = 0;
            if (axis)
                *axis = ax;
            return g;
        }
    }
    /* edge crossings: distance 0; impossible when either triangle lies
     * strictly on one side of the other's plane */
    int apart = (!degP && one_side(sQ)) || (!degQ && one_side(sP));
    for (int i = 0; i < 3 && !apart; i++) {
        prox_vec3 x;
        if (!degQ && seg_tri_cross(P[i], P[(i + 1) % 3], Q, &x)) {
            if (p_on_P)
                *p_on_P = x;
            if (q_on_Q)
                *q_on_Q = x;
            return 0.0;
        }
        if (!degP && seg_tri_cross(Q[i], Q[(i + 1) % 3], P, &x)) {
            if (p_on_P)
                *p_on_P = x;
            if (q_on_Q)
                *q_on_Q = x;
            return 0.0;
        }
    }
    /* a triangle wholly on one side of the other's plane whose vertex
     * nearest that plane projects into the other triangle: that vertex and
     * its projection are the closest pair (no point of it is nearer the
     * plane; PQP's vertex-face case), no edge pair needed */
    if (apart) {
        for (int side = 0; side < 2; side++) {
            const prox_vec3 *F = side ? Q : P, *V = side ? P : Q, *eF = side ? eQ : eP;
            const double *sv = side ? sP : sQ;
            int deg = side ? degQ : degP;
            prox_vec3 n = side ? nQ : nP;
            if (deg || !one_side(sv))
                continue;
            int k = fabs(sv[0]) <= fabs(sv[1]) ? 0 : 1;
            k = fabs(sv[k]) <= fabs(sv[2]) ? k : 2;
            int inside = 1;
            for (int i = 0; i < 3 && inside; i++)
                inside = prox_v3_dot(prox_v3_cross(eF[i], prox_v3_sub(V[k], F[i])), n) >= 0;
            if (!inside)
                continue;
            double n2 = side ? nQ2 : nP2;
            prox_vec3 x = prox_v3_madd(V[k], n, -sv[k] / n2); /* V[k]'s foot on F */
            if (p_on_P)
                *p_on_P = side ? V[k] : x;
            if (q_on_Q)
                *q_on_Q = side ? x : V[k];
            return fabs(sv[k]) / sqrt(n2);
        }
    }
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            double d = seg_seg_pre(P[i], eP[i], lP[i], Q[j], eQ[j], lQ[j], &c1, &c2);
            if (d < best) {
                best = d;
                bp = c1;
                bq = c2;
                /* an edge pair whose connecting segment separates the
                 * triangles is the closest pair (PQP's early exit) */
                if (d > 0 && separates(P, Q, c1, c2))
                    goto done;
            }
        }
    }
    /* vertex-face pairs; a vertex whose distance to the other's plane is
     * already no better than the best cannot be closer to the face. The
     * face's flatness is degP / degQ: point_triangle_flat's expression on
     * the same numbers (its ab x ac is nP, its |ac|^2 lP[2], the squares of
     * the negated edge), so point_triangle_dist2's own test is skipped, the
     * same answers bit for bit (callgrind, default query, 40 random / 80
     * coherent bench poses: 0.4-1.4% fewer instructions) */
    for (int i = 0; i < 3; i++) {
        double d;
        if (degQ || sP[i] * sP[i] < best * nQ2) {
            d = degQ ? prox_point_triangle_dist2_edges(P[i], Q[0], Q[1], Q[2], &c2) : point_triangle_dist2_solid(P[i], Q[0], Q[1], Q[2], &c2);
            if (d < best) {
                best = d;
                bp = P[i];
                bq = c2;
            }
        }
        if (degP || sQ[i] * sQ[i] < best * nP2) {
            d = degP ? prox_point_triangle_dist2_edges(Q[i], P[0], P[1], P[2], &c1) : point_triangle_dist2_solid(Q[i], P[0], P[1], P[2], &c1);
            if (d < best) {
                best = d;
                bp = c1;
                bq = Q[i];
            }
        }
    }
done:
    if (p_on_P)
        *p_on_P = bp;
    if (q_on_Q)
        *q_on_Q = bq;
    return sqrt(best);
}

double prox_triangle_distance(const prox_vec3 P[3], const prox_vec3 Q[3], prox_vec3 *p_on_P, prox_vec3 *q_on_Q)
{
    int exact = 1;
    return tri_dist(P, Q, INFINITY, p_on_P, q_on_Q, NULL, &exact);
}

double prox_triangle_distance_below(const prox_vec3 P[3], const prox_vec3 Q[3], double below, prox_vec3 *p_on_P,
                                    prox_vec3 *q_on_Q, prox_vec3 *axis, int *exact)
{
    int ex = 1;
    double d = tri_dist(P, Q, below, p_on_P, q_on_Q, axis, &ex);
    if (exact)
        *exact = ex;
    return d;
}

int prox_triangle_intersect(const prox_vec3 P[3], const prox_vec3 Q[3])
{
    /* Moller's early rejection: all of Q strictly on one side of P's plane
     * (or the reverse) means no contact. */
    prox_vec3 nP = prox_v3_cross(prox_v3_sub(P[1], P[0]), prox_v3_sub(P[2], P[0]));
    double s0 = prox_v3_dot(nP, prox_v3_sub(Q[0], P[0]));
    double s1 = prox_v3_dot(nP, prox_v3_sub(Q[1], P[0]));
    double s2 = prox_v3_dot(nP, prox_v3_sub(Q[2], P[0]));
    if ((s0 > 0 && s1 > 0 && s2 > 0) || (s0 < 0 && s1 < 0 && s2 < 0))
        return 0;
    prox_vec3 nQ = prox_v3_cross(prox_v3_sub(Q[1], Q[0]), prox_v3_sub(Q[2], Q[0]));
    double t0 = prox_v3_dot(nQ, prox_v3_sub(P[0], Q[0]));
    double t1 = prox_v3_dot(nQ, prox_v3_sub(P[1], Q[0]));
    double t2 = prox_v3_dot(nQ, prox_v3_sub(P[2], Q[0]));
    if ((t0 > 0 && t1 > 0 && t2 > 0) || (t0 < 0 && t1 < 0 && t2 < 0))
        return 0;
    /* Straddling both planes (or coplanar): exact feature test. */
    prox_vec3 a, b;
    double scale = 0;
    for (int i = 0; i < 3; i++)
        scale += prox_v3_len(prox_v3_sub(P[i], P[(i + 1) % 3])) + prox_v3_len(prox_v3_sub(Q[i], Q[(i + 1) % 3]));
    return prox_triangle_distance(P, Q, &a, &b) <= 1e-12 * scale;
}
