/* ist_distance.c - (IST, IST) distance (Algorithm 1 on the surfaces,
 * refined on the exact triangles, 4.1.2), tolerance, collide and contacts.
 * RT safe. */
#include "ist_query.h"

static inline prox_vec3 sphere_centre(const prox_ist *t, uint32_t leaf, const prox_xform *X)
{
    const ist_sphere *s = &t->spheres[leaf];
    prox_vec3 c = prox_v3(s->x, s->y, s->z);
    return X ? prox_xform_point(X, c) : c;
}

/* A node's children (a leaf: itself) as float lanes: record centres, a
 * child's radius from node_r (per node, four lanes), a leaf's own from
 * leaf_r (per sphere; NULL: its inner radius). The inner-sphere model takes
 * dr (enclosing the inner spheres below) and the inner radii; the surface
 * bounds take the outer radii. */
static inline void lanes_load(const prox_ist *t, uint32_t id, const float (*node_r)[4], const float *leaf_r, lanes *L)
{
    if (id & IST_LEAF) {
        const ist_sphere *q = &t->spheres[id & ~IST_LEAF];
        memset(L, 0, sizeof *L);
        L->x[0] = q->x, L->y[0] = q->y, L->z[0] = q->z;
        L->r[0] = leaf_r ? leaf_r[id & ~IST_LEAF] : q->r;
        L->id[0] = id;
        L->valid = 1;
        return;
    }
    const ist_node *nd = &t->nodes[id];
    memcpy(L->x, nd->cx, sizeof L->x);
    memcpy(L->y, nd->cy, sizeof L->y);
    memcpy(L->z, nd->cz, sizeof L->z);
    memcpy(L->r, node_r[id], sizeof L->r);
    memcpy(L->id, nd->child, sizeof L->id);
#if defined(__SSE2__)
    const __m128i empty = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(const void *)nd->child), _mm_set1_epi32(-1));
    L->valid = ~(unsigned)_mm_movemask_ps(_mm_castsi128_ps(empty)) & 0xfu;
#else
    L->valid = 0;
    for (int j = 0; j < 4; j++)
        L->valid |= (unsigned)(nd->child[j] != IST_EMPTY) << j;
#endif
}

/* the bits 4i+j of a 4x4 pair mask whose lane i is set in `valid` */
static inline unsigned lane_rows(unsigned valid)
{
    static const uint16_t rows[16] = {0x0000, 0x000f, 0x00f0, 0x00ff, 0x0f00, 0x0f0f, 0x0ff0, 0x0fff,
                                      0xf000, 0xf00f, 0xf0f0, 0xf0ff, 0xff00, 0xff0f, 0xfff0, 0xffff};
    return rows[valid & 0xfu];
}

/* child j of a node id (a leaf: itself) in doubles, the inner-sphere
 * model's sphere, carried into A's frame by X if given (id, centre and
 * radius only: the expansion reads no volume or leaf count) */
static inline void kid_get_primary(const prox_ist *t, uint32_t id, int j, const prox_xform *X, kid *k)
{
    if (id & IST_LEAF) {
        const ist_sphere *q = &t->spheres[id & ~IST_LEAF];
        k->id = id;
        k->x = q->x, k->y = q->y, k->z = q->z, k->R = q->r;
    } else {
        const ist_node *nd = &t->nodes[id];
        k->id = nd->child[j];
        k->x = nd->cx[j], k->y = nd->cy[j], k->z = nd->cz[j], k->R = t->dr[id][j];
    }
    if (X) {
        prox_vec3 c = prox_xform_point(X, prox_v3(k->x, k->y, k->z));
        k->x = c.x, k->y = c.y, k->z = c.z;
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
    return hit & lane_rows(a->valid) & (b->valid * 0x1111u);
}

/* the child pairs an expansion of these lanes tests */
static inline uint32_t pairs_tested(const lanes *a, const lanes *b)
{
    static const unsigned char n[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};
    return (uint32_t)n[a->valid] * n[b->valid];
}

/* exact inner-sphere distance of a leaf pair, offered with witnesses
 * (tolerance, collide, contacts: the inner sphere model) */
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
        /* the middle of the overlap along the centres' line: from A's
         * centre, [max(-ra, len - rb), min(ra, len + rb)] (the middle of
         * the lens, or the centre of a sphere inside the other; the middle
         * of the lens alone, ra + d / 2, fell outside a small sphere
         * inside a large one: test_sphere_queries) */
        if (d <= 0) {
            const double lo = fmax(-ra, len - rb), hi = fmin(ra, len + rb);
            prox_ctx_report_overlap(c, p, la, lb, prox_v3_madd(ca, n, 0.5 * (lo + hi)));
        }
        return;
    }
    prox_ctx_offer_distance(c, p, d, prox_v3_madd(ca, n, ra), prox_v3_madd(cb, n, -rb), la, lb);
}

static void expand_spheres(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
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
    lanes_load(A, na, (const float (*)[4])A->dr, NULL, &la);
    lanes_load(B, nb, (const float (*)[4])B->dr, NULL, &lb);
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
            kid_get_primary(B, nb, j, &p->b_in_a, &kb[j]), moved |= 1u << (4 + j);
        if (!(moved >> i & 1))
            kid_get_primary(A, na, i, NULL, &ka[i]), moved |= 1u << i;
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

/* tolerance: the inner sphere model, whose distances exceed the surfaces'
 * by up to the two surface gaps */
static void root_tolerance(prox_ctx *c, const prox_pairstate *p)
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

static void seed_spheres(prox_ctx *c, const prox_pairstate *p)
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

typedef struct refine_best {
    double d;
    prox_vec3 pa, pb; /* A's frame */
    uint32_t ta, tb;
    uint32_t tests;
    /* the best of the chains' own triangle pairs (settle_leaf: where the
     * place's chains ended; d may be a seen_on_a stop's, see project_chain) */
    double ed;
    prox_vec3 ea, eb;
    /* the best distance of the query when the chains began (INFINITY:
     * none); a chain stops where it stays above it (see IST_CHAIN_ABOVE) */
    double above;
} refine_best;

/* a refinement's start: distance d (its points zero until found), the
 * triangle pair ta, tb (UINT32_MAX: none yet), chains held to `above` */
static inline refine_best refine_start(double d, uint32_t ta, uint32_t tb, double above)
{
    refine_best r = {.d = d, .ta = ta, .tb = tb, .ed = INFINITY, .above = above};
    return r;
}

/* The corner of triangle k of t that x is (t's frame carried by X if
 * given), within tol; -1 if none. */
static int corner_at(const prox_ist *t, uint32_t k, const prox_xform *X, prox_vec3 x, double tol)
{
    for (int i = 0; i < 3; i++) {
        prox_vec3 v = X ? prox_xform_point(X, t->verts[t->tris[k][i]]) : t->verts[t->tris[k][i]];
        if (prox_v3_dist(v, x) <= tol)
            return i;
    }
    return -1;
}

/* The triangles around corner c of triangle k (its fan) but k and k's
 * edge-adjacent ones, at most n: around the corner across the edges
 * through it, in one direction (closed meshes, one winding: back at k).
 * Returns how many. */
static int corner_fan(const prox_ist *t, uint32_t k, int c, uint32_t *out, int n)
{
    const uint32_t v = t->tris[k][c];
    uint32_t cur = k, prev = k;
    int m = 0;
    for (int step = 0; step < 32 && m < n; step++) {
        int i = 0;
        while (i < 3 && t->tris[cur][i] != v)
            i++;
        if (i == 3)
            break;
        uint32_t next = t->adj[cur][i];
        if (next == cur || next == prev || next == k)
            break;
        if (next != t->adj[k][0] && next != t->adj[k][1] && next != t->adj[k][2])
            out[m++] = next;
        prev = cur, cur = next;
    }
    return m;
}

/* A move of the descent that edge-adjacent pairs miss: where a closest
 * point of pair (ta, tb) (pa, pb, d apart) is a corner of its triangle,
 * the other triangles around that corner, each first tested against the
 * other closest point (point to triangle: a pair test costs several times
 * more), the pair only where that point comes closer than d. The closest
 * pair below *nd and d goes into the next_ arguments. A corner's fan is
 * not tested twice in a row (fan_v: the last corner done on A and on B).
 * The walk's start is where a chain stopped, not always a fixed point of
 * the projections: elephant's held-out random pose 6 (gen_poses seed 11)
 * ended at a corner of A and a corner of B whose fan, two triangles on,
 * held a face 0.6% closer to A's corner; the edge-adjacent moves around
 * A's corner were all equal, B's all farther. */
static void corner_step(const prox_pairstate *p, uint32_t ta, uint32_t tb, prox_vec3 pa, prox_vec3 pb, double d, uint32_t fan_v[2],
                        refine_best *rb, double *nd, uint32_t *next_a, uint32_t *next_b, prox_vec3 *na_p, prox_vec3 *nb_p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    const double below = d * (1 - 1e-12);
    for (int side = 0; side < 2; side++) {
        const prox_ist *t = side ? B : A;
        const uint32_t k = side ? tb : ta;
        const int c = corner_at(t, k, side ? &p->b_in_a : NULL, side ? pb : pa, 1e-9 * d);
        if (c < 0 || t->tris[k][c] == fan_v[side])
            continue;
        fan_v[side] = t->tris[k][c];
        /* the other closest point in t's frame */
        const prox_vec3 x = side ? prox_xform_point(&p->a_in_b, pa) : pb;
        uint32_t fan[12];
        for (int f = 0, n = corner_fan(t, k, c, fan, 12); f < n; f++) {
            prox_vec3 q, qa, qb;
            rb->tests++;
            if (!(ist_point_tri_dist(t, fan[f], x, &q) < below))
                continue;
            const uint32_t ca = side ? ta : fan[f], cb = side ? fan[f] : tb;
            double dn = tri_pair_distance(A, ca, B, cb, &p->b_in_a, &qa, &qb);
            rb->tests++;
            if (dn < *nd && dn < below)
                *nd = dn, *next_a = ca, *next_b = cb, *na_p = qa, *nb_p = qb;
        }
    }
}

/* Local descent over edge-adjacent triangle pairs from (ta, tb): move to
 * the best neighbouring pair while the distance shrinks; equal moves
 * (closest features on a shared edge or vertex form plateaus) at most
 * three times in a row (two: bunny00 random p99 0 -> 0.30%), never
 * straight back: the plateau walk of earlier
 * revisions wandered 16 steps on most queries (82 exact triangle tests per
 * query on knot1 against 7). Where no neighbour comes closer, a closest
 * point at a triangle's corner tries the rest of that corner's fan
 * (corner_step). Measured (errors against FCL's exact distance, the bench
 * poses and gen_poses seed 11 held-out random and path poses, five
 * meshes): elephant held-out random max 0.60% -> 0.01%, every other p99
 * and max as before; callgrind, 40 random / 80 coherent bench poses:
 * +0.1% to +0.5% instructions (each fan pair tested in full instead: +1%
 * to +5%). Keeps the best pair in *rb. */
static void walk_pairs(const prox_pairstate *p, uint32_t ta, uint32_t tb, refine_best *rb)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    prox_vec3 pa, pb;
    double d = tri_pair_distance(A, ta, B, tb, &p->b_in_a, &pa, &pb);
    rb->tests++;
    if (d < rb->d)
        rb->d = d, rb->pa = pa, rb->pb = pb, rb->ta = ta, rb->tb = tb;
    uint32_t prev_a = UINT32_MAX, prev_b = UINT32_MAX, fan_v[2] = {UINT32_MAX, UINT32_MAX};
    int flat = 0;
    for (int step = 0; step < 16 && flat < 3; step++) {
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
            rb->tests++;
            if (dn < nd)
                nd = dn, next_a = ca, next_b = cb, na_p = qa, nb_p = qb;
        }
        const double below = d * (1 - 1e-12);
        if (!(nd < below))
            corner_step(p, ta, tb, pa, pb, d, fan_v, rb, &nd, &next_a, &next_b, &na_p, &nb_p);
        if (!(nd <= d * (1 + 1e-12)))
            break;
        flat = nd < below ? 0 : flat + 1;
        prev_a = ta, prev_b = tb;
        ta = next_a, tb = next_b, d = nd, pa = na_p, pb = nb_p;
        if (d < rb->d)
            rb->d = d, rb->pa = pa, rb->pb = pb, rb->ta = ta, rb->tb = tb;
    }
}

/* the pair's scratch (zeroed by the engine before seed and root): the
 * places settled this query (a leaf pair, its key and where its chains
 * ended), the triangle pair of the best distance found (has_tris: whether
 * there is one), the triangle pairs chains reached before their last
 * round with their points on A (chain_seen, seen_on_a), and the leaf
 * pairs left for after the traversal (settle_deferred) */
#define IST_PLACES 28
#define IST_DEFER 2
#define IST_SEEN 32
#define IST_MEMO_BITS 3 /* the projection memo's slots: 8 (see closest_hinted) */
#define IST_MEMO (1u << IST_MEMO_BITS)
#define IST_MEMO_ON_B 0x80000000u
typedef struct ist_places {
    uint32_t n;
    uint32_t a[IST_PLACES], b[IST_PLACES];
    float key[IST_PLACES]; /* less |t| where B is far (settle_leaf) */
    /* the closest points the place's chains reached, on A and on B (A's
     * frame); 1e30 where they reached none */
    float end[IST_PLACES][6];
    uint32_t ta, tb, has_tris;
    uint32_t seen_n; /* recorded so far (the last IST_SEEN kept) */
    uint32_t seen_a[IST_SEEN], seen_b[IST_SEEN];
    uint8_t seen_round[IST_SEEN];
    float seen_p[IST_SEEN][3]; /* the pair's closest point on A */
    /* projections this query (closest_hinted), a slot per hash of the
     * point: the point, in its mesh's frame, and its closest triangle plus
     * 1 (0: an empty slot; IST_MEMO_ON_B set: onto B) */
    uint32_t memo_tri[IST_MEMO];
    double memo_x[IST_MEMO][3];
    uint32_t defer_n;
    uint32_t defer_a[IST_DEFER], defer_b[IST_DEFER];
    float defer_key[IST_DEFER]; /* less |t| where B is far, as key[] */
} ist_places;
_Static_assert(sizeof(ist_places) <= IST_FX_OFFSET, "settled places sit before the float frame in the scratch");

#define IST_ROUNDS 3

