/* bvh.c - building the mesh BVH, the OBB gap bound, point containment.
 *
 * Why OBBs with a separating-axis gap bound: one routine gives both the
 * overlap test (gap <= 0) and a certified distance lower bound (the largest
 * gap over the 15 separating axes: projection onto a unit axis never
 * lengthens a segment), and the covariance-fitted boxes are tight on
 * scanned meshes. The sphere bound about the box centre is taken too.
 */
#include <stdlib.h>
#include <string.h>

#include "bvh_internal.h"

double prox_obb_gap(const bvh_node *a, const prox_mat3 *Rb, prox_vec3 cb, prox_vec3 eb_v)
{
    /* B's axes and centre in A's box coordinates */
    prox_mat3 R;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            R.m[i][j] = a->R.m[0][i] * Rb->m[0][j] + a->R.m[1][i] * Rb->m[1][j] + a->R.m[2][i] * Rb->m[2][j];
    prox_vec3 d = prox_v3_sub(cb, a->c);
    double T[3] = {prox_v3_dot(prox_m3_col(&a->R, 0), d), prox_v3_dot(prox_m3_col(&a->R, 1), d),
                   prox_v3_dot(prox_m3_col(&a->R, 2), d)};
    double ea[3] = {a->e.x, a->e.y, a->e.z}, eb[3] = {eb_v.x, eb_v.y, eb_v.z};
    double AR[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            AR[i][j] = fabs(R.m[i][j]) + 1e-12;
    double best = -INFINITY, g;
    for (int i = 0; i < 3; i++) {
        g = fabs(T[i]) - ea[i] - (eb[0] * AR[i][0] + eb[1] * AR[i][1] + eb[2] * AR[i][2]);
        if (g > best)
            best = g;
    }
    for (int j = 0; j < 3; j++) {
        double t = T[0] * R.m[0][j] + T[1] * R.m[1][j] + T[2] * R.m[2][j];
        g = fabs(t) - (ea[0] * AR[0][j] + ea[1] * AR[1][j] + ea[2] * AR[2][j]) - eb[j];
        if (g > best)
            best = g;
    }
    for (int i = 0; i < 3; i++) {
        int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; j++) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            double len = sqrt(R.m[i1][j] * R.m[i1][j] + R.m[i2][j] * R.m[i2][j]);
            if (len < 1e-6)
                continue; /* parallel axes: covered by the face axes */
            double t = fabs(T[i2] * R.m[i1][j] - T[i1] * R.m[i2][j]);
            double ra = ea[i1] * AR[i2][j] + ea[i2] * AR[i1][j];
            double rb = eb[j1] * AR[i][j2] + eb[j2] * AR[i][j1];
            g = (t - ra - rb) / (len * (1.0 + 1e-12));
            if (g > best)
                best = g;
        }
    }
    return best;
}

/* Closest distance between segments (squared), no witnesses. */
static double segseg2(prox_vec3 p1, prox_vec3 q1, prox_vec3 p2, prox_vec3 q2)
{
    prox_vec3 d1 = prox_v3_sub(q1, p1), d2 = prox_v3_sub(q2, p2), r = prox_v3_sub(p1, p2);
    double a = prox_v3_dot(d1, d1), e = prox_v3_dot(d2, d2), f = prox_v3_dot(d2, r);
    double c = prox_v3_dot(d1, r), b = prox_v3_dot(d1, d2);
    double denom = a * e - b * b, s = 0, t;
    if (denom > 1e-14 * a * e) {
        s = (b * f - c * e) / denom;
        s = s < 0 ? 0 : (s > 1 ? 1 : s);
    }
    t = e > 0 ? (b * s + f) / e : 0;
    if (t < 0) {
        t = 0;
        s = a > 0 ? -c / a : 0;
        s = s < 0 ? 0 : (s > 1 ? 1 : s);
    } else if (t > 1) {
        t = 1;
        s = a > 0 ? (b - c) / a : 0;
        s = s < 0 ? 0 : (s > 1 ? 1 : s);
    }
    prox_vec3 w = prox_v3_sub(prox_v3_madd(p1, d1, s), prox_v3_madd(p2, d2, t));
    return prox_v3_dot(w, w);
}

/* distance from p (rectangle coordinates) to the rectangle [-e1,e1]x[-e2,e2]x{0} */
static double point_rect2(prox_vec3 p, double e1, double e2)
{
    double dx = fabs(p.x) - e1, dy = fabs(p.y) - e2;
    dx = dx > 0 ? dx : 0;
    dy = dy > 0 ? dy : 0;
    return dx * dx + dy * dy + p.z * p.z;
}

