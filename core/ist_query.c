/* ist_query.c - (IST, IST) handlers: distance (Algorithm 1, refined on
 * the exact triangles of the closest spheres, 4.1.2), tolerance, collide,
 * contacts, and penetration volume (Algorithm 2; time-critical Algorithm 3
 * through the engine's deadline; contact fronts for coherence). RT safe.
 *
 * Expansion tests all child pairs of two 4-ary nodes (up to 16) from the
 * nodes' struct-of-arrays records, in one float SSE pass with a margin
 * that makes it conservative; survivors are tested again in double.
 * Penetration volume uses the secondary radii (4.2.1): their volumes add
 * up to the object's voxelized volume. Expected overlap of a node pair
 * (its share of the running estimate): the lens of two balls holding the
 * nodes' leaf volumes at their centroids (see expected_vol); with a
 * deadline the second-level estimate Vol^(1) (see push_vol). Certified
 * upper bound of a node pair: min(volA * leavesB, volB * leavesA) (each
 * leaf lens is at most the smaller leaf). */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "handlers.h"
#include "ist_internal.h"
#include "sphere.h"

static inline prox_vec3 sphere_centre(const prox_ist *t, uint32_t leaf, const prox_xform *X)
{
    const ist_sphere *s = &t->spheres[leaf];
    prox_vec3 c = prox_v3(s->x, s->y, s->z);
    return X ? prox_xform_point(X, c) : c;
}

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

/* Per-query state of a pair, at a fixed offset of its scratch after the
 * distance candidates, set by fx_prepare in the root hooks: B's frame in
 * A's in floats with the rounding margin of the float prefilter, the
 * deadline seen, and penetration volume's contact-front recording. */
typedef struct ist_fx {
    float r[9], t[3];
    float margin;
    int late;          /* the deadline has been seen passed: no more clock reads */
    uint32_t tick;     /* pushes since the last clock read */
    int record;        /* penetration volume: recording a contact front */
    double rec_margin; /* ... of the pairs within this distance */
} ist_fx;
#define IST_FX_OFFSET 128
_Static_assert(sizeof(ist_cand) <= IST_FX_OFFSET && IST_FX_OFFSET + sizeof(ist_fx) <= PROX_PAIR_SCRATCH, "scratch layout");

static inline ist_fx *pair_fx(const prox_pairstate *p) { return (ist_fx *)((char *)p->scratch + IST_FX_OFFSET); }

/* The float prefilter of an expansion rejects a child pair only when its
 * bounding spheres are apart by more than `margin`, which exceeds the float
 * rounding of the transformed centres and squared distances many times over
 * (1e-5 of the scene's extent, against errors of a few 1e-7); what survives is
 * tested again in double exactly as before, so the answers do not change. */
static void fx_prepare(const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    ist_fx *f = pair_fx(p);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            f->r[3 * i + j] = (float)p->b_in_a.R.m[i][j];
    f->t[0] = (float)p->b_in_a.t.x, f->t[1] = (float)p->b_in_a.t.y, f->t[2] = (float)p->b_in_a.t.z;
    double ext = prox_v3_len(p->b_in_a.t);
    for (int k = 0; k < 2; k++) {
        const float *r = k ? B->root : A->root;
        ext += fabs(r[0]) + fabs(r[1]) + fabs(r[2]) + r[3];
    }
    f->margin = (float)(1e-5 * ext);
    f->late = 0;
    f->tick = 0;
    f->record = 0;
    f->rec_margin = 0;
}

/* Past the deadline? Reads the clock until it says yes once, then
 * remembers (per query: fx_prepare at the root resets it). */
static inline int past_deadline(const prox_pairstate *p)
{
    ist_fx *f = pair_fx(p);
    if (!f->late && p->query->deadline_ns && prox_now_ns() >= p->query->deadline_ns)
        f->late = 1;
    return f->late;
}

/* A node's children (or a leaf as its only child) as four float lanes,
 * unpacked: lane j is child slot j; `valid` has bit j set for a real child. */
typedef struct lanes {
    float x[4], y[4], z[4], r[4];
    uint32_t id[4];
    unsigned valid;
} lanes;

/* primary: the distance model's radii (a leaf's inner sphere, a child's
 * dr); else the bounding spheres of both models (the node records' cr) */
