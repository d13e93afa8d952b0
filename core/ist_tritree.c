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

static inline float box_dist2(const ist_box *n, const float p[3])
{
    float s = 0;
    for (int k = 0; k < 3; k++) {
        float d = p[k] < n->lo[k] ? n->lo[k] - p[k] : (p[k] > n->hi[k] ? p[k] - n->hi[k] : 0);
        s += d * d;
    }
    return s;
}

/* Squared distance from p to triangle f (9 floats), in floats, for ranking
 * only (Ericson's region tests, as prox_point_triangle_dist2 in doubles).
 * NaN for a triangle too thin for floats; the caller asks the double code. */
static inline float point_tri_d2f(const float p[3], const float *f)
{
    float ab[3], ac[3], ap[3], bp[3], cp[3], q[3];
    for (int k = 0; k < 3; k++) {
        ab[k] = f[3 + k] - f[k], ac[k] = f[6 + k] - f[k];
        ap[k] = p[k] - f[k], bp[k] = p[k] - f[3 + k], cp[k] = p[k] - f[6 + k];
    }
#define DOT(u, v) (u[0] * v[0] + u[1] * v[1] + u[2] * v[2])
    float d1 = DOT(ab, ap), d2 = DOT(ac, ap);
    if (d1 <= 0 && d2 <= 0)
        return DOT(ap, ap);
    float d3 = DOT(ab, bp), d4 = DOT(ac, bp);
    if (d3 >= 0 && d4 <= d3)
        return DOT(bp, bp);
    float vc = d1 * d4 - d3 * d2;
    if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        float v = d1 / (d1 - d3);
        for (int k = 0; k < 3; k++)
            q[k] = ap[k] - v * ab[k];
        return DOT(q, q);
    }
    float d5 = DOT(ab, cp), d6 = DOT(ac, cp);
    if (d6 >= 0 && d5 <= d6)
        return DOT(cp, cp);
    float vb = d5 * d2 - d1 * d6;
    if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        float w = d2 / (d2 - d6);
        for (int k = 0; k < 3; k++)
            q[k] = ap[k] - w * ac[k];
        return DOT(q, q);
    }
    float va = d3 * d6 - d5 * d4;
    if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
        float w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        for (int k = 0; k < 3; k++)
            q[k] = bp[k] - w * (ac[k] - ab[k]);
        return DOT(q, q);
    }
    float denom = 1.0f / (va + vb + vc), v = vb * denom, w = vc * denom;
    for (int k = 0; k < 3; k++)
        q[k] = ap[k] - v * ab[k] - w * ac[k];
    return DOT(q, q);
#undef DOT
}

double ist_tritree_closest(const prox_ist *t, prox_vec3 p, double bound, uint32_t *tri, prox_vec3 *closest, uint32_t *tests,
                           uint64_t deadline_ns)
{
    const ist_tritree *g = &t->tritree;
    *tri = UINT32_MAX;
    if (!g->nodes)
        return INFINITY;
    const float pp[3] = {(float)p.x, (float)p.y, (float)p.z};
    /* Ranked in floats. delta bounds the float error of a distance here (a
     * few 1e-7 of the coordinates' size); every triangle within delta of
     * the best float distance stays a candidate and the candidates are
     * decided in doubles, so the answer is the exact closest triangle. */
    const ist_box *root = &g->nodes[0];
    double scale = fabs(p.x) + fabs(p.y) + fabs(p.z);
    for (int k = 0; k < 3; k++)
        scale += fabs(root->lo[k]) + fabs(root->hi[k]);
    const float delta = (float)(4e-6 * scale);
    float best = bound < 1e30 ? (float)bound + delta : INFINITY; /* best float distance (+ delta: the bound) */
    float lim2 = bound < 1e30 ? (best + delta) * (best + delta) : INFINITY; /* prune beyond best + delta */
    /* median splits: depth <= 32 for any 32-bit count; each level pushes
     * at most one deferred sibling */
    uint32_t stack[64];
    float sd2[64];
    int top = 0;
    uint32_t n_tests = 0;
    /* near-ties: the NCAND smallest float distances found within delta of
     * the best at the time */
    enum { NCAND = 8 };
    uint32_t cand[NCAND];
    float cand_d[NCAND];
    uint32_t n_cand = 0;
    stack[top] = 0, sd2[top] = box_dist2(root, pp), top++;
    uint32_t visits = 0;
    while (top > 0) {
        top--;
        if (sd2[top] >= lim2)
            continue;
        /* out of time: answer with what was found (a clock read every 32 subtrees) */
        if (deadline_ns && (++visits & 31) == 0 && n_cand > 0 && prox_now_ns() >= deadline_ns)
            break;
        const ist_box *n = &g->nodes[stack[top]];
        for (;;) {
            if (n->a & IST_BOX_LEAF) {
                uint32_t first = n->a & ~IST_BOX_LEAF;
                for (uint32_t e = first; e < first + n->b; e++) {
                    const float *f = g->ltri[e];
                    float d2 = point_tri_d2f(pp, f);
                    if (d2 != d2) /* NaN: too thin for floats */
                        d2 = (float)prox_point_triangle_dist2(p, prox_v3(f[0], f[1], f[2]), prox_v3(f[3], f[4], f[5]),
                                                              prox_v3(f[6], f[7], f[8]), NULL);
                    n_tests++;
                    if (d2 >= lim2)
                        continue;
                    float d = sqrtf(d2);
                    if (n_cand < NCAND)
                        cand[n_cand] = e, cand_d[n_cand] = d, n_cand++;
                    else { /* keep the NCAND smallest */
                        uint32_t w = 0;
                        for (uint32_t k = 1; k < NCAND; k++)
                            w = cand_d[k] > cand_d[w] ? k : w;
                        if (d < cand_d[w])
                            cand[w] = e, cand_d[w] = d;
                    }
                    if (d < best) {
                        best = d;
                        lim2 = (best + delta) * (best + delta);
                    }
                }
                break;
            }
            const ist_box *l = &g->nodes[n->a], *r = &g->nodes[n->b];
            float dl = box_dist2(l, pp), dr = box_dist2(r, pp);
            uint32_t near = n->a, far = n->b;
            float dn = dl, df = dr;
            if (dr < dl)
                near = n->b, far = n->a, dn = dr, df = dl;
            if (df < lim2 && top < 64)
                stack[top] = far, sd2[top] = df, top++;
            if (dn >= lim2)
                break;
            n = &g->nodes[near];
        }
    }
    if (tests)
        *tests += n_tests;
    /* the candidates within delta of the best, in doubles (leaf-ordered
     * copies were ranked; the answer is the double triangle's and must
     * still beat the bound) */
    double d = INFINITY;
    prox_vec3 q = p;
    uint32_t i = UINT32_MAX;
    for (uint32_t k = 0; k < n_cand; k++) {
        if (cand_d[k] > best + delta)
            continue;
        uint32_t ti = g->order[cand[k]];
        prox_vec3 qk;
        double dk = sqrt(prox_point_triangle_dist2(p, t->verts[t->tris[ti][0]], t->verts[t->tris[ti][1]], t->verts[t->tris[ti][2]], &qk));
        if (dk < d || (dk == d && ti < i))
            d = dk, q = qk, i = ti;
    }
    if (i == UINT32_MAX || !(d < bound))
        return INFINITY;
    *tri = i;
    *closest = q;
    return d;
}