/* does segment pq (rectangle coordinates) cross the rectangle? */
static int seg_crosses_rect(prox_vec3 p, prox_vec3 q, double e1, double e2)
{
    if ((p.z > 0 && q.z > 0) || (p.z < 0 && q.z < 0) || p.z == q.z)
        return 0;
    double t = p.z / (p.z - q.z);
    double x = p.x + (q.x - p.x) * t, y = p.y + (q.y - p.y) * t;
    return fabs(x) <= e1 && fabs(y) <= e2;
}

double prox_rss_gap(const bvh_node *a, const prox_mat3 *Rb, prox_vec3 cb, prox_vec3 eb)
{
    /* B's rectangle in A's box coordinates; A's rectangle in B's */
    prox_vec3 d = prox_v3_sub(cb, a->c);
    prox_vec3 cbl = prox_m3_tmul_v(&a->R, d);
    prox_vec3 v1 = prox_m3_tmul_v(&a->R, prox_m3_col(Rb, 0)), v2 = prox_m3_tmul_v(&a->R, prox_m3_col(Rb, 1));
    prox_vec3 v3 = prox_v3_cross(v1, v2);
    double e1 = a->e.x, e2 = a->e.y, f1 = eb.x, f2 = eb.y;
    prox_vec3 B[4], A[4], Ab[4], Bl[4];
    for (int k = 0; k < 4; k++) {
        double s1 = (k == 1 || k == 2) ? 1 : -1, s2 = (k >= 2) ? 1 : -1;
        B[k] = prox_v3_add(cbl, prox_v3_add(prox_v3_scale(v1, s1 * f1), prox_v3_scale(v2, s2 * f2)));
        A[k] = prox_v3(s1 * e1, s2 * e2, 0);
        prox_vec3 w = prox_v3_sub(A[k], cbl);
        Ab[k] = prox_v3(prox_v3_dot(w, v1), prox_v3_dot(w, v2), prox_v3_dot(w, v3));
        Bl[k] = B[k];
    }
    double best = INFINITY;
    for (int k = 0; k < 4; k++) {
        double x = point_rect2(Bl[k], e1, e2);
        if (x < best)
            best = x;
        x = point_rect2(Ab[k], f1, f2);
        if (x < best)
            best = x;
    }
    for (int k = 0; k < 4; k++) {
        if (seg_crosses_rect(Bl[k], Bl[(k + 1) & 3], e1, e2) || seg_crosses_rect(Ab[k], Ab[(k + 1) & 3], f1, f2))
            return -1.0;
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double x = segseg2(A[i], A[(i + 1) & 3], B[j], B[(j + 1) & 3]);
            if (x < best)
                best = x;
        }
    return sqrt(best) * (1.0 - 1e-12) - a->e.z - eb.z;
}

/* ---- build ---- */

typedef struct build_ctx {
    prox_bvh *b;
    uint32_t *idx;       /* triangle indices being partitioned */
    prox_vec3 *centroid; /* per triangle */
} build_ctx;

