/* bvh_handlers.c - (MESH, MESH) handlers: collide, contacts, distance,
 * tolerance. RT safe: no allocation, no locks.
 *
 * Each expansion descends the node with the larger bounding sphere (the
 * other one if that is a leaf) and pushes both child pairs with a lower
 * bound on the distance of every triangle pair below as key. Leaves run the
 * exact triangle tests in double. For closed meshes, the root hook checks
 * containment (one vertex of each mesh against the other, BVH ray parity):
 * one mesh wholly inside the other overlaps although no triangles meet.
 */
#include "bvh_internal.h"
#include "handlers.h"

/* Overlap test for collide and contacts (threshold 0): the bounding
 * spheres, then the OBB separating axes, which stop at the first
 * separating one. Returns a lower bound on the distance (<= 0: may
 * overlap). */
static inline double node_gap(const bvh_node *a, const bvh_node *b, const bvh_placed *pb, double threshold)
{
    double sg = bvh_sphere_gap(a, b, pb);
    if (sg >= threshold)
        return sg;
    bvh_rel rel = bvh_rel_placed(a, pb);
    double g = bvh_obb_gap(&rel, a->e, b->e, threshold);
    return g > sg ? g : sg;
}

/* Distance descent: node b of mesh B placed in A's mesh frame, lazily.
 * The sphere test needs only the centre; the RSS bound needs only the
 * first two box axes (the third is never computed). */
typedef struct dist_placed {
    double c[3], u[3], v[3];
    int have_uv;
} dist_placed;

static inline void dist_place(const bvh_node *b, const prox_xform *X, dist_placed *p)
{
    for (int i = 0; i < 3; i++)
        p->c[i] = X->R.m[i][0] * b->c[0] + X->R.m[i][1] * b->c[1] + X->R.m[i][2] * b->c[2] + prox_v3_get(X->t, i);
    p->have_uv = 0;
}

static inline double dist_gap(const bvh_node *a, const bvh_node *b, dist_placed *pb, const prox_xform *X, double threshold)
{
    double d[3] = {pb->c[0] - a->c[0], pb->c[1] - a->c[1], pb->c[2] - a->c[2]};
    double sg = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) - (double)a->radius - (double)b->radius;
    if (sg >= threshold || threshold == INFINITY)
        return sg;
    if (!pb->have_uv) {
        for (int i = 0; i < 3; i++) {
            pb->u[i] = X->R.m[i][0] * b->R[0][0] + X->R.m[i][1] * b->R[1][0] + X->R.m[i][2] * b->R[2][0];
            pb->v[i] = X->R.m[i][0] * b->R[0][1] + X->R.m[i][1] * b->R[1][1] + X->R.m[i][2] * b->R[2][1];
        }
        pb->have_uv = 1;
    }
    double u[3], v[3], T[3];
    for (int i = 0; i < 3; i++) {
        u[i] = a->R[0][i] * pb->u[0] + a->R[1][i] * pb->u[1] + a->R[2][i] * pb->u[2];
        v[i] = a->R[0][i] * pb->v[0] + a->R[1][i] * pb->v[1] + a->R[2][i] * pb->v[2];
        T[i] = a->R[0][i] * d[0] + a->R[1][i] * d[1] + a->R[2][i] * d[2];
    }
    double g = bvh_rss_gap_uv(u, v, T, a->e, b->e);
    return g > sg ? g : sg;
}

static inline void leaf_tri_in_a(const prox_bvh *B, uint32_t tb, const prox_xform *b_in_a, prox_vec3 out[3])
{
    for (int k = 0; k < 3; k++)
        out[k] = prox_xform_point(b_in_a, B->tri[tb][k]);
}

