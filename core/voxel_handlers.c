/* voxel_handlers.c - handlers for pairs with a voxel map, registered as
 * (VOXEL, X): the engine serves (X, VOXEL) with the pair swapped. All work
 * happens in the map's frame, where every voxel is an axis-aligned box.
 *
 *  (VOXEL, IST):   distance, tolerance, collide, contacts against the inner
 *                  spheres; penetration volume with each voxel modelled as
 *                  the ball of equal volume at the cell centre (radius
 *                  cell * (3 / 4 pi)^(1/3)) against the secondary spheres
 *                  (at their own centres; the inner spheres' bounding
 *                  spheres enclose them), so a voxel's volume is counted
 *                  exactly once per sphere.
 *  (VOXEL, MESH):  collide, contacts, distance: exact triangle-box tests.
 *  (VOXEL, VOXEL): collide, contacts, distance: exact box-box tests
 *                  (separating axes; corner-box and edge-edge distances).
 *
 * Only voxels of the query's classes count (query->voxel_classes). RT safe.
 */
#include <string.h>

#include "bvh_internal.h"
#include "handlers.h"
#include "ist_internal.h"
#include "sphere.h"
#include "voxel_internal.h"

static inline double dmin(double a, double b) { return a < b ? a : b; }
static inline double dmax(double a, double b) { return a > b ? a : b; }
static inline double clamp01(double v) { return v < 0 ? 0 : (v > 1 ? 1 : v); }


typedef struct vkid {
    uint32_t id;
    int level;
    uint32_t c[3];
    uint32_t count; /* leaves of the query's classes below */
} vkid;

static uint32_t class_mask(const prox_pairstate *p)
{
    uint32_t m = p->query->voxel_classes;
    return m ? m : PROX_CLASS_ALL;
}

static void vx_node(const prox_voxmap *m, uint32_t id, uint32_t mask, vkid *k)
{
    int l = VX_LEVEL(id);
    const vx_entry *e = &m->lv[l].e[VX_SLOT(id)];
    k->id = id;
    k->level = l;
    vx_coords(e->key, k->c);
    k->count = vx_count_mask(e, mask);
}

static int vx_children(const prox_voxmap *m, uint32_t id, uint32_t mask, vkid out[8])
{
    int l = VX_LEVEL(id), n = 0;
    if (l == 0) {
        vx_node(m, id, mask, &out[0]);
        return out[0].count ? 1 : 0;
    }
    uint32_t c[3];
    vx_coords(m->lv[l].e[VX_SLOT(id)].key, c);
    const vx_level *L = &m->lv[l - 1];
    for (int d = 0; d < 8; d++) {
        uint32_t x = 2 * c[0] + (d & 1), y = 2 * c[1] + ((d >> 1) & 1), z = 2 * c[2] + ((d >> 2) & 1);
        uint32_t s = vx_find(L, ((uint64_t)x | (uint64_t)y << 16 | (uint64_t)z << 32) + 1);
        if (s == UINT32_MAX)
            continue;
        uint32_t cnt = vx_count_mask(&L->e[s], mask);
        if (!cnt)
            continue; /* only classes the query ignores below */
        out[n].id = VX_ID(l - 1, s);
        out[n].level = l - 1;
        out[n].c[0] = x, out[n].c[1] = y, out[n].c[2] = z;
        out[n].count = cnt;
        n++;
    }
    return n;
}

static void vx_box(const prox_voxmap *m, const vkid *k, prox_vec3 *lo, prox_vec3 *hi)
{
    double s = m->def.cell * (double)(1u << k->level);
    *lo = prox_v3_add(m->def.origin, prox_v3(k->c[0] * s, k->c[1] * s, k->c[2] * s));
    *hi = prox_v3_add(*lo, prox_v3(s, s, s));
}

/* closest point of box [lo, hi] to p */
static prox_vec3 box_closest(prox_vec3 lo, prox_vec3 hi, prox_vec3 p)
{
    return prox_v3(p.x < lo.x ? lo.x : (p.x > hi.x ? hi.x : p.x), p.y < lo.y ? lo.y : (p.y > hi.y ? hi.y : p.y),
                   p.z < lo.z ? lo.z : (p.z > hi.z ? hi.z : p.z));
}