static void fit_box(build_ctx *bc, uint32_t *idx, uint32_t n, bvh_node *node)
{
    const prox_vec3(*tri)[3] = (const prox_vec3(*)[3])bc->b->tri;
    /* area-weighted covariance of the triangles (PQP/Gottschalk) */
    double area_sum = 0;
    prox_vec3 mean = {0, 0, 0};
    double C[3][3] = {{0}};
    for (uint32_t k = 0; k < n; k++) {
        const prox_vec3 *t = tri[idx[k]];
        double ar = 0.5 * prox_v3_len(prox_v3_cross(prox_v3_sub(t[1], t[0]), prox_v3_sub(t[2], t[0]))) + 1e-300;
        prox_vec3 c = bc->centroid[idx[k]];
        area_sum += ar;
        mean = prox_v3_madd(mean, c, ar);
        double p[3][3] = {{t[0].x, t[0].y, t[0].z}, {t[1].x, t[1].y, t[1].z}, {t[2].x, t[2].y, t[2].z}};
        double cc[3] = {c.x, c.y, c.z};
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                C[i][j] += ar / 12.0 * (9 * cc[i] * cc[j] + p[0][i] * p[0][j] + p[1][i] * p[1][j] + p[2][i] * p[2][j]);
    }
    mean = prox_v3_scale(mean, 1.0 / area_sum);
    double mm[3] = {mean.x, mean.y, mean.z};
    prox_mat3 cov;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            cov.m[i][j] = C[i][j] / area_sum - mm[i] * mm[j];
    double ev[3];
    prox_mat3 axes;
    prox_sym3_eigen(&cov, ev, &axes);
    prox_vec3 lo = {INFINITY, INFINITY, INFINITY}, hi = {-INFINITY, -INFINITY, -INFINITY};
    prox_vec3 ax[3] = {prox_m3_col(&axes, 0), prox_m3_col(&axes, 1), prox_m3_col(&axes, 2)};
    for (uint32_t k = 0; k < n; k++)
        for (int v = 0; v < 3; v++) {
            prox_vec3 p = tri[idx[k]][v];
            prox_vec3 q = prox_v3(prox_v3_dot(ax[0], p), prox_v3_dot(ax[1], p), prox_v3_dot(ax[2], p));
            lo = prox_v3_min(lo, q);
            hi = prox_v3_max(hi, q);
        }
    /* order the axes by extent (largest first) so that axes 0 and 1 span
     * the node's rectangle (the RSS bound) and axis 2 is its thickness */
    int ord[3] = {0, 1, 2};
    double ext[3] = {hi.x - lo.x, hi.y - lo.y, hi.z - lo.z};
    for (int i = 0; i < 2; i++)
        for (int j = i + 1; j < 3; j++)
            if (ext[ord[j]] > ext[ord[i]]) {
                int t = ord[i];
                ord[i] = ord[j];
                ord[j] = t;
            }
    double lov[3] = {lo.x, lo.y, lo.z}, hiv[3] = {hi.x, hi.y, hi.z};
    prox_mat3 sorted;
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++)
            sorted.m[i][j] = axes.m[i][ord[j]];
    prox_vec3 c2 = prox_v3_cross(prox_m3_col(&sorted, 0), prox_m3_col(&sorted, 1));
    int flip = prox_v3_dot(c2, prox_m3_col(&sorted, 2)) < 0;
    if (flip)
        for (int i = 0; i < 3; i++)
            sorted.m[i][2] = -sorted.m[i][2];
    axes = sorted;
    lo = prox_v3(lov[ord[0]], lov[ord[1]], flip ? -hiv[ord[2]] : lov[ord[2]]);
    hi = prox_v3(hiv[ord[0]], hiv[ord[1]], flip ? -lov[ord[2]] : hiv[ord[2]]);
    prox_vec3 mid = prox_v3_scale(prox_v3_add(lo, hi), 0.5);
    node->R = axes;
    node->c = prox_m3_mul_v(&axes, mid);
    /* inflate by a relative rounding margin so the bound stays conservative */
    double pad = 1e-12 * (fabs(hi.x) + fabs(hi.y) + fabs(hi.z) + fabs(lo.x) + fabs(lo.y) + fabs(lo.z)) + 1e-300;
    node->e = prox_v3((hi.x - lo.x) * 0.5 + pad, (hi.y - lo.y) * 0.5 + pad, (hi.z - lo.z) * 0.5 + pad);
    node->radius = prox_v3_len(node->e);
}

static uint32_t build_rec(build_ctx *bc, uint32_t *idx, uint32_t n)
{
    prox_bvh *b = bc->b;
    uint32_t me = b->node_count++;
    bvh_node *node = &b->nodes[me];
    fit_box(bc, idx, n, node);
    if (n == 1) {
        node->left = idx[0];
        node->right = UINT32_MAX;
        return me;
    }
    /* split at the mean of centroids along the box's longest axis */
    int axis = 0;
    double ext[3] = {node->e.x, node->e.y, node->e.z};
    if (ext[1] > ext[axis])
        axis = 1;
    if (ext[2] > ext[axis])
        axis = 2;
    prox_vec3 dir = prox_m3_col(&node->R, axis);
    double mean = 0;
    for (uint32_t k = 0; k < n; k++)
        mean += prox_v3_dot(dir, bc->centroid[idx[k]]);
    mean /= n;
    uint32_t i = 0, j = n;
    while (i < j) {
        if (prox_v3_dot(dir, bc->centroid[idx[i]]) < mean)
            i++;
        else {
            uint32_t t = idx[--j];
            idx[j] = idx[i];
            idx[i] = t;
        }
    }
    if (i == 0 || i == n)
        i = n / 2; /* all centroids on one side: split the list in half */
    uint32_t l = build_rec(bc, idx, i);
    uint32_t r = build_rec(bc, idx + i, n - i);
    node = &b->nodes[me]; /* (the array does not move; kept for clarity) */
    node->left = l;
    node->right = r;
    return me;
}

