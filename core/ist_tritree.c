/* ist_tritree.c - an axis-aligned box tree over an inner sphere tree's
 * triangles, for closest-point-on-surface queries during distance
 * refinement.
 *
 * The inner spheres say roughly where two objects come closest; the exact
 * answer lies on the surface near there, and the triangle attached to a
 * sphere (the one closest to its centre) can be many triangles away from
 * it on a finely tessellated mesh. The refinement therefore projects
 * points onto the surfaces: closest point of A to a point near B, of B to
 * that, and so on (alternating projection). The first projections reach
 * across the gap between the objects, where a uniform grid would test every
 * triangle within that radius; a box tree prunes them in O(log n). It is
 * built at load in O(n log n) with median splits on centroids (no fitting:
 * about 10 ms for 75k triangles), not stored in .ist files, and queried
 * without allocation (depth-first, nearer child first, fixed stack). Leaves
 * read float copies of their triangles stored in leaf order (one memory
 * stream per leaf instead of index -> triangle -> vertex misses).
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "ist_internal.h"

#define LEAF_TRIS 4

void ist_tritree_free(ist_tritree *g)
{
    free(g->nodes);
    free(g->order);
    free(g->ltri);
    memset(g, 0, sizeof *g);
}

typedef struct build_item {
    float c[3]; /* centroid */
    uint32_t t; /* triangle */
} build_item;

typedef struct build_ctx {
    ist_tritree *g;
    build_item *it; /* partitioned in place (sequential access), order[] at the end */
    float (*tlo)[3], (*thi)[3];
} build_ctx;

/* quickselect on it[lo..hi) by centroid axis so that position k holds
 * its sorted element */
static void select_k(build_ctx *b, uint32_t lo, uint32_t hi, uint32_t k, int axis)
{
    build_item *o = b->it;
    while (hi - lo > 1) {
        float pivot = o[lo + (hi - 1 - lo) / 2].c[axis]; /* floor: j < hi - 1 */
        uint32_t i = lo, j = hi - 1;
        for (;;) {
            while (o[i].c[axis] < pivot)
                i++;
            while (o[j].c[axis] > pivot)
                j--;
            if (i >= j)
                break;
            build_item t = o[i];
            o[i] = o[j], o[j] = t;
            i++, j--;
        }
        /* [lo, j] <= pivot <= [j + 1, hi) */
        if (k <= j)
            hi = j + 1;
        else
            lo = j + 1;
    }
}

/* Top down on the centroids only (their extent picks the split axis, a
 * quickselect splits at the median); boxes bottom up (a leaf's from its
 * triangles, an inner node's as the union of its children's). */
static uint32_t build_node(build_ctx *b, uint32_t lo, uint32_t hi)
{
    ist_tritree *g = b->g;
    uint32_t id = g->node_count++;
    if (hi - lo <= LEAF_TRIS) {
        float mn[3] = {FLT_MAX, FLT_MAX, FLT_MAX}, mx[3] = {-FLT_MAX, -FLT_MAX, -FLT_MAX};
        for (uint32_t i = lo; i < hi; i++) {
            uint32_t t = b->it[i].t;
            for (int k = 0; k < 3; k++) {
                mn[k] = b->tlo[t][k] < mn[k] ? b->tlo[t][k] : mn[k];
                mx[k] = b->thi[t][k] > mx[k] ? b->thi[t][k] : mx[k];
            }
        }
        ist_box *n = &g->nodes[id];
        memcpy(n->lo, mn, sizeof mn);
        memcpy(n->hi, mx, sizeof mx);
        n->a = IST_BOX_LEAF | lo;
        n->b = hi - lo;
        return id;
    }
    float cmn[3] = {FLT_MAX, FLT_MAX, FLT_MAX}, cmx[3] = {-FLT_MAX, -FLT_MAX, -FLT_MAX};
    for (uint32_t i = lo; i < hi; i++) {
        const float *c = b->it[i].c;
        for (int k = 0; k < 3; k++) {
            cmn[k] = c[k] < cmn[k] ? c[k] : cmn[k];
            cmx[k] = c[k] > cmx[k] ? c[k] : cmx[k];
        }
    }
    int axis = 0;
    for (int k = 1; k < 3; k++)
        if (cmx[k] - cmn[k] > cmx[axis] - cmn[axis])
            axis = k;
    uint32_t mid = lo + (hi - lo) / 2;
    select_k(b, lo, hi, mid, axis);
    uint32_t l = build_node(b, lo, mid);
    uint32_t r = build_node(b, mid, hi);
    ist_box *n = &g->nodes[id];
    const ist_box *L = &g->nodes[l], *R = &g->nodes[r];
    for (int k = 0; k < 3; k++) {
        n->lo[k] = L->lo[k] < R->lo[k] ? L->lo[k] : R->lo[k];
        n->hi[k] = L->hi[k] > R->hi[k] ? L->hi[k] : R->hi[k];
    }
    n->a = l, n->b = r;
    return id;
}

