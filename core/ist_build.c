/* ist_build.c - building inner sphere trees (Weller & Zachmann, sections
 * 3.1, 3.2, 4.2.1). Non-RT: allocates.
 *
 * 1. Voxelize: a grid over the bounding box; inside by z-column parity
 *    (each triangle adds the z of its plane at the column centres it covers).
 * 2. Distance field: for every inside voxel centre, the exact distance to
 *    the surface and the closest triangle (mesh BVH closest-point query,
 *    seeded by the previous voxel's triangle).
 * 3. Greedy packing (3.1): take the voxel with the largest free radius,
 *    place a sphere of that radius there, drop the voxels it covers, lower
 *    the free radius of voxels now closer to the new sphere than to the
 *    surface (only voxels within twice the radius can change: the heap's
 *    maximum never exceeds the new radius). Lazy max-heap.
 * 4. Secondary spheres (4.2.1): every voxel holding mesh volume goes to
 *    its nearest sphere (Dijkstra-style propagation over the voxel grid
 *    with the key |voxel - centre| - radius); a voxel weighs the part of it
 *    inside the mesh (4 x 4 vertical lines through it, exact along each);
 *    a sphere's secondary sphere sits at the centroid of its voxels'
 *    volume and holds that volume, all radii scaled by one factor so the
 *    secondary volumes add up to the mesh volume exactly.
 * 5. Certified surface gap (distance bounds).
 * 6. Hierarchy (3.2): 4-ary, top down; batch neural gas with 4 prototypes,
 *    points weighted by secondary volume (magnification control), annealed
 *    neighbourhood; stops at 4 or fewer spheres. Bounding spheres enclose
 *    both spheres of every leaf below; they are tight heuristic spheres,
 *    not Welzl-minimal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ist_internal.h"

prox_ist_def prox_ist_def_default(void)
{
    prox_ist_def d = {4096, 0, 1, 0.5, 0};
    return d;
}

const prox_tree *prox_ist_tree(const prox_ist *ist) { return &ist->tree; }

typedef struct adj_edge {
    uint32_t lo, hi, tri;
} adj_edge;

/* Edge-adjacent triangles. Edges (lo, hi, tri) are bucketed by their lower
 * vertex (a counting sort, O(n): a qsort made loading a 75k-triangle .ist
 * take tens of ms), each bucket (a handful of edges) sorted by hi; equal
 * neighbours in that order share an edge. */
static int derive_adjacency(prox_ist *t)
{
    size_t ne = (size_t)t->tri_count * 3;
    adj_edge *e = malloc(sizeof *e * (ne ? ne : 1));
    uint32_t *cur = calloc((size_t)t->vert_count + 1, sizeof *cur);
    free(t->adj);
    t->adj = malloc(sizeof *t->adj * (t->tri_count ? t->tri_count : 1));
    if (!e || !cur || !t->adj) {
        free(e);
        free(cur);
        return -1;
    }
    for (uint32_t i = 0; i < t->tri_count; i++)
        for (int k = 0; k < 3; k++) {
            uint32_t a = t->tris[i][k], b = t->tris[i][(k + 1) % 3];
            cur[(a < b ? a : b) + 1]++;
            t->adj[i][k] = i; /* no neighbour: itself */
        }
    for (uint32_t v = 0; v < t->vert_count; v++)
        cur[v + 1] += cur[v];
    for (uint32_t i = 0; i < t->tri_count; i++)
        for (int k = 0; k < 3; k++) {
            uint32_t a = t->tris[i][k], b = t->tris[i][(k + 1) % 3], lo = a < b ? a : b;
            e[cur[lo]++] = (adj_edge){lo, a < b ? b : a, i};
        }
    /* cur[v] is now the end of bucket v (= start of v + 1); insertion sort each by hi */
    for (uint32_t v = 0, begin = 0; v < t->vert_count; begin = cur[v], v++)
        for (uint32_t i = begin + 1; i < cur[v]; i++) {
            adj_edge x = e[i];
            uint32_t j = i;
            for (; j > begin && e[j - 1].hi > x.hi; j--)
                e[j] = e[j - 1];
            e[j] = x;
        }
    free(cur);
    for (size_t i = 0; i + 1 < ne; i++)
        if (e[i].lo == e[i + 1].lo && e[i].hi == e[i + 1].hi) {
            uint32_t a = e[i].tri, b = e[i + 1].tri;
            for (int k = 0; k < 3; k++) {
                uint32_t x = t->tris[a][k], y = t->tris[a][(k + 1) % 3];
                if ((x < y ? x : y) == e[i].lo && (x < y ? y : x) == e[i].hi)
                    t->adj[a][k] = b;
                x = t->tris[b][k], y = t->tris[b][(k + 1) % 3];
                if ((x < y ? x : y) == e[i].lo && (x < y ? y : x) == e[i].hi)
                    t->adj[b][k] = a;
            }
        }
    free(e);
    return 0;
}

static float round_up(double x)
{
    float f = (float)x;
    return (double)f < x ? nextafterf(f, INFINITY) : f;
}

/* per sphere: the radius about the inner sphere's centre enclosing both
 * spheres (lbr); sec[i][3] is r2 already (build and load set it) */
static int derive_spheres(prox_ist *t)
{
    if (!t->lbr && !(t->lbr = malloc(sizeof *t->lbr * t->sphere_count)))
        return -1;
    for (uint32_t i = 0; i < t->sphere_count; i++) {
        const ist_sphere *q = &t->spheres[i];
        const float *c = t->sec[i];
        double dx = (double)c[0] - q->x, dy = (double)c[1] - q->y, dz = (double)c[2] - q->z;
        double r = sqrt(dx * dx + dy * dy + dz * dz) + q->r2;
        t->lbr[i] = round_up(r > q->r ? r : q->r);
    }
    return 0;
}

/* dr: radius about each child's centre enclosing the primary spheres below
 * it, bottom up (children have larger indices than their parents: built
 * that way, checked on load), rounded up against float error, never looser
 * than the record's own radius */
static void derive_dr(prox_ist *t)
{
    for (uint32_t i = t->node_count; i-- > 0;) {
        const ist_node *nd = &t->nodes[i];
        for (int j = 0; j < 4; j++) {
            uint32_t c = nd->child[j];
            double r;
            if (c == IST_EMPTY)
                r = 0;
            else if (c & IST_LEAF)
                r = t->spheres[c & ~IST_LEAF].r;
            else if (c <= i)
                r = nd->cr[j]; /* not bottom-up ordered: keep the record's */
            else
                r = ist_enclose_children(t, i, j, (const float (*)[4])t->dr) * (1 + 1e-6);
            t->dr[i][j] = r < nd->cr[j] ? (float)r : nd->cr[j];
        }
    }
}

/* vrec: each record's children bounding only the secondary spheres below,
 * bottom up like dr */
static void derive_vrec(prox_ist *t)
{
    for (uint32_t i = t->node_count; i-- > 0;) {
        const ist_node *nd = &t->nodes[i];
        ist_vrec *v = &t->vrec[i];
        for (int j = 0; j < 4; j++) {
            uint32_t c = nd->child[j];
            v->child[j] = c;
            v->x[j] = nd->cx[j], v->y[j] = nd->cy[j], v->z[j] = nd->cz[j];
            if (c == IST_EMPTY) {
                v->r[j] = -1e30f;
                continue;
            }
            if (c & IST_LEAF) {
                const float *s = t->sec[c & ~IST_LEAF];
                v->x[j] = s[0], v->y[j] = s[1], v->z[j] = s[2], v->r[j] = s[3];
                continue;
            }
            double r = nd->cr[j];
            if (c > i) {
                const ist_vrec *w = &t->vrec[c];
                r = ist_enclose_lanes(w->x, w->y, w->z, w->r, w->child, nd->cx[j], nd->cy[j], nd->cz[j]) * (1 + 1e-6);
            }
            v->r[j] = r < nd->cr[j] ? (float)r : nd->cr[j];
        }
    }
}

int ist_derive(prox_ist *t)
{
    /* adjacency and the triangle box tree come with version 2 files */
    if ((!t->adj && derive_adjacency(t) != 0) || (!t->tritree.nodes && ist_tritree_build(t) != 0) || ist_tritree_widen(&t->tritree) != 0 || (!t->lbr && derive_spheres(t) != 0))
        return -1;
    /* which triangles point_triangle_dist2 takes by their edges, once:
     * ist_point_tri_dist tests them, the query's most frequent exact test,
     * against a bit instead of a cross product and three squared lengths */
    free(t->tri_flat);
    t->tri_flat = calloc(IST_TRI_FLAT_BYTES(t->tri_count), 1);
    if (!t->tri_flat)
        return -1;
    for (uint32_t i = 0; i < t->tri_count; i++)
        t->tri_flat[i >> 3] |= (uint8_t)(point_triangle_flat(t->verts[t->tris[i][0]], t->verts[t->tris[i][1]], t->verts[t->tris[i][2]]) << (i & 7));
    free(t->nsph);
    free(t->nvol);
    free(t->nleaves);
    uint32_t n = t->node_count ? t->node_count : 1;
    t->nsph = malloc(sizeof *t->nsph * n);
    t->nvol = malloc(sizeof *t->nvol * n);
    t->nleaves = malloc(sizeof *t->nleaves * n);
    free(t->dr);
    t->dr = malloc(sizeof *t->dr * n);
    free(t->ncen);
    t->ncen = malloc(sizeof *t->ncen * n);
    free(t->cball);
    t->cball = calloc(n, sizeof *t->cball); /* empty slots: radius 0 */
    free(t->vrec);
    t->vrec = malloc(sizeof *t->vrec * n);
    if (!t->nsph || !t->nvol || !t->nleaves || !t->dr || !t->ncen || !t->cball || !t->vrec)
        return -1;
    /* volume balls, bottom up (children have larger indices than their
     * parents): a node's from its children's, and the children's as the
     * node record's lanes */
    for (uint32_t i = t->node_count; i-- > 0;) {
        double w = 0, c[3] = {0, 0, 0};
        for (int j = 0; j < 4; j++) {
            uint32_t ch = t->nodes[i].child[j];
            if (ch == IST_EMPTY)
                continue;
            float b[4];
            ist_id_ball(t, ch, b);
            for (int k = 0; k < 4; k++)
                t->cball[i][4 * k + j] = b[k];
            double v = (double)b[3] * b[3] * b[3];
            w += v;
            for (int k = 0; k < 3; k++)
                c[k] += v * b[k];
        }
        for (int k = 0; k < 3; k++)
            t->ncen[i][k] = w > 0 ? (float)(c[k] / w) : t->nodes[i].cx[0];
        t->ncen[i][3] = (float)cbrt(w);
    }
    derive_dr(t);
    derive_vrec(t);
    /* outer balls: the per-sphere radii are a build-time computation
     * (files of version 4 on store them) */
    if ((!t->slab && ist_outer_build(t) != 0) || ist_outer_lanes(t) != 0)
        return -1;
    uint32_t r = t->tree.root;
    memcpy(t->nsph[r], t->root, sizeof t->root);
    t->nvol[r] = (float)t->root_vol;
    t->nleaves[r] = t->root_leaves;
    for (uint32_t i = 0; i < t->node_count; i++)
        for (int j = 0; j < 4; j++) {
            uint32_t c = t->nodes[i].child[j];
            if (c == IST_EMPTY || (c & IST_LEAF))
                continue;
            t->nsph[c][0] = t->nodes[i].cx[j], t->nsph[c][1] = t->nodes[i].cy[j];
            t->nsph[c][2] = t->nodes[i].cz[j], t->nsph[c][3] = t->nodes[i].cr[j];
            t->nvol[c] = t->nodes[i].cvol[j];
            t->nleaves[c] = t->nodes[i].cleaves[j];
        }
    return 0;
}