static inline void expand_common(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, int kind)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    const bvh_node *a = &A->nodes[na], *b = &B->nodes[nb];
    uint32_t cha = A->child[na], chb = B->child[nb];
    int la = bvh_is_leaf(cha), lb = bvh_is_leaf(chb);
    if (la && lb) {
        uint32_t ta = bvh_leaf_triangle(cha), tb = bvh_leaf_triangle(chb);
        prox_vec3 Q[3];
        leaf_tri_in_a(B, tb, &p->b_in_a, Q);
        const prox_vec3 *P = A->tri[ta];
        prox_ctx_count(c, 0, 1);
        if (kind == PROX_QUERY_DISTANCE || kind == PROX_QUERY_TOLERANCE) {
            prox_vec3 pa, pb;
            double d = prox_triangle_distance(P, Q, &pa, &pb);
            if (kind == PROX_QUERY_DISTANCE)
                prox_front_record(p, na, nb); /* a leaf pair ends the cut */
            prox_ctx_offer_distance(c, p, d, pa, pb, ta, tb);
        } else if (prox_triangle_intersect(P, Q)) {
            prox_vec3 pa, pb;
            prox_triangle_distance(P, Q, &pa, &pb);
            prox_ctx_report_overlap(c, p, ta, tb, pa);
        }
        return;
    }
    double th = kind == PROX_QUERY_DISTANCE ? prox_ctx_best(c) : (kind == PROX_QUERY_TOLERANCE ? p->query->tolerance : 0.0);
    int split_a = lb || (!la && a->radius >= b->radius);
    uint32_t c0, c1;
    double g0, g1;
    if (th > 0) {
        /* distance, tolerance: spheres, then the RSS bound */
        if (split_a) {
            dist_placed pb;
            dist_place(b, &p->b_in_a, &pb);
            c0 = cha, c1 = cha + 1;
            g0 = dist_gap(&A->nodes[c0], b, &pb, &p->b_in_a, th);
            g1 = dist_gap(&A->nodes[c1], b, &pb, &p->b_in_a, th);
        } else {
            dist_placed p0, p1;
            c0 = chb, c1 = chb + 1;
            dist_place(&B->nodes[c0], &p->b_in_a, &p0);
            dist_place(&B->nodes[c1], &p->b_in_a, &p1);
            g0 = dist_gap(a, &B->nodes[c0], &p0, &p->b_in_a, th);
            g1 = dist_gap(a, &B->nodes[c1], &p1, &p->b_in_a, th);
        }
    } else if (split_a) {
        bvh_placed pb = bvh_place(b, &p->b_in_a);
        c0 = cha, c1 = cha + 1;
        g0 = node_gap(&A->nodes[c0], b, &pb, th);
        g1 = node_gap(&A->nodes[c1], b, &pb, th);
    } else {
        c0 = chb, c1 = chb + 1;
        bvh_placed p0 = bvh_place(&B->nodes[c0], &p->b_in_a), p1 = bvh_place(&B->nodes[c1], &p->b_in_a);
        g0 = node_gap(a, &B->nodes[c0], &p0, th);
        g1 = node_gap(a, &B->nodes[c1], &p1, th);
    }
    prox_ctx_count(c, 2, 0);
    /* overlapping volumes bound nothing below 0 */
    g0 = g0 > 0 ? g0 : 0.0;
    g1 = g1 > 0 ? g1 : 0.0;
    /* push the worse first so that the better pops first from the stack */
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
 * neither test vertex is inside, neither mesh can contain the other. Only
 * tried when the root boxes overlap. A closed mesh counts as a solid even
 * against an open one (an open mesh's vertex inside it is an overlap). */
static int contained_overlap(prox_ctx *c, const prox_pairstate *p, int report_distance)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    if (!A->closed && !B->closed)
        return 0;
    bvh_placed pb = bvh_place(&B->nodes[0], &p->b_in_a);
    if (node_gap(&A->nodes[0], &B->nodes[0], &pb, 0.0) > 0)
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

/* Dive greedily to one leaf pair (the child with the nearer bounding
 * sphere at each level) and offer its exact distance, so that the
 * traversal starts with a finite upper bound (and a query stopped at once
 * by its budget has a finite answer). Costs about two sphere tests per
 * level and one triangle test. */
static void dive_distance(prox_ctx *c, const prox_pairstate *p)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    uint32_t na = p->a->root, nb = p->b->root;
    for (;;) {
        uint32_t cha = A->child[na], chb = B->child[nb];
        int la = bvh_is_leaf(cha), lb = bvh_is_leaf(chb);
        if (la && lb)
            break;
        const bvh_node *a = &A->nodes[na], *b = &B->nodes[nb];
        if (lb || (!la && a->radius >= b->radius)) {
            prox_vec3 cb = prox_xform_point(&p->b_in_a, prox_v3(b->c[0], b->c[1], b->c[2]));
            const bvh_node *a0 = &A->nodes[cha], *a1 = &A->nodes[cha + 1];
            double g0 = prox_v3_dist(cb, prox_v3(a0->c[0], a0->c[1], a0->c[2])) - a0->radius;
            double g1 = prox_v3_dist(cb, prox_v3(a1->c[0], a1->c[1], a1->c[2])) - a1->radius;
            na = g0 <= g1 ? cha : cha + 1;
        } else {
            prox_vec3 ca = prox_xform_point(&p->a_in_b, prox_v3(a->c[0], a->c[1], a->c[2]));
            const bvh_node *b0 = &B->nodes[chb], *b1 = &B->nodes[chb + 1];
            double g0 = prox_v3_dist(ca, prox_v3(b0->c[0], b0->c[1], b0->c[2])) - b0->radius;
            double g1 = prox_v3_dist(ca, prox_v3(b1->c[0], b1->c[1], b1->c[2])) - b1->radius;
            nb = g0 <= g1 ? chb : chb + 1;
        }
    }
    uint32_t ta = bvh_leaf_triangle(A->child[na]), tb = bvh_leaf_triangle(B->child[nb]);
    prox_vec3 Q[3], pa, pb;
    leaf_tri_in_a(B, tb, &p->b_in_a, Q);
    double d = prox_triangle_distance(A->tri[ta], Q, &pa, &pb);
    prox_ctx_count(c, 0, 1);
    prox_ctx_offer_distance(c, p, d, pa, pb, ta, tb);
}

