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
 * built top down on the triangles' centroids with binned surface-area
 * splits (sah_split; about 57 ms for 75k triangles, median splits took 24)
 * and stored in .ist files as a binary tree with leaves of up to four
 * triangles (files written with the earlier median splits load and answer
 * the same, a little slower). Every node also has an oriented box (its
 * triangles' principal axes; a leaf's normal and longest edge), stored in
 * files from version 5 and derived for older ones (ist_tritree_obb). Queries
 * run on a wide copy derived at load (ist_tritree_widen): four children a
 * node, their oriented boxes tested in one SSE pass, and a leaf's up to
 * four triangles likewise (float ranking,
 * the near-ties decided in doubles), depth first, nearest child first, no
 * allocation. Against the binary tree with scalar tests the wide one cut
 * the instructions of IST distance queries by a quarter to a third
 * (callgrind, 40 random poses: knot1 28.1M -> 22.5M, bunny00 82.1M ->
 * 58.3M, armadillo 41.8M -> 29.3M, same answers).
 */
#include <float.h>
#include <math.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "ist_internal.h"

void ist_tritree_free(ist_tritree *g)
{
    free(g->nodes);
    free(g->order);
    free(g->ltri);
    free(g->wide);
    free(g->wleaf);
    free(g->obb);
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

/* The split of a node's triangles: binned surface area heuristic on the
 * centroids (IST_SAH_BINS bins per axis; the cut minimising the summed
 * box areas times triangle counts of the two sides), the median of the
 * centroids' longest extent where no bin boundary separates them or below
 * IST_SAH_DEPTH. Against median splits alone the projections of the IST
 * distance query visit 8-13% fewer wide nodes and leaf blocks (200 random
 * bench poses, bunny00, armadillo, knot1) and the queries run 3-10% fewer
 * instructions (callgrind, 40 random / 80 coherent poses, five meshes);
 * the same answers. The depth cap keeps the tree within the query's
 * stack: below it median splits add at most 30 levels. */
enum { IST_SAH_BINS = 16, IST_SAH_DEPTH = 40 };

static int sah_bin(const build_item *it, int axis, float lo, float ext)
{
    int q = (int)((it->c[axis] - lo) / ext * IST_SAH_BINS);
    return q < 0 ? 0 : q >= IST_SAH_BINS ? IST_SAH_BINS - 1 : q;
}

typedef struct sah_box {
    float lo[3], hi[3];
    uint32_t n;
} sah_box;

static void sah_grow(sah_box *b, const float lo[3], const float hi[3], uint32_t n)
{
    for (int k = 0; k < 3; k++) {
        b->lo[k] = lo[k] < b->lo[k] ? lo[k] : b->lo[k];
        b->hi[k] = hi[k] > b->hi[k] ? hi[k] : b->hi[k];
    }
    b->n += n;
}

/* half the surface area of the box lo..hi */
static float half_area(const float lo[3], const float hi[3])
{
    float x = hi[0] - lo[0], y = hi[1] - lo[1], z = hi[2] - lo[2];
    return x * y + y * z + z * x;
}

static float sah_cost(const sah_box *b) { return half_area(b->lo, b->hi) * (float)b->n; }

/* the SAH cut of it[lo..hi) (centroid bounds cmn..cmx), partitioned in
 * place at *mid; -1 where no bin boundary separates the centroids */
static int sah_split(build_ctx *b, uint32_t lo, uint32_t hi, const float cmn[3], const float cmx[3], uint32_t *mid)
{
    const sah_box empty = {{FLT_MAX, FLT_MAX, FLT_MAX}, {-FLT_MAX, -FLT_MAX, -FLT_MAX}, 0};
    float best = INFINITY;
    int best_axis = -1, best_cut = 0;
    for (int axis = 0; axis < 3; axis++) {
        float ext = cmx[axis] - cmn[axis];
        if (!(ext > 0))
            continue;
        sah_box bin[IST_SAH_BINS], right[IST_SAH_BINS];
        for (int q = 0; q < IST_SAH_BINS; q++)
            bin[q] = empty;
        for (uint32_t i = lo; i < hi; i++) {
            uint32_t t = b->it[i].t;
            sah_grow(&bin[sah_bin(&b->it[i], axis, cmn[axis], ext)], b->tlo[t], b->thi[t], 1);
        }
        /* right[q]: bins q.. together; the cut after bin q leaves 0..q left */
        right[IST_SAH_BINS - 1] = bin[IST_SAH_BINS - 1];
        for (int q = IST_SAH_BINS - 2; q >= 0; q--)
            right[q] = right[q + 1], sah_grow(&right[q], bin[q].lo, bin[q].hi, bin[q].n);
        sah_box left = empty;
        for (int q = 0; q + 1 < IST_SAH_BINS; q++) {
            sah_grow(&left, bin[q].lo, bin[q].hi, bin[q].n);
            if (left.n == 0 || right[q + 1].n == 0)
                continue;
            float c = sah_cost(&left) + sah_cost(&right[q + 1]);
            if (c < best)
                best = c, best_axis = axis, best_cut = q;
        }
    }
    if (best_axis < 0)
        return -1;
    const float ext = cmx[best_axis] - cmn[best_axis];
    uint32_t i = lo, j = hi;
    while (i < j) {
        if (sah_bin(&b->it[i], best_axis, cmn[best_axis], ext) <= best_cut)
            i++;
        else {
            build_item t = b->it[i];
            b->it[i] = b->it[--j];
            b->it[j] = t;
        }
    }
    *mid = i;
    return 0;
}

/* Top down on the centroids (sah_split, or a quickselect at the median of
 * their longest extent); boxes bottom up (a leaf's from its triangles, an
 * inner node's as the union of its children's). */
static uint32_t build_node(build_ctx *b, uint32_t lo, uint32_t hi, int depth)
{
    ist_tritree *g = b->g;
    uint32_t id = g->node_count++;
    if (hi - lo <= IST_LEAF_TRIS) {
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
    uint32_t mid = lo + (hi - lo) / 2; /* sah_split moves it when it cuts */
    if (depth >= IST_SAH_DEPTH || sah_split(b, lo, hi, cmn, cmx, &mid) != 0)
        select_k(b, lo, hi, mid, axis);
    uint32_t l = build_node(b, lo, mid, depth + 1);
    uint32_t r = build_node(b, mid, hi, depth + 1);
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
    build_node(&b, 0, n, 0);
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

/* ---- the wide tree ---- */

/* Collapse: a wide node takes the binary node's children and, while it has
 * fewer than four, opens the inner child with the largest box (its two
 * children replace it). Binary leaves become leaf blocks. */
typedef struct widen_ctx {
    ist_tritree *g;
    uint32_t nw, nl;
} widen_ctx;

int ist_tritree_shape_ok(const ist_tritree *g)
{
    uint8_t *depth = calloc(g->node_count ? g->node_count : 1, 1);
    if (!depth)
        return -1;
    int ok = 1;
    for (uint32_t i = 0; ok && i < g->node_count; i++) {
        const ist_box *b = &g->nodes[i];
        if (b->a & IST_BOX_LEAF)
            continue;
        /* (children come after their parent, checked before) */
        ok = depth[b->a] == 0 && depth[b->b] == 0 && b->a != b->b && depth[i] < IST_TRITREE_MAX_DEPTH;
        if (ok)
            depth[b->a] = depth[b->b] = (uint8_t)(depth[i] + 1);
    }
    free(depth);
    return ok;
}

/* ---- oriented boxes ---- */

/* the moments of a subtree's triangle corners (sums about the tree's first
 * corner, against cancellation) and its range of `order` (contiguous: the
 * build partitions it top down) */
typedef struct obb_sum {
    uint32_t first, end;
    double n, s1[3], s2[6];
} obb_sum;

/* A leaf's axes: its area-weighted normal n; its longest edge made normal
 * to n (a coordinate axis far from n where that leaves nothing); n x t. */
static void leaf_axes(const ist_tritree *g, const obb_sum *S, prox_vec3 ax[3])
{
    prox_vec3 nrm = prox_v3(0, 0, 0), e = prox_v3(0, 0, 0);
    double elen = -1;
    for (uint32_t t = S->first; t < S->end; t++) {
        prox_vec3 v[3];
        for (int k = 0; k < 3; k++)
            v[k] = prox_v3(g->ltri[t][3 * k], g->ltri[t][3 * k + 1], g->ltri[t][3 * k + 2]);
        nrm = prox_v3_add(nrm, prox_v3_cross(prox_v3_sub(v[1], v[0]), prox_v3_sub(v[2], v[0])));
        for (int k = 0; k < 3; k++) {
            prox_vec3 d = prox_v3_sub(v[(k + 1) % 3], v[k]);
            double l = prox_v3_dot(d, d);
            if (l > elen)
                elen = l, e = d;
        }
    }
    ax[0] = prox_v3_len(nrm) > 0 ? prox_v3_normalize(nrm) : prox_v3(1, 0, 0);
    prox_vec3 t = prox_v3_madd(e, ax[0], -prox_v3_dot(e, ax[0]));
    if (!(prox_v3_len(t) > 1e-6 * sqrt(elen > 0 ? elen : 0))) {
        prox_vec3 a = fabs(ax[0].x) < 0.6 ? prox_v3(1, 0, 0) : prox_v3(0, 1, 0);
        t = prox_v3_madd(a, ax[0], -prox_v3_dot(a, ax[0]));
    }
    ax[1] = prox_v3_normalize(t);
    ax[2] = prox_v3_cross(ax[0], ax[1]);
}

/* Binary node bin's oriented box, from its float triangles: its extents
 * their corners projected on the float-rounded axes (every corner, at every
 * level: boxes of the children's boxes came out loose enough to undo half
 * the gain), widened by a rounding margin. Axes: a leaf's from leaf_axes (a
 * leaf is a few nearly coplanar triangles); else the principal axes of the
 * corners (covariance eigenvectors). */
static void fit_obb(const ist_tritree *g, uint32_t bin, const obb_sum *S, double size)
{
    prox_vec3 ax[3];
    if (g->nodes[bin].a & IST_BOX_LEAF)
        leaf_axes(g, S, ax);
    else {
        const int at[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};
        prox_mat3 cov, axes;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                cov.m[i][j] = S->s2[at[i][j]] / S->n - (S->s1[i] / S->n) * (S->s1[j] / S->n);
        double ev[3];
        prox_sym3_eigen(&cov, ev, &axes);
        for (int i = 0; i < 3; i++)
            ax[i] = prox_m3_col(&axes, i);
    }
    float *o = g->obb[bin];
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 3; c++)
            o[3 * i + c] = (float)prox_v3_get(ax[i], c);
    for (uint32_t t = S->first; t < S->end; t++)
        for (int v = 0; v < 3; v++) {
            const float *q = &g->ltri[t][3 * v];
            for (int i = 0; i < 3; i++) {
                double d = (double)o[3 * i] * q[0] + (double)o[3 * i + 1] * q[1] + (double)o[3 * i + 2] * q[2];
                lo[i] = d < lo[i] ? d : lo[i];
                hi[i] = d > hi[i] ? d : hi[i];
            }
        }
    /* the query projects in floats: a few ulps of the coordinates */
    const double m = 1e-6 * size;
    for (int i = 0; i < 3; i++) {
        o[9 + i] = nextafterf((float)(lo[i] - m), -INFINITY);
        o[12 + i] = nextafterf((float)(hi[i] + m), INFINITY);
    }
}

/* (recursion: ist_tritree_shape_ok bounds the depth of a loaded tree) */
static void obb_node(const ist_tritree *g, uint32_t bin, obb_sum *S, double size)
{
    const ist_box *b = &g->nodes[bin];
    memset(S, 0, sizeof *S);
    if (b->a & IST_BOX_LEAF) {
        S->first = b->a & ~IST_BOX_LEAF, S->end = S->first + b->b;
        const float *o = g->ltri[0];
        for (uint32_t t = S->first; t < S->end; t++)
            for (int v = 0; v < 3; v++) {
                const float *q = &g->ltri[t][3 * v];
                double x = (double)q[0] - o[0], y = (double)q[1] - o[1], z = (double)q[2] - o[2];
                S->n += 1, S->s1[0] += x, S->s1[1] += y, S->s1[2] += z;
                S->s2[0] += x * x, S->s2[1] += x * y, S->s2[2] += x * z, S->s2[3] += y * y, S->s2[4] += y * z, S->s2[5] += z * z;
            }
    } else {
        obb_sum l, r;
        obb_node(g, b->a, &l, size);
        obb_node(g, b->b, &r, size);
        S->first = l.first < r.first ? l.first : r.first;
        S->end = l.end > r.end ? l.end : r.end;
        S->n = l.n + r.n;
        for (int a = 0; a < 3; a++)
            S->s1[a] = l.s1[a] + r.s1[a];
        for (int a = 0; a < 6; a++)
            S->s2[a] = l.s2[a] + r.s2[a];
    }
    fit_obb(g, bin, S, size);
}

int ist_tritree_obb(ist_tritree *g)
{
    free(g->obb);
    g->obb = NULL;
    if (!g->nodes || g->node_count == 0)
        return 0;
    g->obb = malloc(sizeof *g->obb * g->node_count);
    if (!g->obb)
        return -1;
    double size = 0; /* the largest |x| + |y| + |z| of a corner: the root box holds them all */
    for (int a = 0; a < 3; a++)
        size += fmax(fabs(g->nodes[0].lo[a]), fabs(g->nodes[0].hi[a]));
    obb_sum S;
    obb_node(g, 0, &S, size);
    return 0;
}

/* lane k of W: binary node bin's oriented box (NULL: never near) */
static void set_lane(ist_wnode *W, int k, const float *o)
{
    for (int a = 0; a < 9; a++)
        W->ax[a][k] = o ? o[a] : 0;
    for (int a = 0; a < 3; a++)
        W->lo[a][k] = o ? o[9 + a] : INFINITY, W->hi[a][k] = o ? o[12 + a] : -INFINITY;
}

static uint32_t widen_leaf(widen_ctx *w, const ist_box *b)
{
    ist_tritree *g = w->g;
    uint32_t id = w->nl++;
    ist_wleaf *L = &g->wleaf[id];
    uint32_t first = b->a & ~IST_BOX_LEAF, count = b->b;
    L->first = first, L->count = count;
    /* in floats, each sum in the order the kernel's SSE code adds: its
     * distances are those of computing all this per query */
    for (uint32_t k = 0; k < 4; k++) {
        const float *f = g->ltri[first + (k < count ? k : 0)];
        float ab[3], ac[3], bc[3];
        for (int i = 0; i < 3; i++) {
            ab[i] = f[3 + i] - f[i], ac[i] = f[6 + i] - f[i], bc[i] = f[6 + i] - f[3 + i];
            L->a[i][k] = f[i], L->b[i][k] = f[3 + i];
            L->ab[i][k] = ab[i], L->ac[i][k] = ac[i], L->bc[i][k] = bc[i];
        }
        L->n[0][k] = ab[1] * ac[2] - ab[2] * ac[1];
        L->n[1][k] = ab[2] * ac[0] - ab[0] * ac[2];
        L->n[2][k] = ab[0] * ac[1] - ab[1] * ac[0];
        const float d00 = ab[0] * ab[0] + ab[1] * ab[1] + ab[2] * ab[2], d01 = ab[0] * ac[0] + ab[1] * ac[1] + ab[2] * ac[2];
        const float d11 = ac[0] * ac[0] + ac[1] * ac[1] + ac[2] * ac[2], den = d00 * d11 - d01 * d01;
        L->d00[k] = d00, L->d01[k] = d01, L->d11[k] = d11, L->den[k] = den;
        L->dbc[k] = bc[0] * bc[0] + bc[1] * bc[1] + bc[2] * bc[2];
        L->solid[k] = den > 1e-6f * (d00 * d11) ? UINT32_MAX : 0;
    }
    return IST_WIDE_LEAF | id;
}

static uint32_t widen_node(widen_ctx *w, uint32_t bin)
{
    ist_tritree *g = w->g;
    const ist_box *b = &g->nodes[bin];
    if (b->a & IST_BOX_LEAF)
        return widen_leaf(w, b);
    uint32_t kids[4] = {b->a, b->b, 0, 0};
    int n = 2;
    while (n < 4) {
        int open = -1;
        float best = -1;
        for (int k = 0; k < n; k++) {
            const ist_box *c = &g->nodes[kids[k]];
            if (!(c->a & IST_BOX_LEAF) && half_area(c->lo, c->hi) > best)
                best = half_area(c->lo, c->hi), open = k;
        }
        if (open < 0)
            break;
        const ist_box *c = &g->nodes[kids[open]];
        kids[open] = c->a;
        kids[n++] = c->b;
    }
    uint32_t id = w->nw++;
    for (int k = 0; k < 4; k++) {
        set_lane(&g->wide[id], k, k < n ? g->obb[kids[k]] : NULL);
        uint32_t ref = k < n ? widen_node(w, kids[k]) : IST_EMPTY;
        g->wide[id].child[k] = ref; /* (g->wide is not moved: sized up front) */
    }
    return id;
}

int ist_tritree_widen(ist_tritree *g)
{
    free(g->wide);
    free(g->wleaf);
    g->wide = NULL, g->wleaf = NULL;
    if (!g->nodes || g->node_count == 0)
        return 0;
    if (!g->obb && ist_tritree_obb(g) != 0)
        return -1;
    /* at most one wide node per binary inner node, one block per leaf */
    g->wide = malloc(sizeof *g->wide * g->node_count);
    g->wleaf = malloc(sizeof *g->wleaf * g->node_count);
    if (!g->wide || !g->wleaf) {
        free(g->wide), free(g->wleaf);
        g->wide = NULL, g->wleaf = NULL;
        return -1;
    }
    widen_ctx w = {g, 0, 0};
    if (g->nodes[0].a & IST_BOX_LEAF) {
        /* a single leaf: one wide node holding it */
        ist_wnode *W = &g->wide[w.nw++];
        for (int k = 0; k < 4; k++) {
            set_lane(W, k, k ? NULL : g->obb[0]);
            W->child[k] = k ? IST_EMPTY : widen_leaf(&w, &g->nodes[0]);
        }
    } else
        widen_node(&w, 0);
    /* sized for the most a tree can need; keep what it took */
    ist_wnode *wn = realloc(g->wide, sizeof *g->wide * w.nw);
    ist_wleaf *wl = realloc(g->wleaf, sizeof *g->wleaf * w.nl);
    g->wide = wn ? wn : g->wide, g->wleaf = wl ? wl : g->wleaf;
    g->wide_count = w.nw, g->wleaf_count = w.nl;
    return 0;
}

/* The query point for the kernels below: each coordinate in all four
 * lanes, broadcast once a query (SSE), or plain floats. */
#if defined(__SSE2__)
typedef __m128 wcoord;
static inline wcoord wcoord_of(float v) { return _mm_set1_ps(v); }
#else
typedef float wcoord;
static inline wcoord wcoord_of(float v) { return v; }
#endif

/* Squared distances from p to the four oriented boxes of a wide node (p
 * projected on each box's axes, then as for an axis-aligned box; an empty
 * lane's inverted box: +inf). Against axis-aligned boxes (callgrind, 40
 * random / 80 coherent bench poses, same answers bit for bit): bunny00
 * projections test 7.2 leaf blocks where they tested 16.6, 21.5 nodes
 * where 26, and IST distance runs 13-22% fewer instructions on bunny00 and
 * armadillo, within +-4% on knot1, fandisk and elephant. Returns the
 * lanes below lim2 as bits (lane k: bit k). The axis loop unrolled (GCC
 * -O2 kept it a loop: 4 of its 19 instructions an axis were the loop's;
 * wbox_reach alike): the same operations, callgrind on the default query
 * (40 random / 80 coherent bench poses) 1.4-4.3% fewer instructions,
 * e.g. armadillo 24.18M -> 23.24M / 33.24M -> 32.00M. */
static inline unsigned wbox_near(const ist_wnode *W, const wcoord p[3], wcoord lim2, float out[4])
{
#if defined(__SSE2__)
    const __m128 z = _mm_setzero_ps();
    const __m128 px = p[0], py = p[1], pz = p[2];
    __m128 s; /* (the first axis sets it) */
#pragma GCC unroll 3
    for (int a = 0; a < 3; a++) {
        __m128 pa = _mm_add_ps(_mm_add_ps(_mm_mul_ps(px, _mm_load_ps(W->ax[3 * a])), _mm_mul_ps(py, _mm_load_ps(W->ax[3 * a + 1]))),
                               _mm_mul_ps(pz, _mm_load_ps(W->ax[3 * a + 2])));
        __m128 d = _mm_max_ps(_mm_max_ps(_mm_sub_ps(_mm_load_ps(W->lo[a]), pa), _mm_sub_ps(pa, _mm_load_ps(W->hi[a]))), z);
        /* (the first axis' square is the sum: 0 + x is x here, d being
         * +0 or more, never NaN - maxps gives its second operand, +0,
         * for a NaN - so the adding of zero, kept by GCC for -0, went) */
        s = a ? _mm_add_ps(s, _mm_mul_ps(d, d)) : _mm_mul_ps(d, d);
    }
    _mm_storeu_ps(out, s);
    return (unsigned)_mm_movemask_ps(_mm_cmplt_ps(s, lim2));
#else
    unsigned near = 0;
    for (int k = 0; k < 4; k++) {
        float s = 0;
        for (int a = 0; a < 3; a++) {
            float pa = p[0] * W->ax[3 * a][k] + p[1] * W->ax[3 * a + 1][k] + p[2] * W->ax[3 * a + 2][k];
            float d = W->lo[a][k] - pa, e = pa - W->hi[a][k];
            d = d > e ? d : e;
            d = d > 0 ? d : 0;
            s += d * d;
        }
        out[k] = W->child[k] == IST_EMPTY ? INFINITY : s;
        near |= (unsigned)(out[k] < lim2) << k;
    }
    return near;
#endif
}

/* (wleaf_near is inlined in both its callers: called from
 * ist_tritree_reach as well, GCC 12 stopped inlining it into
 * ist_tritree_closest, +0.6% instructions in IST distance without
 * --precise, armadillo's 40 random bench poses; wbox_near forced as well
 * left +0.3%) */

/* Squared distances from p to the four triangles of a leaf block, in
 * floats, for ranking: inside the triangle's prism (barycentric
 * coordinates of the projection all >= 0) the plane distance, else the
 * nearest of the three edges, where the closest point then lies. A nearly
 * degenerate triangle (|n|^2 below 1e-6 of |ab|^2 |ac|^2) takes its edges
 * only, which is within its width of the truth. Returns the real lanes
 * (the first L->count) below lim2 as bits. What depends on the triangle
 * alone (edges, normal, their products) comes from the leaf block,
 * computed at load exactly as this once computed it per query: the same
 * distances bit for bit (bench poses, five meshes: the same triangle tests
 * and answers), 5-7% fewer instructions in IST distance (callgrind, 40
 * random poses: armadillo 25.1M -> 23.2M, knot1 19.6M -> 18.5M), at 392
 * bytes a block of four triangles where the corners took 152; median times
 * within the noise of the shared bench machine (-4% to +8%). Measured and
 * not kept: reciprocals of the edge lengths and of |n|^2 stored too, the
 * divisions multiplications (another 1%, no faster). */
#if defined(__SSE2__)
static inline __m128 dot3(__m128 ax, __m128 ay, __m128 az, __m128 bx, __m128 by, __m128 bz)
{
    return _mm_add_ps(_mm_add_ps(_mm_mul_ps(ax, bx), _mm_mul_ps(ay, by)), _mm_mul_ps(az, bz));
}

/* a row of a wide node or leaf block (16-byte aligned, ist_internal.h):
 * aligned loads, which GCC folds into the operation using them (SSE
 * allows only aligned memory operands); against unaligned loads the same
 * answers, 0.2-1.1% fewer instructions in the default query (callgrind,
 * 40 random / 80 coherent bench poses, e.g. armadillo 23.24M -> 23.03M /
 * 32.00M -> 31.74M, bunny00 35.24M -> 34.87M / 38.34M -> 38.02M) */
static inline __m128 row(const float r[4]) { return _mm_load_ps(r); }

/* squared distance from p to the segment a + t e, t in [0, 1], given
 * ap = p - a, ap . e and e . e */
static inline __m128 seg_d2(__m128 apx, __m128 apy, __m128 apz, const float (*e)[4], __m128 ape, __m128 ee)
{
    const __m128 z = _mm_setzero_ps(), one = _mm_set1_ps(1.0f);
    __m128 t = _mm_div_ps(ape, _mm_max_ps(ee, _mm_set1_ps(FLT_MIN)));
    t = _mm_min_ps(_mm_max_ps(t, z), one);
    __m128 qx = _mm_sub_ps(apx, _mm_mul_ps(t, row(e[0]))), qy = _mm_sub_ps(apy, _mm_mul_ps(t, row(e[1])));
    __m128 qz = _mm_sub_ps(apz, _mm_mul_ps(t, row(e[2])));
    return dot3(qx, qy, qz, qx, qy, qz);
}

static inline __attribute__((always_inline)) unsigned wleaf_near(const ist_wleaf *L, const wcoord p[3], wcoord lim2, float out[4])
{
    const __m128 z = _mm_setzero_ps();
    const __m128 px = p[0], py = p[1], pz = p[2];
    /* In the order that keeps the fewest vectors live (GCC at -O2 keeps
     * the source's order; with p - b and the rows taken up front 16
     * registers did not hold them: spills and rows loaded twice, about
     * 177 instructions a block, 165 now): the edges ab and ac while p - a,
     * ap . ab and ap . ac are at hand, then the plane, then the edge bc
     * from p - b. The same operations on the same values: the same
     * distances bit for bit; 0.4-1.5% fewer instructions in the default
     * query (callgrind, 40 random / 80 coherent bench poses). */
    __m128 apx = _mm_sub_ps(px, row(L->a[0])), apy = _mm_sub_ps(py, row(L->a[1])), apz = _mm_sub_ps(pz, row(L->a[2]));
    __m128 d20 = dot3(apx, apy, apz, row(L->ab[0]), row(L->ab[1]), row(L->ab[2]));
    __m128 d21 = dot3(apx, apy, apz, row(L->ac[0]), row(L->ac[1]), row(L->ac[2]));
    __m128 d01 = row(L->d01);
    __m128 v = _mm_sub_ps(_mm_mul_ps(row(L->d11), d20), _mm_mul_ps(d01, d21));
    __m128 w = _mm_sub_ps(_mm_mul_ps(row(L->d00), d21), _mm_mul_ps(d01, d20));
    __m128 u = _mm_sub_ps(_mm_sub_ps(row(L->den), v), w);
    __m128 solid = _mm_castsi128_ps(_mm_load_si128((const __m128i *)(const void *)L->solid));
    __m128 inside = _mm_and_ps(solid, _mm_and_ps(_mm_cmpge_ps(v, z), _mm_and_ps(_mm_cmpge_ps(w, z), _mm_cmpge_ps(u, z))));
    __m128 e = _mm_min_ps(seg_d2(apx, apy, apz, L->ab, d20, row(L->d00)), seg_d2(apx, apy, apz, L->ac, d21, row(L->d11)));
    __m128 h = dot3(apx, apy, apz, row(L->n[0]), row(L->n[1]), row(L->n[2]));
    __m128 plane = _mm_div_ps(_mm_mul_ps(h, h), _mm_max_ps(row(L->den), _mm_set1_ps(FLT_MIN)));
    __m128 bpx = _mm_sub_ps(px, row(L->b[0])), bpy = _mm_sub_ps(py, row(L->b[1])), bpz = _mm_sub_ps(pz, row(L->b[2]));
    __m128 bpbc = dot3(bpx, bpy, bpz, row(L->bc[0]), row(L->bc[1]), row(L->bc[2]));
    e = _mm_min_ps(e, seg_d2(bpx, bpy, bpz, L->bc, bpbc, row(L->dbc)));
    __m128 d2 = _mm_or_ps(_mm_and_ps(inside, _mm_min_ps(plane, e)), _mm_andnot_ps(inside, e));
    _mm_storeu_ps(out, d2);
    return (unsigned)_mm_movemask_ps(_mm_cmplt_ps(d2, lim2)) & ((1u << L->count) - 1);
}
#else
/* squared distance from p to the segment a + t e (lane k of rows e), t in
 * [0, 1], given ap = p - a, ap . e and e . e */
static inline float seg_d2f(const float ap[3], const float (*e)[4], int k, float ape, float ee)
{
    float t = ape / (ee > FLT_MIN ? ee : FLT_MIN);
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    float q[3] = {ap[0] - t * e[0][k], ap[1] - t * e[1][k], ap[2] - t * e[2][k]};
    return q[0] * q[0] + q[1] * q[1] + q[2] * q[2];
}

static inline __attribute__((always_inline)) unsigned wleaf_near(const ist_wleaf *L, const wcoord p[3], wcoord lim2, float out[4])
{
    unsigned near = 0;
    for (int k = 0; k < 4; k++) {
        float ap[3], bp[3];
        for (int q = 0; q < 3; q++)
            ap[q] = p[q] - L->a[q][k], bp[q] = p[q] - L->b[q][k];
        float d20 = ap[0] * L->ab[0][k] + ap[1] * L->ab[1][k] + ap[2] * L->ab[2][k];
        float d21 = ap[0] * L->ac[0][k] + ap[1] * L->ac[1][k] + ap[2] * L->ac[2][k];
        float bpbc = bp[0] * L->bc[0][k] + bp[1] * L->bc[1][k] + bp[2] * L->bc[2][k];
        float v = L->d11[k] * d20 - L->d01[k] * d21, w = L->d00[k] * d21 - L->d01[k] * d20, u = L->den[k] - v - w;
        float e = seg_d2f(ap, L->ab, k, d20, L->d00[k]), e1 = seg_d2f(ap, L->ac, k, d21, L->d11[k]);
        float e2 = seg_d2f(bp, L->bc, k, bpbc, L->dbc[k]);
        e = e < e1 ? e : e1;
        e = e < e2 ? e : e2;
        if (L->solid[k] && v >= 0 && w >= 0 && u >= 0) {
            float h = ap[0] * L->n[0][k] + ap[1] * L->n[1][k] + ap[2] * L->n[2][k], plane = h * h / L->den[k];
            e = plane < e ? plane : e;
        }
        out[k] = e;
        near |= (unsigned)(k < (int)L->count && e < lim2) << k;
    }
    return near;
}
#endif

#if defined(__SSE2__)
/* the largest of v's four lanes, in every lane */
static inline __m128 hmax4(__m128 m)
{
    m = _mm_max_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_max_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
}
#endif

/* the first of the largest of ist_tritree_closest's eight candidate
 * distances (all finite, none -0) */
static inline uint32_t cand_farthest(const float c[8])
{
#if defined(__SSE2__)
    const __m128 lo = _mm_load_ps(c), hi = _mm_load_ps(c + 4);
    __m128 m = _mm_max_ps(lo, hi);
    m = hmax4(m);
    const unsigned eq = (unsigned)_mm_movemask_ps(_mm_cmpeq_ps(lo, m)) | (unsigned)_mm_movemask_ps(_mm_cmpeq_ps(hi, m)) << 4;
    return (uint32_t)__builtin_ctz(eq);
#else
    uint32_t w = 0;
    for (uint32_t q = 1; q < 8; q++)
        w = c[q] > c[w] ? q : w;
    return w;
#endif
}

double ist_tritree_closest(const prox_ist *t, prox_vec3 p, double bound, uint32_t *tri, prox_vec3 *closest, uint32_t *tests,
                           uint64_t deadline_ns, int *cut)
{
    const ist_tritree *g = &t->tritree;
    *tri = UINT32_MAX;
    /* beyond the float range (a tree that large; poses stop at
     * PROX_MAX_TRANSLATION) no ranking: an empty lane's inverted box would
     * turn NaN and count as near */
    if (!g->wide || !ist_in_float_range(p))
        return INFINITY;
    const wcoord pp[3] = {wcoord_of((float)p.x), wcoord_of((float)p.y), wcoord_of((float)p.z)};
    /* Ranked in floats. delta bounds the float error of a distance here (a
     * few 1e-7 of the coordinates' size); every triangle within delta of
     * the best float distance stays a candidate and the candidates are
     * decided in doubles, so the answer is the exact closest triangle. */
    const float delta = (float)(4e-6 * ist_coord_scale(g, p, 0.0));
    float best = bound < 1e30 ? (float)bound + delta : INFINITY; /* best float distance (+ delta: the bound) */
    float lim2 = bound < 1e30 ? (best + delta) * (best + delta) : INFINITY; /* prune beyond best + delta */
    /* lim2 in the kernels' lanes, broadcast when it drops rather than in
     * every visit (with wbox_near's first square not added to zero: the
     * same answers, 0.2-0.9% fewer instructions in the default query,
     * callgrind, 40 random / 80 coherent bench poses) */
    wcoord vlim2 = wcoord_of(lim2);
    /* near-ties: the NCAND smallest float distances found within delta of
     * the best at the time */
    enum { NCAND = 8, STACK = 128 };
    _Static_assert(NCAND == 8, "cand_farthest takes eight");
    uint32_t cand[NCAND];
    _Alignas(16) float cand_d[NCAND];
    uint32_t n_cand = 0, n_tests = 0, visits = 0;
    /* once NCAND are kept: the first of the largest (what a scan from
     * slot 0 finds; NCAND: to be found), found again only after a slot
     * was replaced, by a vector maximum. Against a scalar scan at every
     * triangle within the margin while the list is full: the same
     * candidates, callgrind (default query, 40 random / 80 coherent bench
     * poses) armadillo 23.03M -> 22.89M / 31.74M -> 31.50M, bunny00
     * 34.87M -> 34.68M / 38.02M -> 37.82M, knot1, fandisk and elephant
     * 0-0.2% fewer (found again at once after each replacement instead:
     * up to 0.1% more on those three) */
    uint32_t wi = NCAND;
    /* depth first, nearest child first: a node's nearest near child is
     * visited at once, the others pushed farthest first (each level defers
     * at most three children; a wide tree over 2^32 triangles is under 20
     * levels deep), so the visiting order is that of pushing every near
     * child and popping the nearest. Most nodes have one or two near
     * children: those orders take no sort. Against pushing and popping
     * every near child (one loop over the four lanes, an insertion sort):
     * the same answers bit for bit (bench poses, five meshes), IST
     * distance 7-10% fewer instructions (callgrind, 40 random poses:
     * armadillo 28.3M -> 25.5M, knot1 21.8M -> 20.2M, bunny00 46.7M ->
     * 41.9M), median times 3-5% lower. */
    uint32_t stack[STACK];
    float sd2[STACK];
    int top = 0;
    uint32_t ref = 0; /* the node visited next (the root first) */
    for (;;) {
        /* out of time: answer with what was found (a clock read every 32 visits) */
        if (deadline_ns && (++visits & 31) == 0 && n_cand > 0 && prox_now_ns() >= deadline_ns) {
            if (cut)
                *cut = 1;
            break;
        }
        float d2[4];
        if (!(ref & IST_WIDE_LEAF)) {
            const ist_wnode *W = &g->wide[ref];
            unsigned near = wbox_near(W, pp, vlim2, d2);
            if (near) {
                int k0 = __builtin_ctz(near);
                near &= near - 1;
                if (!near) { /* one near child */
                    ref = W->child[k0];
                    continue;
                }
                int k1 = __builtin_ctz(near);
                near &= near - 1;
                if (!near) { /* two: the farther (the earlier lane at a tie) deferred */
                    int nk = d2[k0] < d2[k1] ? k0 : k1, fk = k0 + k1 - nk;
                    if (top < STACK)
                        stack[top] = W->child[fk], sd2[top] = d2[fk], top++;
                    ref = W->child[nk];
                    continue;
                }
                /* three or four: sorted farthest first (a later lane after an
                 * equal one) */
                uint32_t ord[4];
                const int swap = d2[k0] < d2[k1];
                ord[0] = (uint32_t)(swap ? k1 : k0), ord[1] = (uint32_t)(swap ? k0 : k1);
                int n = 2;
                for (; near; near &= near - 1) {
                    int k = __builtin_ctz(near), m = n++;
                    while (m > 0 && d2[ord[m - 1]] < d2[k])
                        ord[m] = ord[m - 1], m--;
                    ord[m] = (uint32_t)k;
                }
                /* the two or three pushes unrolled (a loop over ord with
                 * the stack's bound each time before): the same stack,
                 * 0.1-0.9% fewer instructions in the default query
                 * (callgrind, 40 random / 80 coherent bench poses) */
                if (top + 3 <= STACK) {
                    stack[top] = W->child[ord[0]], sd2[top] = d2[ord[0]];
                    stack[top + 1] = W->child[ord[1]], sd2[top + 1] = d2[ord[1]];
                    if (n == 4)
                        stack[top + 2] = W->child[ord[2]], sd2[top + 2] = d2[ord[2]];
                    top += n - 1;
                } else
                    for (int q = 0; q < n - 1 && top < STACK; q++)
                        stack[top] = W->child[ord[q]], sd2[top] = d2[ord[q]], top++;
                ref = W->child[ord[n - 1]];
                continue;
            }
        } else {
            const ist_wleaf *L = &g->wleaf[ref & ~IST_WIDE_LEAF];
            unsigned near = wleaf_near(L, pp, vlim2, d2);
            n_tests += L->count;
            for (; near; near &= near - 1) {
                int k = __builtin_ctz(near);
                if (!(d2[k] < lim2)) /* (lim2 drops as the best does) */
                    continue;
                float d = sqrtf(d2[k]);
                uint32_t e = L->first + (uint32_t)k;
                if (n_cand < NCAND)
                    cand[n_cand] = e, cand_d[n_cand] = d, n_cand++;
                else { /* keep the NCAND smallest */
                    if (wi == NCAND)
                        wi = cand_farthest(cand_d);
                    if (d < cand_d[wi])
                        cand[wi] = e, cand_d[wi] = d, wi = NCAND;
                }
                if (d < best) {
                    best = d;
                    lim2 = (best + delta) * (best + delta);
                    vlim2 = wcoord_of(lim2);
                }
            }
        }
        /* the next deferred child still near */
        while (top > 0 && sd2[top - 1] >= lim2)
            top--;
        if (top == 0)
            break;
        ref = stack[--top];
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
        double dk = ist_point_tri_dist(t, ti, p, &qk);
        if (dk < d || (dk == d && ti < i))
            d = dk, q = qk, i = ti;
    }
    if (i == UINT32_MAX || !(d < bound))
        return INFINITY;
    *tri = i;
    *closest = q;
    return d;
}

/* The reach of four boxes of a wide node along u past level lv (lane k:
 * on axis i, u . ax_i times its lo or hi, whichever is larger, summed) and
 * of a leaf block's four triangles (their largest corner along u, less
 * lv), for ist_tritree_reach: lanes that reach further than thr as bits,
 * the leaf's reaches in out. The same float operations in the same order
 * in each lane as the scalar code (the same reaches bit for bit). */
#if defined(__SSE2__)
static inline unsigned wbox_reach(const ist_wnode *W, const wcoord u[3], float lv, wcoord thr)
{
    __m128 r = _mm_set1_ps(-lv);
#pragma GCC unroll 3
    for (int i = 0; i < 3; i++) {
        const __m128 c = _mm_add_ps(_mm_add_ps(_mm_mul_ps(u[0], row(W->ax[3 * i])), _mm_mul_ps(u[1], row(W->ax[3 * i + 1]))),
                                    _mm_mul_ps(u[2], row(W->ax[3 * i + 2])));
        r = _mm_add_ps(r, _mm_max_ps(_mm_mul_ps(c, row(W->lo[i])), _mm_mul_ps(c, row(W->hi[i]))));
    }
    return (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(r, thr));
}

static inline unsigned wleaf_reach(const ist_wleaf *L, const wcoord u[3], float lv, wcoord thr, float out[4])
{
    const __m128 ra = dot3(u[0], u[1], u[2], row(L->a[0]), row(L->a[1]), row(L->a[2]));
    const __m128 rb = dot3(u[0], u[1], u[2], row(L->b[0]), row(L->b[1]), row(L->b[2]));
    const __m128 rc = _mm_add_ps(_mm_add_ps(_mm_add_ps(ra, _mm_mul_ps(u[0], row(L->ac[0]))), _mm_mul_ps(u[1], row(L->ac[1]))),
                                 _mm_mul_ps(u[2], row(L->ac[2])));
    const __m128 r = _mm_sub_ps(_mm_max_ps(_mm_max_ps(ra, rb), rc), _mm_set1_ps(lv));
    _mm_storeu_ps(out, r);
    return (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(r, thr)) & ((1u << L->count) - 1);
}
#else
static inline unsigned wbox_reach(const ist_wnode *W, const wcoord u[3], float lv, float thr)
{
    unsigned far = 0;
    for (int k = 0; k < 4; k++) {
        float r = -lv;
        for (int i = 0; i < 3; i++) {
            const float c = u[0] * W->ax[3 * i][k] + u[1] * W->ax[3 * i + 1][k] + u[2] * W->ax[3 * i + 2][k];
            const float a = c * W->lo[i][k], b = c * W->hi[i][k];
            r += a > b ? a : b;
        }
        far |= (unsigned)(r > thr) << k;
    }
    return far;
}

static inline unsigned wleaf_reach(const ist_wleaf *L, const wcoord u[3], float lv, float thr, float out[4])
{
    unsigned far = 0;
    for (int k = 0; k < 4; k++) {
        const float ra = u[0] * L->a[0][k] + u[1] * L->a[1][k] + u[2] * L->a[2][k];
        const float rb = u[0] * L->b[0][k] + u[1] * L->b[1][k] + u[2] * L->b[2][k];
        const float rc = ra + u[0] * L->ac[0][k] + u[1] * L->ac[1][k] + u[2] * L->ac[2][k];
        float r = (ra > rb ? ra : rb);
        r = (r > rc ? r : rc) - lv;
        out[k] = r;
        far |= (unsigned)(k < (int)L->count && r > thr) << k;
    }
    return far;
}
#endif

/* the kept triangle farthest from p (ist_tritree_reach, all cap kept, slot
 * w just replaced): the first of the largest distances, w itself where it
 * holds the largest (what a running comparison from w found) */
static inline uint32_t reach_farthest(const float *dist, uint32_t cap, uint32_t w)
{
    float most = dist[0];
    uint32_t q = 1;
#if defined(__SSE2__)
    if (cap >= 8) {
        __m128 m = _mm_loadu_ps(dist);
        for (q = 4; q + 4 <= cap; q += 4)
            m = _mm_max_ps(m, _mm_loadu_ps(dist + q));
        most = _mm_cvtss_f32(hmax4(m));
    }
#endif
    for (; q < cap; q++)
        most = dist[q] > most ? dist[q] : most;
    if (dist[w] == most)
        return w;
    q = 0;
#if defined(__SSE2__)
    const __m128 mm = _mm_set1_ps(most);
    for (; q + 4 <= cap; q += 4) {
        const unsigned eq = (unsigned)_mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(dist + q), mm));
        if (eq)
            return q + (uint32_t)__builtin_ctz(eq);
    }
#endif
    while (dist[q] != most)
        q++;
    return q;
}