void prox_ist_free(prox_ist *t)
{
    if (!t)
        return;
    free(t->nsph);
    free(t->nvol);
    free(t->nleaves);
    free(t->adj);
    free(t->tri_flat);
    free(t->dr);
    free(t->ncen);
    free(t->cball);
    free(t->sec);
    free(t->lbr);
    free(t->orad_leaf);
    free(t->orad);
    free(t->slab);
    free(t->sflat);
    free(t->vrec);
    prox_bvh_free(t->mesh_bvh);
    ist_tritree_free(&t->tritree);
    free(t->nodes);
    free(t->spheres);
    free(t->verts);
    free(t->tris);
    free(t);
}

static double wall_s(void) { return 1e-9 * (double)prox_now_ns(); }

typedef struct progress {
    int on;
    double last;
} progress;

static void progress_show(progress *p, const char *stage, double frac)
{
    if (!p->on)
        return;
    double now = wall_s();
    if (now - p->last < 0.2 && frac < 1.0)
        return;
    p->last = now;
    fprintf(stderr, "\r  %-28s %5.1f%%", stage, 100.0 * frac);
    if (frac >= 1.0)
        fputc('\n', stderr);
    fflush(stderr);
}

/* ---- closest point on the mesh ----
 * A private AABB tree over the triangles (median split on the longest
 * axis), used only while building: the distance field needs millions of
 * point queries and nothing else. */

typedef struct aabb_node {
    float lo[3], hi[3];
    uint32_t left, right; /* right == UINT32_MAX: leaf, left = triangle */
} aabb_node;

typedef struct aabb_tree {
    aabb_node *n;
    uint32_t count;
    const prox_mesh *m;
} aabb_tree;

static int g_axis; /* qsort context (build only, single thread) */
static const prox_vec3 *g_cent;
static int cent_cmp(const void *pa, const void *pb)
{
    double a = prox_v3_get(g_cent[*(const uint32_t *)pa], g_axis), b = prox_v3_get(g_cent[*(const uint32_t *)pb], g_axis);
    return a < b ? -1 : (a > b);
}

static uint32_t aabb_build_rec(aabb_tree *t, uint32_t *idx, uint32_t n, const prox_vec3 *cent)
{
    uint32_t me = t->count++;
    aabb_node *nd = &t->n[me];
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t k = 0; k < n; k++)
        for (int v = 0; v < 3; v++) {
            prox_vec3 p = t->m->vertices[t->m->triangles[idx[k]][v]];
            double c[3] = {p.x, p.y, p.z};
            for (int a = 0; a < 3; a++)
                lo[a] = fmin(lo[a], c[a]), hi[a] = fmax(hi[a], c[a]);
        }
    for (int a = 0; a < 3; a++) { /* round outward so float boxes still contain */
        nd->lo[a] = nextafterf((float)lo[a], -INFINITY);
        nd->hi[a] = nextafterf((float)hi[a], INFINITY);
    }
    if (n == 1) {
        nd->left = idx[0];
        nd->right = UINT32_MAX;
        return me;
    }
    int axis = 0;
    for (int a = 1; a < 3; a++)
        if (hi[a] - lo[a] > hi[axis] - lo[axis])
            axis = a;
    g_axis = axis;
    g_cent = cent;
    qsort(idx, n, sizeof *idx, cent_cmp);
    uint32_t l = aabb_build_rec(t, idx, n / 2, cent);
    uint32_t r = aabb_build_rec(t, idx + n / 2, n - n / 2, cent);
    t->n[me].left = l;
    t->n[me].right = r;
    return me;
}

static int aabb_build(aabb_tree *t, const prox_mesh *m)
{
    uint32_t n = m->triangle_count;
    t->m = m;
    t->count = 0;
    t->n = malloc(sizeof(aabb_node) * (2 * (size_t)n));
    uint32_t *idx = malloc(sizeof(uint32_t) * n);
    prox_vec3 *cent = malloc(sizeof(prox_vec3) * n);
    if (!t->n || !idx || !cent) {
        free(idx);
        free(cent);
        free(t->n);
        t->n = NULL;
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        idx[i] = i;
        cent[i] = prox_v3_scale(prox_v3_add(prox_v3_add(m->vertices[m->triangles[i][0]], m->vertices[m->triangles[i][1]]),
                                            m->vertices[m->triangles[i][2]]),
                                1.0 / 3.0);
    }
    aabb_build_rec(t, idx, n, cent);
    free(idx);
    free(cent);
    return 0;
}

static double point_aabb_dist2(const aabb_node *n, prox_vec3 p)
{
    double c[3] = {p.x, p.y, p.z}, s = 0;
    for (int a = 0; a < 3; a++) {
        double d = c[a] < n->lo[a] ? n->lo[a] - c[a] : (c[a] > n->hi[a] ? c[a] - n->hi[a] : 0);
        s += d * d;
    }
    return s;
}

static double tri_dist2(const prox_mesh *m, uint32_t t, prox_vec3 p)
{
    prox_vec3 q;
    return prox_point_triangle_dist2(p, m->vertices[m->triangles[t][0]], m->vertices[m->triangles[t][1]],
                                     m->vertices[m->triangles[t][2]], &q);
}

/* best2 in: an upper bound (squared); out: the exact squared distance */
static void closest_rec(const aabb_tree *t, uint32_t ni, prox_vec3 p, double *best2, uint32_t *tri)
{
    const aabb_node *n = &t->n[ni];
    if (n->right == UINT32_MAX) {
        double d2 = tri_dist2(t->m, n->left, p);
        if (d2 < *best2) {
            *best2 = d2;
            *tri = n->left;
        }
        return;
    }
    double dl = point_aabb_dist2(&t->n[n->left], p), dr = point_aabb_dist2(&t->n[n->right], p);
    uint32_t first = n->left, second = n->right;
    if (dr < dl) {
        double tmp = dl;
        dl = dr;
        dr = tmp;
        first = n->right, second = n->left;
    }
    if (dl < *best2)
        closest_rec(t, first, p, best2, tri);
    if (dr < *best2)
        closest_rec(t, second, p, best2, tri);
}

/* ---- the build ---- */

typedef struct heap_ent {
    float key;
    uint32_t idx;
} heap_ent;

static void hpush(heap_ent *h, size_t *n, heap_ent e, int maxheap)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (maxheap ? h[p].key >= e.key : h[p].key <= e.key)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = e;
}

static heap_ent hpop(heap_ent *h, size_t *n, int maxheap)
{
    heap_ent top = h[0], x = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= *n)
            break;
        size_t m = l;
        if (l + 1 < *n && (maxheap ? h[l + 1].key > h[l].key : h[l + 1].key < h[l].key))
            m = l + 1;
        if (maxheap ? x.key >= h[m].key : x.key <= h[m].key)
            break;
        h[i] = h[m];
        i = m;
    }
    if (*n)
        h[i] = x;
    return top;
}

typedef struct builder {
    prox_ist *t;
    uint32_t *order; /* sphere indices, partitioned during the hierarchy build */
    uint32_t node_cap;
} builder;

/* sphere m (0: inner, 1: secondary) of leaf i: centre c, radius *R */
static inline void leaf_model(const prox_ist *t, uint32_t i, int m, double c[3], double *R)
{
    const ist_sphere *s = &t->spheres[i];
    if (m)
        c[0] = t->sec[i][0], c[1] = t->sec[i][1], c[2] = t->sec[i][2], *R = t->sec[i][3];
    else
        c[0] = s->x, c[1] = s->y, c[2] = s->z, *R = s->r;
}

/* a tight enclosing sphere of both spheres of every leaf idx[0..n): best
 * of the centroid of the inner spheres' centres and the box centre, then
 * shrink steps toward the farthest sphere while the radius drops. Always
 * encloses. */
