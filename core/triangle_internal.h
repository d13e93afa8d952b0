/* triangle_internal.h - the point-triangle distance inline, for libprox's
 * hot loops (the triangle box tree's candidates, the triangle pairs'
 * vertex-face tests): prox_point_triangle_dist2 is this, out of line.
 * Ericson, Real-Time Collision Detection 5.1.5, by Voronoi regions; a
 * degenerate (zero area) triangle goes to its edges (triangle.c). Pure,
 * RT safe. */
#ifndef PROX_TRIANGLE_INTERNAL_H
#define PROX_TRIANGLE_INTERNAL_H

#include "prox_mesh.h"

/* the closest point of the three edges of (a, b, c) to p; the squared distance */
double prox_point_triangle_dist2_edges(prox_vec3 p, prox_vec3 a, prox_vec3 b, prox_vec3 c, prox_vec3 *closest);

/* (a, b, c) has (next to) no area: point_triangle_dist2 takes its edges */
static inline int point_triangle_flat(prox_vec3 a, prox_vec3 b, prox_vec3 c)
{
    prox_vec3 ab = prox_v3_sub(b, a), ac = prox_v3_sub(c, a);
    double n2 = prox_v3_len2(prox_v3_cross(ab, ac));
    double scale = prox_v3_len2(ab) + prox_v3_len2(ac);
    return !(n2 > 1e-24 * scale * scale);
}

/* point_triangle_dist2 of a triangle known not to be flat
 * (point_triangle_flat 0) */
static inline double point_triangle_dist2_solid(prox_vec3 p, prox_vec3 a, prox_vec3 b, prox_vec3 c, prox_vec3 *closest)
{
    prox_vec3 ab = prox_v3_sub(b, a), ac = prox_v3_sub(c, a), ap = prox_v3_sub(p, a);
    prox_vec3 q;
    double d1 = prox_v3_dot(ab, ap), d2 = prox_v3_dot(ac, ap);
    if (d1 <= 0 && d2 <= 0) {
        q = a;
        goto done;
    }
    prox_vec3 bp = prox_v3_sub(p, b);
    double d3 = prox_v3_dot(ab, bp), d4 = prox_v3_dot(ac, bp);
    if (d3 >= 0 && d4 <= d3) {
        q = b;
        goto done;
    }
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        q = prox_v3_madd(a, ab, d1 / (d1 - d3));
        goto done;
    }
    prox_vec3 cp = prox_v3_sub(p, c);
    double d5 = prox_v3_dot(ab, cp), d6 = prox_v3_dot(ac, cp);
    if (d6 >= 0 && d5 <= d6) {
        q = c;
        goto done;
    }
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        q = prox_v3_madd(a, ac, d2 / (d2 - d6));
        goto done;
    }
    double va = d3 * d6 - d5 * d4;
    if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
        q = prox_v3_madd(b, prox_v3_sub(c, b), (d4 - d3) / ((d4 - d3) + (d5 - d6)));
        goto done;
    }
    {
        double denom = 1.0 / (va + vb + vc);
        double v = vb * denom, w = vc * denom;
        q = prox_v3_add(a, prox_v3_add(prox_v3_scale(ab, v), prox_v3_scale(ac, w)));
    }
done:
    if (closest)
        *closest = q;
    return prox_v3_len2(prox_v3_sub(p, q));
}

/* closest point on triangle (a, b, c) to p (into *closest unless NULL);
 * returns the squared distance */
static inline double point_triangle_dist2(prox_vec3 p, prox_vec3 a, prox_vec3 b, prox_vec3 c, prox_vec3 *closest)
{
    if (point_triangle_flat(a, b, c))
        return prox_point_triangle_dist2_edges(p, a, b, c, closest);
    return point_triangle_dist2_solid(p, a, b, c, closest);
}

#endif
