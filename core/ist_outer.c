/* ist_outer.c - outer balls of an inner sphere tree: for every inner sphere
 * a radius about its centre that encloses the piece of the mesh surface
 * assigned to it, and for every node record its children's outer radii
 * about their centres. Non-RT (build and load): allocates.
 *
 * Why: the distance query bounds the exact distance between the two
 * surfaces, not between the inner spheres. Every point of the surface is
 * assigned to one inner sphere (the one nearest to it, |p - c| - r), and
 * the sphere's outer radius R >= r reaches every point assigned to it, so
 * the balls (c, R) cover the whole surface. For two surface points p, q
 * in the outer balls of i and j, |p - q| >= |c_i - c_j| - R_i - R_j: a
 * certified lower bound on the distance of the surfaces, which a node
 * inherits by enclosing its children's outer balls.
 *
 * Slabs: each sphere's piece also lies between two parallel planes, normal
 * to the sphere's attached triangle, at the lowest and highest offset of
 * the piece's corners along that normal. On flat parts of the surface the
 * slab is (nearly) a plane, and bounds the distance of facing pieces far
 * better than their balls (ist_distance.c, slab_bound).
 *
 * Coverage is exact, not sampled: each triangle is cut into sub-triangles
 * (a barycentric grid whose cells are at most half a voxel across), each
 * sub-triangle goes whole to the sphere nearest its centroid, and by
 * convexity the farthest point of a sub-triangle from any centre is one of
 * its three corners, so R = the largest corner distance covers it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ist_internal.h"

uint32_t ist_nearest_sphere(const prox_ist *t, prox_vec3 p)
{
    /* the children of a popped record go on the stack farthest first, so
     * the nearest is visited first, each pruned when popped: the order and
     * tests of a recursive descent, without its depth */
    uint32_t stack[256], n = 0, which = 0;
    double key[256], best = INFINITY;
    stack[n] = t->tree.root, key[n++] = -INFINITY;
    while (n) {
        const uint32_t id = stack[--n];
        if (!(key[n] < best))
            continue;
        if (id & IST_LEAF) {
            const ist_sphere *q = &t->spheres[id & ~IST_LEAF];
            double dx = p.x - q->x, dy = p.y - q->y, dz = p.z - q->z;
            double d = sqrt(dx * dx + dy * dy + dz * dz) - q->r;
            if (d < best)
                best = d, which = id & ~IST_LEAF;
            continue;
        }
        const ist_node *nd = &t->nodes[id];
        double k4[4];
        int ord[4], m = 0;
        for (int j = 0; j < 4; j++) {
            if (nd->child[j] == IST_EMPTY)
                continue;
            double dx = p.x - nd->cx[j], dy = p.y - nd->cy[j], dz = p.z - nd->cz[j];
            double k = sqrt(dx * dx + dy * dy + dz * dz) - t->dr[id][j];
            int a = m++;
            while (a > 0 && k4[a - 1] > k) /* insertion: nearest first */
                k4[a] = k4[a - 1], ord[a] = ord[a - 1], a--;
            k4[a] = k, ord[a] = j;
        }
        for (int a = m; a-- > 0;)
            if (n < sizeof stack / sizeof stack[0])
                stack[n] = nd->child[ord[a]], key[n++] = k4[a];
    }
    return which;
}

/* the cover pass: outer radii to grow (or NULL: loaded from a file, kept)
 * and each sphere's range of offsets n . x along its slab normal */
typedef struct cover_ctx {
    prox_ist *t;
    float *orad; /* t->orad_leaf while it is computed, else NULL */
    double (*range)[2];
} cover_ctx;

/* a piece of the surface (a convex polygon of n corners) goes whole to
 * the sphere nearest its centroid, whose outer radius grows to reach its
 * corners (by convexity its farthest point from the centre) and whose
 * slab's offset range to hold them */
static void cover_piece(cover_ctx *cv, const double (*V)[3], int n)
{
    prox_ist *t = cv->t;
    double cen[3] = {0, 0, 0};
    for (int q = 0; q < n; q++)
        for (int k = 0; k < 3; k++)
            cen[k] += V[q][k] / n;
    const uint32_t s = ist_nearest_sphere(t, prox_v3(cen[0], cen[1], cen[2]));
    const ist_sphere *q = &t->spheres[s];
    for (int v = 0; v < n && cv->orad; v++) {
        double dx = V[v][0] - q->x, dy = V[v][1] - q->y, dz = V[v][2] - q->z;
        float R = (float)(sqrt(dx * dx + dy * dy + dz * dz) * (1 + 1e-6));
        if (R > cv->orad[s])
            cv->orad[s] = R;
    }
    const float *sl = t->slab[s];
    for (int v = 0; v < n; v++) {
        double o = sl[0] * V[v][0] + sl[1] * V[v][1] + sl[2] * V[v][2];
        cv->range[s][0] = fmin(cv->range[s][0], o);
        cv->range[s][1] = fmax(cv->range[s][1], o);
    }
}