static inline void lanes_load_r(const prox_ist *t, uint32_t id, int primary, lanes *L)
{
    if (id & IST_LEAF) {
        const ist_sphere *q = &t->spheres[id & ~IST_LEAF];
        memset(L, 0, sizeof *L);
        L->x[0] = q->x, L->y[0] = q->y, L->z[0] = q->z;
        L->r[0] = primary ? q->r : q->r > q->r2 ? q->r : q->r2;
        L->id[0] = id;
        L->valid = 1;
        return;
    }
    const ist_node *nd = &t->nodes[id];
    memcpy(L->x, nd->cx, sizeof L->x);
    memcpy(L->y, nd->cy, sizeof L->y);
    memcpy(L->z, nd->cz, sizeof L->z);
    memcpy(L->r, primary ? t->dr[id] : nd->cr, sizeof L->r);
    memcpy(L->id, nd->child, sizeof L->id);
    L->valid = 0;
    for (int j = 0; j < 4; j++)
        L->valid |= (unsigned)(nd->child[j] != IST_EMPTY) << j;
}

static inline void lanes_load(const prox_ist *t, uint32_t id, lanes *L) { lanes_load_r(t, id, 0, L); }

/* carry lanes into A's frame (floats), radii grown by the float margin */
static inline void lanes_move(const ist_fx *f, lanes *L)
{
    for (int j = 0; j < 4; j++) {
        float x = L->x[j], y = L->y[j], z = L->z[j];
        L->x[j] = f->r[0] * x + f->r[1] * y + f->r[2] * z + f->t[0];
        L->y[j] = f->r[3] * x + f->r[4] * y + f->r[5] * z + f->t[1];
        L->z[j] = f->r[6] * x + f->r[7] * y + f->r[8] * z + f->t[2];
        L->r[j] += f->margin;
    }
}

/* Bit 4i+j set when lane i of a and lane j of b are both real and their
 * spheres, b's grown by `grow`, come closer than touching. (The scalar
 * branch is for targets without SSE2; x86-64 always has it.) */
static inline unsigned mask16_grow(const lanes *a, const lanes *b, float grow)
{
    unsigned hit = 0;
#if defined(__SSE2__)
    __m128 bx = _mm_loadu_ps(b->x), by = _mm_loadu_ps(b->y), bz = _mm_loadu_ps(b->z);
    __m128 br = _mm_add_ps(_mm_loadu_ps(b->r), _mm_set1_ps(grow));
    for (int i = 0; i < 4; i++) {
        if (!(a->valid >> i & 1))
            continue;
        __m128 dx = _mm_sub_ps(bx, _mm_set1_ps(a->x[i])), dy = _mm_sub_ps(by, _mm_set1_ps(a->y[i]));
        __m128 dz = _mm_sub_ps(bz, _mm_set1_ps(a->z[i])), rr = _mm_add_ps(br, _mm_set1_ps(a->r[i]));
        __m128 d2 = _mm_add_ps(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)), _mm_mul_ps(dz, dz));
        __m128 in = _mm_and_ps(_mm_cmplt_ps(d2, _mm_mul_ps(rr, rr)), _mm_cmpgt_ps(rr, _mm_setzero_ps()));
        hit |= (unsigned)_mm_movemask_ps(in) << (4 * i);
    }
#else
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float dx = b->x[j] - a->x[i], dy = b->y[j] - a->y[i], dz = b->z[j] - a->z[i], rr = a->r[i] + b->r[j] + grow;
            hit |= (unsigned)(rr > 0 && dx * dx + dy * dy + dz * dz < rr * rr) << (4 * i + j);
        }
#endif
    unsigned vb = b->valid * 0x1111u, va = 0;
    for (int i = 0; i < 4; i++)
        va |= (a->valid >> i & 1) * (0xfu << (4 * i));
    return hit & va & vb;
}

/* the child pairs an expansion of these lanes tests */
static inline uint32_t pairs_tested(const lanes *a, const lanes *b)
{
    static const unsigned char n[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};
    return (uint32_t)n[a->valid] * n[b->valid];
}

/* One child of a node id (slot j of an inner node; a leaf is its own child
 * 0) in doubles: bounding sphere of both models (primary: the distance
 * model's radius), carried into A's frame by X if given; secondary volume
 * and leaf count below it. */
typedef struct kid {
    uint32_t id, leaves;
    double x, y, z, R, vol;
} kid;