/* A chain whose first round ends more than this factor above the least of
 * the query's best distance when its place was settled and what its
 * place's chains found since (rb->above, rb->d), or whose later round ends
 * above it at all (both: by more than IST_CHAIN_SLACK voxels; precise
 * queries alike: see the note on prox_query.precise after
 * IST_CHAIN_SLACK), takes no more rounds, and its
 * first round's projection onto B is bounded by IST_CHAIN_REACH times that
 * (where B comes no closer, the chain ends there). Most settled places offer nothing better:
 * their chains run into the best pair found so far or stay above it
 * (armadillo's random bench poses: 1,614 of 1,835 settles with a best
 * already found), and the alternating projection's rounds rarely bring a
 * pair from above the best by a tenth down below it (of the 226 settles
 * that improved on the best, 9 had no chain whose first round ended within
 * 10% of it, 3 none within 20%). Measured (callgrind inside the query, 40
 * random / 80 coherent bench poses; errors against FCL's exact distance on
 * the bench and gen_poses seed 11 held-out random and path poses, five
 * meshes): instructions armadillo 21.2M -> 18.7M / 25.8M -> 24.2M, bunny00
 * 36.4M -> 29.8M / 31.5M -> 30.3M, knot1 17.7M -> 16.3M / 26.3M -> 26.2M,
 * elephant 13.9M -> 13.0M / 36.0M -> 34.8M, fandisk 17.2M -> 15.8M / 13.1M
 * -> 13.1M; every error p99 and max as before at four decimals (the stop
 * alone: about three quarters of that). Later rounds held to the best
 * itself (a chain still above it after two rounds is converging
 * elsewhere): another -1.2% / -1.3% (armadillo), -4.7% / -3.1% (bunny00),
 * -1.5% / -1.3% (knot1), -1.0% / -4.0% (elephant), -2.2% / -0.1%
 * (fandisk), bunny00 coherent max 0.01% -> 0.02%, the rest as before.
 * Measured and not kept: a factor of 1.05 (armadillo held-out random max
 * 3.1% -> 4.3%) or 1.0001 (armadillo random p99 0 -> 0.23%); a reach of
 * 1.2 (the same 4.3%) or 1.1 (92%); the second chain's first projection
 * (from A's inner sphere onto B) bounded by 1.5x the best plus twice A's
 * outer radius (bunny00 held-out random max 0.72% -> 1.1%); the second
 * chain skipped where the first stopped at an earlier chain's pair
 * (armadillo held-out random max 3.1% -> 10%); a chain's start tested
 * against the earlier chains' points on its hint triangle before the
 * projection (more instructions); the second chain skipped where its first
 * projection lands within half a voxel of a place's end on B (armadillo
 * held-out path max 0.17% -> 0.54%); the cached triangle pair registered
 * as reached (chain_seen) by the seed: -1% to -9% coherent, but bunny00
 * coherent max 0.02% -> 0.11%. */
#define IST_CHAIN_ABOVE 1.1
#define IST_CHAIN_REACH 1.5
/* ... and never closer to the best than this many voxels (the larger
 * object's): near contact a tenth of the distance is far below a voxel,
 * and a chain's first round from the inner spheres ends a voxel or so off
 * the surface's closest points. Without it, on fresh poses (gen_poses seed
 * 13, 1,000 random, chosen by nothing here) armadillo pose 430 (exact
 * distance 0.00045) answered 57% over where 45536a6 was exact, p99 0 ->
 * 0.08%; 0.25, 0.5 or 1 voxel all gave 45536a6's answers there. Cost of
 * 0.25 (callgrind, 40 random / 80 coherent bench poses): armadillo +2.8% /
 * +1.1%, bunny00 +7.6% / +2.8%; the bench and seed-11 errors as without
 * (bunny00 coherent max 0.02% -> 0.01%). */
#define IST_CHAIN_SLACK 0.25

/* prox_query.precise (the default since 2026-11-24; prox --fast clears
 * it) refines as the query without it does and only adds the search for
 * another minimum near the answer (near_minima), so it never ends above
 * the fast mode on the same pose and cache state ("the default" below
 * means the fast mode, which it was when these were measured): the final walk
 * starts from the same pair, and the search only moves to a closer one.
 * Measured and not kept: cuts that paid for the search (a first round
 * ending more than 1.05x the best stopped, B's first projection bounded
 * by 1.2x it, a thin pair's second chain skipped after a chain_seen stop,
 * the seed's cached pair registered as reached, no re-settling for a low
 * key alone). They moved where the search starts,
 * and precise ended above the default on the tests' bumpy spheres
 * (test_distance_precise's shapes and draw, seeds 1-12, 600 poses each) at
 * 4 of 7,200 poses, by up to 8.2% (seeds 1-40, 5,000 each: 99 of 200,000,
 * up to 32%); on the bench meshes (seed 7, 11, 13 and 17 sets, five
 * meshes) at 1 of 16,000 random poses (0.004%) and 14 of 35,000 path poses
 * (each path run twice, the cache carried by one mode, the other run on a
 * copy of it: the same cache state; up to 0.32%). Each cut alone ended
 * above the default too (the 200,000 bumpy poses: 1.05 at 49, by up to
 * 32%; 1.2 at 40, 27%; the chain_seen skip at 11, 7.8%; the re-settling at
 * 4, 17%; the seed's registration at 13 of the 35,000 path poses, 0.32%).
 * What they saved
 * (callgrind, 40 random / 80 coherent bench poses, precise with them ->
 * without, millions of instructions): bunny00 32.9 -> 34.4 / 35.2 -> 36.6,
 * armadillo 22.5 -> 23.0 / 28.5 -> 31.5, knot1 16.5 -> 17.2 / 25.7 ->
 * 27.8, fandisk 16.4 -> 16.9 / 13.8 -> 14.4, elephant 14.0 -> 14.3 / 35.9
 * -> 39.0. */

/* how a chain stopped (project_chain): on its own, or at a pair an
 * earlier chain went on from (the same to its callers), or at such a
 * triangle of A */
enum { IST_CHAIN_ENDED, IST_CHAIN_AT_SEEN_A };

/* how many recorded pairs are kept */
static inline uint32_t seen_kept(const ist_places *pl) { return pl->seen_n < IST_SEEN ? pl->seen_n : IST_SEEN; }

/* Whether a chain of this query reached triangle pair (ta, tb) at this
 * round or an earlier one; if not, the pair is recorded. A round's pair
 * decides everything after it (the next round starts at the closest point
 * of tb to ta, with bounds from their distance), so a chain that reaches a
 * recorded pair would repeat what the earlier chain did from there, for
 * no more rounds than that chain had left: it stops. Only rounds before
 * the last are recorded (a chain stops after its last round anyway); the
 * last IST_SEEN are kept. (Bench poses, 200 random: 9-13% fewer rounds
 * on bunny00, armadillo, knot1; callgrind on 40 random / 80 coherent poses
 * of the five meshes: 3-13% fewer instructions; the same answers bit for
 * bit on all 3,500 bench poses.) */
static int chain_seen(ist_places *pl, uint32_t ta, uint32_t tb, int round, prox_vec3 pa)
{
    uint32_t n = seen_kept(pl);
    for (uint32_t k = 0; k < n; k++)
        if (pl->seen_a[k] == ta && pl->seen_b[k] == tb && pl->seen_round[k] <= round)
            return 1;
    uint32_t w = pl->seen_n++ % IST_SEEN;
    pl->seen_a[w] = ta, pl->seen_b[w] = tb, pl->seen_round[w] = (uint8_t)round;
    pl->seen_p[w][0] = (float)pa.x, pl->seen_p[w][1] = (float)pa.y, pl->seen_p[w][2] = (float)pa.z;
    return 0;
}

/* Whether a chain of this query reached triangle ta of A, within `near`
 * of the point where this one lands (qa), at this round or an earlier one
 * (a recorded pair's A side). A chain that lands there stops before
 * projecting onto B: from nearby points of one triangle B's closest
 * triangle is nearly always the one the earlier chain found, and where it
 * went on from is done. Measured with near = A's voxel size and the warm
 * starts below (bench poses, 200 random / 500 coherent, five meshes;
 * callgrind on 40 random / 80 coherent): instructions bunny00 36.3M ->
 * 32.3M random, 37.9M -> 35.0M coherent; armadillo 23.2M -> 19.8M, 27.2M
 * -> 24.2M; knot1 19.2M -> 17.0M, 28.6M -> 26.1M; elephant 16.0M -> 13.7M,
 * 38.2M -> 33.1M; fandisk 18.2M -> 16.0M, 15.3M -> 14.6M. Errors: p99 at
 * most 0.43% on all ten sets (bunny00 random 0.06% -> 0.43%, armadillo
 * coherent 0 -> 0.18%), the maxima as before but fandisk's (random 0 ->
 * 0.25%, coherent 0.29% -> 0.36%). Without the `near` condition: 1-7%
 * fewer instructions still, the same bench errors, but where triangles
 * are large (test_distance_vs_mesh: a box, two triangles a face, every
 * chain lands on them) the worst error 0 -> 0.54%. Measured and not
 * kept: the same test on B's side after B's projection (another 2-6%
 * fewer instructions, armadillo random p99 0.41% -> 10.8%, elephant random
 * 0 -> 1.3%); a later round's projections by local descent over
 * edge-adjacent triangles from the last round's triangle in place of the
 * box trees (another 10-15%, armadillo random p99 14%: the projection
 * onto the other sheet of a thin feature is what finds it). */
static int seen_on_a(const ist_places *pl, uint32_t ta, int round, prox_vec3 qa, double near)
{
    uint32_t n = seen_kept(pl);
    for (uint32_t k = 0; k < n; k++)
        if (pl->seen_a[k] == ta && pl->seen_round[k] <= round) {
            double dx = qa.x - pl->seen_p[k][0], dy = qa.y - pl->seen_p[k][1], dz = qa.z - pl->seen_p[k][2];
            if (dx * dx + dy * dy + dz * dz <= near * near)
                return 1;
        }
    return 0;
}

/* The closest triangle of t to x (t's frame), as ist_tritree_closest,
 * warm-started: triangle `hint` (a sphere's attached triangle, or the
 * last round's) is a candidate from the start, so the search prunes by
 * its distance from the first node. Nothing closer than `bound`: INFINITY.
 * The same answer but for ties (bench poses: the same distances bit for
 * bit), 0-3% fewer instructions: the nearest-first descent finds a close
 * triangle early anyway; what a projection costs is the boxes within the
 * answer's distance, which it must open to be sure. Measured and not kept:
 * (1+e)-approximate projections (boxes pruned beyond the best distance
 * over 1+e; callgrind, 40 random bench poses): every projection, e = 0.05:
 * bunny00 46.9M -> 28.0M instructions, armadillo 28.1M -> 19.6M, but p99
 * errors 0.3-5.3% (the chains end up to e off); only each chain's first
 * projection(s), e = 0.2: -16% to -26%, but armadillo random p99 1.4%,
 * max 50% (the exact first projection is what reaches a thin part's other
 * sheet).
 * Projections of points on a surface (memo set) are remembered for the
 * rest of the query (ist_places memo, one slot per hash of the point's
 * bits, a later point of the same hash taking the slot over); an inner
 * sphere's point never recurs and would only evict. The chains of
 * neighbouring places land on the same points (a vertex or an edge point
 * of a triangle pair's closest points, carried into the other frame the
 * same way), and such a point's projection is the one found before, bit
 * for bit: the search's answer is the least exact distance among the
 * triangles within the float margin of the best, lowest index at a tie,
 * whatever the bound and hint (they prune only boxes and triangles beyond
 * that margin; with more than eight such near-ties the candidates kept
 * could in principle depend on the visiting order). A remembered point
 * costs one point-triangle test, against the bound as the search would
 * (nothing closer than `bound`: INFINITY). Only complete searches are
 * remembered (not one cut at the deadline; no clock read). Measured (bench poses, 200 random /
 * 500 coherent a mesh): 8-16% of the projections repeat a point exactly
 * (armadillo random 9.4 of 57 a query, bunny00 8.9 of 103); the same
 * answers bit for bit on all bench and held-out poses; callgrind, 40
 * random / 80 coherent poses: armadillo -5.0% / -8.5% instructions,
 * elephant -2.5% / -1.9%, bunny00 -0.7% / -2.0%, knot1 -1.0% / -2.0%,
 * fandisk -0.6% / -0.6%; median times within the noise. Measured and not
 * kept, every projection remembered: 0.3-1.2 points less saved; the last 8 in a
 * ring, scanned (the same hits, the scan costs more); two ways of 4 sets
 * (no better); 16 and 32 slots (armadillo -5.1% / -9.0% and -6.1% /
 * -10.5%, bunny00 and knot1 -1.1% to -3.1%), which need a larger pair
 * scratch, and the engine clears it for every pair of every query. */
static double closest_hinted(const prox_pairstate *p, const prox_ist *t, prox_vec3 x, int memo, double bound, uint32_t hint,
                             uint32_t *tri, prox_vec3 *q, uint32_t *tests)
{
    ist_places *pl = p->scratch;
    /* (A and B the same mesh: one side, the same answers) */
    const uint32_t side = t == p->a->impl ? 0 : IST_MEMO_ON_B;
    uint32_t k = 0; /* the memo's slot: a hash of the point's bits (only where the memo is used) */
    if (memo) {
        uint64_t bx, by, bz;
        memcpy(&bx, &x.x, 8), memcpy(&by, &x.y, 8), memcpy(&bz, &x.z, 8);
        k = (uint32_t)(((bx ^ by * 0x9e3779b97f4a7c15u ^ bz * 0xc2b2ae3d27d4eb4fu) * 0x94d049bb133111ebu) >> (64 - IST_MEMO_BITS));
    }
    if (memo && pl->memo_tri[k] && (pl->memo_tri[k] & IST_MEMO_ON_B) == side && pl->memo_x[k][0] == x.x && pl->memo_x[k][1] == x.y &&
        pl->memo_x[k][2] == x.z) {
        const uint32_t m = (pl->memo_tri[k] & ~IST_MEMO_ON_B) - 1;
        prox_vec3 qm;
        double d = ist_point_tri_dist(t, m, x, &qm);
        ++*tests;
        if (!(d < bound))
            return INFINITY;
        *tri = m, *q = qm;
        return d;
    }
    double h = INFINITY;
    prox_vec3 qh = x;
    if (hint < t->tri_count) {
        h = ist_point_tri_dist(t, hint, x, &qh);
        ++*tests;
    }
    double b = h < bound ? h * (1 + 1e-9) : bound;
    int cut = 0;
    /* far apart (IST_FAR) every point projected is far from the mesh */
    double d = pair_fx(p)->far_margin > 0 ? ist_tritree_closest_far(t, x, b, tri, q, tests, p->query->deadline_ns, &cut)
                                          : ist_tritree_closest(t, x, b, tri, q, tests, p->query->deadline_ns, &cut);
    if (d == INFINITY && h < bound)
        d = h, *tri = hint, *q = qh;
    if (memo && d < INFINITY && *tri < IST_MEMO_ON_B - 1 && !cut)
        pl->memo_x[k][0] = x.x, pl->memo_x[k][1] = x.y, pl->memo_x[k][2] = x.z, pl->memo_tri[k] = (*tri + 1) | side;
    return d;
}