static void enclose(const prox_ist *t, const uint32_t *idx, uint32_t n, float out[4])
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, cen[3] = {0, 0, 0};
    for (uint32_t k = 0; k < n; k++) {
        const ist_sphere *s = &t->spheres[idx[k]];
        cen[0] += s->x / n, cen[1] += s->y / n, cen[2] += s->z / n;
        for (int m = 0; m < 2; m++) {
            double c[3], R;
            leaf_model(t, idx[k], m, c, &R);
            for (int a = 0; a < 3; a++) {
                lo[a] = fmin(lo[a], c[a] - R);
                hi[a] = fmax(hi[a], c[a] + R);
            }
        }
    }
    double cand[2][3] = {{cen[0], cen[1], cen[2]}, {(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2}};
    double bestc[3] = {0, 0, 0}, bestr = INFINITY;
    for (int ci = 0; ci < 2; ci++) {
        double c[3] = {cand[ci][0], cand[ci][1], cand[ci][2]};
        for (int it = 0; it < 12; it++) {
            double r = 0, fc[3] = {c[0], c[1], c[2]};
            for (uint32_t k = 0; k < n; k++)
                for (int m = 0; m < 2; m++) {
                    double q[3], R;
                    leaf_model(t, idx[k], m, q, &R);
                    double dx = q[0] - c[0], dy = q[1] - c[1], dz = q[2] - c[2];
                    double d = sqrt(dx * dx + dy * dy + dz * dz) + R;
                    if (d > r)
                        r = d, fc[0] = q[0], fc[1] = q[1], fc[2] = q[2];
                }
            if (r < bestr) {
                bestr = r;
                memcpy(bestc, c, sizeof c);
            } else if (it > 0)
                break;
            double step = 0.25 / (1 + it);
            c[0] += (fc[0] - c[0]) * step, c[1] += (fc[1] - c[1]) * step, c[2] += (fc[2] - c[2]) * step;
        }
    }
    out[0] = (float)bestc[0], out[1] = (float)bestc[1], out[2] = (float)bestc[2];
    /* round the float radius up so float centres still enclose */
    double r = 0;
    for (uint32_t k = 0; k < n; k++)
        for (int m = 0; m < 2; m++) {
            double q[3], R;
            leaf_model(t, idx[k], m, q, &R);
            double dx = q[0] - (double)out[0], dy = q[1] - (double)out[1], dz = q[2] - (double)out[2];
            double d = sqrt(dx * dx + dy * dy + dz * dz) + R;
            if (d > r)
                r = d;
        }
    out[3] = (float)(r * (1 + 1e-6) + 1e-9);
}

static double sphere_vol2(const ist_sphere *s) { return 4.0 / 3.0 * M_PI * (double)s->r2 * s->r2 * s->r2; }

/* partition idx[0..n) into up to 4 groups by batch neural gas; returns the
 * group sizes (sum n), groups contiguous in idx */
static void bng_split(const prox_ist *t, uint32_t *idx, uint32_t n, uint32_t sizes[4], uint32_t *scratch)
{
    double w[4][3];
    /* init: farthest point sampling from the weighted mean */
    double mean[3] = {0, 0, 0}, wsum = 0;
    for (uint32_t k = 0; k < n; k++) {
        const ist_sphere *s = &t->spheres[idx[k]];
        double v = sphere_vol2(s);
        mean[0] += v * s->x, mean[1] += v * s->y, mean[2] += v * s->z, wsum += v;
    }
    for (int a = 0; a < 3; a++)
        mean[a] /= wsum;
    for (int j = 0; j < 4; j++) {
        double bestd = -1;
        uint32_t bi = 0;
        for (uint32_t k = 0; k < n; k++) {
            const ist_sphere *s = &t->spheres[idx[k]];
            double dmin = INFINITY;
            if (j == 0)
                dmin = (s->x - mean[0]) * (s->x - mean[0]) + (s->y - mean[1]) * (s->y - mean[1]) + (s->z - mean[2]) * (s->z - mean[2]);
            for (int q = 0; q < j; q++) {
                double d = (s->x - w[q][0]) * (s->x - w[q][0]) + (s->y - w[q][1]) * (s->y - w[q][1]) + (s->z - w[q][2]) * (s->z - w[q][2]);
                if (d < dmin)
                    dmin = d;
            }
            if (dmin > bestd)
                bestd = dmin, bi = k;
        }
        const ist_sphere *s = &t->spheres[idx[bi]];
        w[j][0] = s->x, w[j][1] = s->y, w[j][2] = s->z;
    }
    /* batch neural gas, neighbourhood range annealed from 2 to 0.01 */
    const int iters = 16;
    for (int it = 0; it < iters; it++) {
        double lambda = 2.0 * pow(0.01 / 2.0, (double)it / (iters - 1));
        double h[4];
        for (int k = 0; k < 4; k++)
            h[k] = exp(-k / lambda);
        double acc[4][3] = {{0}}, den[4] = {0};
        for (uint32_t k = 0; k < n; k++) {
            const ist_sphere *s = &t->spheres[idx[k]];
            double d[4];
            for (int j = 0; j < 4; j++)
                d[j] = (s->x - w[j][0]) * (s->x - w[j][0]) + (s->y - w[j][1]) * (s->y - w[j][1]) + (s->z - w[j][2]) * (s->z - w[j][2]);
            double v = sphere_vol2(s);
            for (int j = 0; j < 4; j++) {
                int rank = 0;
                for (int q = 0; q < 4; q++)
                    rank += d[q] < d[j] || (d[q] == d[j] && q < j);
                double f = v * h[rank];
                acc[j][0] += f * s->x, acc[j][1] += f * s->y, acc[j][2] += f * s->z;
                den[j] += f;
            }
        }
        for (int j = 0; j < 4; j++)
            if (den[j] > 0)
                for (int a = 0; a < 3; a++)
                    w[j][a] = acc[j][a] / den[j];
    }
    /* assign to the nearest prototype, counting sort into groups */
    uint32_t cnt[4] = {0};
    for (uint32_t k = 0; k < n; k++) {
        const ist_sphere *s = &t->spheres[idx[k]];
        int bj = 0;
        double bd = INFINITY;
        for (int j = 0; j < 4; j++) {
            double d = (s->x - w[j][0]) * (s->x - w[j][0]) + (s->y - w[j][1]) * (s->y - w[j][1]) + (s->z - w[j][2]) * (s->z - w[j][2]);
            if (d < bd)
                bd = d, bj = j;
        }
        scratch[k] = (uint32_t)bj;
        cnt[bj]++;
    }
    int nonempty = 0;
    for (int j = 0; j < 4; j++)
        nonempty += cnt[j] > 0;
    if (nonempty < 2) {
        /* degenerate (all centres equal): split the list evenly */
        for (uint32_t k = 0; k < n; k++)
            scratch[k] = (uint32_t)((uint64_t)k * 4 / n);
        memset(cnt, 0, sizeof cnt);
        for (uint32_t k = 0; k < n; k++)
            cnt[scratch[k]]++;
    }
    uint32_t start[4] = {0, cnt[0], cnt[0] + cnt[1], cnt[0] + cnt[1] + cnt[2]}, pos[4];
    memcpy(pos, start, sizeof pos);
    uint32_t *tmp = scratch + n;
    for (uint32_t k = 0; k < n; k++)
        tmp[pos[scratch[k]]++] = idx[k];
    memcpy(idx, tmp, sizeof(uint32_t) * n);
    memcpy(sizes, cnt, sizeof cnt);
}

/* returns the node id for idx[0..n) */
static uint32_t build_node(builder *B, uint32_t *idx, uint32_t n, uint32_t *scratch, int depth)
{
    prox_ist *t = B->t;
    if (n == 1 && depth > 0)
        return IST_LEAF | idx[0];
    uint32_t me = t->node_count++;
    ist_node node;
    memset(&node, 0, sizeof node);
    for (int j = 0; j < 4; j++)
        node.child[j] = IST_EMPTY;
    uint32_t sizes[4] = {0};
    if (n <= 4) {
        for (uint32_t k = 0; k < n; k++)
            sizes[k] = 1;
    } else {
        bng_split(t, idx, n, sizes, scratch);
    }
    uint32_t off = 0;
    for (int j = 0; j < 4; j++) {
        if (!sizes[j])
            continue;
        float s[4];
        enclose(t, idx + off, sizes[j], s);
        double vol = 0;
        for (uint32_t k = 0; k < sizes[j]; k++)
            vol += sphere_vol2(&t->spheres[idx[off + k]]);
        uint32_t id = build_node(B, idx + off, sizes[j], scratch, depth + 1);
        if (id & IST_LEAF) { /* a leaf child: about its inner sphere's centre (the distance queries rely on it) */
            const ist_sphere *sp = &t->spheres[id & ~IST_LEAF];
            s[0] = sp->x, s[1] = sp->y, s[2] = sp->z, s[3] = t->lbr[id & ~IST_LEAF];
        }
        node.cx[j] = s[0], node.cy[j] = s[1], node.cz[j] = s[2], node.cr[j] = s[3];
        node.cvol[j] = (float)vol;
        node.cleaves[j] = sizes[j];
        node.child[j] = id;
        off += sizes[j];
    }
    t->nodes[me] = node;
    return me;
}

/* The z values where the surface crosses the vertical lines at (x, y) =
 * origin + ((i + (a + 0.5) / sub) h, (j + (b + 0.5) / sub) h), i < nx, j
 * < ny, a, b < sub, sorted per line: CSR, line (i sub + a) (ny sub) +
 * j sub + b. The lines are jittered by a fraction of h far below the
 * voxel size so they never pass exactly through an edge or vertex. 0, or
 * -1 out of memory. */
static int column_crossings(const prox_mesh *m, prox_vec3 origin, double h, int nx, int ny, int sub, uint32_t **start_out,
                            float **zs_out)
{
    const size_t NX = (size_t)nx * sub, NY = (size_t)ny * sub, ncol = NX * NY;
    const double hs = h / sub, jx = 1.2345e-7 * h, jy = 2.3456e-7 * h;
    uint32_t *start = calloc(ncol + 1, sizeof *start), *fill = NULL;
    float *zs = NULL;
    if (!start)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            for (size_t c = 0; c < ncol; c++)
                start[c + 1] += start[c];
            zs = malloc(sizeof(float) * (start[ncol] + 1));
            fill = calloc(ncol, sizeof *fill);
            if (!zs || !fill) {
                free(start);
                free(zs);
                free(fill);
                return -1;
            }
        }
        for (uint32_t ti = 0; ti < m->triangle_count; ti++) {
            prox_vec3 a = m->vertices[m->triangles[ti][0]], b = m->vertices[m->triangles[ti][1]], c = m->vertices[m->triangles[ti][2]];
            double minx = fmin(a.x, fmin(b.x, c.x)), maxx = fmax(a.x, fmax(b.x, c.x));
            double miny = fmin(a.y, fmin(b.y, c.y)), maxy = fmax(a.y, fmax(b.y, c.y));
            long i0 = (long)floor((minx - origin.x) / hs - 0.5), i1 = (long)ceil((maxx - origin.x) / hs - 0.5);
            long j0 = (long)floor((miny - origin.y) / hs - 0.5), j1 = (long)ceil((maxy - origin.y) / hs - 0.5);
            double area2 = (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
            if (area2 == 0)
                continue; /* vertical triangle: no line crosses its interior */
            for (long i = i0 < 0 ? 0 : i0; i <= i1 && i < (long)NX; i++)
                for (long j = j0 < 0 ? 0 : j0; j <= j1 && j < (long)NY; j++) {
                    double px = origin.x + (i + 0.5) * hs + jx, py = origin.y + (j + 0.5) * hs + jy;
                    double w0 = (b.x - px) * (c.y - py) - (b.y - py) * (c.x - px);
                    double w1 = (c.x - px) * (a.y - py) - (c.y - py) * (a.x - px);
                    double w2 = (a.x - px) * (b.y - py) - (a.y - py) * (b.x - px);
                    if (!((w0 >= 0 && w1 >= 0 && w2 >= 0) || (w0 <= 0 && w1 <= 0 && w2 <= 0)))
                        continue;
                    size_t col = (size_t)i * NY + (size_t)j;
                    if (pass == 0)
                        start[col + 1]++;
                    else
                        zs[start[col] + fill[col]++] = (float)((w0 * a.z + w1 * b.z + w2 * c.z) / (w0 + w1 + w2));
                }
        }
    }
    free(fill);
    for (size_t col = 0; col < ncol; col++) /* insertion sort: lines hold few crossings */
        for (uint32_t a = start[col] + 1; a < start[col + 1]; a++) {
            float v = zs[a];
            uint32_t b = a;
            for (; b > start[col] && zs[b - 1] > v; b--)
                zs[b] = zs[b - 1];
            zs[b] = v;
        }
    *start_out = start;
    *zs_out = zs;
    return 0;
}