static void root_common(prox_ctx *c, const prox_pairstate *p)
{
    if (p->a->root == VX_NONE)
        return; /* empty map: nothing to find */
    vkid r;
    vx_node(p->a->impl, p->a->root, class_mask(p), &r);
    if (!r.count)
        return; /* nothing of the query's classes */
    if (p->query->kind == PROX_QUERY_PENVOL)
        prox_ctx_push_vol(c, p, p->a->root, p->b->root, 0.0, 0.0, INFINITY);
    else
        prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

/* ================= (VOXEL, IST) ================= */

static double voxel_ball_radius(const prox_voxmap *m) { return m->def.cell * cbrt(3.0 / (4.0 * M_PI)); }

static void vi_leaf(prox_ctx *c, const prox_pairstate *p, const vkid *v, uint32_t sphere)
{
    const prox_voxmap *M = p->a->impl;
    const prox_ist *B = p->b->impl;
    const ist_sphere *s = &B->spheres[sphere];
    prox_vec3 lo, hi;
    vx_box(M, v, &lo, &hi);
    prox_ctx_count(c, 0, 1);
    uint32_t kind = p->query->kind;
    if (kind == PROX_QUERY_PENVOL) {
        /* the secondary sphere, at its own centre */
        const float *sc = B->sec[sphere];
        prox_vec3 cv = prox_v3_scale(prox_v3_add(lo, hi), 0.5), c2 = prox_xform_point(&p->b_in_a, prox_v3(sc[0], sc[1], sc[2]));
        double rv = voxel_ball_radius(M), d = prox_v3_dist(c2, cv);
        double vol = prox_lens_volume(rv, sc[3], d);
        if (vol > 0) {
            prox_vec3 n = d > 0 ? prox_v3_scale(prox_v3_sub(c2, cv), 1.0 / d) : prox_v3(0, 0, 1);
            prox_ctx_add_volume(c, p, vol, n, prox_v3_madd(cv, n, prox_lens_plane(rv, sc[3], d)), v->id, sphere);
        }
        return;
    }
    prox_vec3 cs = prox_xform_point(&p->b_in_a, prox_v3(s->x, s->y, s->z));
    prox_vec3 q = box_closest(lo, hi, cs);
    prox_vec3 u = prox_v3_sub(cs, q);
    double len = prox_v3_len(u), d = len - s->r;
    if (kind == PROX_QUERY_COLLIDE || kind == PROX_QUERY_CONTACTS) {
        if (d <= 0)
            prox_ctx_report_overlap(c, p, v->id, sphere, q);
        return;
    }
    prox_vec3 n = len > 0 ? prox_v3_scale(u, 1.0 / len) : prox_v3(0, 0, 1);
    prox_ctx_offer_distance(c, p, d, q, prox_v3_madd(cs, n, -s->r), v->id, sphere);
}

static void vi_expand(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    const prox_voxmap *M = p->a->impl;
    const prox_ist *B = p->b->impl;
    uint32_t mask = class_mask(p);
    uint32_t kind = p->query->kind;
    vkid vk[8];
    vkid self;
    vx_node(M, na, mask, &self);
    kids kb;
    get_kids(B, nb, &p->b_in_a, &kb);
    int vleaf = self.level == 0, bleaf = (nb & IST_LEAF) != 0;
    if (vleaf && bleaf) {
        vi_leaf(c, p, &self, nb & ~IST_LEAF);
        return;
    }
    /* split the voxel node unless it is a leaf or clearly the smaller one */
    double vhalf = 0.5 * M->def.cell * (double)(1u << self.level) * sqrt(3.0);
    int nv;
    if (!vleaf && (bleaf || vhalf >= kb.R[0] || kb.n == 0)) {
        nv = vx_children(M, na, mask, vk);
        float s[4], vol;
        uint32_t leaves;
        ist_id_sphere(B, nb, s, &vol, &leaves);
        prox_vec3 cb = prox_xform_point(&p->b_in_a, prox_v3(s[0], s[1], s[2]));
        kb.n = 1, kb.id[0] = nb, kb.x[0] = cb.x, kb.y[0] = cb.y, kb.z[0] = cb.z, kb.R[0] = s[3], kb.vol[0] = vol,
        kb.leaves[0] = leaves;
    } else {
        vk[0] = self;
        nv = self.count ? 1 : 0;
    }
    prox_ctx_count(c, (uint32_t)(nv * kb.n), 0);
    double best = prox_ctx_best(c), rv = voxel_ball_radius(M), vvol = 4.0 / 3.0 * M_PI * rv * rv * rv;
    for (int i = 0; i < nv; i++) {
        prox_vec3 lo, hi;
        vx_box(M, &vk[i], &lo, &hi);
        for (int j = 0; j < kb.n; j++) {
            prox_vec3 cs = prox_v3(kb.x[j], kb.y[j], kb.z[j]);
            double g = prox_v3_dist(cs, box_closest(lo, hi, cs)) - kb.R[j];
            if (kind == PROX_QUERY_PENVOL) {
                /* the voxel balls reach at most rv - cell/2 beyond the box */
                double reach = rv - 0.5 * M->def.cell;
                if (g >= reach)
                    continue;
                if (vk[i].level == 0 && (kb.id[j] & IST_LEAF)) {
                    vi_leaf(c, p, &vk[i], kb.id[j] & ~IST_LEAF);
                    continue;
                }
                double nvox = vk[i].count, ub = dmin(nvox * kb.vol[j], nvox * vvol * kb.leaves[j]);
                /* expected: the node's share of voxel volume that the sphere's
                 * fill covers, estimated by the box-sphere overlap of volumes */
                double side = M->def.cell * (double)(1u << vk[i].level);
                double fill_v = nvox * M->def.cell * M->def.cell * M->def.cell / (side * side * side);
                double fill_b = kb.vol[j] / (4.0 / 3.0 * M_PI * kb.R[j] * kb.R[j] * kb.R[j]);
                double rbox = 0.5 * side * sqrt(3.0);
                prox_vec3 cc = prox_v3_scale(prox_v3_add(lo, hi), 0.5);
                double est = prox_lens_volume(rbox, kb.R[j], prox_v3_dist(cc, cs)) * dmin(fill_v, 1.0) * dmin(fill_b, 1.0);
                est = dmin(est, ub);
                prox_ctx_push_vol(c, p, vk[i].id, kb.id[j], -est, est, ub);
                continue;
            }
            if (kind == PROX_QUERY_COLLIDE || kind == PROX_QUERY_CONTACTS ? g > 0 : g >= best)
                continue;
            if (vk[i].level == 0 && (kb.id[j] & IST_LEAF)) {
                vi_leaf(c, p, &vk[i], kb.id[j] & ~IST_LEAF);
                if (prox_ctx_done(c))
                    return;
                best = prox_ctx_best(c);
            } else
                prox_ctx_push(c, p, vk[i].id, kb.id[j], g > 0 ? g : 0.0);
        }
    }
}

static void vi_root(prox_ctx *c, const prox_pairstate *p)
{
    const prox_ist *B = p->b->impl;
    if (p->query->kind == PROX_QUERY_DISTANCE || p->query->kind == PROX_QUERY_TOLERANCE)
        prox_ctx_set_bound_offset(c, p, B->surface_gap);
    root_common(c, p);
}

/* ================= (VOXEL, MESH) ================= */

/* triangle / axis-aligned box overlap (separating axes: 3 box normals,
 * the triangle normal, 9 edge crosses) */
static int tri_box_overlap(const prox_vec3 T[3], prox_vec3 lo, prox_vec3 hi)
{
    prox_vec3 c = prox_v3_scale(prox_v3_add(lo, hi), 0.5), h = prox_v3_scale(prox_v3_sub(hi, lo), 0.5);
    prox_vec3 v[3] = {prox_v3_sub(T[0], c), prox_v3_sub(T[1], c), prox_v3_sub(T[2], c)};
    double he[3] = {h.x, h.y, h.z};
    for (int a = 0; a < 3; a++) {
        double mn = dmin(prox_v3_get(v[0], a), dmin(prox_v3_get(v[1], a), prox_v3_get(v[2], a)));
        double mx = dmax(prox_v3_get(v[0], a), dmax(prox_v3_get(v[1], a), prox_v3_get(v[2], a)));
        if (mn > he[a] || mx < -he[a])
            return 0;
    }
    prox_vec3 e[3] = {prox_v3_sub(v[1], v[0]), prox_v3_sub(v[2], v[1]), prox_v3_sub(v[0], v[2])};
    prox_vec3 axes[10];
    int na = 0;
    axes[na++] = prox_v3_cross(e[0], e[1]);
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 3; a++) {
            prox_vec3 u = prox_v3(a == 0, a == 1, a == 2);
            axes[na++] = prox_v3_cross(u, e[i]);
        }
    for (int k = 0; k < na; k++) {
        prox_vec3 L = axes[k];
        if (prox_v3_len2(L) < 1e-30)
            continue;
        double p0 = prox_v3_dot(v[0], L), p1 = prox_v3_dot(v[1], L), p2 = prox_v3_dot(v[2], L);
        double r = he[0] * fabs(L.x) + he[1] * fabs(L.y) + he[2] * fabs(L.z);
        if (dmin(p0, dmin(p1, p2)) > r || dmax(p0, dmax(p1, p2)) < -r)
            return 0;
    }
    return 1;
}