/* Alternating projection from x (A's frame; on B's surface where x_on_b)
 * onto A, then B, then A...,
 * each round jumping to the exact closest points of the two triangles
 * found; stops when a round no longer improves, reaches a triangle pair
 * an earlier chain reached as early (chain_seen; seen_on_a: its triangle
 * of A), stays above the best found (IST_CHAIN_ABOVE), or after IST_ROUNDS rounds (on the bench's random poses a fourth
 * round changed p95 errors by nothing and cost a third more projections).
 * The first round's projections are warm-started from the hints ha, hb
 * (the leaf pair's attached triangles, or a triangle found before the
 * chain), later ones from the last round's pair. Every pair better than
 * rb->d is kept in *rb.
 * A chain stopped by seen_on_a has still found a point of A, qa, closest
 * to x; where x lies on B's surface (any round after the first, or a first
 * round started from B's surface: triangle hb), |x - qa| is a distance of
 * the surfaces, kept in *rb too (below ed). The chain from one inner
 * sphere's projection onto B can land there: armadillo's coherent bench
 * poses 380, 381 (0.74%, 1.27% over FCL's exact distance, 381 alike
 * without the cache): the exact closest points' leaf pair was settled, its
 * chain reached the exact closest points and stopped at seen_on_a,
 * a voxel from where an earlier chain had gone on to a minimum 1.3%
 * higher; nothing was kept. */
static int project_chain(const prox_pairstate *p, prox_vec3 x, int x_on_b, uint32_t ha, uint32_t hb, refine_best *rb)
{
    ist_places *pl = p->scratch;
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    double on_a = INFINITY, last = INFINITY;
    const double slack = IST_CHAIN_SLACK * (A->voxel_size > B->voxel_size ? A->voxel_size : B->voxel_size);
    for (int it = 0; it < IST_ROUNDS && !past_deadline(p); it++) {
        const double above = rb->d < rb->above ? rb->d : rb->above;
        uint32_t ta, tb;
        prox_vec3 qa, qb, pa, pb;
        if (closest_hinted(p, A, x, x_on_b || it > 0, on_a, ha, &ta, &qa, &rb->tests) == INFINITY)
            break;
        if (it < IST_ROUNDS - 1 && seen_on_a(pl, ta, it, qa, A->voxel_size)) {
            if (x_on_b || it > 0) {
                double d = prox_v3_dist(x, qa);
                if (d < rb->d)
                    rb->d = d, rb->pa = qa, rb->pb = x, rb->ta = ta, rb->tb = hb;
            }
            return IST_CHAIN_AT_SEEN_A; /* an earlier chain went on from this triangle of A */
        }
        const double reach = it == 0 ? fmax(IST_CHAIN_REACH * above, above + slack) : last;
        if (closest_hinted(p, B, prox_xform_point(&p->a_in_b, qa), 1, reach, hb, &tb, &qb, &rb->tests) == INFINITY)
            break; /* B comes no closer to qa than the last round's pair (the first round: than it may reach) */
        double d = tri_pair_distance(A, ta, B, tb, &p->b_in_a, &pa, &pb);
        rb->tests++;
        if (d < rb->d)
            rb->d = d, rb->pa = pa, rb->pb = pb, rb->ta = ta, rb->tb = tb;
        if (d < rb->ed)
            rb->ed = d, rb->ea = pa, rb->eb = pb;
        const int closer = d < last * (1 - 1e-9);
        if (it < IST_ROUNDS - 1 && closer && chain_seen(pl, ta, tb, it, pa))
            return IST_CHAIN_ENDED; /* at a pair an earlier chain went on from */
        if (!closer || d > fmax((it ? 1.0 : IST_CHAIN_ABOVE) * above, above + slack))
            break;
        last = d;
        x = pb; /* B's point starts the next round */
        on_a = d * (1 + 1e-9);
        ha = ta, hb = tb;
    }
    return IST_CHAIN_ENDED;
}

/* ---- distance: branch and bound on the surfaces ----
 *
 * Algorithm 1 descends the two trees with the distance of the inner
 * spheres, which exceeds the distance of the surfaces by the gaps between
 * spheres and surface (a voxel or more: near contact as much as the
 * distance itself), so the closest inner spheres can sit far from the
 * closest surface points (thin features, which no large sphere fills; the
 * earlier revision refined from them and missed by 4-56% at p99). Here the
 * same descent bounds the surfaces instead. Node pairs are keyed by the
 * distance of their outer balls (ist_outer.c: every surface point lies in
 * the outer ball of a leaf below), a certified lower bound on the distance
 * of the surface pieces below, and pruned against the best exact triangle
 * distance found so far. A leaf pair that survives is settled on the
 * surfaces (4.1.2, refined): an alternating projection from its inner
 * spheres, through the triangle box trees, ends at the exact closest
 * points of a triangle pair. Leaf pairs whose spheres lie within their
 * outer radii of a pair settled before, on both objects, lead to the same
 * local minimum and are not settled again, unless their key is lower by a
 * voxel or more (the query runs depth first, so a later leaf pair can have
 * the lower key). A
 * projection finds a local minimum, not certainly the least distance of
 * the two pieces, so every settled or skipped leaf pair's key holds the
 * certified lower bound down (prox_ctx_note_unsettled). Inner spheres that
 * overlap mean the solids overlap: distance 0. */

/* The 16 keys |c_a - c_b| - R_a - R_b of lanes a and b (b moved into A's
 * frame with its radii grown by the float margin, so every key is at or
 * below the true distance of the two balls); bit 4i+j set where both lanes
 * are real and the key is below `best`. */
#if defined(__SSE2__)
/* one row of outer_keys: a's lane (ax, ay, az, ar, broadcast) against b's
 * four; its keys in key[0..3], those below lim as bits */
static inline unsigned outer_row(__m128 bx, __m128 by, __m128 bz, __m128 br, __m128 lim, __m128 ax, __m128 ay, __m128 az,
                                 __m128 ar, float key[4])
{
    __m128 dx = _mm_sub_ps(bx, ax), dy = _mm_sub_ps(by, ay);
    __m128 dz = _mm_sub_ps(bz, az);
    __m128 d = _mm_sqrt_ps(_mm_add_ps(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)), _mm_mul_ps(dz, dz)));
    __m128 k = _mm_sub_ps(_mm_sub_ps(d, br), ar);
    _mm_storeu_ps(key, k);
    return (unsigned)_mm_movemask_ps(_mm_cmplt_ps(k, lim));
}
#endif

static inline unsigned outer_keys(const lanes *a, const lanes *b, float best, float key[16])
{
    unsigned hit = 0;
#if defined(__SSE2__)
    const __m128 bx = _mm_loadu_ps(b->x), by = _mm_loadu_ps(b->y), bz = _mm_loadu_ps(b->z), br = _mm_loadu_ps(b->r);
    const __m128 lim = _mm_set1_ps(best);
    /* a's lane i in all four lanes by one shuffle of a's loaded row (a
     * broadcast from memory took two instructions, movss and shufps): the
     * same keys bit for bit, 0.7-2.6% fewer instructions in the default
     * query (callgrind, 40 random / 80 coherent bench poses; fandisk
     * coherent 13.63M -> 13.27M, bunny00 36.32M -> 35.77M) */
    const __m128i ax = _mm_castps_si128(_mm_loadu_ps(a->x)), ay = _mm_castps_si128(_mm_loadu_ps(a->y));
    const __m128i az = _mm_castps_si128(_mm_loadu_ps(a->z)), ar = _mm_castps_si128(_mm_loadu_ps(a->r));
    /* (the lane written out four times: pshufd takes an immediate, which
     * a loop index is not at -O1, the sanitizer builds) */
#define OUTER_ROW(i)                                                                                                  \
    if (a->valid >> (i) & 1)                                                                                          \
    hit |= outer_row(bx, by, bz, br, lim, FX_LANE(ax, i), FX_LANE(ay, i), FX_LANE(az, i), FX_LANE(ar, i), key + 4 * (i)) \
           << (4 * (i))
    OUTER_ROW(0);
    OUTER_ROW(1);
    OUTER_ROW(2);
    OUTER_ROW(3);
#undef OUTER_ROW
#else
    for (int i = 0; i < 4; i++) {
        if (!(a->valid >> i & 1))
            continue;
        for (int j = 0; j < 4; j++) {
            float dx = b->x[j] - a->x[i], dy = b->y[j] - a->y[i], dz = b->z[j] - a->z[i];
            float k = sqrtf(dx * dx + dy * dy + dz * dz) - b->r[j] - a->r[i];
            key[4 * i + j] = k;
            hit |= (unsigned)(k < best) << (4 * i + j);
        }
    }
#endif
    return hit & lane_rows(a->valid) & (b->valid * 0x1111u);
}

/* expand_distance where B is far from A (ist_fx.far_margin > 0): the
 * outer balls' keys in doubles, B's centres carried into A's frame by the
 * double transform, every key lowered by the far margin (its rounding
 * many times over, see ist_fx_prepare); the child pairs whose key is
 * below `best` pushed in lane order, as the float path does. In floats B's
 * centres round by some 1e-7 of |t|: the float margin that covers it
 * outgrows the objects (knot1, unit bounding box diagonal, against itself
 * at |t| = 1e4: a margin of 0.1) and nothing is pruned. */
__attribute__((noinline, cold)) static void expand_far(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double best)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    lanes a, b;
    lanes_load(A, na, (const float (*)[4])A->orad, A->orad_leaf, &a);
    lanes_load(B, nb, (const float (*)[4])B->orad, B->orad_leaf, &b);
    prox_ctx_count(c, pairs_tested(&a, &b), 0);
    const double margin = pair_fx(p)->far_margin;
    double bx[4], by[4], bz[4];
    for (int j = 0; j < 4; j++) {
        prox_vec3 v = prox_xform_point(&p->b_in_a, prox_v3(b.x[j], b.y[j], b.z[j]));
        bx[j] = v.x, by[j] = v.y, bz[j] = v.z;
    }
    for (int i = 0; i < 4; i++) {
        if (!(a.valid >> i & 1))
            continue;
        for (int j = 0; j < 4; j++) {
            if (!(b.valid >> j & 1))
                continue;
            double dx = bx[j] - a.x[i], dy = by[j] - a.y[i], dz = bz[j] - a.z[i];
            double k = sqrt(dx * dx + dy * dy + dz * dz) - ((double)a.r[i] + b.r[j] + margin);
            if (k < best)
                prox_ctx_push(c, p, a.id[i], b.id[j], k);
        }
    }
}

/* index of a settled place whose spheres lie within the outer radii of
 * (i, j) on both objects, or -1 */
static int find_place(const ist_places *pl, const prox_ist *A, const prox_ist *B, uint32_t i, uint32_t j)
{
    const ist_sphere *si = &A->spheres[i], *sj = &B->spheres[j];
    const float Ra = A->orad_leaf[i], Rb = B->orad_leaf[j];
    for (uint32_t k = 0; k < pl->n; k++) {
        const ist_sphere *qa = &A->spheres[pl->a[k]], *qb = &B->spheres[pl->b[k]];
        float ax = qa->x - si->x, ay = qa->y - si->y, az = qa->z - si->z;
        float bx = qb->x - sj->x, by = qb->y - sj->y, bz = qb->z - sj->z;
        float sa = Ra + A->orad_leaf[pl->a[k]], sb = Rb + B->orad_leaf[pl->b[k]];
        if (ax * ax + ay * ay + az * az < sa * sa && bx * bx + by * by + bz * bz < sb * sb)
            return (int)k;
    }
    return -1;
}

/* A leaf pair beside a settled place is settled all the same when its key
 * is below this fraction of the best distance found. Measured on the bench
 * poses (200 random, 500 coherent, five meshes) against skipping every
 * such pair: relative error p99 at most 0.41% on all ten sets (was up to
 * 10.8%, armadillo random; armadillo coherent 1.7% -> 0; bunny00 random
 * 0.76% -> 0.06%), max armadillo random 86% -> 10.8%, elephant random 17% ->
 * 0; callgrind, 40 random poses: 9-21% more instructions (80 coherent:
 * unchanged). 0.3: p99 0.74% (armadillo coherent) at 7-19%; 0.5: the same p99s
 * as 0.4; thin pieces only (outer radius above 3x the inner) at 0.3:
 * p99 1% (armadillo random) at 3-12%. */
#define IST_RESETTLE 0.4

/* A leaf pair beside a settled place whose chains ended outside the pair's
 * own pieces (the closest points they reached lie outside its outer balls,
 * on A or on B) is settled all the same when its key is below this
 * fraction of the best distance: the place's local minimum is elsewhere,
 * and the pair's pieces may hold a closer one. Relative error against
 * FCL's exact distance, max over each pose set, before -> after (p99s
 * unchanged or lower): armadillo bench random 10.8% -> 0.23%, coherent
 * 1.6% -> 1.3%, held-out random (gen_poses seed 11, 1,000 poses) 10.7% ->
 * 3.1%, held-out path 1.3% -> 0.46%; elephant held-out random 19% ->
 * 0.60%; fandisk bench path 0.17% -> 0. Callgrind, 40 random bench poses:
 * +4% to +10% instructions (80 coherent: +0.1% to +0.4%). Measured and not
 * kept: settled when an end point lies outside on A or on B alike (the
 * pair skipped only where both lie inside) but skipped where either lies
 * inside: +1% to +4%, armadillo held-out max 8.3%, elephant 1.4%; a
 * fraction of 0.8: +25% to +40% random, the same maxima; 1 (every such
 * pair below the best): 2-3x the instructions. (The armadillo held-out
 * 3.1% is a chain that ends 3% above a minimum beside it, on the leaf pair
 * of the exact closest points: not a skipped pair.) */
#define IST_RESETTLE_AWAY 0.6

/* whether place k's chains ended inside the outer balls (ca, Ra) on A and
 * (cb, Rb) on B (A's frame) */
static int place_ends_in(const ist_places *pl, int k, prox_vec3 ca, double Ra, prox_vec3 cb, double Rb)
{
    const float *e = pl->end[k];
    double ax = e[0] - ca.x, ay = e[1] - ca.y, az = e[2] - ca.z;
    double bx = e[3] - cb.x, by = e[4] - cb.y, bz = e[5] - cb.z;
    return ax * ax + ay * ay + az * az <= Ra * Ra && bx * bx + by * by + bz * bz <= Rb * Rb;
}

/* whether place k's chains reached a triangle pair of their own (not only
 * seen_on_a stops: settle_leaf records no end then) */
static inline int place_ended(const ist_places *pl, int k) { return pl->end[k][0] < 1e30f; }