static inline void kid_get_r(const prox_ist *t, uint32_t id, int j, const prox_xform *X, int primary, kid *k)
{
    if (id & IST_LEAF) {
        const ist_sphere *q = &t->spheres[id & ~IST_LEAF];
        k->id = id, k->leaves = 1;
        k->x = q->x, k->y = q->y, k->z = q->z, k->R = primary ? q->r : q->r > q->r2 ? q->r : q->r2;
        k->vol = (float)(4.0 / 3.0 * M_PI * (double)q->r2 * q->r2 * q->r2);
    } else {
        const ist_node *nd = &t->nodes[id];
        k->id = nd->child[j], k->leaves = nd->cleaves[j];
        k->x = nd->cx[j], k->y = nd->cy[j], k->z = nd->cz[j], k->R = primary ? t->dr[id][j] : nd->cr[j], k->vol = nd->cvol[j];
    }
    if (X) {
        prox_vec3 c = prox_xform_point(X, prox_v3(k->x, k->y, k->z));
        k->x = c.x, k->y = c.y, k->z = c.z;
    }
}

static inline void kid_get(const prox_ist *t, uint32_t id, int j, const prox_xform *X, kid *k) { kid_get_r(t, id, j, X, 0, k); }

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
    fx_prepare(p);
    prox_ctx_set_bound_offset(c, p, A->surface_gap + B->surface_gap);
    prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

/* collide, contacts: the roots, with the float frame ready */
static void root_overlap(prox_ctx *c, const prox_pairstate *p)
{
    fx_prepare(p);
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

static inline double sphere_vol(double r) { return 4.0 / 3.0 * M_PI * r * r * r; }

/* Expected overlap of a node pair. The paper's eq. 8 thins the bounding
 * spheres' lens by both fill ratios (leaf volume / bounding volume), which
 * assumes the leaf volume spreads evenly over each bounding sphere; on
 * heavy penetrations at a 200 us budget its answers came out low (signed
 * median over 30 poses against the full query: -26% knot1, -16%
 * armadillo, -12% elephant, -5% fandisk, 0% bunny00). Here each node is a
 * ball of its leaf volume at the volume's centroid (ist_derive), and the
 * pair's expected overlap is the lens of the two balls: signed medians
 * +2% to +5% on four meshes at the same budget, -8% on knot1 (a thin tube).
 * *lens (if given): the lens of the bounding spheres at distance dist. */
static double expected_vol(const prox_pairstate *p, const kid *a, const kid *b, double dist, double *lens)
{
    if (lens)
        *lens = prox_lens_volume(a->R, b->R, dist);
    float ba[4], bb[4];
    ist_id_ball(p->a->impl, a->id, ba);
    ist_id_ball(p->b->impl, b->id, bb);
    prox_vec3 cb = prox_xform_point(&p->b_in_a, prox_v3(bb[0], bb[1], bb[2]));
    double dc = prox_v3_dist(cb, prox_v3(ba[0], ba[1], ba[2]));
    double e = prox_lens_volume(ba[3], bb[3], dc), m = a->vol < b->vol ? a->vol : b->vol;
    return e < m ? e : m;
}

/* A node's children's volume balls (centroid, radius) as float lanes (r =
 * 0: no ball); a leaf is its own single child. */
static inline void ball_lanes(const prox_ist *t, uint32_t id, lanes *L)
{
    if (id & IST_LEAF) {
        float b[4];
        ist_id_ball(t, id, b);
        memset(L, 0, sizeof *L);
        L->x[0] = b[0], L->y[0] = b[1], L->z[0] = b[2], L->r[0] = b[3];
        return;
    }
    const float *c = t->cball[id];
    memcpy(L->x, c, sizeof L->x);
    memcpy(L->y, c + 4, sizeof L->y);
    memcpy(L->z, c + 8, sizeof L->z);
    memcpy(L->r, c + 12, sizeof L->r);
}

/* Second-level expected overlap Vol^(1) (eq. 9): the sum of the expected
 * overlaps of the pair's child pairs (a leaf is its own child), in floats:
 * four lenses at a time (a ball of radius 0 adds nothing). */
static double expected_vol1(const prox_pairstate *p, uint32_t ida, uint32_t idb)
{
    lanes la, lb;
    ball_lanes(p->a->impl, ida, &la);
    ball_lanes(p->b->impl, idb, &lb);
    const ist_fx *f = pair_fx(p);
    const float m = f->margin;
    lanes_move(f, &lb);
    for (int j = 0; j < 4; j++) /* the estimate wants the balls themselves */
        lb.r[j] = lb.r[j] > m ? lb.r[j] - m : 0.0f;
    double sum = 0;
#if defined(__SSE2__)
    const __m128 bx = _mm_loadu_ps(lb.x), by = _mm_loadu_ps(lb.y), bz = _mm_loadu_ps(lb.z), br = _mm_loadu_ps(lb.r);
    const __m128 zero = _mm_setzero_ps(), two = _mm_set1_ps(2.0f), three = _mm_set1_ps(3.0f);
    const __m128 pi12 = _mm_set1_ps((float)(M_PI / 12.0)), pi43 = _mm_set1_ps((float)(4.0 / 3.0 * M_PI));
    const __m128 absmask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m128 acc = zero;
    for (int i = 0; i < 4; i++) {
        if (!(la.r[i] > 0))
            continue;
        __m128 r1 = _mm_set1_ps(la.r[i]);
        __m128 dx = _mm_sub_ps(bx, _mm_set1_ps(la.x[i])), dy = _mm_sub_ps(by, _mm_set1_ps(la.y[i])), dz = _mm_sub_ps(bz, _mm_set1_ps(la.z[i]));
        __m128 d = _mm_sqrt_ps(_mm_add_ps(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)), _mm_mul_ps(dz, dz)));
        __m128 sr = _mm_add_ps(r1, br), dr = _mm_sub_ps(r1, br), rmin = _mm_min_ps(r1, br), sgap = _mm_sub_ps(sr, d);
        __m128 dpos = _mm_max_ps(d, _mm_set1_ps(1e-30f));
        __m128 poly = _mm_sub_ps(_mm_add_ps(_mm_mul_ps(d, d), _mm_mul_ps(two, _mm_mul_ps(d, sr))), _mm_mul_ps(three, _mm_mul_ps(dr, dr)));
        __m128 part = _mm_div_ps(_mm_mul_ps(pi12, _mm_mul_ps(_mm_mul_ps(sgap, sgap), poly)), dpos);
        __m128 whole = _mm_mul_ps(pi43, _mm_mul_ps(rmin, _mm_mul_ps(rmin, rmin)));
        __m128 inside = _mm_cmple_ps(d, _mm_and_ps(dr, absmask));
        __m128 v = _mm_or_ps(_mm_and_ps(inside, whole), _mm_andnot_ps(inside, part));
        __m128 touch = _mm_and_ps(_mm_cmpgt_ps(sgap, zero), _mm_cmpgt_ps(rmin, zero));
        acc = _mm_add_ps(acc, _mm_and_ps(touch, v));
    }
    float out[4];
    _mm_storeu_ps(out, acc);
    sum = (double)out[0] + out[1] + out[2] + out[3];
