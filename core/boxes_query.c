/* boxes_query.c - (BOXES, BOXES) handlers: collide and contacts, the
 * paper's section 6 on the engine. RT safe: no allocation, no locks, no
 * prints.
 *
 * Every node pair met is classified once, when it is made: outer boxes
 * apart (bounding spheres, then the 15 separating axes of the mesh BVH's
 * bvh_obb_gap) -> dropped; inner boxes overlapping -> a collision, reported
 * at once (collide stops there; contacts only take it for two leaves, and
 * descend otherwise, since they list leaf pairs); else the pair is pushed.
 * Expanding a pair splits the node with the larger outer box (the other if
 * that is a leaf); two leaves get the exact test.
 *
 * The exact test is a separating-axis test of the two convex pieces as
 * solids: the face normals of both, then the cross products of the edge
 * pairs that form a face of their Minkowski difference (their arcs on the
 * Gauss map cross; Gregorius, "The Separating Axis Test between convex
 * polyhedra", GDC 2013) - the other edge pairs cannot separate more. A
 * candidate edge axis that claims a separation is confirmed by projecting
 * both pieces on it, so rounding in its direction never reports a false
 * separation. Pieces whose edges could not be paired with their faces at
 * build time (none for well-formed input) project on every edge pair.
 */
#include "boxes_internal.h"
#include "handlers.h"

enum { PAIR_APART, PAIR_INNER, PAIR_OPEN };

/* Inner boxes are certified to overlap when they still overlap shrunk by
 * this fraction of their radii: more than the float frames' rounding
 * (~1e-7 of the boxes' size) and bvh_obb_gap's own slack (its padded |R|
 * and skipped near-parallel edge axes, below 1e-6), which both lean towards
 * "may overlap". */
#define BOXES_ACCEPT_MARGIN 1e-5

static int classify(const prox_boxes *A, const prox_boxes *B, uint32_t na, uint32_t nb, const prox_xform *X)
{
    const boxes_node *a = &A->nodes[na], *b = &B->nodes[nb];
    bvh_placed po = bvh_place(&b->outer, X);
    if (bvh_sphere_gap(&a->outer, &b->outer, &po) > 0)
        return PAIR_APART;
    bvh_rel r = bvh_rel_placed(&a->outer, &po);
    if (bvh_obb_gap(&r, a->outer.e, b->outer.e, 0.0) > 0)
        return PAIR_APART;
    if (!(a->inner.radius > 0 && b->inner.radius > 0))
        return PAIR_OPEN;
    float m = (float)(BOXES_ACCEPT_MARGIN * ((double)a->inner.radius + (double)b->inner.radius)), ea[3], eb[3];
    for (int i = 0; i < 3; i++) {
        ea[i] = a->inner.e[i] - m, eb[i] = b->inner.e[i] - m;
        if (!(ea[i] > 0 && eb[i] > 0))
            return PAIR_OPEN;
    }
    bvh_placed pi = bvh_place(&b->inner, X);
    bvh_rel ri = bvh_rel_placed(&a->inner, &pi);
    return bvh_obb_gap(&ri, ea, eb, 0.0) <= 0 ? PAIR_INNER : PAIR_OPEN;
}

/* ---- convex pieces ---- */

/* A convex polytope in its own frame: vertices, edges, planes. */
typedef struct cvx {
    const prox_vec3 *v;
    const boxes_edge *e;
    const prox_vec3 *n;
    const double *d;
    uint32_t nv, ne, nf;
    int adjacency;
    prox_vec3 inside; /* a point strictly inside */
} cvx;

static cvx piece_cvx(const prox_boxes *T, uint32_t node)
{
    const boxes_piece *pc = &T->pieces[node];
    cvx c = {T->vertices + pc->v0, T->edges + pc->e0, T->plane_n + pc->f0, T->plane_d + pc->f0, pc->nv, pc->ne, pc->nf,
             (pc->flags & BOXES_ADJACENCY) != 0, pc->centroid};
    return c;
}