/* A sliver (its shortest edge far below its longest) in strips across its
 * length: with P0 the corner opposite the shortest edge, the points
 * P0 + s ((P1 - P0) + u (P2 - P1)) on an ns x nu grid of (s, u) make
 * trapezoids (triangles at P0), convex, sides at most a cell long. The
 * square barycentric grid would cut it into sub^2 pieces of a cell where
 * ns * nu suffice (a fan of 4002 slivers as long as the object: 12.6 s). */
static void cover_strips(cover_ctx *cv, const double (*P)[3], int p0, int ns, int nu)
{
    const double *A = P[p0], *B = P[(p0 + 1) % 3], *C = P[(p0 + 2) % 3];
    for (int i = 0; i < ns; i++)
        for (int j = 0; j < nu; j++) {
            double V[4][3];
            const double sv[4] = {(double)i / ns, (double)i / ns, (double)(i + 1) / ns, (double)(i + 1) / ns};
            const double uv[4] = {(double)j / nu, (double)(j + 1) / nu, (double)(j + 1) / nu, (double)j / nu};
            for (int q = 0; q < 4; q++)
                for (int k = 0; k < 3; k++)
                    V[q][k] = A[k] + sv[q] * ((B[k] - A[k]) + uv[q] * (C[k] - B[k]));
            if (i == 0) /* corners 0 and 1 are both P0 */
                cover_piece(cv, (const double (*)[3])V + 1, 3);
            else
                cover_piece(cv, (const double (*)[3])V, 4);
        }
}

/* pieces a triangle is cut into, at most (the square grid's 256 x 256) */
#define OUTER_MAX_PIECES 65536

/* cells of size `cell` across a length, at least 1 and at most
 * OUTER_MAX_PIECES (a cell far below the length: the cap; no cell size,
 * 0: one) */
static int cells_across(double length, double cell)
{
    double n = cell > 0 ? ceil(length / cell) : 1;
    return n >= 1 ? (n < OUTER_MAX_PIECES ? (int)n : OUTER_MAX_PIECES) : 1;
}

