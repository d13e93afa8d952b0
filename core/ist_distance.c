/* ist_distance.c - (IST, IST) distance (Algorithm 1, refined on the exact
 * triangles of the closest spheres, 4.1.2), tolerance, collide and
 * contacts. RT safe. */
#include "ist_query.h"

/* Distance candidates (the pair's scratch): the closest leaf pairs seen in
 * distinct places (no two within a sphere diameter of each other on both
 * objects), each a start for the surface refinement; the closest sphere
 * pair alone can sit in the wrong local minimum of a non-convex pair. */
#define IST_CANDIDATES 6
typedef struct ist_cand {
    uint32_t n;
    struct {
        float d;
        uint32_t la, lb;
    } c[IST_CANDIDATES];
} ist_cand;
_Static_assert(sizeof(ist_cand) <= PROX_PAIR_SCRATCH, "candidates fit the pair scratch");
_Static_assert(sizeof(ist_cand) <= IST_FX_OFFSET, "candidates sit before the float frame in the scratch");

static int same_place(const prox_ist *t, uint32_t i, uint32_t j)
{
    const ist_sphere *a = &t->spheres[i], *b = &t->spheres[j];
    float dx = a->x - b->x, dy = a->y - b->y, dz = a->z - b->z, r = 2 * (a->r + b->r);
    return dx * dx + dy * dy + dz * dz < r * r;
}

static void cand_offer(const prox_pairstate *p, double d, uint32_t la, uint32_t lb)
{
    ist_cand *k = p->scratch;
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    int worst = 0;
    for (uint32_t i = 0; i < k->n; i++) {
        if (same_place(A, la, k->c[i].la) && same_place(B, lb, k->c[i].lb)) {
            if (d < k->c[i].d)
                k->c[i].d = (float)d, k->c[i].la = la, k->c[i].lb = lb;
            return;
        }
        if (k->c[i].d > k->c[worst].d)
            worst = (int)i;
    }
    if (k->n < IST_CANDIDATES)
        worst = (int)k->n++;
    else if (!(d < k->c[worst].d))
        return;
    k->c[worst].d = (float)d, k->c[worst].la = la, k->c[worst].lb = lb;
}

/* exact inner-sphere distance of a leaf pair, offered with witnesses */
static void leaf_distance(prox_ctx *c, const prox_pairstate *p, uint32_t la, uint32_t lb)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    prox_vec3 ca = sphere_centre(A, la, NULL), cb = sphere_centre(B, lb, &p->b_in_a);
    double ra = A->spheres[la].r, rb = B->spheres[lb].r;
    prox_vec3 u = prox_v3_sub(cb, ca);
    double len = prox_v3_len(u);
    prox_vec3 n = len > 0 ? prox_v3_scale(u, 1.0 / len) : prox_v3(1, 0, 0);
    double d = len - ra - rb;
    prox_ctx_count(c, 0, 1);
    if (p->query->kind == PROX_QUERY_COLLIDE || p->query->kind == PROX_QUERY_CONTACTS) {
        if (d <= 0)
            prox_ctx_report_overlap(c, p, la, lb, prox_v3_madd(ca, n, ra + 0.5 * d));
        return;
    }
    if (p->query->kind == PROX_QUERY_DISTANCE)
        cand_offer(p, d, la, lb);
    prox_ctx_offer_distance(c, p, d, prox_v3_madd(ca, n, ra), prox_v3_madd(cb, n, -rb), la, lb);
}

static void expand_distance(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    if ((na & IST_LEAF) && (nb & IST_LEAF)) {
        leaf_distance(c, p, na & ~IST_LEAF, nb & ~IST_LEAF);
        return;
    }
    int overlap_only = p->query->kind == PROX_QUERY_COLLIDE || p->query->kind == PROX_QUERY_CONTACTS;
    double best = prox_ctx_best(c);
    /* float prefilter on the primary radii: a pair survives when its gap
     * may be below the best distance so far (overlap only: below 0) */
    lanes la, lb;
    lanes_load_r(A, na, 1, &la);
    lanes_load_r(B, nb, 1, &lb);
    prox_ctx_count(c, pairs_tested(&la, &lb), 0);
    lanes_move(pair_fx(p), &lb);
    double grow = overlap_only ? 0.0 : best;
    if (!(grow < 1e30))
        grow = 1e30; /* nothing found yet: every pair */
    unsigned hit = mask16_grow(&la, &lb, (float)(grow * (1 + 1e-6)));
    unsigned moved = 0;
    kid ka[4], kb[4];
    for (; hit; hit &= hit - 1) {
        int k = __builtin_ctz(hit), i = k >> 2, j = k & 3;
        if (!(moved >> (4 + j) & 1))
            kid_get_r(B, nb, j, &p->b_in_a, 1, &kb[j]), moved |= 1u << (4 + j);
        if (!(moved >> i & 1))
            kid_get_r(A, na, i, NULL, 1, &ka[i]), moved |= 1u << i;
        const kid *a = &ka[i], *b = &kb[j];
        double dx = a->x - b->x, dy = a->y - b->y, dz = a->z - b->z;
        double d2 = dx * dx + dy * dy + dz * dz, rr = a->R + b->R;
        /* prune on squares; the square root only for what survives */
        if (overlap_only ? d2 > rr * rr : !(best + rr > 0) || d2 >= (best + rr) * (best + rr))
            continue;
        double g = sqrt(d2) - rr;
        if (overlap_only ? g > 0 : g >= best)
            continue;
        if ((a->id & IST_LEAF) && (b->id & IST_LEAF)) {
            leaf_distance(c, p, a->id & ~IST_LEAF, b->id & ~IST_LEAF);
            if (prox_ctx_done(c))
                return;
            best = prox_ctx_best(c);
        } else
            prox_ctx_push(c, p, a->id, b->id, g > 0 ? g : 0.0);
    }
}