/* A leaf pair beside a place whose chains reached no triangle pair of
 * their own (place_ended) is settled where its key is below the place's by
 * this many voxels (beside any other place: by one). Such a place says
 * only that its chains ran into triangles of A that earlier chains went
 * on from; they are a third of the settled places on the random bench
 * poses (3.5 to 3.8 of 10-15 settles a query). Gen_poses seed 13
 * armadillo random pose 854 (10.4% over FCL's exact distance): place
 * (703, 427)'s two chains stopped at once on A's triangle of the first
 * place's answer, and the exact closest points' leaf pair (187, 488), key
 * 0.70 of the best and 0.98 voxel below the place's, was skipped beside
 * it; settled, its first chain reaches the exact closest points. Measured
 * with leaf_chains' chain from A's sphere (errors against FCL's exact
 * distance, bench poses seed 7 and held-out seeds 11 and 13, five meshes;
 * callgrind, 40 random / 80 coherent bench poses): see the commit
 * message. Measured and not kept: 0 (any key lower), elephant seed-11
 * random max 0.007% -> 0.115%; such places not kept at all (their
 * neighbours settled as if beside none), the same seed-13 gains but +2%
 * to +8% instructions (elephant random +8.2%). */
#define IST_NOEND_LOWER 0.5

/* A leaf pair beside a place whose chains reached no triangle pair of
 * their own (place_ended), its key less than a voxel above the place's, is
 * settled where its key is below this fraction of the best distance (0.6,
 * IST_RESETTLE_AWAY, beside any other place). Traced on gen_poses seed 17
 * (held out until then), the exact closest points' leaf pair skipped
 * beside such a place: elephant random pose 130 (1.37% over FCL's exact
 * distance; pair (818, 208), key 0.69 of the best and 0.5 voxel above
 * the place's (129, 190), whose one chain stopped at seen_on_a at once;
 * settled, (281, 190)'s chain reaches the exact pair) and armadillo random
 * pose 237 (2.7%; (34, 9), 0.63 of the best, 0.4 voxel above (358, 9)'s
 * key); its pose 356 (1.2%) alike. Measured (errors against FCL's exact
 * distance, every pose of seeds 7, 11, 13, 17, random and path, five
 * meshes, then-default (the fast mode) and precise): no pose higher; fast seed-17 random
 * max elephant 1.37% -> 0.73%, armadillo p99 0.02% -> 0 (max 3.6%, pose
 * 284, beside a place that ended: unchanged), seed-13 armadillo random
 * pose 941 0.11% -> 0; precise seed-17 random max elephant 1.37% -> 0,
 * armadillo 1.18% -> 0.46%. Callgrind, 40 random / 80 coherent bench
 * poses: elephant +1.7% / +0.7%, knot1 +1.5% / +1.8%, bunny00 +1.0% /
 * 0, armadillo +0.8% / +0.2%, fandisk +0.3% / 0. Measured and not
 * kept: 0.75 without the voxel condition (+3.5% elephant random, the same
 * errors); 0.75 once per place (+2.5%, +2.9% knot1 coherent); 0.75 with
 * it (+2.7% elephant random, fandisk seed-17 random 0 -> 0.015%); a chain
 * from A's sphere too where a resettled place's one chain stopped so (no
 * change on seed 17). */
#define IST_NOEND_AWAY 0.7

/* A leaf pair with a piece thinner than this (outer radius over inner
 * radius) is settled by two chains, one from each inner sphere (see
 * settle_leaf). Relative error against FCL's exact distance, p99 / max,
 * armadillo (the mesh with the thin parts), against the revision before,
 * whose one chain always started from B's sphere: bench random poses
 * 0.41% / 10.8% -> 0.23% / 10.8%; held-out random 1.88% / 11.3% -> 0.25% /
 * 10.7%; held-out path 34.7% / 41.6% -> 0.10% / 1.3% (the old chain missed
 * a thin part for twenty poses in a row). fandisk bench random max 0.25% ->
 * 0; bunny00 held-out random max 2.2% -> 0.83%. Callgrind, 40 random / 80
 * coherent bench poses of the five meshes: +3% to +38% instructions.
 * The thicker side's start alone (no second chain): armadillo random p99
 * 1.1% on both pose sets and fandisk's bench max 6.9%, at +1% to +10%;
 * a threshold of 4: armadillo held-out p99 0.65% at +6% to +16%; two
 * chains for every pair: 1.4-1.9x the median time. */
#define IST_THIN_BOTH 3.0f

/* The chains that settle leaf pair (i, j) (its inner spheres apart,
 * centred at ca and cb in A's frame), their best triangle pair into *rb;
 * fresh: the pair starts a new place (see from_a_too below), or is a
 * budgeted query's dive (dive_distance: no place is kept, but its chains
 * are treated as a new place's; the budgeted table of bench/results was
 * measured so); two: a chain from each inner sphere whatever the pieces'
 * thinness (settle_deferred). */
static void leaf_chains(const prox_pairstate *p, uint32_t i, uint32_t j, prox_vec3 ca, prox_vec3 cb, int fresh, int two, refine_best *rb)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    double ra = A->spheres[i].r, rb_r = B->spheres[j].r;
    prox_vec3 u = prox_v3_sub(cb, ca);
    double len = prox_v3_len(u);
    /* Where the chain starts. A piece's thinness is its outer radius over
     * its inner sphere's radius: a thin piece's surface lies far from its
     * small inner sphere, so a start there leads the projections
     * elsewhere. The chain starts from the inner sphere of the thicker
     * piece, at its point facing the other sphere, and projects onto the
     * thinner piece first; where either piece is thinner than
     * IST_THIN_BOTH, a second chain starts from the other sphere as well.
     * Measured on the bench's poses (seed 7) and on held-out ones
     * (gen_poses seed 11: 1,000 random poses and a 1,000-pose path per
     * mesh): see IST_THIN_BOTH. */
    const int from_b = A->orad_leaf[i] * B->spheres[j].r >= B->orad_leaf[j] * A->spheres[i].r;
    const int both = two || A->orad_leaf[i] > IST_THIN_BOTH * A->spheres[i].r || B->orad_leaf[j] > IST_THIN_BOTH * B->spheres[j].r;
    int st = IST_CHAIN_ENDED;
    if (from_b || both)
        st = project_chain(p, len > 0 ? prox_v3_madd(cb, u, -rb_r / len) : cb, 0, A->spheres[i].tri, B->spheres[j].tri, rb);
    /* A new place whose one chain, from B's sphere, stopped at seen_on_a
     * before a triangle pair of its own ends nowhere (settle_leaf: its
     * neighbours are then held to IST_RESETTLE_AWAY alone), though its
     * pieces were never searched from A's side: A's sphere starts a chain
     * too. Gen_poses seed 13 elephant random pose 178 (2.2% over FCL's
     * exact distance, --precise alike): place (83, 32)'s chain landed on a
     * triangle of A an earlier chain had gone on from (to a minimum 2.2%
     * higher) and the exact closest points' leaf pair (781, 32), key 0.83
     * of the best and within a voxel of the place's, was skipped beside
     * it; the chain from A's sphere 83 projects onto B's triangle of the
     * exact closest points. Fandisk's seed-13 random pose 843 (0.25%): the
     * exact closest points' leaf pair (584, 306) took a new place whose one
     * chain stopped so; from A's sphere 584 it reaches them. Such chains
     * ran 0.07-0.26 times a query on the random bench poses (seed 7), and
     * improved the best 0-3 times in 200 poses a mesh. Measured and not kept:
     * the same for a resettled place too (+0.4% to +2.1% more
     * instructions, the same errors); and, where the one chain started
     * from A's sphere, one from B's as well (fandisk bench path max 0 ->
     * 0.036%, elephant seed-11 random 0.007% -> 0.022%). */
    const int from_a_too = fresh && from_b && !both && st == IST_CHAIN_AT_SEEN_A && !(rb->ed < INFINITY);
    if ((!from_b || both || from_a_too) && !past_deadline(p)) {
        /* from A's sphere: its projection onto B starts the chain */
        prox_vec3 xa = len > 0 ? prox_v3_madd(ca, u, ra / len) : ca, qb;
        uint32_t tb;
        if (closest_hinted(p, B, prox_xform_point(&p->a_in_b, xa), 0, INFINITY, B->spheres[j].tri, &tb, &qb, &rb->tests) < INFINITY)
            project_chain(p, prox_xform_point(&p->b_in_a, qb), 1, A->spheres[i].tri, tb, rb);
    }
}

/* The range of n . (x - c) over the points x of the slab {x : lo <= m . x
 * <= hi} inside the ball (c, R), n and m unit: n . (x - c) = a s + b w
 * with s = m . (x - c) in [max(lo - m . c, -R), min(hi - m . c, R)],
 * a = n . m, b = sqrt(1 - a^2) and |w| <= sqrt(R^2 - s^2); within
 * [-R, R] in any case. An empty slab range (rounding) gives the ball's. */
static void slab_range(prox_vec3 n, prox_vec3 m, double lo, double hi, prox_vec3 c, double R, double *rlo, double *rhi)
{
    double mc = prox_v3_dot(m, c);
    double a = lo - mc > -R ? lo - mc : -R, b = hi - mc < R ? hi - mc : R;
    if (!(a <= b)) {
        *rlo = -R, *rhi = R;
        return;
    }
    double al = prox_v3_dot(n, m), be2 = 1 - al * al, be = be2 > 0 ? sqrt(be2) : 0;
    double s2 = a <= 0 && b >= 0 ? 0 : (a > 0 ? a * a : b * b);
    double w = R * R - s2 > 0 ? sqrt(R * R - s2) : 0;
    double x0 = al * a, x1 = al * b;
    double l = (x0 < x1 ? x0 : x1) - be * w, h = (x0 > x1 ? x0 : x1) + be * w;
    *rlo = l > -R ? l : -R, *rhi = h < R ? h : R;
}

/* the gap along unit normal n between the piece in slab (ma, loa, hia)
 * and ball (ca, Ra) and the piece in slab (mb, lob, hib) and ball (cb, Rb) */
static double gap_along(prox_vec3 n, prox_vec3 ma, double loa, double hia, prox_vec3 ca, double Ra, prox_vec3 mb, double lob, double hib,
                        prox_vec3 cb, double Rb)
{
    double al, ah, bl, bh;
    slab_range(n, ma, loa, hia, ca, Ra, &al, &ah);
    slab_range(n, mb, lob, hib, cb, Rb, &bl, &bh);
    double da = prox_v3_dot(n, ca), db = prox_v3_dot(n, cb);
    al += da, ah += da, bl += db, bh += db;
    return bl - ah > al - bh ? bl - ah : al - bh;
}

/* A lower bound on the distance of two surface pieces from their slabs
 * (sa in A's frame, sb in B's) and outer balls (ca, Ra; cb, Rb, both in
 * A's frame), along the normal of each piece that is flat (fa, fb: see
 * IST_SLAB_FLAT): each piece lies in its slab and its ball, so along a
 * normal n the two pieces' offset ranges (slab_range) are at least
 * their gap apart, and so are the pieces. Facing flat pieces a distance
 * d apart and tilted by an angle t give about d - t (Ra + Rb). */
static double slab_bound(const prox_pairstate *p, const float *sa, double Ra, prox_vec3 ca, int fa, const float *sb, double Rb,
                         prox_vec3 cb, int fb)
{
    prox_vec3 na = prox_v3(sa[0], sa[1], sa[2]);
    prox_vec3 nb = prox_xform_vector(&p->b_in_a, prox_v3(sb[0], sb[1], sb[2]));
    double shift = prox_v3_dot(nb, p->b_in_a.t);
    double lob = sb[3] + shift, hib = sb[4] + shift;
    double g = -INFINITY;
    if (fa)
        g = fmax(g, gap_along(na, na, sa[3], sa[4], ca, Ra, nb, lob, hib, cb, Rb));
    if (fb)
        g = fmax(g, gap_along(nb, na, sa[3], sa[4], ca, Ra, nb, lob, hib, cb, Rb));
    return g - 1e-6 * (Ra + Rb);
}

/* A leaf pair skipped beside a place (settle_leaf) whose chains ended
 * outside the pair's pieces (on A or on B) or reached no triangle pair of
 * their own, its key below IST_DEFER_BELOW times the best distance then,
 * is kept for after the traversal, the IST_DEFER lowest keys of the query:
 * its pieces were searched by no chain, only passed over as the place's
 * neighbours. After the traversal (settle_deferred) each, lowest key
 * first, whose key is still below IST_DEFER_BELOW times the best is
 * settled by two chains, one from each inner sphere (the place's chains
 * started from one side and went elsewhere). Traced on the tests' bumpy
 * spheres (make_bumpy, 642 vertices a sphere, 500 inner spheres; 180
 * poses, 5 over 0.5% of the exact distance, up to 6.9%): at pose 20
 * (6.9% over) the exact closest points' leaf pair (11, 110), key 0.74 of
 * the best, 0.95 voxel below the key of place (11, 213), was skipped
 * beside it (the place's chains ended 1.9 outer radii from B's sphere
 * 110); settled, its chain reaches the exact closest points. At pose 11
 * (5.2%) the pair (4, 39), key 0.77 of the best, was skipped beside
 * (4, 294) (ended 1.2 outer radii from B's sphere 39); settled by its one
 * chain (from A's sphere, B's piece the thinner) it stops at seen_on_a
 * and reaches a minimum 8.6% over; the chain from B's sphere reaches the
 * exact closest points in its first round. Poses 69 (1.7%) and 137
 * (0.76%): the pair skipped beside a place that reached nothing, keys
 * 0.73 and 0.81 of the best. Measured (default and --fast alike): the
 * bumpy poses over 0.5% 5 -> 2 (137 stays 0.76%; 46, 0.64%, is a settled
 * pair whose chains reach a minimum 3.2% over), max 6.9% -> 0.76%;
 * against FCL's exact distance (seeds 7, 11, 13, 17, 19, random and
 * path, five meshes) no max higher, nothing below the exact distance,
 * maxima lower: default armadillo seed-13 path 0.97% -> 0, seed-19
 * random 0.11% -> 0, bunny00 seed-17 random 0.066% -> 0.041%; --fast
 * armadillo seed-13 path 6.9% -> 0.30% (p99 0.19% -> 0), seed-17 path
 * 0.45% -> 0.29%, seed-19 path 5.9% -> 0.08%, bunny00 seed-17 random
 * 0.80% -> 0.43%, elephant seed-19 path 0.27% -> 0. Callgrind, 40
 * random / 80 coherent bench poses: bunny00 +7.3% / +11.9%, armadillo
 * +5.9% / +7.8%, knot1 +6.8% / +8.9%, fandisk +4.6% / +1.5%, elephant
 * +5.7% / +8.4%. Measured and not kept (callgrind against the same
 * build without): IST_RESETTLE_AWAY 0.7 (the 5 bumpy poses stay, +0% to
 * +6%) or 0.8 (4 over, pose 88 0 -> 5.2%; +0.5% to +19%); places
 * matched within 0.75 of the outer radii's sum (find_place; 3 over, pose
 * 164 0 -> 4.3%; +6% to +32%) or 0.5 (1 over, +40% to +163%); one
 * deferred pair (pose 11 stays; +0.9% to +3.7%); two with one chain,
 * the usual start (pose 11 stays, +0.9% to +6.9%) or the other sphere's
 * (pose 20 stays); eight with one chain (3 over, +1% to +17%); below
 * 0.85, 0.9 or 1.0 of the best (1 over, pose 46; +5% to +13%, +6% to
 * +16%, +7% to +19%). */
