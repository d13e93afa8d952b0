/* convex_shapes.h - convex polyhedra built procedurally, shared by
 * tests/test_boxes.c and bench/gen_convex.c (the shapes of Arcila, Dinas and
 * Banon's experiments). Include after prox.h. Allocates: tests and
 * benchmarks only. */
#ifndef CONVEX_SHAPES_H
#define CONVEX_SHAPES_H

#include <math.h>
#include <stdlib.h>

/* Every plane through three points with all points on one side is a face
 * plane; its face is the points on it, sorted by angle, fanned. O(n^4):
 * for the few dozen points used here. */
static inline prox_mesh *hull_mesh(const prox_vec3 *p, uint32_t n)
{
    enum { MAXF = 512 };
    prox_vec3 fn[MAXF];
    double fd[MAXF];
    uint32_t nf = 0;
    double size = 0;
    for (uint32_t i = 0; i < n; i++)
        size = fmax(size, prox_v3_len(p[i]));
    double eps = 1e-9 * size;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            for (uint32_t k = j + 1; k < n; k++) {
                prox_vec3 nn = prox_v3_cross(prox_v3_sub(p[j], p[i]), prox_v3_sub(p[k], p[i]));
                if (prox_v3_len(nn) < 1e-9 * size * size)
                    continue;
                nn = prox_v3_normalize(nn);
                double d = prox_v3_dot(nn, p[i]), hi = -INFINITY, lo = INFINITY;
                for (uint32_t q = 0; q < n; q++) {
                    double s = prox_v3_dot(nn, p[q]) - d;
                    hi = fmax(hi, s), lo = fmin(lo, s);
                }
                if (hi > eps && lo < -eps)
                    continue;
                if (hi > eps)
                    nn = prox_v3_scale(nn, -1.0), d = -d;
                uint32_t f = 0;
                while (f < nf && !(prox_v3_dot(fn[f], nn) > 1 - 1e-9 && fabs(fd[f] - d) < eps))
                    f++;
                if (f == nf && nf < MAXF)
                    fn[nf] = nn, fd[nf] = d, nf++;
            }
    uint32_t(*tri)[3] = malloc(sizeof *tri * 2 * n * MAXF / 8 + 64), nt = 0;
    for (uint32_t f = 0; f < nf; f++) {
        uint32_t on[64], k = 0;
        prox_vec3 c = prox_v3(0, 0, 0);
        for (uint32_t q = 0; q < n && k < 64; q++)
            if (fabs(prox_v3_dot(fn[f], p[q]) - fd[f]) <= eps)
                on[k++] = q, c = prox_v3_add(c, p[q]);
        c = prox_v3_scale(c, 1.0 / k);
        prox_vec3 u = prox_v3_normalize(prox_v3_sub(p[on[0]], c)), w = prox_v3_cross(fn[f], u);
        double ang[64];
        for (uint32_t a = 0; a < k; a++)
            ang[a] = atan2(prox_v3_dot(w, prox_v3_sub(p[on[a]], c)), prox_v3_dot(u, prox_v3_sub(p[on[a]], c)));
        for (uint32_t a = 1; a < k; a++) /* insertion sort by angle */
            for (uint32_t b = a; b > 0 && ang[b] < ang[b - 1]; b--) {
                double t = ang[b];
                ang[b] = ang[b - 1], ang[b - 1] = t;
                uint32_t o = on[b];
                on[b] = on[b - 1], on[b - 1] = o;
            }
        for (uint32_t a = 1; a + 1 < k; a++)
            tri[nt][0] = on[0], tri[nt][1] = on[a], tri[nt][2] = on[a + 1], nt++;
    }
    prox_mesh *m = prox_mesh_from_arrays(p, n, (const uint32_t(*)[3])tri, nt);
    free(tri);
    return m;
}

static inline prox_mesh *make_octahedron(double r)
{
    prox_vec3 v[6] = {{r, 0, 0}, {-r, 0, 0}, {0, r, 0}, {0, -r, 0}, {0, 0, r}, {0, 0, -r}};
    return hull_mesh(v, 6);
}

static inline prox_mesh *make_dodecahedron(double s)
{
    const double phi = (1 + sqrt(5.0)) / 2, ip = 1 / phi;
    prox_vec3 v[20];
    int k = 0;
    for (int i = 0; i < 8; i++)
        v[k++] = prox_v3(s * ((i & 1) ? 1 : -1), s * ((i & 2) ? 1 : -1), s * ((i & 4) ? 1 : -1));
    for (int i = 0; i < 4; i++) {
        double a = (i & 1) ? ip : -ip, b = (i & 2) ? phi : -phi;
        v[k++] = prox_v3(0, s * a, s * b);
        v[k++] = prox_v3(s * a, s * b, 0);
        v[k++] = prox_v3(s * b, 0, s * a);
    }
    return hull_mesh(v, 20);
}

/* a right prism over the regular k-gon of circumradius r, z in [-h/2, h/2]
 * (the paper's "eneagonal" is k = 9) */
static inline prox_mesh *make_prism(uint32_t k, double r, double h)
{
    prox_vec3 v[64];
    if (k < 3 || k > 32)
        return NULL;
    for (uint32_t i = 0; i < 2 * k; i++) {
        double a = 2 * M_PI * (i % k) / k;
        v[i] = prox_v3(r * cos(a), r * sin(a), i < k ? -h / 2 : h / 2);
    }
    return hull_mesh(v, 2 * k);
}

#endif