int ist_tritree_build(prox_ist *t)
{
    ist_tritree *g = &t->tritree;
    ist_tritree_free(g);
    uint32_t n = t->tri_count;
    if (n == 0 || n >= IST_BOX_LEAF)
        return 0;
    build_ctx b = {g, malloc(sizeof *b.it * n), malloc(sizeof *b.tlo * n), malloc(sizeof *b.thi * n)};
    g->order = malloc(sizeof *g->order * n);
    g->nodes = malloc(sizeof *g->nodes * (2 * (size_t)n));
    int rc = -1;
    if (!b.it || !b.tlo || !b.thi || !g->order || !g->nodes)
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        b.it[i].t = i;
        for (int k = 0; k < 3; k++) {
            double a = prox_v3_get(t->verts[t->tris[i][0]], k), c = prox_v3_get(t->verts[t->tris[i][1]], k);
            double d = prox_v3_get(t->verts[t->tris[i][2]], k);
            double mn = a < c ? (a < d ? a : d) : (c < d ? c : d), mx = a > c ? (a > d ? a : d) : (c > d ? c : d);
            /* float boxes rounded outwards: a lower bound stays a lower bound */
            b.tlo[i][k] = nextafterf((float)mn, -FLT_MAX);
            b.thi[i][k] = nextafterf((float)mx, FLT_MAX);
            b.it[i].c[k] = (float)((a + c + d) / 3);
        }
    }
    g->node_count = 0;
    build_node(&b, 0, n);
    for (uint32_t i = 0; i < n; i++)
        g->order[i] = b.it[i].t;
    g->ltri = malloc(sizeof *g->ltri * n);
    if (!g->ltri)
        goto out;
    for (uint32_t e = 0; e < n; e++)
        for (int v = 0; v < 3; v++)
            for (int k = 0; k < 3; k++)
                g->ltri[e][3 * v + k] = (float)prox_v3_get(t->verts[t->tris[g->order[e]][v]], k);
    rc = 0;
out:
    free(b.it);
    free(b.tlo);
    free(b.thi);
    if (rc != 0)
        ist_tritree_free(g);
    return rc;
}

static inline double box_dist2(const ist_box *n, const double p[3])
{
    double s = 0;
    for (int k = 0; k < 3; k++) {
        double d = p[k] < n->lo[k] ? n->lo[k] - p[k] : (p[k] > n->hi[k] ? p[k] - n->hi[k] : 0);
        s += d * d;
    }
    return s;
}

double ist_tritree_closest(const prox_ist *t, prox_vec3 p, double bound, uint32_t *tri, prox_vec3 *closest, uint32_t *tests)
{
    const ist_tritree *g = &t->tritree;
    *tri = UINT32_MAX;
    if (!g->nodes)
        return INFINITY;
    double pp[3] = {p.x, p.y, p.z};
    double best2 = bound < INFINITY ? bound * bound : INFINITY;
    /* median splits: depth <= 32 for any 32-bit count; each level pushes
     * at most one deferred sibling */
    uint32_t stack[64];
    double sd2[64];
    int top = 0;
    uint32_t n_tests = 0, best_e = UINT32_MAX;
    stack[top] = 0, sd2[top] = box_dist2(&g->nodes[0], pp), top++;
    while (top > 0) {
        top--;
        if (sd2[top] >= best2)
            continue;
        const ist_box *n = &g->nodes[stack[top]];
        for (;;) {
            if (n->a & IST_BOX_LEAF) {
                uint32_t first = n->a & ~IST_BOX_LEAF;
                for (uint32_t e = first; e < first + n->b; e++) {
                    const float *f = g->ltri[e];
                    prox_vec3 q;
                    double d2 = prox_point_triangle_dist2(p, prox_v3(f[0], f[1], f[2]), prox_v3(f[3], f[4], f[5]),
                                                          prox_v3(f[6], f[7], f[8]), &q);
                    n_tests++;
                    if (d2 < best2)
                        best2 = d2, best_e = e;
                }
                break;
            }
            const ist_box *l = &g->nodes[n->a], *r = &g->nodes[n->b];
            double dl = box_dist2(l, pp), dr = box_dist2(r, pp);
            uint32_t near = n->a, far = n->b;
            double dn = dl, df = dr;
            if (dr < dl)
                near = n->b, far = n->a, dn = dr, df = dl;
            if (df < best2 && top < 64)
                stack[top] = far, sd2[top] = df, top++;
            if (dn >= best2)
                break;
            n = &g->nodes[near];
        }
    }
    if (tests)
        *tests += n_tests;
    if (best_e == UINT32_MAX)
        return INFINITY;
    /* ranked in float (leaf-ordered copies, one memory stream per leaf);
     * the answer is the double triangle's */
    uint32_t i = g->order[best_e];
    *tri = i;
    return sqrt(prox_point_triangle_dist2(p, t->verts[t->tris[i][0]], t->verts[t->tris[i][1]], t->verts[t->tris[i][2]],
                                          closest));
}