#define IST_DEFER_BELOW 0.8

/* keep (i, j) among the query's IST_DEFER lowest deferred keys (kk: as
 * the places' keys) */
static void defer_pair(ist_places *pl, uint32_t i, uint32_t j, float kk)
{
    uint32_t w = pl->defer_n;
    if (w == IST_DEFER) {
        w = 0;
        for (uint32_t q = 1; q < IST_DEFER; q++)
            w = pl->defer_key[q] > pl->defer_key[w] ? q : w;
        if (!(kk < pl->defer_key[w]))
            return;
    } else
        pl->defer_n++;
    pl->defer_a[w] = i, pl->defer_b[w] = j, pl->defer_key[w] = kk;
}

/* what the places' and deferred pairs' float keys leave out: |t| where B
 * is far (a float key of 1e6 rounds by 0.03, some voxels: every pair
 * beside a place was settled again, 7x the projections of |t| = 1e4) */
static inline double place_key_ref(const prox_pairstate *p)
{
    return pair_fx(p)->far_margin > 0 ? prox_v3_len(p->b_in_a.t) : 0.0;
}

/* Whether a leaf pair's chains found a distance below best: a seen_on_a
 * stop's distance (below rb->ed) only where it is lower beyond rounding:
 * at a tie (the same vertex of A from another triangle of its fan) it
 * changed the pair the final walk starts from, and bunny00's random bench
 * p99 went 0 -> 0.30% */
static inline int chains_improve(const refine_best *rb, double best)
{
    return rb->d < best * (rb->d < rb->ed ? 1 - 1e-6 : 1);
}

/* Settle the deferred leaf pairs (see IST_DEFER_BELOW), lowest key first,
 * while their keys stay below IST_DEFER_BELOW times the best. */
static void settle_deferred(prox_ctx *c, const prox_pairstate *p)
{
    ist_places *pl = p->scratch;
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    const double kref = place_key_ref(p);
    while (pl->defer_n && !past_deadline(p)) {
        uint32_t w = 0;
        for (uint32_t q = 1; q < pl->defer_n; q++)
            w = pl->defer_key[q] < pl->defer_key[w] ? q : w;
        const uint32_t i = pl->defer_a[w], j = pl->defer_b[w];
        const double key = pl->defer_key[w] + kref, best = prox_ctx_best(c);
        pl->defer_n--;
        pl->defer_a[w] = pl->defer_a[pl->defer_n], pl->defer_b[w] = pl->defer_b[pl->defer_n];
        pl->defer_key[w] = pl->defer_key[pl->defer_n];
        if (!(best > 0) || !(key < IST_DEFER_BELOW * best * (1.0 - p->query->rel_err)))
            return;
        refine_best rb = refine_start(INFINITY, UINT32_MAX, UINT32_MAX, best);
        leaf_chains(p, i, j, sphere_centre(A, i, NULL), sphere_centre(B, j, &p->b_in_a), 0, 1, &rb);
        prox_ctx_count(c, 0, rb.tests);
        /* any lower distance, ties at a seen_on_a stop included (with
         * settle_leaf's rule, chains_improve, 78 of the 80 seed-7/11/13/17/
         * 19 sets changed at a few poses each, no default maximum moved, and
         * --fast's elephant seed-7 path max went 0 -> 0.012%) */
        if (rb.d < best) {
            /* reported with the traversal's leaf pair where there is one:
             * it seeds the next coherent query, whose places it decides
             * (reported as (i, j), armadillo's seed-7 path, --fast: poses
             * 374-377 0 -> 0.34-1.28% over FCL's exact distance, the
             * cache's leaf pair changed at pose 369 with the same answer;
             * see also finish_distance on the search's new pair) */
            double v;
            uint32_t la, lb;
            if (prox_ctx_pair_best(c, p, &v, &la, &lb) != 0)
                la = i, lb = j;
            pl->ta = rb.ta, pl->tb = rb.tb, pl->has_tris = 1;
            prox_ctx_offer_distance(c, p, rb.d, rb.pa, rb.pb, la, lb);
        }
    }
}

/* Settle leaf pair (i, j), whose outer balls come `key` close: overlapping
 * inner spheres make the distance 0; else, unless its place is settled
 * already, an alternating projection from one inner sphere (or two
 * chains, one from each: see IST_THIN_BOTH). The place is kept with its
 * key. */
static void settle_leaf(prox_ctx *c, const prox_pairstate *p, uint32_t i, uint32_t j, double key)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    prox_vec3 ca = sphere_centre(A, i, NULL), cb = sphere_centre(B, j, &p->b_in_a);
    double ra = A->spheres[i].r, rb = B->spheres[j].r;
    prox_vec3 u = prox_v3_sub(cb, ca);
    double len = prox_v3_len(u);
    prox_ctx_count(c, 0, 1);
    if (len < ra + rb) {
        prox_vec3 n = len > 0 ? prox_v3_scale(u, 1.0 / len) : prox_v3(1, 0, 0);
        prox_vec3 m = prox_v3_madd(ca, n, 0.5 * (len + ra - rb)); /* mid-depth of the overlap */
        prox_ctx_offer_distance(c, p, 0.0, m, m, i, j);
        return;
    }
    /* the queue's key was about the node record's centre: about the
     * spheres' own centres the outer balls may show that the pair's pieces
     * come no closer than the best pair */
    const double best = prox_ctx_best(c);
    if (!(best > 0) || key >= best * (1.0 - p->query->rel_err))
        return; /* (touching or overlapping surfaces: nothing comes closer) */
    /* The slab cut, for flat pieces only (IST_SLAB_FLAT: a slab at most
     * 0.05 of its outer radius thick; spheres so marked: fandisk 1152 of
     * 2532, bunny00 200 of 2004, elephant 95, knot1 54, armadillo 7 of
     * 1037). Measured (prox distance, the bench trees and poses; errors
     * against FCL's exact distance, instructions by callgrind inside the
     * query, 40 random / 80 coherent poses a mesh):
     * - two nearly parallel tiled plates (0.6 x 0.6 x 0.05, 24 x 24
     *   squares a face, 4096 spheres, 40 poses tilted up to 0.02 rad,
     *   gaps 0.002-0.02): 11.2-12.0 ms -> 3.8-4.4 ms median, 19-23 ms
     *   -> 5.9-6.7 ms p99 (runs of the two builds alternated), triangle
     *   and sphere tests 167k -> 38k a query, answers exact as before;
     * - the five bench meshes, random, path, held-out random and held-out
     *   path poses: the same answers bit for bit (random and path), every
     *   held-out error as before; instructions -4% to +0.5%.
     * Measured and not kept: the cut for every piece (no flatness test),
     * armadillo's worst random bench pose 0.23% -> 50% off, as below; the
     * cut at node pairs too (each record child's pieces in one slab along
     * one child's normal), plates a further 10-20% faster but +6% to +12%
     * instructions on the bench meshes' paths (bunny00, knot1, fandisk):
     * most flat marks are on leaf children, tested twice. */
    if ((A->sflat[i] || B->sflat[j]) && slab_bound(p, A->slab[i], A->orad_leaf[i], ca, A->sflat[i], B->slab[j], B->orad_leaf[j], cb,
                                                   B->sflat[j]) >= best * (1.0 - p->query->rel_err))
        return; /* flat pieces no closer than the best */
    /* Measured and not kept (callgrind, instructions per query, 40 random /
     * 80 coherent bench poses): an oriented box per sphere around the same
     * surface piece as its outer ball (principal axes of the piece, 64
     * bytes a sphere), the pair dropped when the boxes' separating axes
     * (3 + 3 + centre line) show the pieces no closer than the best.
     * bunny00 random 1163k -> 983k, coherent 652k -> 577k; armadillo 661k
     * -> 577k, 481k -> 422k; knot1, fandisk, elephant within 3%. Fewer
     * chains also find the thin features less often: armadillo random
     * error p95 0 -> 0.4%, p99 10.8% -> 50%; elephant coherent max 0.01% ->
     * 4.7%. Settling the surviving pairs exactly on their pieces' triangles
     * instead (box-culled) is exact but 20-1000x slower. Measured later and
     * not kept either (kept since for flat pieces alone, above): a slab per sphere (the normal of its closest
     * triangle and the range of its piece's offsets along it, 20 bytes),
     * the pair dropped when either slab, against the other piece's slab
     * and outer ball, shows it no closer than the best. Two nearly
     * parallel tessellated plates (README, known limitations): 11.5 ms ->
     * 3.0 ms median, 22.8 -> 7.6 ms p99; 40 random / 80 coherent bench
     * poses: -15% to +6% instructions (fandisk coherent +6%, the rest
     * lower); but armadillo's worst random bench
     * pose 0.23% -> 50% (gap 0.00057: the exact closest points' leaf pair
     * is settled, its chain ends at 0.00117; without the cut another
     * pair's chain had found the minimum) and fandisk's 0 -> 0.11%. Nor
     * does the descent over edge-adjacent triangle pairs (walk_pairs) after
     * every settled pair's chains make that chain find its minimum: with
     * the slab cut armadillo's worst random pose stays 50% off; without
     * it the bench maxima are as before or lower (bunny00 random 0.43% -> 0),
     * at 1.4-2.6x the instructions (40 random / 80 coherent poses) and
     * 6x the time on the plates (the descent walks its 16 steps there). */
    prox_ctx_note_unsettled(c, key);
    ist_places *pl = p->scratch;
    int k = find_place(pl, A, B, i, j);
    /* The same place: the same local minimum. Where this fails (measured on
     * armadillo's random bench poses, the exact closest points' leaf pair
     * traced): each of the three worst answers (errors 22%, 18%, 50%) had
     * that pair popped and skipped here, beside a settled place, and every
     * such pair has a thin piece (outer radius 3.5-7 times the inner
     * one). Such pairs settled anyway, without taking a place: above 3x,
     * armadillo random error p99 10.8% -> 0.01% (max 86% -> 1%) but median
     * times 1.6-1.9x on every mesh; above 4x, p99 3.8% at +70%
     * instructions on armadillo, +19-32% on elephant (callgrind, 40 random
     * / 80 coherent poses). Settling every same-place pair: max error 0.8% on
     * all five meshes, 3-5x slower. Not kept. (The chain from such a pair
     * needs its unbounded first projection: bounded by 2x the best it
     * never reached the thin feature.)
     * Kept: a same-place pair whose key is below IST_RESETTLE times the
     * best distance so far is settled anyway and takes the place over:
     * its pieces may come much closer than anything found, whatever their
     * shape. See IST_RESETTLE for what it measured. So is one whose key is
     * below IST_RESETTLE_AWAY times the best where the place's chains
     * ended outside the pair's own pieces (see there). */
    const double kk = key - place_key_ref(p); /* keys kept in floats (place_key_ref) */
    if (k >= 0) {
        const int ended = place_ended(pl, k);
        /* beside a place that reached nothing, from half a voxel lower and,
         * within a voxel of its key, below IST_NOEND_AWAY (see there) */
        const double away = !ended && kk < pl->key[k] + A->voxel_size ? IST_NOEND_AWAY : IST_RESETTLE_AWAY;
        if (kk >= pl->key[k] - (ended ? 1.0 : IST_NOEND_LOWER) * A->voxel_size && key >= IST_RESETTLE * best) {
            if (key >= away * best) {
                /* where the place ended elsewhere or nowhere, the pair's
                 * pieces were not searched (see IST_DEFER_BELOW); not the
                 * place's own pair (the seed's, popped again): its chains
                 * were its own (deferring it too changed 18 of the 80
                 * seed-7/11/13/17/19 sets at a few poses, no maximum in
                 * either mode, -0.7% to +0.1% instructions) */
                if (key < IST_DEFER_BELOW * best && !(i == pl->a[k] && j == pl->b[k]) &&
                    !place_ends_in(pl, k, ca, A->orad_leaf[i], cb, B->orad_leaf[j]))
                    defer_pair(pl, i, j, (float)kk);
                return;
            }
            if (place_ends_in(pl, k, ca, A->orad_leaf[i], cb, B->orad_leaf[j]))
                return;
        }
    }
    if (past_deadline(p))
        return;
    const int fresh = k < 0;
    if (k < 0 && pl->n < IST_PLACES)
        k = (int)pl->n++;
    else if (k < 0) {
        /* Every slot holds a place: the new one takes the slot of the
         * place with the highest key, whose leaf pairs may then be
         * settled again (time, never accuracy). Leaving the rest unsettled
         * instead missed the closest of 49 near-equal flat contacts by
         * 4-13% (test_distance_many_places: a plate over a bed of nails,
         * thousands of leaf pairs whose outer balls overlap). On the
         * bench meshes only fandisk's flat faces fill the slots (514 leaf
         * pairs over the 200 random poses): same answers, 2.6% more
         * instructions. */
        k = 0;
        for (uint32_t q = 1; q < pl->n; q++)
            k = pl->key[q] > pl->key[k] ? (int)q : k;
    }
    pl->a[k] = i, pl->b[k] = j, pl->key[k] = (float)kk;
    /* Measured and not kept: the chain started on A's surface instead (the
     * point of A's attached triangle nearest B's sphere centre), its first
     * projection onto B bounded by the best distance so far (a chain
     * ends at once where B is farther). Instructions halved (40 random
     * poses: bunny00 46.7M -> 20.8M, armadillo 26.5M -> 12.4M) and median
     * times 1.5-2.4x lower, but the attached point is often not where the
     * piece comes closest: random error p90 0-14% (armadillo), p99 1%
     * (knot1) to 144% (elephant), where it was 0-11%. Bounded by the best plus
     * the start's distance to the piece's outer ball (a bound that only
     * drops pairs that cannot improve), or by twice the best: as many
     * instructions as this chain. Unbounded: +9%. */
    refine_best rb_ = refine_start(INFINITY, UINT32_MAX, UINT32_MAX, best);
    leaf_chains(p, i, j, ca, cb, fresh, 0, &rb_);
    prox_ctx_count(c, 0, rb_.tests);
    /* where the chains' own pairs ended (a seen_on_a stop's points, which
     * an earlier chain went on from, are no end: kept as the end they made
     * fewer leaf pairs settled again, elephant's held-out random poses max
     * error 0.60% -> 3.0%) */
    const int ended = rb_.ed < INFINITY;
    const prox_vec3 e_a = ended ? rb_.ea : prox_v3(1e30, 1e30, 1e30), e_b = ended ? rb_.eb : e_a;
    pl->end[k][0] = (float)e_a.x, pl->end[k][1] = (float)e_a.y, pl->end[k][2] = (float)e_a.z;
    pl->end[k][3] = (float)e_b.x, pl->end[k][4] = (float)e_b.y, pl->end[k][5] = (float)e_b.z;
    if (chains_improve(&rb_, best)) {
        pl->ta = rb_.ta, pl->tb = rb_.tb, pl->has_tris = 1;
        prox_ctx_offer_distance(c, p, rb_.d, rb_.pa, rb_.pb, i, j);
    }
}