/* Inside volume of every voxel as a fraction of h^3, in units of 1/65535:
 * through each voxel column sub x sub vertical lines, the length of each
 * line inside the mesh within the voxel's z range (exact along the line,
 * from its crossings), averaged. A face crossing a voxel counts with the
 * part of the voxel behind it, where parity at the centre counts all or
 * nothing: on faces parallel to the grid that is a slab of up to half a
 * voxel, the same sign over the whole face. 0, or -1 out of memory. */
#define VOXEL_SUBLINES 4
static int voxel_fractions(const prox_mesh *m, prox_vec3 origin, double h, int nx, int ny, int nz, uint16_t *frac)
{
    const int sub = VOXEL_SUBLINES;
    uint32_t *start;
    float *zs;
    double *acc = malloc(sizeof *acc * (size_t)nz);
    if (!acc || column_crossings(m, origin, h, nx, ny, sub, &start, &zs) != 0) {
        free(acc);
        return -1;
    }
    const size_t NY = (size_t)ny * sub;
    for (int i = 0; i < nx; i++)
        for (int j = 0; j < ny; j++) {
            memset(acc, 0, sizeof *acc * (size_t)nz);
            for (int a = 0; a < sub; a++)
                for (int b = 0; b < sub; b++) {
                    size_t line = ((size_t)i * sub + a) * NY + (size_t)j * sub + b;
                    /* inside between crossings 0-1, 2-3, ... */
                    for (uint32_t q = start[line]; q + 1 < start[line + 1]; q += 2) {
                        double z0 = (zs[q] - origin.z) / h, z1 = (zs[q + 1] - origin.z) / h;
                        long k0 = (long)floor(z0), k1 = (long)floor(z1);
                        for (long k = k0 < 0 ? 0 : k0; k <= k1 && k < nz; k++)
                            acc[k] += fmin(z1, (double)k + 1) - fmax(z0, (double)k);
                    }
                }
            uint16_t *f = frac + ((size_t)i * ny + j) * nz;
            for (int k = 0; k < nz; k++) {
                double v = acc[k] / (sub * sub);
                f[k] = (uint16_t)lround(65535.0 * (v < 0 ? 0 : v > 1 ? 1 : v));
            }
        }
    free(acc);
    free(start);
    free(zs);
    return 0;
}

/* push onto a heap that grows (the voxel assignment may hold a voxel
 * several times: once per neighbour that lowered its key) */
static int hpush_grow(heap_ent **h, size_t *n, size_t *cap, heap_ent e, int maxheap)
{
    if (*n == *cap) {
        heap_ent *g = realloc(*h, sizeof **h * (*cap * 2 + 16));
        if (!g)
            return -1;
        *h = g, *cap = *cap * 2 + 16;
    }
    hpush(*h, n, e, maxheap);
    return 0;
}

/* ---- spheres for thin parts (3b) ----
 *
 * The greedy packing places spheres at voxel centres inside the mesh, so a
 * part thinner than about two voxels holds no inside voxel centre and gets
 * no sphere of its own: its surface lies far from every sphere (the comb
 * of test_ist: 0.012-thick fins at 2,000 spheres, 33 voxel sizes), its
 * penetration volume is counted at spheres in the body it hangs from, and
 * distance queries near it are slow and miss (README, known limitations).
 * This pass samples the surface (a barycentric grid, cells at most a voxel
 * across, and each sub-triangle's centroid) and, while a sample lies more
 * than `thin` from every sphere, places one more: from the farthest sample
 * it marches inward along its triangle's normal by sphere tracing (each
 * step the exact distance to the surface, so the march never leaves the
 * solid), takes the point of the march farthest from the surface (the
 * middle of the thin part), and gives it the radius of that distance, less
 * where another sphere comes closer: inside, no overlaps, any size. */

/* prox_ist_def.thin_gap's default, in voxel sizes. The packing leaves the
 * libcgal-demo meshes' surface samples within 4 voxel sizes of a sphere at
 * every resolution of the bench's build table (at the default one,
 * armadillo's between 3 and 4, the others' below 2), so at 4 the pass adds
 * nothing to them (the bench trees and answers stay as they were).
 * Measured lower (IST distance error max against FCL's exact distance,
 * bench random / held-out random poses; callgrind, 40 random and 80
 * coherent poses): 3 adds 2 spheres to armadillo and its random max goes
 * 0.23% -> 10.8% (p99 0 -> 1.9%); 2 adds 10, random max 10.8%, held-out
 * 3.1% -> 8.3%; 1.5 adds 1-74 to each of the five, armadillo's maxima 0.23% ->
 * 0, 3.1% -> 1.1%, its instructions -3% random, -17% coherent, but
 * bunny00's coherent max 0.01% -> 0.18% and fandisk +6% random. The
 * distance refinement's luck on single poses moves with any change of the
 * spheres; the pass is for parts the voxels cannot resolve. */
#define IST_THIN_GAP_DEFAULT 4.0

typedef struct thin_sample {
    prox_vec3 p;
    uint32_t tri;
    double gap; /* an upper bound on its distance to the spheres (|p - c| - r) */
} thin_sample;

/* |p - c| - r: how far p lies outside sphere s */
static inline double sphere_gap(const ist_sphere *s, prox_vec3 p)
{
    double dx = p.x - s->x, dy = p.y - s->y, dz = p.z - s->z;
    return sqrt(dx * dx + dy * dy + dz * dz) - s->r;
}

/* min |p - c| - r over the spheres owning the voxels of the cube `ring`
 * voxels either side of voxel (i, j, k) (INFINITY if none). Before step 4
 * a voxel's owner is the packed sphere covering it (inside voxels only);
 * after it, the sphere a voxel holding mesh volume is assigned to, thin
 * parts' partly filled voxels included. */
static double owner_gap(const prox_ist *t, const int32_t *owner, int nx, int ny, int nz, int i, int j, int k, int ring, prox_vec3 p)
{
    double best = INFINITY;
    for (int a = i - ring < 0 ? 0 : i - ring; a <= i + ring && a < nx; a++)
        for (int b = j - ring < 0 ? 0 : j - ring; b <= j + ring && b < ny; b++)
            for (int c = k - ring < 0 ? 0 : k - ring; c <= k + ring && c < nz; c++) {
                int32_t o = owner[((size_t)a * ny + b) * nz + c];
                double d = o < 0 ? INFINITY : sphere_gap(&t->spheres[o], p);
                best = d < best ? d : best;
            }
    return best;
}

/* an upper bound on min |p - c| - r: the spheres owning voxels within a
 * few rings of p (the nearest ring with any), all spheres if none */
static double sphere_gap_near(const prox_ist *t, uint32_t ns, const int32_t *owner, prox_vec3 origin,
                              double h, int nx, int ny, int nz, prox_vec3 p)
{
    int i = (int)floor((p.x - origin.x) / h), j = (int)floor((p.y - origin.y) / h), k = (int)floor((p.z - origin.z) / h);
    double dv = INFINITY;
    for (int ring = 1; ring <= 3 && !isfinite(dv); ring++)
        dv = owner_gap(t, owner, nx, ny, nz, i, j, k, ring, p);
    if (!isfinite(dv)) /* far from every owned voxel: check all spheres */
        for (uint32_t s = 0; s < ns; s++) {
            double d = sphere_gap(&t->spheres[s], p);
            dv = d < dv ? d : dv;
        }
    return dv;
}

/* exact distance from p to the mesh surface, and the triangle */
static double surface_dist(const aabb_tree *bvh, prox_vec3 p, uint32_t *tri)
{
    double best2 = INFINITY;
    *tri = 0;
    closest_rec(bvh, 0, p, &best2, tri);
    return sqrt(best2);
}

/* The smallest |x - c| - r over the packed spheres near x, before step 4:
 * the covering spheres of the voxels within `reach` of x (every packed
 * sphere that comes within reach - h sqrt(3) of x covers such a voxel:
 * they sit at voxel centres and cover every voxel centre inside them). */
static double sphere_clearance(const prox_ist *t, const int32_t *owner, prox_vec3 origin, double h, int nx, int ny, int nz,
                               prox_vec3 x, double reach)
{
    int i = (int)floor((x.x - origin.x) / h), j = (int)floor((x.y - origin.y) / h), k = (int)floor((x.z - origin.z) / h);
    return owner_gap(t, owner, nx, ny, nz, i, j, k, (int)ceil(reach / h), x);
}

/* The thin spheres placed so far, bucketed on a coarse grid (cells
 * `cell` across) over the voxel grid's box, for the samples' gaps. */
typedef struct thin_grid {
    prox_vec3 origin;
    double cell, rmax; /* rmax: the largest thin radius so far */
    int n[3];
    uint32_t *head, *next; /* per cell, per sphere (from `first`): a list; UINT32_MAX ends it */
} thin_grid;