/* Separation of B (frame mapped into A's by X) from A along unit axis u
 * (A's frame, pointing from A towards B): min over B - max over A. */
static double project_gap(const cvx *A, const cvx *B, const prox_xform *X, prox_vec3 u)
{
    double amax = -INFINITY, bmin = INFINITY;
    for (uint32_t i = 0; i < A->nv; i++)
        amax = fmax(amax, prox_v3_dot(u, A->v[i]));
    prox_vec3 ub = prox_m3_tmul_v(&X->R, u); /* u . (R v + t) = (R^T u) . v + u . t */
    for (uint32_t i = 0; i < B->nv; i++)
        bmin = fmin(bmin, prox_v3_dot(ub, B->v[i]));
    return bmin + prox_v3_dot(u, X->t) - amax;
}

/* the largest separation of B's vertices above A's face planes */
static int faces_separate(const cvx *A, const cvx *B, const prox_xform *X, double tol)
{
    for (uint32_t k = 0; k < A->nf; k++) {
        prox_vec3 m = prox_m3_tmul_v(&X->R, A->n[k]);
        double lo = INFINITY;
        for (uint32_t i = 0; i < B->nv; i++)
            lo = fmin(lo, prox_v3_dot(m, B->v[i]));
        if (lo + prox_v3_dot(A->n[k], X->t) - A->d[k] > tol)
            return 1;
    }
    return 0;
}

/* Do the arcs (a, b) and (c, d) cross on the unit sphere (Gregorius)? */
static inline int arcs_cross(prox_vec3 a, prox_vec3 b, prox_vec3 c, prox_vec3 d)
{
    prox_vec3 bxa = prox_v3_cross(b, a), dxc = prox_v3_cross(d, c);
    double cba = prox_v3_dot(c, bxa), dba = prox_v3_dot(d, bxa), adc = prox_v3_dot(a, dxc), bdc = prox_v3_dot(b, dxc);
    return cba * dba < 0 && adc * bdc < 0 && cba * bdc > 0;
}

/* Separating-axis test of two convex solids (B placed by X = b_in_a, Y its
 * inverse): 1 if they overlap or are within tol of touching. */
static int cvx_overlap(const cvx *A, const cvx *B, const prox_xform *X, const prox_xform *Y, double tol)
{
    if (faces_separate(A, B, X, tol) || faces_separate(B, A, Y, tol))
        return 0;
    int prune = A->adjacency && B->adjacency;
    for (uint32_t j = 0; j < B->ne; j++) {
        const boxes_edge *eb = &B->e[j];
        prox_vec3 p2 = prox_xform_point(X, B->v[eb->a]), e2 = prox_xform_vector(X, prox_v3_sub(B->v[eb->b], B->v[eb->a]));
        /* the Gauss map of -B: its normals negated */
        prox_vec3 c = prox_v3_scale(prox_xform_vector(X, B->n[eb->f0]), -1.0);
        prox_vec3 d = prox_v3_scale(prox_xform_vector(X, B->n[eb->f1]), -1.0);
        double l2 = prox_v3_len(e2);
        for (uint32_t i = 0; i < A->ne; i++) {
            const boxes_edge *ea = &A->e[i];
            if (prune && !arcs_cross(A->n[ea->f0], A->n[ea->f1], c, d))
                continue;
            prox_vec3 p1 = A->v[ea->a], e1 = prox_v3_sub(A->v[ea->b], p1);
            prox_vec3 u = prox_v3_cross(e1, e2);
            double len = prox_v3_len(u);
            if (!(len > 1e-12 * prox_v3_len(e1) * l2))
                continue; /* parallel: the face axes cover them */
            u = prox_v3_scale(u, 1.0 / len);
            if (prox_v3_dot(u, prox_v3_sub(p1, A->inside)) < 0)
                u = prox_v3_scale(u, -1.0);
            /* a Minkowski face: the edges are the supports along u */
            if (prune && prox_v3_dot(u, prox_v3_sub(p2, p1)) <= tol)
                continue;
            if (project_gap(A, B, X, u) > tol)
                return 0;
        }
    }
    return 1;
}