/* ---- pairs of small meshes: every triangle pair ----
 *
 * Where both meshes have few triangles (boxes, tables, walls, coarse
 * shapes), the surfaces' distance comes cheaper and exact from all their
 * triangle pairs than from the sphere trees: a coarse mesh's inner spheres
 * are few and large, so are their outer balls, and facing flat faces tie
 * at every leaf pair, none pruned. A 3 cm box resting 0.1-3 mm over a
 * 0.6 m table (12 triangles each, 500 spheres each: the shipped
 * obstacles scenario) took 207 us a query (median, 200 poses), settling
 * some 300 leaf pairs; its 144 triangle pairs take 9.5 us, the same
 * answers. Used where one mesh has at most IST_EXACT_SIDE triangles and
 * the two at most IST_EXACT_PAIRS pairs: the triangle pairs cost some
 * 45 ns each, the sphere trees' cost depends on the shapes. Measured
 * (prox distance, 200 poses 0.1-3 mm over the table or the box, 500
 * spheres a tree, median us, sphere trees -> triangle pairs; the same
 * answers): table x icosahedron (20 triangles, r 1.5 cm) 148 -> 12.6
 * (p99 4.5 ms -> 28 us); table x 80-triangle icosphere 226 -> 43; the
 * 3 cm box x the same 80 triangles 41 -> 26; a 20 x 80 pair 18 -> 20;
 * table x 320-triangle icosphere (3,840 pairs, not taken) 60 -> 179, and
 * the press scenario's ball on the table 2.2 -> 39 (query median). */
#define IST_EXACT_PAIRS 1024
#define IST_EXACT_SIDE 64

static int exact_pair(const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    const uint32_t ta = A->tri_count, tb = B->tri_count;
    return ta && tb && (ta <= IST_EXACT_SIDE || tb <= IST_EXACT_SIDE) && (uint64_t)ta * tb <= IST_EXACT_PAIRS;
}

/* the corners of triangle k of t, carried into A's frame by X if given */
static inline void tri_corners(const prox_ist *t, uint32_t k, const prox_xform *X, prox_vec3 v[3])
{
    for (int i = 0; i < 3; i++)
        v[i] = X ? prox_xform_point(X, t->verts[t->tris[k][i]]) : t->verts[t->tris[k][i]];
}

/* triangle k of t (carried into A's frame by X if given) and a ball
 * around it: centre the centroid, radius its farthest corner */
static inline void tri_ball(const prox_ist *t, uint32_t k, const prox_xform *X, prox_vec3 v[3], double ball[4])
{
    tri_corners(t, k, X, v);
    prox_vec3 m = prox_v3_scale(prox_v3_add(prox_v3_add(v[0], v[1]), v[2]), 1.0 / 3.0);
    double r = fmax(prox_v3_dist(m, v[0]), fmax(prox_v3_dist(m, v[1]), prox_v3_dist(m, v[2])));
    ball[0] = m.x, ball[1] = m.y, ball[2] = m.z, ball[3] = r * (1 + 1e-12) + 1e-300;
}

/* whether x (t's frame) lies inside closed mesh t: within its triangle
 * box tree's root box, then by the winding number (either orientation) */
static int inside_mesh(const prox_ist *t, prox_vec3 x)
{
    const ist_box *r = &t->tritree.nodes[0];
    if (!t->tritree.node_count || x.x < r->lo[0] || x.y < r->lo[1] || x.z < r->lo[2] || x.x > r->hi[0] || x.y > r->hi[1] ||
        x.z > r->hi[2])
        return 0;
    return fabs(prox_winding_number(t->verts, (const uint32_t (*)[3])t->tris, t->tri_count, x)) > 0.5;
}

/* The distance of two small meshes' surfaces (exact_pair) from all their
 * triangle pairs: the pair whose balls come closest first, then every
 * pair whose balls come closer than the best so far (prox_triangle_
 * distance_below cuts the rest short). Surfaces apart with one solid
 * inside the other (a vertex of one inside the other mesh) are at
 * distance 0, as the inner spheres would say. Past the deadline the best
 * pair so far is offered, the roots pushed back (their bound 0 keeps the
 * lower bound certified) and the engine told: the query ends incomplete. */
static void exact_distance(prox_ctx *c, const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    /* the side of at most IST_EXACT_SIDE triangles: its balls kept */
    const int small_a = A->tri_count <= IST_EXACT_SIDE;
    const prox_ist *S = small_a ? A : B, *L = small_a ? B : A;
    const prox_xform *XS = small_a ? NULL : &p->b_in_a, *XL = small_a ? &p->b_in_a : NULL;
    prox_vec3 sv[IST_EXACT_SIDE][3], lv[3];
    double sb[IST_EXACT_SIDE][4], lball[IST_EXACT_PAIRS][4]; /* the large side's balls, from the first pass */
    for (uint32_t i = 0; i < S->tri_count; i++)
        tri_ball(S, i, XS, sv[i], sb[i]);
    /* the pair of closest balls; the clock read every 64 pairs visited
     * (in both passes), and every 16 triangle tests in the second. Cut in
     * the first, the closest balls so far give the one pair tested. */
    double low = INFINITY;
    uint32_t li = 0, si = 0;
    int cut = 0;
    uint32_t visited = 0, next_check = 64;
    for (uint32_t k = 0; k < L->tri_count; k++) {
        if (visited >= next_check) {
            next_check = visited + 64;
            if ((cut = past_deadline(p)))
                break;
        }
        visited += S->tri_count;
        double *lb = lball[k];
        tri_ball(L, k, XL, lv, lb);
        for (uint32_t i = 0; i < S->tri_count; i++) {
            double dx = lb[0] - sb[i][0], dy = lb[1] - sb[i][1], dz = lb[2] - sb[i][2], rr = lb[3] + sb[i][3];
            double g = sqrt(dx * dx + dy * dy + dz * dz) - rr;
            if (g < low)
                low = g, li = k, si = i;
        }
    }
    prox_vec3 pa, pb, qs, ql;
    tri_corners(L, li, XL, lv);
    /* pairs no closer than the best of the forest (or the range) are not
     * wanted: pruned alike */
    const double cap = prox_ctx_best(c);
    double best = prox_triangle_distance(sv[si], lv, &qs, &ql);
    uint32_t tests = 1;
    pa = small_a ? qs : ql, pb = small_a ? ql : qs;
    if (!(best < cap))
        best = cap;
    visited = 0, next_check = 64;
    for (uint32_t k = 0; k < L->tri_count && best > 0 && !cut; k++) {
        if (visited >= next_check) {
            next_check = visited + 64;
            if ((cut = past_deadline(p)))
                break;
        }
        const double *lb = lball[k];
        int have_lv = 0; /* its corners, loaded for the first pair tested */
        visited += S->tri_count;
        for (uint32_t i = 0; i < S->tri_count && best > 0; i++) {
            double dx = lb[0] - sb[i][0], dy = lb[1] - sb[i][1], dz = lb[2] - sb[i][2], rr = lb[3] + sb[i][3] + best;
            if (dx * dx + dy * dy + dz * dz >= rr * rr || (k == li && i == si))
                continue;
            if ((tests & 15) == 0 && (cut = past_deadline(p)))
                break;
            if (!have_lv)
                tri_corners(L, k, XL, lv), have_lv = 1;
            int exact;
            double d = prox_triangle_distance_below(sv[i], lv, best, &qs, &ql, NULL, &exact);
            tests++;
            if (exact && d < best)
                best = d, pa = small_a ? qs : ql, pb = small_a ? ql : qs;
        }
    }
    prox_ctx_count(c, 0, tests);
    if (!cut && best > 0) {
        /* apart: is one inside the other? */
        prox_vec3 xb = prox_xform_point(&p->b_in_a, B->verts[B->tris[0][0]]), xa = A->verts[A->tris[0][0]];
        if (inside_mesh(A, xb))
            best = 0, pa = pb = xb;
        else if (inside_mesh(B, prox_xform_point(&p->a_in_b, xa)))
            best = 0, pa = pb = xa;
    }
    if (best < cap)
        prox_ctx_offer_distance(c, p, best, pa, pb, ist_nearest_sphere(A, pa), /* the leaves reported: nearest spheres */
                                ist_nearest_sphere(B, prox_xform_point(&p->a_in_b, pb)));
    if (cut) {
        prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
        prox_ctx_deadline_passed(c);
    }
}

static void expand_distance(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    if (na == p->a->root && nb == p->b->root && exact_pair(p)) {
        exact_distance(c, p);
        return;
    }
    if ((na & IST_LEAF) && (nb & IST_LEAF)) {
        /* a leaf pair popped from the queue: its key again, in doubles */
        uint32_t i = na & ~IST_LEAF, j = nb & ~IST_LEAF;
        double key = prox_v3_dist(sphere_centre(A, i, NULL), sphere_centre(B, j, &p->b_in_a)) - A->orad_leaf[i] - B->orad_leaf[j];
        settle_leaf(c, p, i, j, key);
        return;
    }
    double best = prox_ctx_best(c);
    /* A distance of 0 is final, but the outer balls' keys go below 0
     * where the surfaces cross, so the engine's pruning (key >= best)
     * would keep expanding them: combs of thin fins crossing each other
     * took 0.85-1.6 million expansions (0.6-1 s) to answer 0
     * (test_distance_crossing_fins). */
    if (!(best > 0))
        return;
    if (pair_fx(p)->far_margin > 0) {
        expand_far(c, p, na, nb, best);
        return;
    }
    lanes la, lb;
    lanes_load(A, na, (const float (*)[4])A->orad, A->orad_leaf, &la);
    lanes_load(B, nb, (const float (*)[4])B->orad, B->orad_leaf, &lb);
    prox_ctx_count(c, pairs_tested(&la, &lb), 0);
    lanes_move(pair_fx(p), &lb);
    float key[16];
    unsigned hit = outer_keys(&la, &lb, best < 1e30 ? (float)best * (1 + 1e-6f) : 1e30f, key);
    /* leaf pairs too go through the queue: depth first (PROX_ORDER_AUTO),
     * the last pushed is settled first. (Best first instead, the order
     * the keys suggest: 37-84% more time on the random bench poses of
     * bunny00, armadillo and knot1 (median), its
     * heap operations outweighing the expansions and triangle tests it
     * saved, and armadillo's random error p99 0 -> 1.4%, max 0.23% -> 6.7%:
     * these settling rules were tuned depth first.) (Pushed
     * in lane order: the first descent, before any bound, runs on the
     * queue's stack alone and so dives to an arbitrary leaf pair. Pushed
     * farthest first instead, it dives nearest first: random poses 7-20%
     * fewer instructions, coherent paths -5% to +15%, but fewer places get
     * settled and armadillo's random error p99 went 10.8% -> 22%, p95 0 ->
     * 0.23%. Not kept.) */
    for (; hit; hit &= hit - 1) {
        int k = __builtin_ctz(hit);
        prox_ctx_push(c, p, la.id[k >> 2], lb.id[k & 3], key[k]);
    }
}

/* How many node pairs a budgeted query's dive expands (some 10 us): at a
 * 25 us budget (see dive_distance) the p99 errors with 16, 32, 64, 128
 * were bunny00 7.3x, 7.3x, 7.3x, 2.6x; armadillo 9.8x, 9.8x, 9.8x, 4.1x;
 * fandisk 12x, 2.7x, 2.7x, 3.2x; at 100 us alike from 32 on. */
#define IST_DIVE 128

/* The closest inner sphere pair, closer than `below`, that a
 * nearest-first depth-first descent of the inner sphere model (Algorithm
 * 1, keys: the node spheres bounding the inner spheres below) meets in at
 * most `expansions` node pairs; 0 if it meets none. */
static int dive_spheres(const prox_pairstate *p, uint32_t expansions, double below, uint32_t *out_a, uint32_t *out_b)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    enum { DIVE_STACK = 96 };
    uint32_t sa[DIVE_STACK], sb[DIVE_STACK];
    float sk[DIVE_STACK];
    int top = 0;
    sa[top] = p->a->root, sb[top] = p->b->root, sk[top] = -INFINITY, top++;
    float best = below < 1e30 ? (float)below : INFINITY;
    int found = 0;
    while (top > 0 && expansions > 0) {
        top--;
        if (sk[top] >= best)
            continue;
        expansions--;
        lanes la, lb;
        lanes_load(A, sa[top], (const float (*)[4])A->dr, NULL, &la);
        lanes_load(B, sb[top], (const float (*)[4])B->dr, NULL, &lb);
        lanes_move(pair_fx(p), &lb);
        float key[16];
        unsigned hit = outer_keys(&la, &lb, best, key);
        /* leaf pairs: candidates; node pairs: pushed farthest first */
        uint32_t ord[16];
        int n = 0;
        for (; hit; hit &= hit - 1) {
            int k = __builtin_ctz(hit);
            if ((la.id[k >> 2] & IST_LEAF) && (lb.id[k & 3] & IST_LEAF)) {
                if (key[k] < best)
                    best = key[k], *out_a = la.id[k >> 2] & ~IST_LEAF, *out_b = lb.id[k & 3] & ~IST_LEAF, found = 1;
                continue;
            }
            int m = n++;
            while (m > 0 && key[ord[m - 1]] < key[k])
                ord[m] = ord[m - 1], m--;
            ord[m] = (uint32_t)k;
        }
        for (int q = 0; q < n && top < DIVE_STACK; q++)
            if (key[ord[q]] < best)
                sa[top] = la.id[ord[q] >> 2], sb[top] = lb.id[ord[q] & 3], sk[top] = key[ord[q]], top++;
    }
    return found;
}