static size_t thin_cell(const thin_grid *g, prox_vec3 p)
{
    int c[3] = {(int)floor((p.x - g->origin.x) / g->cell), (int)floor((p.y - g->origin.y) / g->cell),
                (int)floor((p.z - g->origin.z) / g->cell)};
    for (int a = 0; a < 3; a++)
        c[a] = c[a] < 0 ? 0 : (c[a] >= g->n[a] ? g->n[a] - 1 : c[a]);
    return ((size_t)c[0] * g->n[1] + c[1]) * g->n[2] + c[2];
}

/* min |p - c| - r over the thin spheres whose centres lie within reach of
 * p (INFINITY if none) */
static double thin_gap_at(const prox_ist *t, uint32_t first, const thin_grid *g, prox_vec3 p, double reach)
{
    double best = INFINITY;
    int lo[3], hi[3];
    const double pc[3] = {p.x, p.y, p.z}, oc[3] = {g->origin.x, g->origin.y, g->origin.z};
    for (int a = 0; a < 3; a++) {
        lo[a] = (int)floor((pc[a] - reach - oc[a]) / g->cell), hi[a] = (int)floor((pc[a] + reach - oc[a]) / g->cell);
        lo[a] = lo[a] < 0 ? 0 : lo[a], hi[a] = hi[a] >= g->n[a] ? g->n[a] - 1 : hi[a];
    }
    for (int i = lo[0]; i <= hi[0]; i++)
        for (int j = lo[1]; j <= hi[1]; j++)
            for (int k = lo[2]; k <= hi[2]; k++)
                for (uint32_t q = g->head[((size_t)i * g->n[1] + j) * g->n[2] + k]; q != UINT32_MAX; q = g->next[q]) {
                    double d = sphere_gap(&t->spheres[first + q], p);
                    best = d < best ? d : best;
                }
    return best;
}

/* Adds spheres (at most `cap`) until no surface sample lies more than
 * `thin` from a sphere, or no more fit; the farthest sample first (a lazy
 * max-heap: a popped sample's gap is brought up to date against the thin
 * spheres within `thin` of it, and it goes back in if that lowered it).
 * Returns the new sphere count, or 0 out of memory (t->spheres may have
 * moved). */
static uint32_t thin_spheres(prox_ist *t, uint32_t ns, uint32_t cap, double thin, const prox_mesh *m, const aabb_tree *bvh,
                             const int32_t *owner, prox_vec3 origin, double h, int nx, int ny, int nz, progress *pr)
{
    const uint32_t first = ns;
    size_t n = 0, scap = 1024, hn = 0, hcap = 1024;
    thin_sample *smp = malloc(sizeof *smp * scap);
    heap_ent *heap = malloc(sizeof *heap * hcap);
    thin_grid g = {origin, thin, 0, {0, 0, 0}, NULL, NULL};
    uint32_t gcap = 0, room = ns;
    for (int a = 0; a < 3; a++) {
        double ext = (a == 0 ? nx : a == 1 ? ny : nz) * h;
        g.n[a] = (int)ceil(ext / g.cell);
        g.n[a] = g.n[a] < 1 ? 1 : (g.n[a] > 1024 ? 1024 : g.n[a]);
        if (ext / g.n[a] > g.cell)
            g.cell = ext / g.n[a]; /* at most 1024 cells a side */
    }
    size_t ncell = (size_t)g.n[0] * g.n[1] * g.n[2];
    g.head = malloc(sizeof *g.head * ncell);
    if (!smp || !heap || !g.head)
        goto oom;
    memset(g.head, 0xff, sizeof *g.head * ncell);
    for (uint32_t ti = 0; ti < m->triangle_count; ti++) {
        prox_vec3 P[3] = {m->vertices[m->triangles[ti][0]], m->vertices[m->triangles[ti][1]], m->vertices[m->triangles[ti][2]]};
        double diam = fmax(prox_v3_dist(P[0], P[1]), fmax(prox_v3_dist(P[1], P[2]), prox_v3_dist(P[2], P[0])));
        int sub = (int)ceil(diam / h);
        sub = sub < 1 ? 1 : (sub > 256 ? 256 : sub);
        prox_vec3 e1 = prox_v3_sub(P[1], P[0]), e2 = prox_v3_sub(P[2], P[0]);
        for (int u = 0; u < sub; u++)
            for (int w = 0; u + w < sub; w++) {
                /* the centroid of the upright sub-triangle at (u, w) */
                double bu = (u + 1.0 / 3) / sub, bw = (w + 1.0 / 3) / sub;
                prox_vec3 p = prox_v3_add(P[0], prox_v3_add(prox_v3_scale(e1, bu), prox_v3_scale(e2, bw)));
                double gp = sphere_gap_near(t, ns, owner, origin, h, nx, ny, nz, p);
                if (!(gp > thin))
                    continue;
                if (n == scap) {
                    thin_sample *nn = realloc(smp, sizeof *smp * scap * 2);
                    if (!nn)
                        goto oom;
                    smp = nn, scap *= 2;
                }
                smp[n] = (thin_sample){p, ti, gp};
                if (hpush_grow(&heap, &hn, &hcap, (heap_ent){(float)gp, (uint32_t)n}, 1) != 0)
                    goto oom;
                n++;
            }
    }
    while (hn > 0 && ns - first < cap) {
        heap_ent e = hpop(heap, &hn, 1);
        thin_sample *sm = &smp[e.idx];
        if (ns > first) {
            double gt = thin_gap_at(t, first, &g, sm->p, thin + g.rmax);
            if (gt < sm->gap)
                sm->gap = gt;
        }
        if (!(sm->gap > thin))
            continue; /* near a sphere now */
        if ((float)sm->gap < e.key) { /* stale: back in with its gap now */
            hpush(heap, &hn, (heap_ent){(float)sm->gap, e.idx}, 1);
            continue;
        }
        const uint32_t *tv = m->triangles[sm->tri];
        prox_vec3 nrm = prox_v3_cross(prox_v3_sub(m->vertices[tv[1]], m->vertices[tv[0]]), prox_v3_sub(m->vertices[tv[2]], m->vertices[tv[0]]));
        double nl = prox_v3_len(nrm);
        if (!(nl > 0))
            continue;
        nrm = prox_v3_scale(nrm, -1.0 / nl); /* inward */
        /* sphere tracing inward: every step stays within the surface-free
         * ball about the last point, so the whole march is inside */
        enum { MARCH = 64 };
        double sv[MARCH], dvv[MARCH], s = 1e-4 * h;
        int nm = 0, ib = -1;
        while (nm < MARCH) {
            uint32_t tri;
            double d = surface_dist(bvh, prox_v3_madd(sm->p, nrm, s), &tri);
            sv[nm] = s, dvv[nm] = d;
            if (ib < 0 || d > dvv[ib])
                ib = nm;
            nm++;
            if (d < 0.5 * dvv[ib] || d < 1e-6 * h)
                break; /* past the middle */
            s += d * (1 - 1e-3);
        }
        if (ib < 0 || !(dvv[ib] > 0) || dvv[0] < 0.999e-4 * h)
            continue; /* the start is nearer another piece of surface than its own triangle: no sure inside */
        /* golden-section refinement of the middle between the marched
         * points beside the best one (both inside) */
        double best_d = dvv[ib], best_s = sv[ib];
        double lo = ib > 0 ? sv[ib - 1] : sv[ib], hi = ib + 1 < nm ? sv[ib + 1] : sv[ib];
        for (int it = 0; it < 16 && hi - lo > 1e-3 * h; it++) {
            double a = hi - 0.618 * (hi - lo), b = lo + 0.618 * (hi - lo);
            uint32_t tri;
            double da = surface_dist(bvh, prox_v3_madd(sm->p, nrm, a), &tri), db = surface_dist(bvh, prox_v3_madd(sm->p, nrm, b), &tri);
            if (da > best_d)
                best_d = da, best_s = a;
            if (db > best_d)
                best_d = db, best_s = b;
            if (da > db)
                hi = b;
            else
                lo = a;
        }
        prox_vec3 c = prox_v3_madd(sm->p, nrm, best_s);
        uint32_t ctri;
        double r = surface_dist(bvh, c, &ctri);
        double clear = sphere_clearance(t, owner, origin, h, nx, ny, nz, c, r + 2 * h);
        if (ns > first) {
            double ct = thin_gap_at(t, first, &g, c, r + g.rmax);
            clear = ct < clear ? ct : clear;
        }
        if (clear < r)
            r = clear;
        ist_sphere sp;
        sp.x = (float)c.x, sp.y = (float)c.y, sp.z = (float)c.z;
        double shift = sqrt((sp.x - c.x) * (sp.x - c.x) + (sp.y - c.y) * (sp.y - c.y) + (sp.z - c.z) * (sp.z - c.z));
        double rr = r * (1 - 1e-6) - shift;
        if (!(rr > 0.01 * h))
            continue; /* no room here */
        sp.r = (float)rr;
        if ((double)sp.r > rr)
            sp.r = nextafterf(sp.r, 0.0f);
        sp.r2 = 0;
        sp.tri = ctri;
        if (ns == room) {
            room = ns + ns / 2 + 64;
            ist_sphere *ns2 = realloc(t->spheres, sizeof *ns2 * ((size_t)room + 1));
            if (!ns2)
                goto oom;
            t->spheres = ns2;
        }
        if (ns - first == gcap) {
            gcap = gcap * 2 + 256;
            uint32_t *nx2 = realloc(g.next, sizeof *nx2 * gcap);
            if (!nx2)
                goto oom;
            g.next = nx2;
        }
        t->spheres[ns] = sp;
        size_t cl = thin_cell(&g, prox_v3(sp.x, sp.y, sp.z));
        g.next[ns - first] = g.head[cl], g.head[cl] = ns - first;
        g.rmax = sp.r > g.rmax ? sp.r : g.rmax;
        ns++;
        if (((ns - first) & 63) == 0)
            progress_show(pr, "thin parts", (double)(ns - first) / cap);
    }
    free(smp);
    free(heap);
    free(g.head);
    free(g.next);
    return ns;
oom:
    free(smp);
    free(heap);
    free(g.head);
    free(g.next);
    return 0;
}

/* Step 4's propagation: the grid, the voxels holding mesh volume, and the
 * best key (surface distance to a sphere) and owner found so far */