/* Distance coherence: with a front in the cache, start from the last
 * query's cut (pairs pruned, leaf pairs) instead of the root pair: each
 * front pair gets its bound at the new pose; those that still cannot beat
 * the seeded best (the cached closest triangle pair) stay in the front
 * untested below, the rest are pushed and descend as usual. This skips the
 * expansions above the front that every query from the root repeats. */
static int start_from_front(prox_ctx *c, const prox_pairstate *p, const prox_front_entry *src, uint32_t n)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    for (uint32_t i = 0; i < n; i++)
        if (src[i].na >= A->node_count || src[i].nb >= B->node_count)
            return -1; /* not this pair's front */
    double best = prox_ctx_best(c);
    if (!(best < INFINITY))
        return -1; /* nothing seeded: the front would prune nothing */
    /* a front only deepens (pairs that drift apart are not raised again):
     * once it has grown by 1/8 since the last start from the roots, start over */
    if (n > p->cache->front_base + p->cache->front_base / 8 + 64)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        const bvh_node *a = &A->nodes[src[i].na], *b = &B->nodes[src[i].nb];
        dist_placed pb;
        dist_place(b, &p->b_in_a, &pb);
        double g = dist_gap(a, b, &pb, &p->b_in_a, best);
        prox_ctx_count(c, 1, 0);
        if (g >= best)
            prox_front_record(p, src[i].na, src[i].nb);
        else
            prox_ctx_push(c, p, src[i].na, src[i].nb, g > 0 ? g : 0.0);
    }
    return 0;
}

static void root_distance(prox_ctx *c, const prox_pairstate *p)
{
    uint32_t n_front = 0;
    const prox_front_entry *front = NULL;
    if (p->query->kind == PROX_QUERY_DISTANCE)
        front = prox_front_begin(p, &n_front);
    if (contained_overlap(c, p, 1) && (p->query->stop_on_overlap || p->query->kind != PROX_QUERY_DISTANCE)) {
        prox_front_invalidate(p);
        return;
    }
    if (p->query->kind == PROX_QUERY_DISTANCE && prox_ctx_best(c) <= 0) {
        prox_front_invalidate(p);
        return; /* distance 0 is already certain */
    }
    if (front && start_from_front(c, p, front, n_front) == 0)
        return;
    if (prox_front_on(p))
        p->cache->front_base = 0; /* measured at finish: a front grown from the roots */
    dive_distance(c, p); /* cheap; better than a stale cached pair after a jump */
    if (prox_ctx_done(c))
        return;
    prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

/* distance only (tolerance registers neither) */
static void pruned_distance(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    (void)c;
    prox_front_record(p, na, nb);
}

static void finish_distance(prox_ctx *c, const prox_pairstate *p)
{
    if (!prox_front_on(p))
        return;
    prox_front_finish(c, p);
    if (p->cache->front_base == 0)
        p->cache->front_base = p->cache->front_count;
}

static void root_collide(prox_ctx *c, const prox_pairstate *p)
{
    if (contained_overlap(c, p, 0))
        return;
    prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

/* Coherence: the exact distance of the last query's closest triangle pair
 * is a tight upper bound before the descent starts (it prunes at once). */
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
    h.name = "mesh-mesh distance (OBB+RSS)";
    h.expand = expand_distance;
    h.root = root_distance;
    h.seed = seed_distance;
    h.pruned = pruned_distance;
    h.finish = finish_distance;
    prox_bank_set(bank, PROX_TREE_MESH, PROX_TREE_MESH, PROX_QUERY_DISTANCE, &h);
    h.name = "mesh-mesh tolerance (OBB+RSS)";
    h.expand = expand_tolerance;
    h.pruned = NULL;
    h.finish = NULL;
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
