/* bvh_handlers.c - (MESH, MESH) handlers: collide, contacts, distance,
 * tolerance. RT safe: no allocation, no locks.
 *
 * Each expansion descends the node with the larger bounding sphere and
 * pushes both child pairs with their OBB gap as key (a lower bound on the
 * distance of every triangle pair below). Leaves run the exact triangle
 * tests. For closed meshes, the root hook checks containment (one vertex of
 * each mesh against the other): one mesh wholly inside the other overlaps
 * even though no triangles intersect.
 */
#include "bvh_internal.h"
#include "handlers.h"

/* Lower bound on the distance between nodes: the sphere and OBB bounds
 * first (cheap); the tighter RSS bound only when those cannot already
 * prune the pair against `threshold` (the best distance so far). */
static inline double node_gap(const prox_bvh *A, const prox_bvh *B, uint32_t na, uint32_t nb, const prox_xform *b_in_a,
                              double threshold)
{
    const bvh_node *a = &A->nodes[na], *b = &B->nodes[nb];
    prox_vec3 cb = prox_xform_point(b_in_a, b->c);
    double sg = prox_v3_dist(cb, a->c) - a->radius - b->radius;
    if (sg >= threshold)
        return sg;
    prox_mat3 Rb = prox_m3_mul(&b_in_a->R, &b->R);
    double g = prox_obb_gap(a, &Rb, cb, b->e);
    if (g < sg)
        g = sg;
    if (g >= threshold || g <= 0 || threshold == INFINITY)
        return g;
    double r = prox_rss_gap(a, &Rb, cb, b->e);
    return r > g ? r : g;
}

static inline void leaf_tri_in_a(const prox_bvh *B, uint32_t tb, const prox_xform *b_in_a, prox_vec3 out[3])
{
    for (int k = 0; k < 3; k++)
        out[k] = prox_xform_point(b_in_a, B->tri[tb][k]);
}

static void expand_common(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, int kind)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    const bvh_node *a = &A->nodes[na], *b = &B->nodes[nb];
    int la = BVH_IS_LEAF(a), lb = BVH_IS_LEAF(b);
    if (la && lb) {
        prox_vec3 Q[3];
        leaf_tri_in_a(B, b->left, &p->b_in_a, Q);
        const prox_vec3 *P = A->tri[a->left];
        prox_ctx_count(c, 0, 1);
        if (kind == PROX_QUERY_DISTANCE || kind == PROX_QUERY_TOLERANCE) {
            prox_vec3 pa, pb;
            double d = prox_triangle_distance(P, Q, &pa, &pb);
            prox_ctx_offer_distance(c, p, d, pa, pb, a->left, b->left);
        } else if (prox_triangle_intersect(P, Q)) {
            prox_vec3 pa, pb;
            prox_triangle_distance(P, Q, &pa, &pb);
            prox_ctx_report_overlap(c, p, a->left, b->left, pa);
        }
        return;
    }
    /* descend the larger node (by bounding sphere), or the one that is not a leaf */
    int split_a = lb || (!la && a->radius >= b->radius);
    uint32_t c0 = split_a ? a->left : b->left, c1 = split_a ? a->right : b->right;
    double th = (kind == PROX_QUERY_DISTANCE) ? prox_ctx_best(c) : (kind == PROX_QUERY_TOLERANCE ? p->query->tolerance : 0.0);
    double g0 = split_a ? node_gap(A, B, c0, nb, &p->b_in_a, th) : node_gap(A, B, na, c0, &p->b_in_a, th);
    double g1 = split_a ? node_gap(A, B, c1, nb, &p->b_in_a, th) : node_gap(A, B, na, c1, &p->b_in_a, th);
    prox_ctx_count(c, 2, 0);
    /* overlapping boxes bound nothing below 0 */
    g0 = g0 > 0 ? g0 : 0.0;
    g1 = g1 > 0 ? g1 : 0.0;
    /* push the worse first so the better pops first from the stack */
    if (g0 < g1) {
        double tg = g0;
        g0 = g1;
        g1 = tg;
        uint32_t tc = c0;
        c0 = c1;
        c1 = tc;
    }
    if (split_a) {
        prox_ctx_push(c, p, c0, nb, g0);
        prox_ctx_push(c, p, c1, nb, g1);
    } else {
        prox_ctx_push(c, p, na, c0, g0);
        prox_ctx_push(c, p, na, c1, g1);
    }
}