typedef struct vox_offer {
    const prox_ist *t;
    prox_vec3 origin;
    double h;
    int nx, ny, nz;
    const uint8_t *inside;
    const uint16_t *frac;
    const uint8_t *final;
    float *key;
    int32_t *owner;
    heap_ent **heap;
    size_t *hn, *hcap;
} vox_offer;

/* Voxel (a, b, c), if on the grid, holding mesh volume and not final,
 * goes to sphere q if q's surface comes nearer its centre than its owner's
 * so far (queued with that key). 0 out of memory, else 1. */
static int offer_voxel(const vox_offer *o, int a, int b, int c, int32_t q)
{
    if (a < 0 || a >= o->nx || b < 0 || b >= o->ny || c < 0 || c >= o->nz)
        return 1;
    size_t u = ((size_t)a * o->ny + b) * o->nz + c;
    if ((!o->inside[u] && !o->frac[u]) || o->final[u])
        return 1;
    const ist_sphere *s = &o->t->spheres[q];
    double dx = o->origin.x + (a + 0.5) * o->h - s->x, dy = o->origin.y + (b + 0.5) * o->h - s->y, dz = o->origin.z + (c + 0.5) * o->h - s->z;
    float kk = (float)(sqrt(dx * dx + dy * dy + dz * dz) - s->r);
    if (!(kk < o->key[u]))
        return 1;
    o->key[u] = kk;
    o->owner[u] = q;
    return hpush_grow(o->heap, o->hn, o->hcap, (heap_ent){kk, (uint32_t)u}, 0) == 0;
}

/* the largest meshes built (see prox_ist_build) */
#define IST_MAX_COORD 0x1p60
#define IST_MAX_VOLUME 0x1p120