/* closest points of segments [p1, q1] and [p2, q2]; returns the squared distance */
static double seg_seg2(prox_vec3 p1, prox_vec3 q1, prox_vec3 p2, prox_vec3 q2, prox_vec3 *c1, prox_vec3 *c2)
{
    prox_vec3 d1 = prox_v3_sub(q1, p1), d2 = prox_v3_sub(q2, p2), r = prox_v3_sub(p1, p2);
    double a = prox_v3_dot(d1, d1), e = prox_v3_dot(d2, d2), f = prox_v3_dot(d2, r), s, t;
    if (a <= 1e-300 && e <= 1e-300)
        s = t = 0;
    else if (a <= 1e-300) {
        s = 0;
        t = clamp01(f / e);
    } else {
        double c = prox_v3_dot(d1, r);
        if (e <= 1e-300) {
            t = 0;
            s = clamp01(-c / a);
        } else {
            double b = prox_v3_dot(d1, d2), den = a * e - b * b;
            s = den > 0 ? clamp01((b * f - c * e) / den) : 0;
            t = (b * s + f) / e;
            if (t < 0) {
                t = 0;
                s = clamp01(-c / a);
            } else if (t > 1) {
                t = 1;
                s = clamp01((b - c) / a);
            }
        }
    }
    *c1 = prox_v3_madd(p1, d1, s);
    *c2 = prox_v3_madd(p2, d2, t);
    return prox_v3_len2(prox_v3_sub(*c1, *c2));
}