static void expand_distance(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    expand_common(c, p, na, nb, PROX_QUERY_DISTANCE);
}
static void expand_tolerance(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    expand_common(c, p, na, nb, PROX_QUERY_TOLERANCE);
}
static void expand_collide(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    expand_common(c, p, na, nb, PROX_QUERY_COLLIDE);
}
static void expand_contacts(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    expand_common(c, p, na, nb, PROX_QUERY_CONTACTS);
}

/* Containment of closed meshes: if a vertex of B lies inside A (or the
 * reverse), the solids overlap (B inside A, or their surfaces cross). If
 * neither test vertex is inside, neither mesh can contain the other. */
static int contained_overlap(prox_ctx *c, const prox_pairstate *p, int report_distance)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    double g = node_gap(A, B, 0, 0, &p->b_in_a, 0.0);
    if (g > 0)
        return 0;
    if (A->closed) {
        prox_vec3 v = prox_xform_point(&p->b_in_a, B->tri[0][0]);
        if (prox_bvh_contains_point(A, v)) {
            if (report_distance)
                prox_ctx_offer_distance(c, p, 0.0, v, v, UINT32_MAX, 0);
            else
                prox_ctx_report_overlap(c, p, UINT32_MAX, 0, v);
            return 1;
        }
    }
    if (B->closed) {
        prox_vec3 v = prox_xform_point(&p->a_in_b, A->tri[0][0]);
        if (prox_bvh_contains_point(B, v)) {
            prox_vec3 va = A->tri[0][0];
            if (report_distance)
                prox_ctx_offer_distance(c, p, 0.0, va, va, 0, UINT32_MAX);
            else
                prox_ctx_report_overlap(c, p, 0, UINT32_MAX, va);
            return 1;
        }
    }
    return 0;
}

static void root_distance(prox_ctx *c, const prox_pairstate *p)
{
    if (contained_overlap(c, p, 1) && (p->query->stop_on_overlap || p->query->kind != PROX_QUERY_DISTANCE))
        return;
    if (p->query->kind == PROX_QUERY_DISTANCE && prox_ctx_best(c) <= 0)
        return; /* distance 0 is already certain */
    prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

static void root_collide(prox_ctx *c, const prox_pairstate *p)
{
    if (contained_overlap(c, p, 0))
        return;
    prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

/* Coherence: the exact distance of last query's closest triangle pair is
 * a tight upper bound before the descent starts. */
static void seed_distance(prox_ctx *c, const prox_pairstate *p)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    uint32_t ta = p->cache->leaf_a, tb = p->cache->leaf_b;
    if (p->swapped) {
        uint32_t t = ta;
        ta = tb;
        tb = t;
    }
    if (ta >= A->tri_count || tb >= B->tri_count)
        return;
    prox_vec3 Q[3], pa, pb;
    leaf_tri_in_a(B, tb, &p->b_in_a, Q);
    double d = prox_triangle_distance(A->tri[ta], Q, &pa, &pb);
    prox_ctx_count(c, 0, 1);
    prox_ctx_offer_distance(c, p, d, pa, pb, ta, tb);
}

void prox_bvh_register(prox_bank *bank)
{
    prox_handler h = {0};
    h.name = "mesh-mesh distance (OBB)";
    h.expand = expand_distance;
    h.root = root_distance;
    h.seed = seed_distance;
    prox_bank_set(bank, PROX_TREE_MESH, PROX_TREE_MESH, PROX_QUERY_DISTANCE, &h);
    h.name = "mesh-mesh tolerance (OBB)";
    h.expand = expand_tolerance;
    prox_bank_set(bank, PROX_TREE_MESH, PROX_TREE_MESH, PROX_QUERY_TOLERANCE, &h);
    h.name = "mesh-mesh collide (OBB)";
    h.expand = expand_collide;
    h.root = root_collide;
    h.seed = NULL;
    prox_bank_set(bank, PROX_TREE_MESH, PROX_TREE_MESH, PROX_QUERY_COLLIDE, &h);
    h.name = "mesh-mesh contacts (OBB)";
    h.expand = expand_contacts;
    h.root = NULL;
    prox_bank_set(bank, PROX_TREE_MESH, PROX_TREE_MESH, PROX_QUERY_CONTACTS, &h);
}