/* A budgeted query's first answer. Leaf pairs are settled in the order of
 * their outer balls' keys, which near contact say little about where the
 * surfaces come closest, and a settlement costs some 10 us: cut at a
 * deadline of 100 us, the answer was up to 10x the distance. So a budgeted
 * query first dives (dive_spheres) to the closest inner spheres it finds,
 * offers their distance (the spheres lie inside the solids: an upper
 * bound) and settles that leaf pair's chains.
 * Measured (prox distance --budget-us, 200 random bench poses a mesh,
 * error against FCL's distance; bunny00, armadillo, knot1, fandisk,
 * elephant), p99 without -> with the dive: at 25 us 18, 23, 11, 9.3, 3.7
 * -> 7.3, 4.1, 0.72, 3.2, 2.3 (p90 0.47-2.8 -> 0-0.23); at 100 us 4.3,
 * 9.8, 1.5, 4.9, 1.4 -> 0.85, 1.4, 0.72, 1.4, 0.39; at 200 us 2.6, 1.4, 0,
 * 0.98, 0 -> 0.08, 0.86, 0, 0.18, 0; queries complete at 100 us 0-151 ->
 * 14-162 of 200. Two nearly parallel plates (README, known limitations)
 * at 300 us: median error over (distance + 0.001) 0.36 -> 0.08. The chains
 * leave the places table as they found it: registered there, the dive's
 * place kept later leaf pairs near it from being settled (chain_seen,
 * find_place), and complete queries missed more often. Unbudgeted queries
 * do not dive (their answers are as before, bit for bit); measured and not
 * kept: the dive for them too, 4-11% fewer instructions (callgrind, 40
 * random bench poses a mesh), the same or lower errors on four meshes,
 * but armadillo's random bench error p99 0 -> 0.23%, max 0.23% -> 1.4%:
 * the tighter early bound prunes leaf pairs whose own pieces cannot come
 * closer, but whose chains wandered to the minimum where the chain of the
 * pair holding it ended elsewhere (the same errors with IST_RESETTLE
 * judged against the best of the traversal's own chains).
 * Nor kept: the descent over edge-adjacent triangle pairs (walk_pairs)
 * after the dive's chains: the plates at 100 us 0.075 -> 0.027 median,
 * bunny00 and fandisk p99 at 100 us 0.85 -> 0.31, 1.4 -> 0.23, but its up
 * to 96 triangle pair tests cost the small budgets (at 50 us armadillo p99
 * 1.4 -> 1.6, elephant 0.39 -> 1.2, fewer queries complete); only with
 * 120 us or more left: bunny00 p99 at 200 us 0.08 -> 0.31, at 300 us 0.008
 * -> 0.04. */
static void dive_distance(prox_ctx *c, const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    ist_places *pl = p->scratch;
    uint32_t i, j;
    if (!dive_spheres(p, IST_DIVE, prox_ctx_best(c), &i, &j))
        return;
    prox_vec3 ca = sphere_centre(A, i, NULL), cb = sphere_centre(B, j, &p->b_in_a), u = prox_v3_sub(cb, ca);
    double len = prox_v3_len(u), d = len - A->spheres[i].r - B->spheres[j].r;
    if (!(d > 0)) { /* overlapping inner spheres: distance 0, final */
        double key = len - A->orad_leaf[i] - B->orad_leaf[j];
        settle_leaf(c, p, i, j, key);
        return;
    }
    refine_best rb = refine_start(d, UINT32_MAX, UINT32_MAX, INFINITY);
    rb.pa = prox_v3_madd(ca, u, A->spheres[i].r / len), rb.pb = prox_v3_madd(cb, u, -B->spheres[j].r / len);
    ist_places keep;
    memcpy(&keep, pl, sizeof keep);
    leaf_chains(p, i, j, ca, cb, 1, 0, &rb);
    memcpy(pl, &keep, sizeof keep);
    prox_ctx_count(c, 0, rb.tests);
    if (rb.ta != UINT32_MAX)
        pl->ta = rb.ta, pl->tb = rb.tb, pl->has_tris = 1;
    prox_ctx_offer_distance(c, p, rb.d, rb.pa, rb.pb, i, j);
}

/* The smallest key of the roots' children's outer balls (the surfaces'
 * bounds): a lower bound on the pair's distance (the float frame ready). */
static float roots_key(const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    lanes la, lb;
    lanes_load(A, p->a->root, (const float (*)[4])A->orad, A->orad_leaf, &la);
    lanes_load(B, p->b->root, (const float (*)[4])B->orad, B->orad_leaf, &lb);
    lanes_move(pair_fx(p), &lb);
    float key[16], m = INFINITY;
    for (unsigned hit = outer_keys(&la, &lb, INFINITY, key); hit; hit &= hit - 1)
        m = fminf(m, key[__builtin_ctz(hit)]);
    return m;
}

/* whether the pair's surfaces may come closer than `best` */
static int roots_within(const prox_pairstate *p, double best) { return !(best < 1e30) || roots_key(p) < (float)best * (1 + 1e-6f); }

/* the engine's root order for budgeted forests (nearest first) */
static double root_bound_distance(const prox_pairstate *p)
{
    ist_fx_prepare(p);
    return roots_key(p);
}

/* The roots. A budgeted query dives first, unless another pair of the
 * forest has found a distance this pair's surfaces cannot beat (a forest
 * of many objects would otherwise spend its budget diving into far
 * pairs). The dive looks for inner spheres closer than the best distance
 * so far, so after a cached pair's seed it ends at once where the cache
 * is good and takes over where the pose jumped: on the random bench poses
 * run as one path (--coherent: every query seeded from the last, far off)
 * at 100 us, p99 error bunny00 5.4x -> 0.94x, armadillo 9.8x -> 0.85x,
 * knot1 0.79x -> 0.05x, fandisk 0.35x -> 0.07x, elephant 1.7x -> 0.26x
 * against diving only where no seed settled a pair; on the bench's
 * coherent paths the same answers without a deadline's cut, +2.6% to +6%
 * instructions (callgrind, 80 poses a mesh, --budget-us 100000). */
static void root_distance(prox_ctx *c, const prox_pairstate *p)
{
    ist_fx_prepare(p);
    if (p->query->deadline_ns && !exact_pair(p) && !past_deadline(p) && roots_within(p, prox_ctx_best(c)))
        dive_distance(c, p);
    prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

/* coherence: the last answer's triangle pair gives a tight first bound,
 * and its leaf pair is settled first. Measured and not kept (callgrind,
 * 80 coherent bench poses of the five meshes), the places of the last
 * query carried over in the cache: (a) each followed from its last
 * triangle pair by the descent over edge-adjacent pairs instead of a
 * chain: -6% to +22% instructions, p99 error 4.6% (armadillo, elephant),
 * 9.6% (fandisk); (b) its chain skipped where the last one ended at the
 * last answer's pair, or no closer than the best less the motion since:
 * -3% to +4% (most places' chains end at the answer's pair, but the
 * motion bound between steps is some 8% of the distance, so few can be
 * ruled out, and the rest converge fast already). */
static void seed_distance(prox_ctx *c, const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    ist_fx_prepare(p);
    if (exact_pair(p))
        return; /* every triangle pair at the roots */
    ist_places *pl = p->scratch;
    const prox_cache *k = p->cache;
    uint32_t la = k->leaf_a, lb = k->leaf_b;
    if (p->swapped) {
        uint32_t t = la;
        la = lb;
        lb = t;
    }
    if (la >= A->sphere_count || lb >= B->sphere_count)
        return;
    if (k->hint_a < A->tri_count && k->hint_b < B->tri_count) {
        prox_vec3 pa, pb;
        double d = tri_pair_distance(A, k->hint_a, B, k->hint_b, &p->b_in_a, &pa, &pb);
        prox_ctx_count(c, 0, 1);
        pl->ta = k->hint_a, pl->tb = k->hint_b, pl->has_tris = 1;
        prox_ctx_offer_distance(c, p, d, pa, pb, la, lb);
    }
    double key = prox_v3_dist(sphere_centre(A, la, NULL), sphere_centre(B, lb, &p->b_in_a)) - A->orad_leaf[la] - B->orad_leaf[lb];
    /* the last answer's place, kept with its own key like any other: kept
     * with key -inf instead (no leaf pair beside it settled again for a
     * lower key), armadillo's coherent bench poses 380, 381 stayed 0.74%,
     * 1.27% over FCL's exact distance once their exact closest points'
     * leaf pair (key half the best, but the place's chains had ended
     * inside its outer balls) reached them (project_chain): never
     * settled. Measured with project_chain's seen_on_a stops kept, -inf ->
     * its key: armadillo coherent max 1.27% -> 0.44%, held-out path
     * (gen_poses seed 11) max 0.46% -> 0.17%, no bench or held-out p99 or
     * max higher on the five meshes; callgrind, 80 coherent poses:
     * armadillo +5.2% instructions, bunny00 +1.6%, elephant +2.4%, knot1
     * +0.9%, fandisk +0.1% (40 random: +0.1% to +0.2%, the seen_on_a
     * stops alone). */
    settle_leaf(c, p, la, lb, key);
}

/* A triangle near the answer's closest points (near_minima): its centroid
 * in A's frame, its bounding radius about it, and how far it reaches past
 * its side's tangent plane towards the other object. */
typedef struct near_tri {
    uint32_t id;
    float m[3], r, e;
} near_tri;

/* candidates a side, the nearest kept. 48 missed gen_poses seed 17
 * bunny00 random pose 66 (0.80% over FCL's exact distance, --precise; the
 * exact closest points 2.3 and 1.4 voxels from the answer's, both
 * triangles within the search radius, beyond the 48 nearest on fine
 * bunny00). Measured 48 -> 64 (every pose of seeds 7, 11, 13, 17, random
 * and path, five meshes, --precise): no pose higher; seed-17 bunny00
 * random max 0.80% -> 0.066%, seed-13 armadillo path max 4.5% -> 0.97%
 * (its poses 321-323, 2.5-4.5% -> 0); callgrind, 40 random / 80 coherent
 * bench poses, --precise: bunny00 +1.2% / +1.3%, armadillo +1.3% / +2.5%,
 * knot1, fandisk, elephant under 0.1%; the fast mode unchanged. 96:
 * the same maxima (armadillo seed-13 path pose 320 0.56% -> 0 too) at
 * bunny00 +3.1% / +2.5%, armadillo +3.1% / +5.6%. */
#define IST_NEAR_CAP 64
_Static_assert(IST_NEAR_CAP % 4 == 0, "near_minima's SSE ranking fills B's candidates four at a time");
#define IST_NEAR_R 1.0      /* the search radius past d, in voxels */
#define IST_NEAR_EPS 0.003  /* pairs that cannot beat d (1 - this) are dropped */
/* pairs tested, nearest centroids first; 3 (and 8) missed gen_poses seed
 * 13 armadillo random pose 710 (near contact, exact 4.0e-4, the answer
 * 3.1% over at a minimum 1.3 voxels from the exact closest points; the
 * first pair to beat it ranked 9th to 12th), see finish_distance */
#define IST_NEAR_PAIRS 12

/* the candidates of t (t's frame carried into A's by X if given) near x:
 * their balls, and their reach e along n past offset h (side 0: max n.v -
 * h, A towards B; side 1: h - min n.v, B towards A) */
static void near_load(const prox_ist *t, const prox_xform *X, const uint32_t *ids, uint32_t n, prox_vec3 nrm, double h, int side,
                      near_tri *out)
{
    for (uint32_t k = 0; k < n; k++) {
        prox_vec3 v[3];
        double ball[4];
        tri_ball(t, ids[k], X, v, ball);
        double lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < 3; i++) {
            double s = prox_v3_dot(nrm, v[i]);
            lo = s < lo ? s : lo, hi = s > hi ? s : hi;
        }
        near_tri *q = &out[k];
        q->id = ids[k];
        q->m[0] = (float)ball[0], q->m[1] = (float)ball[1], q->m[2] = (float)ball[2], q->r = (float)ball[3];
        q->e = (float)(side ? h - lo : hi - h);
    }
}

/* A search for another local minimum near the answer's closest points pa,
 * pb (rb, after the walk; prox_query.precise): the triangles of A within
 * d + IST_NEAR_R voxels of pb, those of B alike around pa (a pair closer
 * than d with a point within IST_NEAR_R voxels of pa or pb has both
 * triangles there). Points x, y closer than d have n . (y - x) < d along
 * n = (pb - pa) / d, so their triangles reach past the planes n . x =
 * n . pa and n . y = n . pb by e_a + e_b > d - |y - x|. First only the
 * largest reach on A (ist_tritree_reach, boxes that reach no further
 * skipped), then B's triangles that reach far enough with it (at most
 * IST_NEAR_CAP, the nearest kept; the query visits every box that reaches
 * far enough, so B's largest reach comes with them): where none can make
 * a pair d IST_NEAR_EPS closer, nothing more (about half the queries on
 * the bench poses). Else A's triangles that reach far enough with B's
 * largest reach, alike; with the balls'
 * gap across n that bounds a pair's distance below, and the pairs that may
 * come closer than d (1 - IST_NEAR_EPS) are kept. Of those the
 * IST_NEAR_PAIRS whose centroids lie closest are tested (not every one: a
 * heuristic, see the measurements at finish_distance), each cut short
 * where a separating axis shows it no closer than d
 * (prox_triangle_distance_below), and the walk restarts from the first
 * that beats d. No allocation: fixed arrays of
 * IST_NEAR_CAP a side on the stack; the deadline is read before each
 * stage and each pair test, and inside the range queries every 32 nodes
 * (they keep at most IST_NEAR_CAP triangles, but visit every box within
 * the radius that reaches far enough: without a deadline their work is
 * not bounded by a constant). */
/* keep (a, b) among the IST_NEAR_PAIRS pairs of least c2 (key, nearest
 * first; *kept so far) */
static inline void near_keep(float *key, uint32_t *pi, uint32_t *pj, int *kept, float c2, uint32_t a, uint32_t b)
{
    int w = *kept < IST_NEAR_PAIRS ? (*kept)++ : IST_NEAR_PAIRS - 1;
    while (w > 0 && key[w - 1] > c2)
        key[w] = key[w - 1], pi[w] = pi[w - 1], pj[w] = pj[w - 1], w--;
    key[w] = c2, pi[w] = a, pj[w] = b;
}