/* the 12 edges of a box by corner index (corner i: bit 0 x, bit 1 y, bit 2 z) */
static const int box_edges[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3},
                                     {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};

/* exact distance between a triangle and a box (0 when they overlap). When
 * apart, the closest pair involves a vertex of one (against the other
 * solid) or an edge of each: 3 vertex-box clamps, 8 corner-triangle
 * projections, 36 edge-edge pairs. */
static double tri_box_distance(const prox_vec3 T[3], prox_vec3 lo, prox_vec3 hi, prox_vec3 *on_box, prox_vec3 *on_tri)
{
    if (tri_box_overlap(T, lo, hi)) {
        /* a common point: a triangle vertex inside the box, or a clamped one */
        prox_vec3 q = box_closest(lo, hi, T[0]);
        *on_box = *on_tri = q;
        for (int k = 0; k < 3; k++)
            if (prox_v3_dist(box_closest(lo, hi, T[k]), T[k]) == 0)
                *on_box = *on_tri = T[k];
        return 0.0;
    }
    double best = INFINITY;
    for (int k = 0; k < 3; k++) {
        prox_vec3 q = box_closest(lo, hi, T[k]);
        double d2 = prox_v3_len2(prox_v3_sub(q, T[k]));
        if (d2 < best)
            best = d2, *on_box = q, *on_tri = T[k];
    }
    prox_vec3 P[8];
    for (int i = 0; i < 8; i++)
        P[i] = prox_v3(i & 1 ? hi.x : lo.x, i & 2 ? hi.y : lo.y, i & 4 ? hi.z : lo.z);
    for (int i = 0; i < 8; i++) {
        prox_vec3 q;
        double d2 = prox_point_triangle_dist2(P[i], T[0], T[1], T[2], &q);
        if (d2 < best)
            best = d2, *on_box = P[i], *on_tri = q;
    }
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 12; j++) {
            prox_vec3 a, b;
            double d2 = seg_seg2(P[box_edges[j][0]], P[box_edges[j][1]], T[k], T[(k + 1) % 3], &a, &b);
            if (d2 < best)
                best = d2, *on_box = a, *on_tri = b;
        }
    return sqrt(best);
}