static int inside_cvx(const cvx *P, prox_vec3 x, double tol)
{
    for (uint32_t k = 0; k < P->nf; k++)
        if (prox_v3_dot(P->n[k], x) - P->d[k] > tol)
            return 0;
    return 1;
}

/* the middle of the part of segment [a, b] inside P (Cyrus-Beck) */
static int clip_segment(const cvx *P, prox_vec3 a, prox_vec3 b, double tol, prox_vec3 *out)
{
    double t0 = 0, t1 = 1;
    prox_vec3 ab = prox_v3_sub(b, a);
    for (uint32_t k = 0; k < P->nf && t0 <= t1; k++) {
        double num = P->d[k] + tol - prox_v3_dot(P->n[k], a), den = prox_v3_dot(P->n[k], ab);
        if (den > 0)
            t1 = fmin(t1, num / den);
        else if (den < 0)
            t0 = fmax(t0, num / den);
        else if (num < 0)
            return 0;
    }
    if (!(t0 <= t1))
        return 0;
    *out = prox_v3_madd(a, ab, 0.5 * (t0 + t1));
    return 1;
}

/* A point in both (A's frame), for the contact report: a vertex of one
 * inside the other, else where an edge of one passes through the other
 * (two convex solids that meet always have one or the other). */
static int common_point(const cvx *A, const cvx *B, const prox_xform *X, const prox_xform *Y, double tol, prox_vec3 *pt)
{
    for (uint32_t i = 0; i < B->nv; i++) {
        prox_vec3 x = prox_xform_point(X, B->v[i]);
        if (inside_cvx(A, x, tol))
            return *pt = x, 1;
    }
    for (uint32_t i = 0; i < A->nv; i++)
        if (inside_cvx(B, prox_xform_point(Y, A->v[i]), tol))
            return *pt = A->v[i], 1;
    for (uint32_t i = 0; i < A->ne; i++) {
        prox_vec3 q;
        if (clip_segment(B, prox_xform_point(Y, A->v[A->e[i].a]), prox_xform_point(Y, A->v[A->e[i].b]), tol, &q))
            return *pt = prox_xform_point(X, q), 1;
    }
    for (uint32_t i = 0; i < B->ne; i++)
        if (clip_segment(A, prox_xform_point(X, B->v[B->e[i].a]), prox_xform_point(X, B->v[B->e[i].b]), tol, pt))
            return 1;
    return 0;
}

/* A box record as a polytope, in storage the caller provides. Corner k
 * is c + sum +-e_i col_i with bit i of k giving the sign. */
typedef struct box_cvx {
    prox_vec3 v[8], n[6];
    double d[6];
} box_cvx;

static const boxes_edge box_edges[12] = {{0, 1, 0, 0}, {2, 3, 0, 0}, {4, 5, 0, 0}, {6, 7, 0, 0},
                                         {0, 2, 0, 0}, {1, 3, 0, 0}, {4, 6, 0, 0}, {5, 7, 0, 0},
                                         {0, 4, 0, 0}, {1, 5, 0, 0}, {2, 6, 0, 0}, {3, 7, 0, 0}};

static cvx box_as_cvx(const bvh_node *b, box_cvx *s)
{
    const float *e = b->e;
    prox_vec3 c = prox_v3(b->c[0], b->c[1], b->c[2]), col[3];
    for (int i = 0; i < 3; i++)
        col[i] = prox_v3(b->R[0][i], b->R[1][i], b->R[2][i]);
    for (int k = 0; k < 8; k++) {
        s->v[k] = c;
        for (int i = 0; i < 3; i++)
            s->v[k] = prox_v3_madd(s->v[k], col[i], (k >> i & 1) ? e[i] : -(double)e[i]);
    }
    for (int i = 0; i < 3; i++) {
        s->n[2 * i] = col[i], s->d[2 * i] = prox_v3_dot(col[i], c) + e[i];
        s->n[2 * i + 1] = prox_v3_scale(col[i], -1.0), s->d[2 * i + 1] = -prox_v3_dot(col[i], c) + e[i];
    }
    cvx x = {s->v, box_edges, s->n, s->d, 8, 12, 6, 0, c};
    return x;
}