static void near_minima(const prox_pairstate *p, refine_best *rb)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    const double d = rb->d;
    if (!(d > 0 && d < INFINITY) || rb->ta == UINT32_MAX || past_deadline(p))
        return;
    uint32_t ida[IST_NEAR_CAP], idb[IST_NEAR_CAP];
    float fd[IST_NEAR_CAP];
    near_tri ca[IST_NEAR_CAP], cb[IST_NEAR_CAP];
    const prox_vec3 pa = rb->pa, pb = rb->pb, nrm = prox_v3_scale(prox_v3_sub(pb, pa), 1.0 / d);
    const prox_vec3 pa_b = prox_xform_point(&p->a_in_b, pa), pb_b = prox_xform_point(&p->a_in_b, pb);
    const prox_vec3 ub = prox_v3_scale(prox_xform_vector(&p->a_in_b, nrm), -1.0); /* B reaches towards A */
    const double ra = d + IST_NEAR_R * A->voxel_size, rbr = d + IST_NEAR_R * B->voxel_size, want = IST_NEAR_EPS * d;
    const double la = prox_v3_dot(nrm, pa), lb = prox_v3_dot(ub, pb_b);
    const uint64_t dl = p->query->deadline_ns;
    double Ea, Eb;
    int cut = 0;
    uint32_t na = 0, nb = 0;
    ist_tritree_reach(A, pb, ra, nrm, la, 0.5 * want, 0, NULL, NULL, &Ea, dl, &cut);
    if (!cut)
        nb = ist_tritree_reach(B, pa_b, rbr, ub, lb, want - Ea, IST_NEAR_CAP, idb, fd, &Eb, dl, &cut);
    if (cut || !nb || !(Ea + Eb > want) || past_deadline(p))
        return;
    na = ist_tritree_reach(A, pb, ra, nrm, la, want - Eb, IST_NEAR_CAP, ida, fd, &Ea, dl, &cut);
    if (cut)
        return;
    rb->tests += na + nb;
    near_load(A, NULL, ida, na, nrm, la, 0, ca);
    near_load(B, &p->b_in_a, idb, nb, nrm, prox_v3_dot(nrm, pb), 1, cb);
    /* a pair's gap along n is at least d - e_a - e_b */
    const float need = (float)want;
    float ea = -INFINITY, eb = -INFINITY;
    for (uint32_t i = 0; i < na; i++)
        ea = ca[i].e > ea ? ca[i].e : ea;
    for (uint32_t j = 0; j < nb; j++)
        eb = cb[j].e > eb ? cb[j].e : eb;
    uint32_t m = 0;
    for (uint32_t i = 0; i < na; i++)
        if (ca[i].e + eb > need)
            ca[m++] = ca[i];
    na = m, m = 0;
    for (uint32_t j = 0; j < nb; j++)
        if (cb[j].e + ea > need)
            cb[m++] = cb[j];
    nb = m;
    const float lim = (float)(d * (1 - IST_NEAR_EPS)), n0 = (float)nrm.x, n1 = (float)nrm.y, n2 = (float)nrm.z;
    /* the IST_NEAR_PAIRS nearest centroids, nearest first */
    float key[IST_NEAR_PAIRS];
    uint32_t pi[IST_NEAR_PAIRS], pj[IST_NEAR_PAIRS];
    int kept = 0;
#if defined(__SSE2__)
    /* four of B's candidates at a time, the same float operations in the
     * same order as the scalar loop below (the same pairs kept, bit for
     * bit); B's candidates in lanes, padded with reach -inf (never kept) */
    float bx[IST_NEAR_CAP], by[IST_NEAR_CAP], bz[IST_NEAR_CAP], br[IST_NEAR_CAP], be[IST_NEAR_CAP];
    const uint32_t nb4 = (nb + 3) & ~3u;
    for (uint32_t j = 0; j < nb4; j++) {
        const int real = j < nb;
        bx[j] = real ? cb[j].m[0] : 0, by[j] = real ? cb[j].m[1] : 0, bz[j] = real ? cb[j].m[2] : 0;
        br[j] = real ? cb[j].r : 0, be[j] = real ? cb[j].e : -INFINITY;
    }
    const __m128 vlim = _mm_set1_ps(lim), vlim2 = _mm_set1_ps(lim * lim), zero = _mm_setzero_ps();
    const __m128 vn0 = _mm_set1_ps(n0), vn1 = _mm_set1_ps(n1), vn2 = _mm_set1_ps(n2);
    for (uint32_t i = 0; i < na; i++) {
        const __m128 gi = _mm_set1_ps((float)d - ca[i].e), ri = _mm_set1_ps(ca[i].r);
        const __m128 mx = _mm_set1_ps(ca[i].m[0]), my = _mm_set1_ps(ca[i].m[1]), mz = _mm_set1_ps(ca[i].m[2]);
        for (uint32_t j0 = 0; j0 < nb4; j0 += 4) {
            const __m128 g = _mm_sub_ps(gi, _mm_loadu_ps(be + j0));
            const __m128 dx = _mm_sub_ps(_mm_loadu_ps(bx + j0), mx), dy = _mm_sub_ps(_mm_loadu_ps(by + j0), my),
                         dz = _mm_sub_ps(_mm_loadu_ps(bz + j0), mz);
            const __m128 c2 = _mm_add_ps(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)), _mm_mul_ps(dz, dz));
            const __m128 along = _mm_add_ps(_mm_add_ps(_mm_mul_ps(dx, vn0), _mm_mul_ps(dy, vn1)), _mm_mul_ps(dz, vn2));
            const __m128 l2 = _mm_sub_ps(c2, _mm_mul_ps(along, along));
            const __m128 gl = _mm_max_ps(_mm_sub_ps(_mm_sub_ps(_mm_sqrt_ps(_mm_max_ps(l2, zero)), ri), _mm_loadu_ps(br + j0)), zero);
            const __m128 gc = _mm_max_ps(g, zero);
            unsigned hit = (unsigned)_mm_movemask_ps(
                _mm_and_ps(_mm_cmplt_ps(g, vlim), _mm_cmplt_ps(_mm_add_ps(_mm_mul_ps(gc, gc), _mm_mul_ps(gl, gl)), vlim2)));
            if (!hit)
                continue;
            float c2s[4];
            _mm_storeu_ps(c2s, c2);
            for (; hit; hit &= hit - 1) {
                const int l = __builtin_ctz(hit);
                const uint32_t j = j0 + (uint32_t)l;
                const float c2j = c2s[l];
                if ((kept == IST_NEAR_PAIRS && !(c2j < key[kept - 1])) || (ca[i].id == rb->ta && cb[j].id == rb->tb))
                    continue;
                near_keep(key, pi, pj, &kept, c2j, ca[i].id, cb[j].id);
            }
        }
    }
#else
    for (uint32_t i = 0; i < na; i++)
        for (uint32_t j = 0; j < nb; j++) {
            float g = (float)d - ca[i].e - cb[j].e;
            if (!(g < lim))
                continue;
            const float dx = cb[j].m[0] - ca[i].m[0], dy = cb[j].m[1] - ca[i].m[1], dz = cb[j].m[2] - ca[i].m[2];
            const float c2 = dx * dx + dy * dy + dz * dz;
            if (kept == IST_NEAR_PAIRS && !(c2 < key[kept - 1]))
                continue;
            const float along = dx * n0 + dy * n1 + dz * n2, l2 = c2 - along * along;
            float gl = sqrtf(l2 > 0 ? l2 : 0) - ca[i].r - cb[j].r;
            g = g > 0 ? g : 0, gl = gl > 0 ? gl : 0;
            if (!(g * g + gl * gl < lim * lim) || (ca[i].id == rb->ta && cb[j].id == rb->tb))
                continue;
            near_keep(key, pi, pj, &kept, c2, ca[i].id, cb[j].id);
        }
#endif
    const double beat = rb->d * (1 - 1e-12);
    for (int k = 0; k < kept && !past_deadline(p); k++) {
        prox_vec3 P[3], Q[3], qa, qb;
        tri_corners(A, pi[k], NULL, P);
        tri_corners(B, pj[k], &p->b_in_a, Q);
        int exact;
        const double dk = prox_triangle_distance_below(P, Q, beat, &qa, &qb, NULL, &exact);
        rb->tests++;
        if (exact && dk < beat) {
            walk_pairs(p, pi[k], pj[k], rb);
            break;
        }
    }
}

/* the best triangle pair found, polished by the descent over edge-adjacent
 * pairs (a projection stops at the closest points of one pair; a
 * neighbour can share a closer feature); the cache keeps the pair.
 * Measured and not kept: the descent over vertex-adjacent triangles (each
 * triangle's one-ring, ~12 moves a side instead of 3): armadillo's
 * held-out random poses (gen_poses seed 11) kept their three worst answers
 * (3.1%, 1.9%, 1.1% over FCL's exact distance) at 9 more triangle tests a
 * query: their exact closest points lie 0.004-0.025 away (a voxel to five)
 * on both surfaces, at another local minimum, not a neighbour's feature. */
static void finish_distance(prox_ctx *c, const prox_pairstate *p)
{
    const ist_places *pl = p->scratch;
    double v;
    uint32_t la, lb;
    settle_deferred(c, p);
    if (prox_ctx_pair_best(c, p, &v, &la, &lb) != 0 || v <= 0 || !pl->has_tris)
        return;
    /* precise: the walk keeps its first pair's points as well (the
     * search for another minimum starts from them).
     * Measured (errors against FCL's exact distance, max; bench poses seed
     * 7, 200 random and 500 path, and held-out gen_poses seed 11, 1,000
     * random and 1,000 path; five meshes): armadillo held-out random 3.1%
     * -> 0.25%, bench random 0.23% -> 0, path 0.44% -> 0, held-out path
     * 0.17% -> 0; bunny00 held-out random 0.72% -> 0.22%, bench random
     * 0.43% -> 0, held-out path 0.11% -> 0; elephant held-out random
     * 0.007% -> 0; no answer above the fast mode's (--fast, the default
     * until 2026-11-24) or below the exact one.
     * Callgrind, 40 random / 80 coherent bench poses, against the fast
     * mode: armadillo +21% / +33% instructions, bunny00 +12% / +25%, knot1
     * +3% / +5%, elephant +8% / +12%, fandisk +5% / +7% (the fast mode's
     * answers are unchanged, its instructions within 0.1%: it skips the
     * search).
     * Measured and not kept (same callgrind sets):
     * - the candidates as the 48 triangles nearest pb and pa in the box
     *   tree, whatever their reach (the first port, exp-local bad2483):
     *   as accurate but bunny00 random 0.43% stays; armadillo +21% / +38%,
     *   bunny00 +18% / +48%, knot1 +5% / +8%, elephant +10% / +11%, fandisk
     *   +8% / +18%;
     * - the candidates by a walk over edge-adjacent triangles from the
     *   answer's pair (at most 128 visited a side, those whose balls reach
     *   into the ball kept): armadillo +9% / +14% but fandisk +9% / +25%,
     *   and armadillo held-out random 1.9% (a second minimum on a part of
     *   the surface not connected within the ball), bunny00 random 0.43%;
     * - only the 4 farthest reaching triangles a side, each one's farthest
     *   corner projected onto the other mesh (bounded by d) and that pair
     *   tested: bunny00 held-out random 0.72% -> 0.03%, but armadillo
     *   held-out random stays 3.1%, bench random 0.23%, path 0.44%;
     *   armadillo +7% / +12%, fandisk +4% / +9%;
     * - 24 or 16 candidates a side: armadillo held-out random 1.9%, bunny00
     *   random 0.43%; 2 pairs tested: bunny00 held-out random 0.72% (its
     *   pose 792: the third pair); 8: the same errors as 3 (seed 7 and 11);
     * - (kept since) 12 pairs in place of 3, each test cut short by
     *   prox_triangle_distance_below: seed-13 random max armadillo 3.1% ->
     *   1.3% (pose 710; the next, 868, is a minimum the search does not
     *   reach), fandisk 0.02% -> 0, seed-11 random fandisk 0.025% ->
     *   0.001%, no pose of the 20 sets worse; callgrind against 3 pairs:
     *   +0.2% to +1.2% (40 random), 0 to +1.8% (80 coherent; elephant);
     *   12 full tests: 0 to +4.0%, 16: 0 to +5.8% (the same errors); the cut alone at 3 pairs: -0.6% to 0, the same answers;
     *   pairs ranked by their lower bound instead of the centroids'
     *   distance: 3 pairs, bench random bunny00 0 -> 0.55%, armadillo
     *   seed-11 random 0.25% -> 1.9%;
     * - a search radius of 4 voxels: the same errors as 1; of 0.5 or 0.25
     *   voxel: armadillo held-out random 1.9%, bunny00 0.72%, bunny00
     *   random 0.43%.
     * - running it only for some kinds of final pair: on armadillo,
     *   bunny00 and elephant (four pose sets, 12,000 queries; 8,100 reached
     *   the search) the 17 that it improved (first port) ended at vertex-
     *   vertex, vertex-edge, vertex-face, edge-vertex, edge-edge and
     *   face-vertex pairs (4, 3, 1, 3, 5, 1), about as all queries did: no
     *   kind can be left out.
     * The largest reaches alone (the first stage, every query) cost
     * armadillo +5% / +8%, bunny00 +4% / +9%, fandisk about +7% on its
     * path: the search cannot run on every query within a few percent.
     * Since: B's capped query at once in place of its largest reach alone
     * (measured: the same answers bit for bit on every bench and held-out
     * pose; not certain, B's threshold no longer comes from A's capped
     * query), and
     * the candidate pairs ranked four of B's at a time with SSE, the
     * nearest centroid test before the square root (the same): armadillo
     * -4% / -6%, bunny00 -3% / -5% instructions (40 random / 80 coherent). */
    const int precise = p->query->precise;
    refine_best rb = refine_start(precise ? INFINITY : v, pl->ta, pl->tb, v);
    if (!past_deadline(p))
        walk_pairs(p, pl->ta, pl->tb, &rb);
    /* (where the search moves the answer to another minimum, the leaves
     * reported and cached stay the walk's: the next coherent query seeds
     * that place and the new pair's hint both. Reporting the new pair's
     * nearest spheres instead was measured: armadillo's bench path max
     * 0.01% -> 0.13% with --precise, the rest the same) */
    if (precise)
        near_minima(p, &rb);
    prox_ctx_count(c, 0, rb.tests);
    if (rb.d < v)
        prox_ctx_offer_distance(c, p, rb.d, rb.pa, rb.pb, la, lb);
    if (p->query->use_cache && p->cache)
        p->cache->hint_a = rb.ta, p->cache->hint_b = rb.tb;
}

void ist_register_distance(prox_bank *bank)
{
    prox_handler h;
    memset(&h, 0, sizeof h);
    h.name = "ist-ist distance";
    h.root = root_distance;
    h.seed = seed_distance;
    h.expand = expand_distance;
    h.finish = finish_distance;
    h.root_bound = root_bound_distance;
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_DISTANCE, &h);
    h.root_bound = NULL;
    h.name = "ist-ist tolerance";
    h.root = root_tolerance;
    h.seed = seed_spheres;
    h.expand = expand_spheres;
    h.finish = NULL;
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_TOLERANCE, &h);
    h.name = "ist-ist collide";
    h.seed = NULL;
    h.root = root_overlap;
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_COLLIDE, &h);
    h.name = "ist-ist contacts";
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_CONTACTS, &h);
}