/* leaf pair: voxel v against triangle t */
static void vm_leaf(prox_ctx *c, const prox_pairstate *p, const vkid *v, uint32_t t)
{
    const prox_voxmap *M = p->a->impl;
    const prox_bvh *B = p->b->impl;
    prox_vec3 T[3], lo, hi, qa, qb;
    for (int k = 0; k < 3; k++)
        T[k] = prox_xform_point(&p->b_in_a, B->tri[t][k]);
    vx_box(M, v, &lo, &hi);
    prox_ctx_count(c, 0, 1);
    uint32_t kind = p->query->kind;
    if (kind == PROX_QUERY_DISTANCE || kind == PROX_QUERY_TOLERANCE) {
        double d = tri_box_distance(T, lo, hi, &qa, &qb);
        prox_ctx_offer_distance(c, p, d, qa, qb, v->id, t);
    } else if (tri_box_overlap(T, lo, hi)) {
        prox_ctx_report_overlap(c, p, v->id, t, box_closest(lo, hi, T[0]));
    }
}

static void vm_expand(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    const prox_voxmap *M = p->a->impl;
    const prox_bvh *B = p->b->impl;
    uint32_t mask = class_mask(p), kind = p->query->kind;
    vkid self, vk[8];
    vx_node(M, na, mask, &self);
    uint32_t ch = B->child[nb];
    int vleaf = self.level == 0, bleaf = bvh_is_leaf(ch);
    if (vleaf && bleaf) {
        vm_leaf(c, p, &self, bvh_leaf_triangle(ch));
        return;
    }
    double vhalf = 0.5 * M->def.cell * (double)(1u << self.level) * sqrt(3.0);
    uint32_t bn[2];
    int nbn, nv;
    if (!vleaf && (bleaf || vhalf >= B->nodes[nb].radius)) {
        nv = vx_children(M, na, mask, vk);
        bn[0] = nb, nbn = 1;
    } else {
        vk[0] = self, nv = 1;
        bn[0] = ch, bn[1] = ch + 1, nbn = 2;
    }
    double th = kind == PROX_QUERY_DISTANCE ? prox_ctx_best(c) : (kind == PROX_QUERY_TOLERANCE ? p->query->tolerance : 0.0);
    prox_ctx_count(c, (uint32_t)(nv * nbn), 0);
    for (int i = 0; i < nv; i++) {
        prox_vec3 lo, hi;
        vx_box(M, &vk[i], &lo, &hi);
        bvh_node box;
        memset(&box, 0, sizeof box);
        box.R[0][0] = box.R[1][1] = box.R[2][2] = 1;
        double half = 0.5 * (hi.x - lo.x);
        for (int a = 0; a < 3; a++) {
            box.c[a] = (float)(0.5 * (prox_v3_get(lo, a) + prox_v3_get(hi, a)));
            box.e[a] = (float)(half * (1 + 4e-6) + fabs((double)box.c[a]) * 4e-7); /* conservative in float */
        }
        box.radius = (float)(sqrt(3.0) * box.e[0]);
        for (int j = 0; j < nbn; j++) {
            const bvh_node *bnode = &B->nodes[bn[j]];
            bvh_placed pl = bvh_place(bnode, &p->b_in_a);
            double g = bvh_sphere_gap(&box, bnode, &pl);
            if (g < th || g <= 0) {
                bvh_rel r = bvh_rel_placed(&box, &pl);
                double g2 = bvh_obb_gap(&r, box.e, bnode->e, INFINITY);
                if (g2 > g)
                    g = g2;
            }
            if ((kind == PROX_QUERY_COLLIDE || kind == PROX_QUERY_CONTACTS) ? g > 0 : g >= th)
                continue;
            uint32_t cj = B->child[bn[j]];
            if (vk[i].level == 0 && bvh_is_leaf(cj)) {
                /* leaf pair: do it now, the tighter best prunes the rest */
                vm_leaf(c, p, &vk[i], bvh_leaf_triangle(cj));
                if (prox_ctx_done(c))
                    return;
                if (kind == PROX_QUERY_DISTANCE)
                    th = prox_ctx_best(c);
                continue;
            }
            prox_ctx_push(c, p, vk[i].id, bn[j], g > 0 ? g : 0.0);
        }
    }
}

/* ================= (VOXEL, VOXEL) ================= */

/* exact distance between box A (axis aligned, [lo, hi]) and box B (its 8
 * corners given in A's frame): 0 if they overlap (separating axes), else
 * the minimum over corner-to-box and edge-to-edge distances */