#else
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (la.r[i] > 0 && lb.r[j] > 0) {
                float dx = lb.x[j] - la.x[i], dy = lb.y[j] - la.y[i], dz = lb.z[j] - la.z[i];
                sum += prox_lens_volume(la.r[i], lb.r[j], sqrtf(dx * dx + dy * dy + dz * dz));
            }
#endif
    return sum;
}

/* Push a node pair whose bounding spheres overlap. Certified upper bound:
 * min(volA * leavesB, volB * leavesA) (each leaf lens is at most the
 * smaller leaf). Without a deadline the order does not change the answer:
 * largest expected overlap (eq. 8) first. With one (Algorithm 3) the
 * running estimate is the second-level expected overlap Vol^(1) and the
 * pair with the largest gap between its bounding lens Vol(R ^ S) and
 * Vol^(1) goes first: the one whose expansion should tighten the answer
 * most. */
static void push_vol(prox_ctx *c, const prox_pairstate *p, const kid *a, const kid *b, double dist)
{
    double u1 = a->vol * b->leaves, u2 = b->vol * a->leaves, ub = u1 < u2 ? u1 : u2;
    double lens, est = expected_vol(p, a, b, dist, &lens), key = -est;
    if (p->query->deadline_ns) {
        /* past the deadline the expansion still pushes every pair (the
         * bounds need them) but with the cheap eq. 8 estimate, so the
         * query stops within about one expansion */
        ist_fx *f = pair_fx(p);
        if (!f->late && (++f->tick & 3) == 0)
            past_deadline(p); /* a clock read every 4 pushes (~0.1 us each) */
        if (!f->late)
            est = expected_vol1(p, a->id, b->id);
        key = -(lens - est);
    }
    if (est > ub)
        est = ub;
    prox_ctx_push_vol(c, p, a->id, b->id, key, est, ub);
}