int ist_outer_build(prox_ist *t)
{
    cover_ctx cv = {t, NULL, NULL};
    const size_t ns = t->sphere_count ? t->sphere_count : 1;
    if (!t->orad_leaf) {
        t->orad_leaf = malloc(sizeof *t->orad_leaf * ns);
        if (!t->orad_leaf)
            return -1;
        for (uint32_t i = 0; i < t->sphere_count; i++)
            t->orad_leaf[i] = t->spheres[i].r;
        cv.orad = t->orad_leaf;
    }
    free(t->slab);
    t->slab = malloc(sizeof *t->slab * ns);
    cv.range = malloc(sizeof *cv.range * ns);
    if (!t->slab || !cv.range) {
        free(cv.range);
        return -1;
    }
    /* each slab's normal: the sphere's attached triangle's (the nearest
     * triangle to its centre), unit in doubles then rounded; none (0) for
     * a triangle without area */
    for (uint32_t i = 0; i < t->sphere_count; i++) {
        uint32_t f = t->spheres[i].tri;
        prox_vec3 nrm = prox_v3(0, 0, 0);
        if (f < t->tri_count) {
            prox_vec3 a = t->verts[t->tris[f][0]], b = t->verts[t->tris[f][1]], c = t->verts[t->tris[f][2]];
            nrm = prox_v3_cross(prox_v3_sub(b, a), prox_v3_sub(c, a));
            double l = prox_v3_len(nrm);
            nrm = l > 0 && isfinite(l) ? prox_v3_scale(nrm, 1.0 / l) : prox_v3(0, 0, 0);
        }
        t->slab[i][0] = (float)nrm.x, t->slab[i][1] = (float)nrm.y, t->slab[i][2] = (float)nrm.z;
        cv.range[i][0] = INFINITY, cv.range[i][1] = -INFINITY;
    }
    if (t->sphere_count == 0) {
        free(cv.range);
        return 0;
    }
    const double cell = 0.5 * t->voxel_size;
    for (uint32_t f = 0; f < t->tri_count; f++) {
        double P[3][3];
        for (int v = 0; v < 3; v++)
            for (int k = 0; k < 3; k++)
                P[v][k] = prox_v3_get(t->verts[t->tris[f][v]], k);
        double diam = 0, shortest = INFINITY;
        int opp = 0; /* the corner opposite the shortest edge */
        for (int v = 0; v < 3; v++) {
            const double *a = P[v], *b = P[(v + 1) % 3];
            double e = sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
            diam = e > diam ? e : diam;
            if (e < shortest)
                shortest = e, opp = (v + 2) % 3;
        }
        /* cells across: at most a few times the voxel grid's size (loading
         * keeps the voxel size within the build's grid over the mesh), but
         * counted in double and capped, so no voxel size overflows int */
        int len = cells_across(diam, cell), nu = cells_across(shortest, cell);
        int sub = len > 256 ? 256 : len; /* the square grid's pieces grow beyond 256 cells */
        if (4 * sub * nu < sub * sub) {
            /* at most as many pieces as the square grid's 256 x 256: longer
             * strips cover as exactly, only less tightly (nu < 64 here) */
            if ((double)len * nu > OUTER_MAX_PIECES)
                len = OUTER_MAX_PIECES / nu;
            cover_strips(&cv, (const double (*)[3])P, opp, len, nu);
            continue;
        }
        /* grid point (a, b): P0 + a/sub (P1 - P0) + b/sub (P2 - P0); cells
         * "up" (a,b),(a+1,b),(a,b+1) and "down" (a+1,b),(a,b+1),(a+1,b+1) */
        for (int a = 0; a < sub; a++)
            for (int b = 0; a + b < sub; b++)
                for (int down = 0; down < 2; down++) {
                    if (down && a + b + 2 > sub)
                        continue;
                    const int g[2][3][2] = {{{a, b}, {a + 1, b}, {a, b + 1}}, {{a + 1, b}, {a, b + 1}, {a + 1, b + 1}}};
                    double V[3][3];
                    for (int q = 0; q < 3; q++) {
                        double u = (double)g[down][q][0] / sub, w = (double)g[down][q][1] / sub;
                        for (int k = 0; k < 3; k++)
                            V[q][k] = P[0][k] + u * (P[1][k] - P[0][k]) + w * (P[2][k] - P[0][k]);
                    }
                    cover_piece(&cv, (const double (*)[3])V, 3);
                }
    }
    /* the offsets in float, widened by the rounding of the float normal
     * (relative 1e-6 of the corners' size) and rounded outwards; no
     * surface assigned or no normal: no slab (-inf, inf) */
    for (uint32_t i = 0; i < t->sphere_count; i++) {
        float *sl = t->slab[i];
        double lo = cv.range[i][0], hi = cv.range[i][1];
        if (!(lo <= hi) || (sl[0] == 0 && sl[1] == 0 && sl[2] == 0)) {
            sl[0] = sl[1] = sl[2] = 0, sl[3] = -INFINITY, sl[4] = INFINITY;
            continue;
        }
        double m = 1e-6 * (fabs(lo) + fabs(hi) + t->orad_leaf[i] + fabs(t->spheres[i].x) + fabs(t->spheres[i].y) + fabs(t->spheres[i].z));
        sl[3] = nextafterf((float)(lo - m), -INFINITY), sl[4] = nextafterf((float)(hi + m), INFINITY);
    }
    free(cv.range);
    return 0;
}

/* children's outer radii about their record centres, bottom up (children
 * have larger indices than their parents, checked on load), rounded up */
int ist_outer_lanes(prox_ist *t)
{
    free(t->orad);
    t->orad = malloc(sizeof *t->orad * (t->node_count ? t->node_count : 1));
    free(t->sflat);
    t->sflat = calloc(t->sphere_count ? t->sphere_count : 1, 1);
    if (!t->orad || !t->sflat)
        return -1;
    for (uint32_t i = 0; t->slab && i < t->sphere_count; i++)
        t->sflat[i] = t->slab[i][4] - t->slab[i][3] <= IST_SLAB_FLAT * t->orad_leaf[i];
    for (uint32_t i = t->node_count; i-- > 0;) {
        const ist_node *nd = &t->nodes[i];
        for (int j = 0; j < 4; j++) {
            uint32_t c = nd->child[j];
            double r = 0;
            if (c == IST_EMPTY)
                r = 0;
            else if (c & IST_LEAF) {
                const ist_sphere *q = &t->spheres[c & ~IST_LEAF];
                double dx = (double)q->x - nd->cx[j], dy = (double)q->y - nd->cy[j], dz = (double)q->z - nd->cz[j];
                r = sqrt(dx * dx + dy * dy + dz * dz) + t->orad_leaf[c & ~IST_LEAF];
            } else if (c <= i)
                r = INFINITY; /* not bottom-up ordered (refused on load): no bound */
            else
                r = ist_enclose_children(t, i, j, (const float (*)[4])t->orad);
            t->orad[i][j] = (float)(r * (1 + 1e-6));
        }
    }
    return 0;
}