static void root_distance(prox_ctx *c, const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    ist_fx_prepare(p);
    prox_ctx_set_bound_offset(c, p, A->surface_gap + B->surface_gap);
    prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

/* collide, contacts: the roots, with the float frame ready */
static void root_overlap(prox_ctx *c, const prox_pairstate *p)
{
    ist_fx_prepare(p);
    prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

static void seed_distance(prox_ctx *c, const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    uint32_t la = p->cache->leaf_a, lb = p->cache->leaf_b;
    if (p->swapped) {
        uint32_t t = la;
        la = lb;
        lb = t;
    }
    if (la < A->sphere_count && lb < B->sphere_count)
        leaf_distance(c, p, la, lb);
}

static double tri_pair_distance(const prox_ist *A, uint32_t ta, const prox_ist *B, uint32_t tb, const prox_xform *b_in_a,
                                prox_vec3 *pa, prox_vec3 *pb)
{
    prox_vec3 P[3], Q[3];
    for (int k = 0; k < 3; k++) {
        P[k] = A->verts[A->tris[ta][k]];
        Q[k] = prox_xform_point(b_in_a, B->verts[B->tris[tb][k]]);
    }
    return prox_triangle_distance(P, Q, pa, pb);
}

/* Local descent over edge-adjacent triangle pairs from (ta, tb): move to
 * the best neighbouring pair while the distance does not grow (equal moves
 * allowed: closest features on a shared edge form plateaus; never straight
 * back). Keeps the best pair seen in *d, *pa, *pb. */
static void walk_pairs(const prox_pairstate *p, uint32_t ta, uint32_t tb, double *d_io, prox_vec3 *pa_io, prox_vec3 *pb_io,
                       uint32_t *tests)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    prox_vec3 pa, pb;
    double d = tri_pair_distance(A, ta, B, tb, &p->b_in_a, &pa, &pb);
    (*tests)++;
    if (d < *d_io)
        *d_io = d, *pa_io = pa, *pb_io = pb;
    uint32_t prev_a = UINT32_MAX, prev_b = UINT32_MAX;
    for (int step = 0; step < 16; step++) {
        if (past_deadline(p))
            break;
        uint32_t next_a = ta, next_b = tb;
        double nd = INFINITY;
        prox_vec3 qa, qb, na_p = pa, nb_p = pb;
        for (int k = 0; k < 6; k++) {
            uint32_t ca = k < 3 ? A->adj[ta][k] : ta, cb = k < 3 ? tb : B->adj[tb][k - 3];
            if ((ca == ta && cb == tb) || (ca == prev_a && cb == prev_b))
                continue;
            double dn = tri_pair_distance(A, ca, B, cb, &p->b_in_a, &qa, &qb);
            (*tests)++;
            if (dn < nd)
                nd = dn, next_a = ca, next_b = cb, na_p = qa, nb_p = qb;
        }
        if (!(nd <= d * (1 + 1e-12)))
            break;
        prev_a = ta, prev_b = tb;
        ta = next_a, tb = next_b, d = nd, pa = na_p, pb = nb_p;
        if (d < *d_io)
            *d_io = d, *pa_io = pa, *pb_io = pb;
    }
}

typedef struct refine_best {
    double d;
    prox_vec3 pa, pb; /* A's frame */
    uint32_t ta, tb;
    uint32_t tests;
} refine_best;

/* Alternating projection from x (A's frame): onto A then B (a_first) or
 * onto B then A, each round jumping to the exact closest points of the two
 * triangles found; every pair tried is offered to *rb. */
static void project_chain(const prox_pairstate *p, prox_vec3 x, int a_first, refine_best *rb)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    double on_first = INFINITY;
    for (int it = 0; it < 8 && !past_deadline(p); it++) {
        uint32_t t1, t2, ta, tb;
        prox_vec3 q1, q2;
        /* first surface: the one x is to be projected on */
        if (a_first) {
            if (ist_tritree_closest(A, x, on_first, &t1, &q1, &rb->tests, p->query->deadline_ns) == INFINITY)
                break;
            if (ist_tritree_closest(B, prox_xform_point(&p->a_in_b, q1), rb->d, &t2, &q2, &rb->tests, p->query->deadline_ns) == INFINITY)
                break; /* B comes no closer to q1 than the best pair already found */
            ta = t1, tb = t2;
        } else {
            if (ist_tritree_closest(B, prox_xform_point(&p->a_in_b, x), on_first, &t1, &q1, &rb->tests, p->query->deadline_ns) == INFINITY)
                break;
            if (ist_tritree_closest(A, prox_xform_point(&p->b_in_a, q1), rb->d, &t2, &q2, &rb->tests, p->query->deadline_ns) == INFINITY)
                break;
            ta = t2, tb = t1;
        }
        prox_vec3 pa, pb;
        double dt = tri_pair_distance(A, ta, B, tb, &p->b_in_a, &pa, &pb);
        rb->tests++;
        int better = dt < rb->d * (1 - 1e-9);
        if (dt < rb->d)
            rb->d = dt, rb->pa = pa, rb->pb = pb, rb->ta = ta, rb->tb = tb;
        if (!better)
            break;
        x = a_first ? pb : pa; /* the other surface's point starts the next round */
        on_first = dt * (1 + 1e-9);
    }
}