/* tolerance of the exact test: 1e-12 of the pair's size */
static inline double pair_tol(const prox_boxes *A, const prox_boxes *B, const prox_xform *X)
{
    return 1e-12 * (A->size + B->size + prox_v3_len(X->t));
}

/* the overlap of node pair (na, nb), decided by inner boxes or by the
 * exact test at tolerance tol (pair_tol) */
static void report(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, int inner, double tol)
{
    const prox_boxes *A = p->a->impl, *B = p->b->impl;
    prox_vec3 pt;
    cvx ca, cb;
    box_cvx sa, sb;
    if (inner) {
        ca = box_as_cvx(&A->nodes[na].inner, &sa);
        cb = box_as_cvx(&B->nodes[nb].inner, &sb);
    } else {
        ca = piece_cvx(A, na);
        cb = piece_cvx(B, nb);
    }
    if (!common_point(&ca, &cb, &p->b_in_a, &p->a_in_b, tol, &pt)) /* only at rounding's edge */
        pt = prox_v3_scale(prox_v3_add(A->pieces[na].centroid, prox_xform_point(&p->b_in_a, B->pieces[nb].centroid)), 0.5);
    uint32_t flag = inner ? PROX_BOXES_INNER : 0;
    prox_ctx_report_overlap(c, p, na | flag, nb | flag, pt);
}

/* a node pair just made: drop it, report it, or queue it */
static void visit(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    const prox_boxes *A = p->a->impl, *B = p->b->impl;
    int k = classify(A, B, na, nb, &p->b_in_a);
    prox_ctx_count(c, 1, 0);
    if (k == PAIR_APART)
        return;
    if (k == PAIR_INNER && (p->query->kind == PROX_QUERY_COLLIDE || (!A->child[na] && !B->child[nb]))) {
        report(c, p, na, nb, 1, pair_tol(A, B, &p->b_in_a));
        return;
    }
    prox_ctx_push(c, p, na, nb, 0.0);
}

static void root_boxes(prox_ctx *c, const prox_pairstate *p) { visit(c, p, p->a->root, p->b->root); }

static void expand_boxes(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    const prox_boxes *A = p->a->impl, *B = p->b->impl;
    uint32_t ca = A->child[na], cb = B->child[nb];
    if (!ca && !cb) {
        cvx pa = piece_cvx(A, na), pb = piece_cvx(B, nb);
        const double tol = pair_tol(A, B, &p->b_in_a);
        prox_ctx_count(c, 0, 1);
        if (cvx_overlap(&pa, &pb, &p->b_in_a, &p->a_in_b, tol))
            report(c, p, na, nb, 0, tol);
        return;
    }
    /* the second child is pushed first, so the first pops first */
    if (!cb || (ca && A->nodes[na].outer.radius >= B->nodes[nb].outer.radius)) {
        visit(c, p, ca + 1, nb);
        if (!prox_ctx_done(c))
            visit(c, p, ca, nb);
    } else {
        visit(c, p, na, cb + 1);
        if (!prox_ctx_done(c))
            visit(c, p, na, cb);
    }
}

void prox_boxes_register(prox_bank *bank)
{
    prox_handler h = {0};
    h.name = "boxes-boxes collide (outer/inner boxes, SAT leaves)";
    h.root = root_boxes;
    h.expand = expand_boxes;
    prox_bank_set(bank, PROX_TREE_BOXES, PROX_TREE_BOXES, PROX_QUERY_COLLIDE, &h);
    h.name = "boxes-boxes contacts (outer/inner boxes, SAT leaves)";
    prox_bank_set(bank, PROX_TREE_BOXES, PROX_TREE_BOXES, PROX_QUERY_CONTACTS, &h);
}