static double box_box_distance(prox_vec3 lo, prox_vec3 hi, const prox_vec3 Bc[8], prox_vec3 *pa, prox_vec3 *pb)
{
    prox_vec3 Ac[8];
    for (int i = 0; i < 8; i++)
        Ac[i] = prox_v3(i & 1 ? hi.x : lo.x, i & 2 ? hi.y : lo.y, i & 4 ? hi.z : lo.z);
    prox_vec3 ua[3] = {prox_v3(1, 0, 0), prox_v3(0, 1, 0), prox_v3(0, 0, 1)};
    prox_vec3 ub[3] = {prox_v3_sub(Bc[1], Bc[0]), prox_v3_sub(Bc[2], Bc[0]), prox_v3_sub(Bc[4], Bc[0])};
    int separated = 0;
    for (int k = 0; k < 15 && !separated; k++) {
        prox_vec3 L = k < 3 ? ua[k] : (k < 6 ? ub[k - 3] : prox_v3_cross(ua[(k - 6) / 3], ub[(k - 6) % 3]));
        if (prox_v3_len2(L) < 1e-24)
            continue;
        double amin = INFINITY, amax = -INFINITY, bmin = INFINITY, bmax = -INFINITY;
        for (int i = 0; i < 8; i++) {
            double x = prox_v3_dot(Ac[i], L), y = prox_v3_dot(Bc[i], L);
            amin = dmin(amin, x), amax = dmax(amax, x), bmin = dmin(bmin, y), bmax = dmax(bmax, y);
        }
        separated = amax < bmin || bmax < amin;
    }
    if (!separated) {
        prox_vec3 q = box_closest(lo, hi, Bc[0]);
        *pa = *pb = q;
        return 0.0;
    }
    double best = INFINITY;
    for (int i = 0; i < 8; i++) {
        prox_vec3 q = box_closest(lo, hi, Bc[i]);
        double d2 = prox_v3_len2(prox_v3_sub(q, Bc[i]));
        if (d2 < best)
            best = d2, *pa = q, *pb = Bc[i];
    }
    /* A's corners against box B (clamped in B's own edge coordinates) */
    for (int i = 0; i < 8; i++) {
        prox_vec3 r = prox_v3_sub(Ac[i], Bc[0]), q = Bc[0];
        for (int k = 0; k < 3; k++) {
            double u = prox_v3_dot(r, ub[k]) / prox_v3_dot(ub[k], ub[k]);
            q = prox_v3_madd(q, ub[k], clamp01(u));
        }
        double d2 = prox_v3_len2(prox_v3_sub(q, Ac[i]));
        if (d2 < best)
            best = d2, *pa = Ac[i], *pb = q;
    }
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++) {
            prox_vec3 x, y;
            double d2 = seg_seg2(Ac[box_edges[i][0]], Ac[box_edges[i][1]], Bc[box_edges[j][0]], Bc[box_edges[j][1]], &x, &y);
            if (d2 < best)
                best = d2, *pa = x, *pb = y;
        }
    return sqrt(best);
}