/* Overlaps summed in A's frame, flushed with prox_ctx_add_volume_sum */
typedef struct vol_acc {
    double vol, deepest;
    prox_vec3 F, M;
    uint32_t la, lb;
    uint32_t leaf_tests;
} vol_acc;

static inline void acc_add(vol_acc *s, double v, prox_vec3 n, prox_vec3 point, uint32_t la, uint32_t lb)
{
    prox_vec3 f = prox_v3_scale(n, v);
    s->vol += v;
    s->F = prox_v3_add(s->F, f);
    s->M = prox_v3_add(s->M, prox_v3_cross(point, f));
    if (v > s->deepest)
        s->deepest = v, s->la = la, s->lb = lb;
}

static void acc_flush(prox_ctx *c, const prox_pairstate *p, vol_acc *s)
{
    prox_ctx_count(c, 0, s->leaf_tests);
    prox_ctx_add_volume_sum(c, p, s->vol, s->F, s->M, s->deepest, s->la, s->lb);
    memset(s, 0, sizeof *s);
}

/* the lens of two leaves' secondary spheres, into the sum */
static void leaf_volume(const prox_pairstate *p, uint32_t la, uint32_t lb, vol_acc *s)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    prox_vec3 ca = sphere_centre(A, la, NULL), cb = sphere_centre(B, lb, &p->b_in_a);
    double r1 = A->spheres[la].r2, r2 = B->spheres[lb].r2;
    prox_vec3 u = prox_v3_sub(cb, ca);
    double d = prox_v3_len(u);
    s->leaf_tests++;
    double v = prox_lens_volume(r1, r2, d);
    if (v <= 0)
        return;
    prox_vec3 n = d > 0 ? prox_v3_scale(u, 1.0 / d) : prox_v3(0, 0, 1);
    acc_add(s, v, n, prox_v3_madd(ca, n, prox_lens_plane(r1, r2, d)), la, lb);
}

/* one sphere (centre cl, radius rl, volume v, A's frame) inside the inner
 * sphere (cs, rs): its force along the line A's centre -> B's */
static inline void contained_one(prox_vec3 cl, double rl, double v, int node_in_a, prox_vec3 cs, double rs, vol_acc *s)
{
    prox_vec3 ca = node_in_a ? cl : cs, cb = node_in_a ? cs : cl;
    double ra = node_in_a ? rl : rs, rb = node_in_a ? rs : rl;
    prox_vec3 u = prox_v3_sub(cb, ca);
    double d = prox_v3_len(u);
    prox_vec3 dir = d > 0 ? prox_v3_scale(u, 1.0 / d) : prox_v3(0, 0, 1), f = prox_v3_scale(dir, v);
    s->F = prox_v3_add(s->F, f);
    s->M = prox_v3_add(s->M, prox_v3_cross(prox_v3_madd(ca, dir, prox_lens_plane(ra, rb, d)), f));
}

/* The force and torque of a hierarchy node lying inside an inner sphere
 * (the containment shortcut adds its volume at once): each leaf below is
 * inside the sphere, so its overlap is its own volume, pushing along the
 * line between the two centres; summed here without any overlap test, the
 * same force as the leaves would give one by one (the node's centre or
 * centroid alone came out up to 30% off, and jumped as the shortcut
 * switched on and off). node_in_a: the node is A's (the sphere B's). */
static void contained_force(const prox_pairstate *p, int node_in_a, uint32_t node, uint32_t sphere, vol_acc *s)
{
    const prox_ist *T = node_in_a ? p->a->impl : p->b->impl, *S = node_in_a ? p->b->impl : p->a->impl;
    prox_vec3 cs = sphere_centre(S, sphere, node_in_a ? &p->b_in_a : NULL);
    double rs = S->spheres[sphere].r2;
    uint32_t stack[256], n = 0; /* inner nodes only: 3 per level */
    const prox_xform *X = node_in_a ? NULL : &p->b_in_a;
    if (node & IST_LEAF) {
        const ist_sphere *q = &T->spheres[node & ~IST_LEAF];
        contained_one(sphere_centre(T, node & ~IST_LEAF, X), q->r2, sphere_vol(q->r2), node_in_a, cs, rs, s);
        return;
    }
    stack[n++] = node;
    while (n) {
        const ist_node *nd = &T->nodes[stack[--n]];
        for (int j = 0; j < 4; j++) {
            uint32_t c = nd->child[j];
            if (c == IST_EMPTY)
                continue;
            if (c & IST_LEAF) {
                double rl = T->spheres[c & ~IST_LEAF].r2;
                contained_one(sphere_centre(T, c & ~IST_LEAF, X), rl, sphere_vol(rl), node_in_a, cs, rs, s);
            } else if (n < 256)
                stack[n++] = c;
            else {
                /* a tree deeper than about 85 levels: that subtree pushes
                 * as one ball at its volume's centroid */
                float g[4];
                ist_id_ball(T, c, g);
                prox_vec3 gc = prox_v3(g[0], g[1], g[2]);
                contained_one(X ? prox_xform_point(X, gc) : gc, g[3], nd->cvol[j], node_in_a, cs, rs, s);
            }
        }
    }
}