int prox_ist_build(const prox_mesh *m, const prox_ist_def *def, prox_ist **out, char *err, size_t errlen)
{
    *out = NULL;
    double t_start = wall_s();
    prox_ist_def d = def ? *def : prox_ist_def_default();
    if (!d.target_spheres)
        d.target_spheres = 4096;
    if (d.min_radius == 0)
        d.min_radius = 0.5;
    if (d.thin_gap == 0)
        d.thin_gap = IST_THIN_GAP_DEFAULT;
    if (!(d.min_radius >= 0.1 && d.min_radius <= 4)) {
        snprintf(err, errlen, "smallest sphere radius %g voxels is outside [0.1, 4]", d.min_radius);
        return -1;
    }
    if (!d.voxels) {
        double v = 48.0 * d.target_spheres;
        d.voxels = (uint32_t)(v < 2e5 ? 2e5 : (v > 2.0e7 ? 2.0e7 : v));
    }
    if (!m || prox_mesh_check_arrays(m) != 0) {
        snprintf(err, errlen, m ? "mesh has a triangle index past its vertices or a vertex that is not finite" : "no mesh");
        return -1;
    }
    if (!m->closed) {
        snprintf(err, errlen, "mesh is not closed (%u boundary edges, %u non-manifold edges); inner sphere trees need a "
                              "watertight mesh", m->boundary_edges, m->nonmanifold_edges);
        return -1;
    }
    if (!(m->volume > 0)) {
        snprintf(err, errlen, "mesh encloses no positive volume (%g); is it inside out?", m->volume);
        return -1;
    }
    /* The tree keeps centres, radii and volumes as floats (FLT_MAX is about
     * 2^128): a cube of side 1e13 (volume 1e39) built, its node volumes
     * became inf in the file and loading refused it; at 1e20 the query
     * answered 0. Volumes up to IST_MAX_VOLUME (the bounding box's, which
     * bounds the mesh's, every sphere's and every node's) leave room for
     * sums and the secondary radii's rescaling; coordinates up to
     * IST_MAX_COORD keep squared distances within the mesh (at most
     * 3 (2^61)^2) finite in the queries' float lanes. A cube of side 1e12
     * builds and answers as the unit cube does, scaled. */
    prox_vec3 bext = prox_v3_sub(m->bbox_max, m->bbox_min);
    double far = fmax(fmax(fabs(m->bbox_min.x), fabs(m->bbox_max.x)),
                      fmax(fmax(fabs(m->bbox_min.y), fabs(m->bbox_max.y)), fmax(fabs(m->bbox_min.z), fabs(m->bbox_max.z))));
    double bvol = bext.x * bext.y * bext.z;
    if (!(far <= IST_MAX_COORD) || !(bvol <= IST_MAX_VOLUME) || !(m->volume <= IST_MAX_VOLUME)) {
        snprintf(err, errlen, "mesh too large for an inner sphere tree: bounding box %g x %g x %g (volume %g), coordinates up to %g; "
                              "the tree holds floats, so at most %g in volume and %g in coordinates: scale it down (--normalize)",
                 bext.x, bext.y, bext.z, bvol > m->volume ? bvol : m->volume, far, IST_MAX_VOLUME, IST_MAX_COORD);
        return -1;
    }
    progress pr = {d.progress && isatty(2), 0};
    aabb_tree tree_s = {0}, *bvh = &tree_s;
    prox_ist *t = calloc(1, sizeof *t);
    if (!t || aabb_build(bvh, m) != 0)
        goto oom;
    /* grid */
    prox_vec3 ext = prox_v3_sub(m->bbox_max, m->bbox_min);
    double h = cbrt(ext.x * ext.y * ext.z / d.voxels);
    double minext = fmin(ext.x, fmin(ext.y, ext.z));
    if (h > minext / 4)
        h = minext / 4; /* at least a few voxels across the thinnest side */
    /* counted in double first: for a long or flat mesh the extent over h
     * passes 2^31 (a rod of 1e10 x 1 x 1 has 4e10 voxels along it) */
    double cells = ist_grid_cells(ext, h);
    if (!(cells <= IST_MAX_GRID_CELLS)) {
        if (h < minext / 4)
            snprintf(err, errlen, "voxel grid of %.0f cells is too large (at most %.0f); ask for fewer voxels (--voxels)", cells,
                     IST_MAX_GRID_CELLS);
        else /* fewer voxels cannot help: h is at most a quarter of the thinnest side */
            snprintf(err, errlen, "mesh too thin for a voxel grid: its bounding box is %g x %g x %g, and 4 voxels across the "
                                  "thinnest side make a grid of %.3g cells (at most %.0f)",
                     ext.x, ext.y, ext.z, cells, IST_MAX_GRID_CELLS);
        goto fail;
    }
    /* Far from the origin against its size, floats cannot place the
     * spheres: each centre is rounded to float and its sphere shrunk by the
     * shift, up to sqrt(3)/2 float spacings at the farthest coordinate (a
     * unit cube at x = 1e7: spacing 1, voxels of 0.017; its radii came out
     * negative, and the tree could not be loaded, or answered penetration
     * volumes of 0). At most a quarter of the smallest radius (the meshes
     * of data/, as they are, stay below 1e-4 of that). */
    double max_shift = 0.5 * sqrt(3.0) * far * 0x1p-23;
    if (max_shift > 0.25 * d.min_radius * h) {
        snprintf(err, errlen, "mesh too far from the origin for its size: floats at coordinates up to %g are %g apart, too coarse for "
                              "spheres of radius %g (its thinnest side is %g); centre it at the origin (--normalize does), or split "
                              "it into less elongated parts",
                 far, far * 0x1p-23, d.min_radius * h, minext);
        goto fail;
    }
    int nx = (int)ceil(ext.x / h) + 2, ny = (int)ceil(ext.y / h) + 2, nz = (int)ceil(ext.z / h) + 2;
    size_t nvox = (size_t)nx * ny * nz;
    prox_vec3 origin = prox_v3_sub(m->bbox_min, prox_v3(h, h, h)); /* centre of cell (i,j,k) = origin + (i+0.5)h */
    /* 1. inside voxels: parity along the column through each voxel centre */
    uint8_t *inside = calloc(nvox, 1);
    float *dist = NULL, *zs = NULL;
    uint32_t *ctri = NULL, *col_start = NULL;
    if (!inside || column_crossings(m, origin, h, nx, ny, 1, &col_start, &zs) != 0)
        goto oom_grid;
    size_t n_inside = 0;
    for (size_t col = 0; col < (size_t)nx * ny; col++) {
        uint32_t p = col_start[col], s1 = col_start[col + 1];
        for (int k = 0; k < nz; k++) {
            double z = origin.z + (k + 0.5) * h;
            while (p < s1 && zs[p] < z)
                p++;
            if ((p - col_start[col]) & 1u) {
                inside[col * nz + k] = 1;
                n_inside++;
            }
        }
    }
    free(zs);
    zs = NULL;
    free(col_start);
    col_start = NULL;
    /* (no voxel centre inside: the thin-part pass may still fill the mesh) */
    /* 2. distance field. Exact within a band: every triangle visits the
     * inside voxels of its bounding box grown by 1.5 h (a voxel whose true
     * distance is <= 1.5 h lies in the grown box of its closest triangle, so
     * it gets its exact value; every inside component touches the surface
     * within h of a boundary voxel). A forward and a backward raster sweep carry
     * the neighbours' closest triangles inward (26-neighbourhood). A swept
     * value is the distance to a real triangle, an upper bound of the true
     * one; packing makes a voxel exact (AABB tree query) before it places a
     * sphere there, so every sphere radius is <= its centre's true surface
     * distance. Voxels no sweep reached are queried exactly here. */
    dist = malloc(sizeof(float) * nvox);
    ctri = malloc(sizeof(uint32_t) * nvox);
    uint8_t *exact = calloc(nvox, 1);
    if (!dist || !ctri || !exact) {
        free(exact);
        goto oom_grid;
    }
    for (size_t v = 0; v < nvox; v++) {
        dist[v] = inside[v] ? INFINITY : -1;
        ctri[v] = UINT32_MAX;
    }
    for (uint32_t ti = 0; ti < m->triangle_count; ti++) {
        prox_vec3 a = m->vertices[m->triangles[ti][0]], b = m->vertices[m->triangles[ti][1]], c = m->vertices[m->triangles[ti][2]];
        double lo[3] = {fmin(a.x, fmin(b.x, c.x)), fmin(a.y, fmin(b.y, c.y)), fmin(a.z, fmin(b.z, c.z))};
        double hi[3] = {fmax(a.x, fmax(b.x, c.x)), fmax(a.y, fmax(b.y, c.y)), fmax(a.z, fmax(b.z, c.z))};
        double org[3] = {origin.x, origin.y, origin.z};
        int n3[3] = {nx, ny, nz}, r0[3], r1[3];
        for (int ax = 0; ax < 3; ax++) {
            r0[ax] = (int)floor((lo[ax] - 1.5 * h - org[ax]) / h - 0.5);
            r1[ax] = (int)ceil((hi[ax] + 1.5 * h - org[ax]) / h - 0.5);
            if (r0[ax] < 0)
                r0[ax] = 0;
            if (r1[ax] > n3[ax] - 1)
                r1[ax] = n3[ax] - 1;
        }
        for (int i = r0[0]; i <= r1[0]; i++)
            for (int j = r0[1]; j <= r1[1]; j++)
                for (int k = r0[2]; k <= r1[2]; k++) {
                    size_t v = ((size_t)i * ny + j) * nz + k;
                    if (!inside[v])
                        continue;
                    prox_vec3 p = prox_v3(origin.x + (i + 0.5) * h, origin.y + (j + 0.5) * h, origin.z + (k + 0.5) * h);
                    float dv = (float)(sqrt(tri_dist2(m, ti, p)) * (1 - 1e-6));
                    if (dv < dist[v]) {
                        dist[v] = dv;
                        ctri[v] = ti;
                    }
                }
        if ((ti & 4095) == 0)
            progress_show(&pr, "surface band", (double)ti / m->triangle_count);
    }
    for (int sweep = 0; sweep < 2; sweep++) {
        int fwd = !(sweep & 1);
        for (size_t step = 0; step < nvox; step++) {
            size_t v = fwd ? step : nvox - 1 - step;
            if (!inside[v])
                continue;
            int i = (int)(v / ((size_t)ny * nz)), j = (int)((v / nz) % ny), k = (int)(v % nz);
            prox_vec3 p = prox_v3(origin.x + (i + 0.5) * h, origin.y + (j + 0.5) * h, origin.z + (k + 0.5) * h);
            uint32_t tried[4] = {ctri[v], ctri[v], ctri[v], ctri[v]};
            for (int q = 0; q < 13; q++) {
                /* the 13 neighbours before v in raster order (after it when sweeping back) */
                int di = q / 9 - 1, dj = (q / 3) % 3 - 1, dk = q % 3 - 1;
                if (!fwd)
                    di = -di, dj = -dj, dk = -dk;
                int a2 = i + di, b2 = j + dj, c2 = k + dk;
                if (a2 < 0 || a2 >= nx || b2 < 0 || b2 >= ny || c2 < 0 || c2 >= nz)
                    continue;
                uint32_t cand = ctri[((size_t)a2 * ny + b2) * nz + c2];
                if (cand == UINT32_MAX || cand == tried[0] || cand == tried[1] || cand == tried[2] || cand == tried[3])
                    continue;
                tried[q & 3] = cand;
                float dv = (float)(sqrt(tri_dist2(m, cand, p)) * (1 - 1e-6));
                if (dv < dist[v]) {
                    dist[v] = dv;
                    ctri[v] = cand;
                }
            }
        }
        progress_show(&pr, "distance sweeps", (sweep + 1) / 2.0);
    }
    for (size_t v = 0; v < nvox; v++) {
        if (!inside[v] || ctri[v] != UINT32_MAX)
            continue;
        int i = (int)(v / ((size_t)ny * nz)), j = (int)((v / nz) % ny), k = (int)(v % nz);
        prox_vec3 p = prox_v3(origin.x + (i + 0.5) * h, origin.y + (j + 0.5) * h, origin.z + (k + 0.5) * h);
        double best2 = INFINITY;
        uint32_t tri = 0;
        closest_rec(bvh, 0, p, &best2, &tri);
        dist[v] = (float)(sqrt(best2) * (1 - 1e-6));
        ctri[v] = tri;
        exact[v] = 1;
    }
    /* 3. greedy packing */
    heap_ent *heap = malloc(sizeof(heap_ent) * (n_inside + 1));
    t->spheres = malloc(sizeof(ist_sphere) * (d.target_spheres + 1));
    int32_t *owner = malloc(sizeof(int32_t) * nvox); /* sphere covering or assigned; -1 none */
    float *free_r = dist; /* reuse: the free radius starts as the surface distance */
    float *surf = malloc(sizeof(float) * nvox);
    if (!heap || !t->spheres || !owner || !surf) {
        free(heap);
        free(owner);
        free(surf);
        free(exact);
        goto oom_grid;
    }
    memcpy(surf, dist, sizeof(float) * nvox);
    size_t hn = 0;
    for (size_t v = 0; v < nvox; v++) {
        owner[v] = -1;
        if (inside[v])
            hpush(heap, &hn, (heap_ent){free_r[v], (uint32_t)v}, 1);
    }
    /* spheres down to half a voxel by default: near the surface the free
     * radius of the remaining voxels falls below that before fine targets
     * (bunny, 100k: 28.8k spheres at 0.5 h; 100k at 0.25 h); smaller ones
     * on request (min_radius) */
    const float rmin = (float)(d.min_radius * h);
    uint32_t ns = 0;
    while (hn && ns < d.target_spheres) {
        heap_ent e = hpop(heap, &hn, 1);
        size_t v = e.idx;
        if (owner[v] >= 0)
            continue; /* covered */
        if (e.key > free_r[v]) { /* stale: reinsert with its current value */
            hpush(heap, &hn, (heap_ent){free_r[v], e.idx}, 1);
            continue;
        }
        int i = (int)(v / ((size_t)ny * nz)), j = (int)((v / nz) % ny), k = (int)(v % nz);
        if (!exact[v]) { /* the swept surface distance is an upper bound: make it exact */
            prox_vec3 p = prox_v3(origin.x + (i + 0.5) * h, origin.y + (j + 0.5) * h, origin.z + (k + 0.5) * h);
            double best2 = tri_dist2(m, ctri[v], p);
            best2 = best2 * (1 + 1e-12) + 1e-300;
            uint32_t tri = ctri[v];
            closest_rec(bvh, 0, p, &best2, &tri);
            float ex = (float)(sqrt(best2) * (1 - 1e-6));
            exact[v] = 1;
            ctri[v] = tri;
            if (ex < free_r[v]) {
                free_r[v] = ex;
                hpush(heap, &hn, (heap_ent){ex, e.idx}, 1);
                continue;
            }
        }
        if (e.key < rmin)
            break;
        double r = e.key;
        double cx = origin.x + (i + 0.5) * h, cy = origin.y + (j + 0.5) * h, cz = origin.z + (k + 0.5) * h;
        ist_sphere *s = &t->spheres[ns];
        s->x = (float)cx, s->y = (float)cy, s->z = (float)cz;
        /* the float centre moved by up to half an ulp per axis: shrink by
         * that shift (keeps the sphere inside and off its neighbours) and
         * round the float radius down */
        double shift = sqrt((s->x - cx) * (s->x - cx) + (s->y - cy) * (s->y - cy) + (s->z - cz) * (s->z - cz));
        double rr = r * (1 - 1e-6) - shift;
        s->r = (float)rr;
        if ((double)s->r > rr)
            s->r = nextafterf(s->r, 0.0f);
        s->tri = ctri[v];
        int reach = (int)ceil(2 * r / h) + 1;
        for (int a = i - reach; a <= i + reach; a++) {
            if (a < 0 || a >= nx)
                continue;
            for (int b = j - reach; b <= j + reach; b++) {
                if (b < 0 || b >= ny)
                    continue;
                for (int c = k - reach; c <= k + reach; c++) {
                    if (c < 0 || c >= nz)
                        continue;
                    size_t w = ((size_t)a * ny + b) * nz + c;
                    if (!inside[w] || owner[w] >= 0)
                        continue;
                    double dx = (a - i) * h, dy = (b - j) * h, dz = (c - k) * h;
                    double dd = sqrt(dx * dx + dy * dy + dz * dz);
                    if (dd <= r)
                        owner[w] = (int32_t)ns;
                    else if (dd - r < free_r[w])
                        free_r[w] = (float)((dd - r) * (1 - 1e-6)); /* never touch the new sphere */
                }
            }
        }
        owner[v] = (int32_t)ns;
        ns++;
        if ((ns & 255) == 0)
            progress_show(&pr, "packing spheres", (double)ns / d.target_spheres);
    }
    progress_show(&pr, "packing spheres", 1.0);
    if (d.thin_gap > 0 && m->oriented) {
        /* 3b. spheres for thin parts (see thin_spheres) */
        uint32_t n2 = thin_spheres(t, ns, d.target_spheres, d.thin_gap * h, m, bvh, owner, origin, h, nx, ny, nz, &pr);
        if (n2 == 0) {
            free(heap);
            free(owner);
            free(surf);
            free(exact);
            goto oom_grid;
        }
        t->thin_spheres = n2 - ns;
        ns = n2;
    }
    const uint32_t ns_packed = ns - t->thin_spheres;
    t->sphere_count = ns;
    if (ns == 0) {
        free(heap);
        free(owner);
        free(surf);
        free(exact);
        snprintf(err, errlen, "no inner sphere fits: the voxels (%zu inside) are too coarse for this mesh%s", n_inside,
                 d.thin_gap > 0 && m->oriented ? "" : " (and the thin-part pass was off)");
        goto fail_grid;
    }
    /* 4. assign every voxel holding mesh volume (its centre inside, or a
     * part of it: voxel_fractions) to its nearest sphere (surface
     * distance), by Dijkstra-style propagation from the voxels the spheres
     * cover over the voxel grid */
    uint16_t *frac = malloc(sizeof *frac * nvox);
    uint8_t *final = calloc(nvox, 1);
    double *wsum = calloc(ns, sizeof *wsum), (*csum)[3] = calloc(ns, sizeof *csum);
    size_t hcap = n_inside + 1;
    t->sec = malloc(sizeof *t->sec * ns);
    if (!frac || !final || !wsum || !csum || !t->sec || voxel_fractions(m, origin, h, nx, ny, nz, frac) != 0) {
        free(frac), free(final), free(wsum), free(csum);
        free(heap), free(owner), free(surf), free(exact);
        goto oom_grid;
    }
    float *key = dist; /* reuse */
    hn = 0;
    for (size_t v = 0; v < nvox; v++) {
        key[v] = INFINITY;
        if (inside[v] && owner[v] >= 0) {
            const ist_sphere *s = &t->spheres[owner[v]];
            int i = (int)(v / ((size_t)ny * nz)), j = (int)((v / nz) % ny), k = (int)(v % nz);
            double dx = origin.x + (i + 0.5) * h - s->x, dy = origin.y + (j + 0.5) * h - s->y, dz = origin.z + (k + 0.5) * h - s->z;
            key[v] = (float)(sqrt(dx * dx + dy * dy + dz * dz) - s->r);
            hpush(heap, &hn, (heap_ent){key[v], (uint32_t)v}, 0); /* at most n_inside of these */
        }
    }
    int heap_ok = 1;
    vox_offer vo = {t, origin, h, nx, ny, nz, inside, frac, final, key, owner, &heap, &hn, &hcap};
    /* thin spheres cover no voxel centre: each starts from the voxels
     * about its centre that hold mesh volume */
    for (uint32_t q = ns_packed; q < ns && heap_ok; q++) {
        const ist_sphere *s = &t->spheres[q];
        int i = (int)floor((s->x - origin.x) / h), j = (int)floor((s->y - origin.y) / h), k = (int)floor((s->z - origin.z) / h);
        for (int a = i - 1; a <= i + 1; a++)
            for (int b = j - 1; b <= j + 1; b++)
                for (int cc = k - 1; cc <= k + 1; cc++)
                    heap_ok &= offer_voxel(&vo, a, b, cc, (int32_t)q);
    }
    while (hn && heap_ok) {
        heap_ent e = hpop(heap, &hn, 0);
        size_t v = e.idx;
        if (final[v] || e.key > key[v])
            continue;
        final[v] = 1;
        int i = (int)(v / ((size_t)ny * nz)), j = (int)((v / nz) % ny), k = (int)(v % nz);
        double w = frac[v] / 65535.0, *c = csum[owner[v]];
        wsum[owner[v]] += w;
        c[0] += w * (i + 0.5) * h, c[1] += w * (j + 0.5) * h, c[2] += w * (k + 0.5) * h;
        static const int nb[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
        for (int q = 0; q < 6 && heap_ok; q++)
            heap_ok = offer_voxel(&vo, i + nb[q][0], j + nb[q][1], k + nb[q][2], owner[v]);
    }
    free(heap);
    free(frac);
    if (!heap_ok) {
        free(final), free(wsum), free(csum);
        free(owner), free(surf), free(exact);
        goto oom_grid;
    }
    /* each secondary sphere sits at the centroid of its voxels' volume
     * (the volume it stands for lies there, not at the inner sphere's
     * centre, which near the surface is up to a radius deeper) and holds
     * that volume; all radii scaled by one factor so the secondary volumes
     * add up to the mesh volume (what the lines through the voxels miss
     * between them: fractions of a percent) */
    double assigned = 0, vox_vol = h * h * h;
    for (uint32_t s = 0; s < ns; s++)
        assigned += wsum[s];
    if (!(assigned > 0)) { /* (only thin spheres, in parts the lines through the voxels all miss) */
        free(final), free(wsum), free(csum);
        free(owner), free(surf), free(exact);
        snprintf(err, errlen, "no voxel holds a measurable part of the mesh's volume: too thin for %zu voxels; ask for more (--voxels)",
                 nvox);
        goto fail_grid;
    }
    const double scale = m->volume / (assigned * vox_vol);
    for (uint32_t s = 0; s < ns; s++) {
        ist_sphere *sp = &t->spheres[s];
        double w = wsum[s];
        t->sec[s][0] = w > 0 ? (float)(origin.x + csum[s][0] / w) : sp->x;
        t->sec[s][1] = w > 0 ? (float)(origin.y + csum[s][1] / w) : sp->y;
        t->sec[s][2] = w > 0 ? (float)(origin.z + csum[s][2] / w) : sp->z;
        sp->r2 = (float)cbrt(3.0 * w * vox_vol * scale / (4.0 * M_PI));
        t->sec[s][3] = sp->r2;
    }
    free(wsum);
    free(csum);
    /* 5. certified surface gap: each triangle is sampled on a barycentric
     * grid whose cells have diameter at most `cell` (<= one voxel); any
     * point of the triangle is within `cell` of a sample, and the distance
     * to the sphere union is 1-Lipschitz, so gap <= max over samples of
     * their distance (bounded from above by spheres found near them) + cell */
    double gap = 0;
    for (uint32_t ti = 0; ti < m->triangle_count; ti++) {
        prox_vec3 P[3] = {m->vertices[m->triangles[ti][0]], m->vertices[m->triangles[ti][1]], m->vertices[m->triangles[ti][2]]};
        double diam = fmax(prox_v3_dist(P[0], P[1]), fmax(prox_v3_dist(P[1], P[2]), prox_v3_dist(P[2], P[0])));
        int sub = (int)ceil(diam / h);
        if (sub < 1)
            sub = 1;
        if (sub > 256)
            sub = 256;
        double cell = diam / sub;
        for (int u = 0; u <= sub; u++)
            for (int w = 0; u + w <= sub; w++) {
                double bu = (double)u / sub, bw = (double)w / sub;
                prox_vec3 p = prox_v3_add(P[0], prox_v3_add(prox_v3_scale(prox_v3_sub(P[1], P[0]), bu), prox_v3_scale(prox_v3_sub(P[2], P[0]), bw)));
                double dv = sphere_gap_near(t, ns, owner, origin, h, nx, ny, nz, p);
                double g = (dv > 0 ? dv : 0) + cell;
                if (g > gap)
                    gap = g;
            }
    }
    free(owner);
    free(surf);
    free(exact);
    free(final);
    free(dist);
    free(ctri);
    free(inside);
    dist = NULL, ctri = NULL, inside = NULL;
    t->voxel_size = h;
    t->voxels_inside = (uint32_t)n_inside;
    t->voxel_volume = assigned * vox_vol;
    t->surface_gap = gap * (1 + 1e-6);
    /* 6. hierarchy */
    t->nodes = malloc(sizeof(ist_node) * (ns + 1));
    uint32_t *order = malloc(sizeof(uint32_t) * ns);
    uint32_t *scratch = malloc(sizeof(uint32_t) * 2 * ns);
    if (!t->nodes || !order || !scratch) {
        free(order);
        free(scratch);
        goto oom;
    }
    for (uint32_t s = 0; s < ns; s++)
        order[s] = s;
    if (derive_spheres(t) != 0) {
        free(order);
        free(scratch);
        goto oom;
    }
    builder B = {t, order, ns + 1};
    t->tree.root = build_node(&B, order, ns, scratch, 0);
    enclose(t, order, ns, t->root);
    t->root_leaves = ns;
    double vsum = 0;
    for (uint32_t s = 0; s < ns; s++)
        vsum += sphere_vol2(&t->spheres[s]);
    t->root_vol = vsum;
    free(order);
    free(scratch);
    /* 7. the mesh, for exact distance refinement */
    t->verts = malloc(sizeof(prox_vec3) * m->vertex_count);
    t->tris = malloc(sizeof(uint32_t[3]) * m->triangle_count);
    if (!t->verts || !t->tris)
        goto oom;
    memcpy(t->verts, m->vertices, sizeof(prox_vec3) * m->vertex_count);
    memcpy(t->tris, m->triangles, sizeof(uint32_t[3]) * m->triangle_count);
    t->vert_count = m->vertex_count;
    t->tri_count = m->triangle_count;
    t->mesh_volume = m->volume;
    t->com = m->centroid;
    t->tree.type = PROX_TREE_IST;
    t->tree.impl = t;
    t->tree.volume = m->volume;
    t->tree.com = m->centroid;
    if (ist_derive(t) != 0)
        goto oom;
    t->build_seconds = wall_s() - t_start;
    free(bvh->n);
    *out = t;
    return 0;
oom_grid:
    snprintf(err, errlen, "out of memory building the voxel grid (%zu cells)", nvox);
fail_grid:
    free(col_start);
    free(zs);
    free(inside);
    free(dist);
    free(ctri);
    goto fail;
oom:
    snprintf(err, errlen, "out of memory building the inner sphere tree");
fail:
    free(bvh->n);
    prox_ist_free(t);
    return -1;
}

void prox_ist_get_stats(const prox_ist *t, prox_ist_stats *o)
{
    memset(o, 0, sizeof *o);
    o->spheres = t->sphere_count;
    o->thin_spheres = t->thin_spheres;
    o->nodes = t->node_count;
    o->voxels_inside = t->voxels_inside;
    o->voxel_size = t->voxel_size;
    o->mesh_volume = t->mesh_volume;
    for (uint32_t s = 0; s < t->sphere_count; s++) {
        double r = t->spheres[s].r, r2 = t->spheres[s].r2;
        o->inner_volume += 4.0 / 3.0 * M_PI * r * r * r;
        o->secondary_volume += 4.0 / 3.0 * M_PI * r2 * r2 * r2;
    }
    o->voxel_volume = t->voxel_volume;
    o->surface_gap = t->surface_gap;
    /* everything a loaded tree holds: the stored arrays and what loading
     * derives (per node record, per sphere, the triangle box tree and its
     * wide copy) */
    const size_t n = t->node_count, s = t->sphere_count, b = t->tritree.nodes ? t->tritree.node_count : 0;
    o->memory_bytes = sizeof *t + n * (sizeof(ist_node) + sizeof(float[4]) * 5 + sizeof(float) + sizeof(uint32_t) + sizeof(float[16]) +
                                       sizeof(ist_vrec)) +
                      s * (sizeof(ist_sphere) + sizeof(float[4]) + 2 * sizeof(float)) + sizeof(prox_vec3) * t->vert_count +
                      t->tri_count * (2 * sizeof(uint32_t[3]) + sizeof(uint32_t) + sizeof(float[9])) +
                      b * (sizeof(ist_box) + sizeof(float[15])) + sizeof(ist_wnode) * t->tritree.wide_count +
                      sizeof(ist_wleaf) * t->tritree.wleaf_count + IST_TRI_FLAT_BYTES(t->tri_count);
    o->mesh_bvh_bytes = t->mesh_bvh ? prox_bvh_memory_bytes(t->mesh_bvh) : 0;
    o->memory_bytes += o->mesh_bvh_bytes;
    o->build_seconds = t->build_seconds;
}