uint32_t ist_tritree_reach(const prox_ist *t, prox_vec3 p, double radius, prox_vec3 u, double level, double above, uint32_t cap,
                           uint32_t *tri, float *dist, double *most, uint64_t deadline_ns, int *cut)
{
    const ist_tritree *g = &t->tritree;
    *most = above;
    /* beyond the float range no ranking (as in ist_tritree_closest) */
    if (!g->wide || !(radius > 0) || !(radius <= 1e30) || !ist_in_float_range(p) ||
        !(fabs(level) <= 1e30 && fabs(above) <= 1e30))
        return 0;
    const wcoord pp[3] = {wcoord_of((float)p.x), wcoord_of((float)p.y), wcoord_of((float)p.z)};
    /* the float error of distances and of reaches (as in
     * ist_tritree_closest): the radius grows by it, reaches count it in
     * their favour, so nothing within either is lost to rounding */
    const float m = (float)(4e-6 * ist_coord_scale(g, p, fabs(level))), lim = (float)radius + m;
    const wcoord lim2 = wcoord_of(lim * lim);
    const wcoord uu[3] = {wcoord_of((float)u.x), wcoord_of((float)u.y), wcoord_of((float)u.z)};
    const float lv = (float)level;
    float thr = (float)above - m; /* a box or triangle reaching no further is dropped */
    wcoord vthr = wcoord_of(thr);  /* thr in the kernels' lanes, broadcast when it rises (as ist_tritree_closest's vlim2) */
    enum { STACK = 128 };
    uint32_t stack[STACK];
    int top = 0;
    uint32_t n = 0, far = 0; /* far: the kept triangle farthest from p once cap are kept */
    float best = -INFINITY;  /* the largest reach seen (no cap: what prunes) */
    uint32_t visits = 0;
    stack[top++] = 0;
    /* The reach is tested first, four lanes at once, and the distance only
     * where a lane reaches far enough (without a cap most leaf blocks
     * reach no further than the threshold, which rises to the largest
     * reach found); a full list's farthest found by a vector maximum.
     * Against the distance first and the reach lane by lane (e48ffd9):
     * the same answers bit for bit (all 80 distance sets of seeds 7, 11,
     * 13, 17, 19, five meshes, default and --fast; a build without SSE2
     * alike), callgrind instructions of the default query (80 coherent /
     * 40 random bench poses) armadillo 32.3M -> 30.7M / 23.5M -> 22.8M,
     * bunny00 37.2M -> 35.4M / 35.3M -> 34.3M, fandisk 14.4M -> 13.9M /
     * 17.0M -> 16.8M, elephant 39.4M -> 38.8M / 14.6M -> 14.4M, knot1 28.4M
     * -> 28.0M / 17.5M -> 17.4M: the search's cost over --fast armadillo
     * +30% -> +24% / +20% -> +16%, bunny00 +21% -> +15% / +13% -> +9%
     * (the walk, the ranking and near_load's balls are most of the rest).
     * Measured and not kept: once cap are kept, skipping boxes beyond the
     * farthest kept that reach no further than the largest reach so far
     * (armadillo path 30.77M -> 30.81M: few boxes are both). */
    while (top > 0) {
        /* out of time (a clock read every 32 visits): what was found */
        if (deadline_ns && (++visits & 31) == 0 && prox_now_ns() >= deadline_ns) {
            if (cut)
                *cut = 1;
            break;
        }
        const uint32_t ref = stack[--top];
        float d2[4];
        if (!(ref & IST_WIDE_LEAF)) {
            const ist_wnode *W = &g->wide[ref];
            unsigned far4 = wbox_reach(W, uu, lv, vthr);
            if (!far4)
                continue;
            for (unsigned near = wbox_near(W, pp, lim2, d2) & far4; near && top < STACK; near &= near - 1)
                stack[top++] = W->child[__builtin_ctz(near)];
            continue;
        }
        const ist_wleaf *L = &g->wleaf[ref & ~IST_WIDE_LEAF];
        float rk[4];
        unsigned far4 = wleaf_reach(L, uu, lv, vthr, rk);
        if (!far4)
            continue;
        for (unsigned near = wleaf_near(L, pp, lim2, d2) & far4; near; near &= near - 1) {
            const int k = __builtin_ctz(near);
            const float r = rk[k];
            if (!(r > thr)) /* (thr rises with the largest reach where no cap) */
                continue;
            best = r > best ? r : best;
            if (!cap) { /* the largest reach only: what reaches no further drops */
                thr = best;
                vthr = wcoord_of(thr);
                continue;
            }
            const float d = sqrtf(d2[k]);
            if (n < cap) {
                tri[n] = g->order[L->first + (uint32_t)k], dist[n] = d;
                far = d > dist[far] ? n : far;
                n++;
                continue;
            }
            if (!(d < dist[far]))
                continue;
            tri[far] = g->order[L->first + (uint32_t)k], dist[far] = d;
            far = reach_farthest(dist, cap, far);
        }
    }
    if (best > -INFINITY && (double)best + m > *most)
        *most = (double)best + m;
    return n;
}