/* Depth-first completion of a subtree (full queries: no deadline, so the
 * order cannot change the answer and the priority queue is only overhead).
 * A bounded stack on the C stack; pairs beyond it go to the engine's queue
 * as usual. */
#define PV_STACK 256
typedef struct pv_stack {
    uint32_t n;
    uint32_t na[PV_STACK], nb[PV_STACK];
} pv_stack;

static inline void acc_contained(const prox_pairstate *p, const kid *a, const kid *b, vol_acc *s)
{
    int bl = (b->id & IST_LEAF) != 0;
    const kid *in = bl ? a : b;
    contained_force(p, bl, in->id, bl ? b->id & ~IST_LEAF : a->id & ~IST_LEAF, s);
    s->vol += in->vol;
    if (in->vol > s->deepest)
        s->deepest = in->vol, s->la = bl ? IST_EMPTY : a->id & ~IST_LEAF, s->lb = bl ? b->id & ~IST_LEAF : IST_EMPTY;
}

/* a (node, leaf) or (leaf, node) pair at distance dist (centres): is the
 * node's bounding sphere inside the leaf's secondary sphere? */
static inline int contained(const prox_pairstate *p, const kid *a, const kid *b, double dist)
{
    int al = (a->id & IST_LEAF) != 0, bl = (b->id & IST_LEAF) != 0;
    if (al == bl)
        return 0;
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    double r = bl ? B->spheres[b->id & ~IST_LEAF].r2 : A->spheres[a->id & ~IST_LEAF].r2;
    return dist + (bl ? a->R : b->R) <= r;
}

/* The child pairs of (na, nb) whose bounding spheres come within `m` of
 * each other (0: overlap): leaf pairs (exact lens, zero if apart) and
 * containment shortcuts go into *s, and into the contact front when
 * recording; every other such pair goes on `stack` (depth first) or,
 * without one or when it is full, to the engine's queue. Returns the number
 * of child pairs tested. */
static uint32_t penvol_children(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, vol_acc *s, pv_stack *stack,
                                double m, int record)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    lanes la, lb;
    lanes_load(A, na, &la);
    lanes_load(B, nb, &lb);
    lanes_move(pair_fx(p), &lb);
    unsigned hit = mask16_grow(&la, &lb, (float)m), moved = 0;
    kid ka[4], kb[4];
    for (; hit; hit &= hit - 1) {
        int k = __builtin_ctz(hit), i = k >> 2, j = k & 3;
        if (la.id[i] & lb.id[j] & IST_LEAF) {
            /* two leaves: their exact lens (zero if apart) */
            leaf_volume(p, la.id[i] & ~IST_LEAF, lb.id[j] & ~IST_LEAF, s);
            if (record)
                prox_front_record(p, la.id[i], lb.id[j], 0.0f);
            continue;
        }
        if (stack && !((la.id[i] | lb.id[j]) & IST_LEAF)) {
            /* two inner nodes that may overlap: descend without the double
             * test (one apart by less than the float margin only costs
             * the tests of its children) */
            if (stack->n < PV_STACK) {
                stack->na[stack->n] = la.id[i], stack->nb[stack->n] = lb.id[j], stack->n++;
                continue;
            }
        }
        if (!(moved >> (4 + j) & 1))
            kid_get(B, nb, j, &p->b_in_a, &kb[j]), moved |= 1u << (4 + j);
        if (!(moved >> i & 1))
            kid_get(A, na, i, NULL, &ka[i]), moved |= 1u << i;
        const kid *a = &ka[i], *b = &kb[j];
        double dx = b->x - a->x, dy = b->y - a->y, dz = b->z - a->z;
        double d2 = dx * dx + dy * dy + dz * dz, rr = a->R + b->R + m;
        if (d2 >= rr * rr)
            continue; /* bounding spheres apart (by more than m): nothing below overlaps */
        double dist = sqrt(d2);
        /* containment shortcut: a hierarchy sphere inside a (secondary)
         * inner sphere overlaps it with all its leaf volume, added at once */
        if (contained(p, a, b, dist)) {
            acc_contained(p, a, b, s);
            if (record)
                prox_front_record(p, a->id, b->id, 0.0f);
            continue;
        }
        if (stack && stack->n < PV_STACK)
            stack->na[stack->n] = a->id, stack->nb[stack->n] = b->id, stack->n++;
        else
            push_vol(c, p, a, b, dist);
    }
    return pairs_tested(&la, &lb);
}