static void vv_expand(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    const prox_voxmap *A = p->a->impl, *B = p->b->impl;
    uint32_t mask = class_mask(p), kind = p->query->kind;
    vkid sa, sb, ka[8], kb[8];
    vx_node(A, na, mask, &sa);
    vx_node(B, nb, mask, &sb);
    if (sa.level == 0 && sb.level == 0) {
        prox_vec3 lo, hi, blo, bhi, Bc[8], x, y;
        vx_box(A, &sa, &lo, &hi);
        vx_box(B, &sb, &blo, &bhi);
        for (int i = 0; i < 8; i++)
            Bc[i] = prox_xform_point(&p->b_in_a, prox_v3(i & 1 ? bhi.x : blo.x, i & 2 ? bhi.y : blo.y, i & 4 ? bhi.z : blo.z));
        prox_ctx_count(c, 0, 1);
        double d = box_box_distance(lo, hi, Bc, &x, &y);
        if (kind == PROX_QUERY_DISTANCE || kind == PROX_QUERY_TOLERANCE)
            prox_ctx_offer_distance(c, p, d, x, y, na, nb);
        else if (d <= 0)
            prox_ctx_report_overlap(c, p, na, nb, x);
        return;
    }
    int nka, nkb;
    if (sa.level >= sb.level && sa.level > 0) {
        nka = vx_children(A, na, mask, ka);
        kb[0] = sb, nkb = 1;
    } else {
        ka[0] = sa, nka = 1;
        nkb = vx_children(B, nb, mask, kb);
    }
    double th = kind == PROX_QUERY_DISTANCE ? prox_ctx_best(c) : (kind == PROX_QUERY_TOLERANCE ? p->query->tolerance : 0.0);
    prox_ctx_count(c, (uint32_t)(nka * nkb), 0);
    for (int j = 0; j < nkb; j++) {
        /* B's box in A's frame, bounded by its axis-aligned box there */
        prox_vec3 blo, bhi, wlo = {INFINITY, INFINITY, INFINITY}, whi = {-INFINITY, -INFINITY, -INFINITY};
        vx_box(B, &kb[j], &blo, &bhi);
        for (int q = 0; q < 8; q++) {
            prox_vec3 v = prox_xform_point(&p->b_in_a, prox_v3(q & 1 ? bhi.x : blo.x, q & 2 ? bhi.y : blo.y, q & 4 ? bhi.z : blo.z));
            wlo = prox_v3_min(wlo, v), whi = prox_v3_max(whi, v);
        }
        for (int i = 0; i < nka; i++) {
            prox_vec3 lo, hi;
            vx_box(A, &ka[i], &lo, &hi);
            double gx = dmax(0, dmax(lo.x - whi.x, wlo.x - hi.x)), gy = dmax(0, dmax(lo.y - whi.y, wlo.y - hi.y)),
                   gz = dmax(0, dmax(lo.z - whi.z, wlo.z - hi.z));
            double g = sqrt(gx * gx + gy * gy + gz * gz) * (1 - 1e-12);
            if ((kind == PROX_QUERY_COLLIDE || kind == PROX_QUERY_CONTACTS) ? g > 0 : g >= th)
                continue;
            prox_ctx_push(c, p, ka[i].id, kb[j].id, g);
        }
    }
}

static void vv_root(prox_ctx *c, const prox_pairstate *p)
{
    if (p->b->root == VX_NONE)
        return;
    root_common(c, p);
}

void prox_voxel_register(prox_bank *bank)
{
    prox_handler h;
    memset(&h, 0, sizeof h);
    h.root = vi_root;
    h.expand = vi_expand;
    static const uint32_t vi_kinds[] = {PROX_QUERY_DISTANCE, PROX_QUERY_TOLERANCE, PROX_QUERY_COLLIDE, PROX_QUERY_CONTACTS,
                                        PROX_QUERY_PENVOL};
    static const char *vi_names[] = {"voxel-ist distance", "voxel-ist tolerance", "voxel-ist collide", "voxel-ist contacts",
                                     "voxel-ist penetration volume (voxel = equal-volume ball)"};
    for (int k = 0; k < 5; k++) {
        h.name = vi_names[k];
        prox_bank_set(bank, PROX_TREE_VOXEL, PROX_TREE_IST, vi_kinds[k], &h);
    }
    h.root = root_common;
    h.expand = vm_expand;
    static const uint32_t vm_kinds[] = {PROX_QUERY_DISTANCE, PROX_QUERY_TOLERANCE, PROX_QUERY_COLLIDE, PROX_QUERY_CONTACTS};
    static const char *vm_names[] = {"voxel-mesh distance", "voxel-mesh tolerance", "voxel-mesh collide", "voxel-mesh contacts"};
    for (int k = 0; k < 4; k++) {
        h.name = vm_names[k];
        prox_bank_set(bank, PROX_TREE_VOXEL, PROX_TREE_MESH, vm_kinds[k], &h);
    }
    h.root = vv_root;
    h.expand = vv_expand;
    static const uint32_t vv_kinds[] = {PROX_QUERY_DISTANCE, PROX_QUERY_TOLERANCE, PROX_QUERY_COLLIDE, PROX_QUERY_CONTACTS};
    static const char *vv_names[] = {"voxel-voxel distance", "voxel-voxel tolerance", "voxel-voxel collide", "voxel-voxel contacts"};
    for (int k = 0; k < 4; k++) {
        h.name = vv_names[k];
        prox_bank_set(bank, PROX_TREE_VOXEL, PROX_TREE_VOXEL, vv_kinds[k], &h);
    }
}