prox_bvh *prox_bvh_build(const prox_mesh *m)
{
    if (!m || m->triangle_count == 0)
        return NULL;
    prox_bvh *b = calloc(1, sizeof *b);
    uint32_t n = m->triangle_count;
    build_ctx bc = {b, malloc(sizeof(uint32_t) * n), malloc(sizeof(prox_vec3) * n)};
    if (!b || !bc.idx || !bc.centroid)
        goto fail;
    b->tri = malloc(sizeof *b->tri * n);
    b->nodes = malloc(sizeof(bvh_node) * (2 * (size_t)n - 1));
    if (!b->tri || !b->nodes)
        goto fail;
    b->tri_count = n;
    for (uint32_t t = 0; t < n; t++) {
        for (int k = 0; k < 3; k++)
            b->tri[t][k] = m->vertices[m->triangles[t][k]];
        bc.idx[t] = t;
        bc.centroid[t] = prox_v3_scale(prox_v3_add(prox_v3_add(b->tri[t][0], b->tri[t][1]), b->tri[t][2]), 1.0 / 3.0);
    }
    build_rec(&bc, bc.idx, n);
    free(bc.idx);
    free(bc.centroid);
    b->closed = m->closed;
    b->tree.type = PROX_TREE_MESH;
    b->tree.root = 0;
    b->tree.impl = b;
    b->tree.volume = m->closed ? m->volume : 0.0;
    b->tree.com = m->centroid;
    return b;
fail:
    free(bc.idx);
    free(bc.centroid);
    prox_bvh_free(b);
    return NULL;
}

void prox_bvh_free(prox_bvh *b)
{
    if (!b)
        return;
    free(b->nodes);
    free(b->tri);
    free(b);
}

const prox_tree *prox_bvh_tree(const prox_bvh *b) { return &b->tree; }
uint32_t prox_bvh_node_count(const prox_bvh *b) { return b->node_count; }
uint32_t prox_bvh_triangle_count(const prox_bvh *b) { return b->tri_count; }
size_t prox_bvh_memory_bytes(const prox_bvh *b)
{
    return sizeof *b + sizeof(bvh_node) * b->node_count + sizeof *b->tri * b->tri_count;
}

/* ---- containment ---- */

static int ray_hits_box(const bvh_node *n, prox_vec3 o, prox_vec3 d)
{
    prox_vec3 lo = prox_m3_tmul_v(&n->R, prox_v3_sub(o, n->c)), ld = prox_m3_tmul_v(&n->R, d);
    double t0 = 0, t1 = INFINITY;
    double O[3] = {lo.x, lo.y, lo.z}, D[3] = {ld.x, ld.y, ld.z}, E[3] = {n->e.x, n->e.y, n->e.z};
    for (int i = 0; i < 3; i++) {
        if (fabs(D[i]) < 1e-300) {
            if (fabs(O[i]) > E[i])
                return 0;
            continue;
        }
        double a = (-E[i] - O[i]) / D[i], b = (E[i] - O[i]) / D[i];
        if (a > b) {
            double t = a;
            a = b;
            b = t;
        }
        if (a > t0)
            t0 = a;
        if (b < t1)
            t1 = b;
        if (t0 > t1)
            return 0;
    }
    return 1;
}

/* Moller-Trumbore; counts a hit with t > 0. */
static int ray_hits_tri(const prox_vec3 t[3], prox_vec3 o, prox_vec3 d)
{
    prox_vec3 e1 = prox_v3_sub(t[1], t[0]), e2 = prox_v3_sub(t[2], t[0]);
    prox_vec3 p = prox_v3_cross(d, e2);
    double det = prox_v3_dot(e1, p);
    if (fabs(det) < 1e-300)
        return 0;
    double inv = 1.0 / det;
    prox_vec3 s = prox_v3_sub(o, t[0]);
    double u = prox_v3_dot(s, p) * inv;
    if (u < 0 || u > 1)
        return 0;
    prox_vec3 q = prox_v3_cross(s, e1);
    double v = prox_v3_dot(d, q) * inv;
    if (v < 0 || u + v > 1)
        return 0;
    return prox_v3_dot(e2, q) * inv > 0;
}

static uint32_t ray_count(const prox_bvh *b, prox_vec3 o, prox_vec3 d)
{
    uint32_t stack[128], sp = 0, hits = 0;
    stack[sp++] = 0;
    while (sp) {
        const bvh_node *n = &b->nodes[stack[--sp]];
        if (!ray_hits_box(n, o, d))
            continue;
        if (BVH_IS_LEAF(n))
            hits += (uint32_t)ray_hits_tri(b->tri[n->left], o, d);
        else if (sp + 2 <= 128) {
            stack[sp++] = n->left;
            stack[sp++] = n->right;
        }
    }
    return hits;
}

int prox_bvh_contains_point(const prox_bvh *b, prox_vec3 p)
{
    /* three fixed, generic directions: a ray grazing an edge or vertex can
     * miscount, but not in the majority */
    static const double dirs[3][3] = {{0.5773, 0.5774, 0.5775}, {-0.7071, 0.3161, -0.6325}, {0.2673, -0.8018, 0.5345}};
    int inside = 0;
    for (int i = 0; i < 3; i++)
        inside += (int)(ray_count(b, p, prox_v3(dirs[i][0], dirs[i][1], dirs[i][2])) & 1u);
    return inside >= 2;
}