/* a node id itself as a kid (its own bounding sphere), carried by X */
static void self_kid(const prox_ist *t, uint32_t id, const prox_xform *X, kid *k)
{
    float s[4], v;
    uint32_t l;
    ist_id_sphere(t, id, s, &v, &l);
    prox_vec3 c = prox_v3(s[0], s[1], s[2]);
    if (X)
        c = prox_xform_point(X, c);
    k->id = id, k->leaves = l, k->x = c.x, k->y = c.y, k->z = c.z, k->R = s[3], k->vol = v;
}

/* one node pair, B's sphere carried into A's frame; their distance */
static double pair_kid(const prox_pairstate *p, uint32_t na, uint32_t nb, kid *a, kid *b)
{
    self_kid(p->a->impl, na, NULL, a);
    self_kid(p->b->impl, nb, &p->b_in_a, b);
    return prox_v3_dist(prox_v3(a->x, a->y, a->z), prox_v3(b->x, b->y, b->z));
}

static inline uint32_t id_leaves(const prox_ist *t, uint32_t id) { return (id & IST_LEAF) ? 1 : t->nleaves[id]; }

/* Depth first below (na, nb) (not both leaves), pairs within m; with a
 * deadline the clock is read every 4 expansions and what is left at the
 * deadline goes back to the queue, where it counts in the estimate and the
 * bounds. */
static void penvol_dfs(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, vol_acc *s, double m, int record)
{
    const uint64_t deadline = p->query->deadline_ns;
    pv_stack st;
    st.n = 0;
    uint32_t tests = 0, expansions = 0;
    for (;;) {
        tests += penvol_children(c, p, na, nb, s, &st, m, record);
        if (!st.n)
            break;
        if (deadline && (expansions & 3) == 3 && past_deadline(p)) {
            for (uint32_t k = 0; k < st.n; k++) {
                kid a, b;
                push_vol(c, p, &a, &b, pair_kid(p, st.na[k], st.nb[k], &a, &b));
            }
            if (record)
                prox_front_invalidate(p); /* not a complete front */
            break;
        }
        st.n--;
        na = st.na[st.n], nb = st.nb[st.n];
        expansions++;
    }
    prox_ctx_count(c, tests, 0);
    prox_ctx_count_expansions(c, expansions);
}

/* With a deadline, a popped pair with at most this many leaf pairs below
 * (leaves of A times leaves of B) is finished depth first: exact, at a
 * fraction of the cost per expansion of the queue (no expected overlap to
 * compute per pushed pair), reading the clock every 4 expansions; what is
 * left at the deadline goes back to the queue. Larger pairs are expanded
 * one level, their children queued by Algorithm 3's priority. 256, 1024
 * and 4096 measured alike at a 200 us budget on the heavy sets (errors
 * within the run-to-run spread); 1 (Algorithm 3 alone) was worse on three
 * of five meshes. */
#define PV_DFS_LEAVES 1024u

static void expand_penvol(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    vol_acc s;
    memset(&s, 0, sizeof s);
    const ist_fx *f = pair_fx(p);
    const int record = f->record && prox_front_on(p);
    const double m = record ? f->rec_margin : 0.0;
    if ((na & IST_LEAF) && (nb & IST_LEAF)) {
        leaf_volume(p, na & ~IST_LEAF, nb & ~IST_LEAF, &s);
        if (record)
            prox_front_record(p, na, nb, 0.0f);
    } else if (!record && p->query->deadline_ns &&
               (uint64_t)id_leaves(p->a->impl, na) * id_leaves(p->b->impl, nb) > PV_DFS_LEAVES)
        prox_ctx_count(c, penvol_children(c, p, na, nb, &s, NULL, 0.0, 0), 0);
    else
        penvol_dfs(c, p, na, nb, &s, m, record);
    acc_flush(c, p, &s);
}