/* 4.1.2 refined: the closest inner spheres say where the objects come
 * closest; the exact surfaces there give a true upper bound on the mesh
 * distance, far tighter than the sphere distance. On a fine mesh the
 * triangle attached to a sphere (closest to its centre) can lie many
 * triangles away from the closest surface points, so the refinement
 * projects: from B's sphere witness to the closest point of A's surface,
 * from there to the closest point of B's, and back (alternating
 * projection through the triangle box trees), and the same from A's
 * witness starting on B (the two often settle in different local minima
 * of a non-convex pair); then from the other candidate sphere pairs (see
 * ist_cand) and, with the cache, from the last answer's triangle pair;
 * then finishes with the exact triangle-pair descent from the best pair.
 * Every value offered is the exact distance of a real triangle pair. */
static void finish_distance(prox_ctx *c, const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    double v;
    uint32_t la, lb;
    if (p->query->kind != PROX_QUERY_DISTANCE || prox_ctx_pair_best(c, p, &v, &la, &lb) != 0 || v <= 0)
        return;
    if (la >= A->sphere_count || lb >= B->sphere_count)
        return;
    if (past_deadline(p))
        return; /* out of time: the sphere distance stands (a valid upper bound) */
    refine_best rb = {INFINITY, prox_v3(0, 0, 0), prox_v3(0, 0, 0), A->spheres[la].tri, B->spheres[lb].tri, 0};
    if (A->tritree.nodes && B->tritree.nodes) {
        const ist_cand *k = p->scratch;
        for (uint32_t i = 0; i <= k->n; i++) {
            /* the best pair first, both ways; then the other places, one way */
            uint32_t sa = i == 0 ? la : k->c[i - 1].la, sb = i == 0 ? lb : k->c[i - 1].lb;
            if (i > 0 && sa == la && sb == lb)
                continue;
            prox_vec3 ca = sphere_centre(A, sa, NULL), cb = sphere_centre(B, sb, &p->b_in_a);
            prox_vec3 u = prox_v3_sub(cb, ca);
            double len = prox_v3_len(u);
            if (!(len > 0)) {
                project_chain(p, ca, 1, &rb);
                continue;
            }
            project_chain(p, prox_v3_madd(cb, u, -B->spheres[sb].r / len), 1, &rb); /* from B's witness */
            if (i == 0)
                project_chain(p, prox_v3_madd(ca, u, A->spheres[sa].r / len), 0, &rb); /* from A's witness */
        }
    }
    prox_cache *cache = p->query->use_cache ? p->cache : NULL;
    if (cache && cache->hint_a < A->tri_count && cache->hint_b < B->tri_count && A->tritree.nodes && B->tritree.nodes) {
        /* coherence: the last answer's triangle pair, and a chain from it */
        prox_vec3 pa, pb;
        double d = tri_pair_distance(A, cache->hint_a, B, cache->hint_b, &p->b_in_a, &pa, &pb);
        rb.tests++;
        if (d < rb.d)
            rb.d = d, rb.pa = pa, rb.pb = pb, rb.ta = cache->hint_a, rb.tb = cache->hint_b;
        project_chain(p, pb, 1, &rb);
    }
    walk_pairs(p, rb.ta, rb.tb, &rb.d, &rb.pa, &rb.pb, &rb.tests);
    if (cache)
        cache->hint_a = rb.ta, cache->hint_b = rb.tb;
    prox_ctx_count(c, 0, rb.tests);
    if (rb.d < v)
        prox_ctx_offer_distance(c, p, rb.d, rb.pa, rb.pb, la, lb);
}

/* ---- penetration volume ---- */
void ist_register_distance(prox_bank *bank)
{
    prox_handler h;
    memset(&h, 0, sizeof h);
    h.name = "ist-ist distance";
    h.root = root_distance;
    h.seed = seed_distance;
    h.expand = expand_distance;
    h.finish = finish_distance;
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_DISTANCE, &h);
    h.name = "ist-ist tolerance";
    h.finish = NULL;
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_TOLERANCE, &h);
    h.name = "ist-ist collide";
    h.seed = NULL;
    h.root = root_overlap;
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_COLLIDE, &h);
    h.name = "ist-ist contacts";
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_CONTACTS, &h);
}