/* Contact fronts (penetration-volume coherence, prox_cache.front): a query
 * from the roots records every leaf pair whose spheres come within a margin
 * M of each other, and every containment shortcut taken, with the pose of
 * B in A's frame. While B has moved (relative to A) by less than M since,
 * no other leaf pair can overlap: the next query evaluates the recorded
 * pairs (a flat list: no hierarchy, no tests of pairs far apart) and
 * descends only below a containment pair that no longer holds. M: 1% of
 * the smaller root sphere's radius (on paths of ~0.1% of the size per
 * step, median query time against a start from the roots: 0.5%: 0.5-1x,
 * 1%: 0.3-0.75x, 2%: 0.35-0.6x, 5%: 0.5-1x; the recording queries cost more
 * than a plain one, so larger margins trade longer lists for fewer of them). */
#define PV_FRONT_MARGIN 0.01

/* a bound on how far any point of B's tree moved between the two poses of
 * B in A's frame */
static double motion_bound(const prox_xform *X0, const prox_xform *X1, const prox_ist *B)
{
    double rad = sqrt((double)B->root[0] * B->root[0] + (double)B->root[1] * B->root[1] + (double)B->root[2] * B->root[2]) + B->root[3];
    return prox_xform_motion_bound(X0, X1, rad);
}

static void root_penvol(prox_ctx *c, const prox_pairstate *p)
{
    fx_prepare(p);
    ist_fx *f = pair_fx(p);
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    kid a, b;
    if (prox_front_on(p)) {
        prox_cache *k = p->cache;
        uint32_t n;
        const prox_front_entry *src = prox_front_begin(p, &n);
        double mu = src && k->front_margin > 0 ? motion_bound(&k->front_pose, &p->b_in_a, B) : INFINITY;
        const uint64_t deadline = p->query->deadline_ns;
        /* with a deadline, only a list that takes (at ~50 ns a pair) well
         * under the time left */
        int fits = !deadline || prox_now_ns() + 50ull * n * 2 < deadline;
        if (mu < k->front_margin && fits) {
            f->record = 1;
            f->rec_margin = k->front_margin + mu; /* new pairs below a changed entry: safe until the front expires */
            vol_acc s;
            memset(&s, 0, sizeof s);
            for (uint32_t i = 0; i < n; i++) {
                uint32_t na = src[i].na, nb = src[i].nb;
                if (na & nb & IST_LEAF) {
                    leaf_volume(p, na & ~IST_LEAF, nb & ~IST_LEAF, &s);
                    prox_front_record(p, na, nb, 0.0f);
                } else if (contained(p, &a, &b, pair_kid(p, na, nb, &a, &b))) {
                    acc_contained(p, &a, &b, &s);
                    prox_front_record(p, na, nb, 0.0f);
                } else
                    penvol_dfs(c, p, na, nb, &s, f->rec_margin, 1);
            }
            acc_flush(c, p, &s);
            return;
        }
        if (deadline && k->front_margin < 0) {
            /* the last attempt to record a front ran out of time: this
             * query is Algorithm 3 alone, the next one tries again */
            k->front_margin = 0;
            prox_front_invalidate(p);
        } else {
            /* record a new front from the roots */
            double ra = A->root[3], rb = B->root[3];
            f->record = 1;
            f->rec_margin = PV_FRONT_MARGIN * (ra < rb ? ra : rb);
            k->front_pose = p->b_in_a;
            k->front_margin = f->rec_margin;
            double dist = pair_kid(p, p->a->root, p->b->root, &a, &b);
            if (dist < a.R + b.R + f->rec_margin)
                push_vol(c, p, &a, &b, dist);
            return;
        }
    }
    double dist = pair_kid(p, p->a->root, p->b->root, &a, &b);
    if (dist < a.R + b.R)
        push_vol(c, p, &a, &b, dist);
}

static void finish_penvol(prox_ctx *c, const prox_pairstate *p)
{
    if (pair_fx(p)->record && prox_front_on(p) && !prox_ctx_complete(c))
        p->cache->front_margin = -1; /* recording ran out of time (see root_penvol) */
    prox_front_finish(c, p);
}

void prox_ist_register(prox_bank *bank)
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
    memset(&h, 0, sizeof h);
    h.name = "ist-ist penetration volume";
    h.root = root_penvol;
    h.expand = expand_penvol;
    h.finish = finish_penvol;
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_PENVOL, &h);
}
