/* ist_penvol.c - (IST, IST) penetration volume (Algorithm 2; time-critical
 * Algorithm 3 through the engine's deadline; contact fronts for coherence),
 * with force and torque. RT safe.
 *
 * Penetration volume uses the secondary spheres (4.2.1; prox_ist.sec): at
 * the centroids of the volume they account for, their volumes add up to
 * the mesh volume. A leaf is its secondary sphere throughout; node pairs
 * are pruned with the per-node ist_vrec records (spheres bounding only the
 * secondary spheres below). Expected overlap of a node pair (its share of
 * the running estimate): the lens of two balls holding the nodes' leaf
 * volumes at their centroids (see expected_vol); with a deadline the
 * second-level estimate Vol^(1) (see push_vol). Certified upper bound of a
 * node pair: min(volA * leavesB, volB * leavesA) (each leaf lens is at
 * most the smaller leaf). */
#include <stddef.h>

#include "ist_query.h"

static inline double sphere_vol(double r) { return 4.0 / 3.0 * M_PI * r * r * r; }

/* a leaf's secondary sphere's centre, carried by X if given */
static inline prox_vec3 sec_centre(const prox_ist *t, uint32_t leaf, const prox_xform *X)
{
    const float *s = t->sec[leaf];
    prox_vec3 c = prox_v3(s[0], s[1], s[2]);
    return X ? prox_xform_point(X, c) : c;
}

/* A node's children (a leaf: itself in slot 0) as four lanes of the
 * volume model, from its ist_vrec record: a leaf child is its secondary
 * sphere, an inner child's sphere bounds only the secondary spheres below
 * it; an empty slot has radius -1e30 and never overlaps. */
typedef struct pv_lanes {
    float x[4], y[4], z[4], r[4];
} pv_lanes;
_Static_assert(sizeof(pv_lanes) == 64 && offsetof(ist_vrec, r) == 48, "a record's lanes are x[4], y[4], z[4], r[4]");

static inline const float *vload(const prox_ist *t, uint32_t id, pv_lanes *leaf, const uint32_t **ids, uint32_t *leaf_ids)
{
    if (id & IST_LEAF) {
        const float *s = t->sec[id & ~IST_LEAF];
        for (int j = 0; j < 4; j++)
            leaf->x[j] = s[0], leaf->y[j] = s[1], leaf->z[j] = s[2], leaf->r[j] = j ? -1e30f : s[3], leaf_ids[j] = j ? IST_EMPTY : id;
        *ids = leaf_ids;
        return leaf->x;
    }
    *ids = t->vrec[id].child;
    return t->vrec[id].x;
}

/* The frame of one run of expansions (a depth-first completion, or one
 * queued expansion): B's rotation and translation in A's frame as float
 * lanes, and B's last expanded nodes with their children already carried
 * into A's frame (radii grown by the float margin and the recording
 * margin). A B node is expanded against several of A's (about 5 times on
 * average in a full query): a small direct-mapped cache on the stack spares
 * most of those transforms. */
#define PV_CACHE_BITS 6
#define PV_CACHE (1 << PV_CACHE_BITS)
typedef struct pv_frame {
    const prox_pairstate *p;
    float r[9], t[3], grow, margin;
    uint32_t cid[PV_CACHE];
    pv_lanes cb[PV_CACHE];
} pv_frame;

static inline void pv_frame_init(pv_frame *fr, const prox_pairstate *p, double m)
{
    const ist_fx *f = pair_fx(p);
    fr->p = p;
    memcpy(fr->r, f->r, sizeof fr->r);
    memcpy(fr->t, f->t, sizeof fr->t);
    fr->grow = f->margin + (float)m;
    fr->margin = f->margin;
    for (int k = 0; k < PV_CACHE; k++)
        fr->cid[k] = IST_EMPTY;
}

/* B's node nb's children carried into A's frame, into cache slot k */
static __attribute__((noinline)) const pv_lanes *pv_frame_fill(pv_frame *fr, uint32_t nb, unsigned k)
{
    pv_lanes *L = &fr->cb[k];
    pv_lanes raw;
    const uint32_t *unused;
    uint32_t unused_ids[4];
    const float *src = vload(fr->p->b->impl, nb, &raw, &unused, unused_ids);
#if defined(__SSE2__)
    __m128 X = _mm_loadu_ps(src), Y = _mm_loadu_ps(src + 4), Z = _mm_loadu_ps(src + 8), R = _mm_loadu_ps(src + 12);
#define PV_R(k) _mm_set1_ps(fr->r[k])
    _mm_storeu_ps(L->x, _mm_add_ps(_mm_add_ps(_mm_mul_ps(PV_R(0), X), _mm_mul_ps(PV_R(1), Y)), _mm_add_ps(_mm_mul_ps(PV_R(2), Z), _mm_set1_ps(fr->t[0]))));
    _mm_storeu_ps(L->y, _mm_add_ps(_mm_add_ps(_mm_mul_ps(PV_R(3), X), _mm_mul_ps(PV_R(4), Y)), _mm_add_ps(_mm_mul_ps(PV_R(5), Z), _mm_set1_ps(fr->t[1]))));
    _mm_storeu_ps(L->z, _mm_add_ps(_mm_add_ps(_mm_mul_ps(PV_R(6), X), _mm_mul_ps(PV_R(7), Y)), _mm_add_ps(_mm_mul_ps(PV_R(8), Z), _mm_set1_ps(fr->t[2]))));
#undef PV_R
    _mm_storeu_ps(L->r, _mm_add_ps(R, _mm_set1_ps(fr->grow)));
#else
    for (int j = 0; j < 4; j++) {
        float x = src[j], y = src[4 + j], z = src[8 + j];
        L->x[j] = fr->r[0] * x + fr->r[1] * y + fr->r[2] * z + fr->t[0];
        L->y[j] = fr->r[3] * x + fr->r[4] * y + fr->r[5] * z + fr->t[1];
        L->z[j] = fr->r[6] * x + fr->r[7] * y + fr->r[8] * z + fr->t[2];
        L->r[j] = src[12 + j] + fr->grow;
    }
#endif
    fr->cid[k] = nb;
    return L;
}

/* B's node nb's children in A's frame (cached) and their ids */
static inline __attribute__((always_inline)) const pv_lanes *pv_frame_b(pv_frame *fr, uint32_t nb, const uint32_t **ids,
                                                                        uint32_t *leaf_ids)
{
    unsigned k = (nb * 2654435761u) >> (32 - PV_CACHE_BITS);
    if (nb & IST_LEAF)
        *ids = leaf_ids, leaf_ids[0] = nb, leaf_ids[1] = leaf_ids[2] = leaf_ids[3] = IST_EMPTY;
    else
        *ids = ((const prox_ist *)fr->p->b->impl)->vrec[nb].child;
    return fr->cid[k] == nb ? &fr->cb[k] : pv_frame_fill(fr, nb, k);
}

/* The 4x4 child pairs of (na, nb) whose spheres (B's grown by the frame's
 * margins) overlap: bit 4i+j for A's slot i, B's slot j. The child ids:
 * *ida, *idb (pointing into the records, or into leaf_a / leaf_b for a
 * leaf); the lanes tested: *al (A's x[4], y[4], z[4], r[4], in the record or
 * in *la), *bl (B's, carried, grown); *tests: the pairs looked at. */
static inline __attribute__((always_inline)) unsigned vhits(pv_frame *fr, uint32_t na, uint32_t nb, const uint32_t **ida,
                                                            const uint32_t **idb, uint32_t leaf_a[4], uint32_t leaf_b[4],
                                                            pv_lanes *la, const float **al, const pv_lanes **bl, uint32_t *tests)
{
    static const unsigned char bits[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};
    const pv_lanes *b = *bl = pv_frame_b(fr, nb, idb, leaf_b);
#if defined(__SSE2__)
    const __m128 zero = _mm_setzero_ps();
    const __m128 BX = _mm_loadu_ps(b->x), BY = _mm_loadu_ps(b->y), BZ = _mm_loadu_ps(b->z), BR = _mm_loadu_ps(b->r);
    __m128 AX, AY, AZ, AR;
    if (na & IST_LEAF) { /* A's leaf in every lane, radius only in lane 0 */
        const __m128 q = _mm_loadu_ps(((const prox_ist *)fr->p->a->impl)->sec[na & ~IST_LEAF]);
        AX = _mm_shuffle_ps(q, q, 0x00), AY = _mm_shuffle_ps(q, q, 0x55), AZ = _mm_shuffle_ps(q, q, 0xaa);
        AR = _mm_move_ss(_mm_set1_ps(-1e30f), _mm_shuffle_ps(q, q, 0xff));
        _mm_storeu_ps(la->x, AX), _mm_storeu_ps(la->y, AY), _mm_storeu_ps(la->z, AZ), _mm_storeu_ps(la->r, AR);
        leaf_a[0] = na, leaf_a[1] = leaf_a[2] = leaf_a[3] = IST_EMPTY;
        *ida = leaf_a, *al = la->x;
    } else {
        const float *a = *al = vload(fr->p->a->impl, na, la, ida, leaf_a);
        AX = _mm_loadu_ps(a), AY = _mm_loadu_ps(a + 4), AZ = _mm_loadu_ps(a + 8), AR = _mm_loadu_ps(a + 12);
    }
    unsigned va = (unsigned)_mm_movemask_ps(_mm_cmpge_ps(AR, zero)), vb = (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(BR, _mm_set1_ps(-1e29f)));
    *tests = (uint32_t)bits[va] * bits[vb];
    unsigned hit = 0;
#define PV_HITS(i)                                                                                                              \
    do {                                                                                                                        \
        __m128 dx = _mm_sub_ps(BX, _mm_shuffle_ps(AX, AX, _MM_SHUFFLE(i, i, i, i)));                                           \
        __m128 dy = _mm_sub_ps(BY, _mm_shuffle_ps(AY, AY, _MM_SHUFFLE(i, i, i, i)));                                           \
        __m128 dz = _mm_sub_ps(BZ, _mm_shuffle_ps(AZ, AZ, _MM_SHUFFLE(i, i, i, i)));                                           \
        __m128 rr = _mm_add_ps(BR, _mm_shuffle_ps(AR, AR, _MM_SHUFFLE(i, i, i, i)));                                           \
        __m128 d2 = _mm_add_ps(_mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy)), _mm_mul_ps(dz, dz));                        \
        hit |= (unsigned)_mm_movemask_ps(_mm_and_ps(_mm_cmplt_ps(d2, _mm_mul_ps(rr, rr)), _mm_cmpgt_ps(rr, zero))) << (4 * i); \
    } while (0)
    PV_HITS(0);
    if (va & 2)
        PV_HITS(1);
    if (va & 4)
        PV_HITS(2);
    if (va & 8)
        PV_HITS(3);
#undef PV_HITS
    return hit;
#else
    const float *a = *al = vload(fr->p->a->impl, na, la, ida, leaf_a);
    unsigned hit = 0, va = 0, vb = 0;
    for (int j = 0; j < 4; j++)
        va |= (unsigned)(a[12 + j] >= 0) << j, vb |= (unsigned)(b->r[j] > -1e29f) << j;
    *tests = (uint32_t)bits[va] * bits[vb];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float dx = b->x[j] - a[i], dy = b->y[j] - a[4 + i], dz = b->z[j] - a[8 + i], rr = a[12 + i] + b->r[j];
            hit |= (unsigned)(rr > 0 && dx * dx + dy * dy + dz * dz < rr * rr) << (4 * i + j);
        }
    return hit;
#endif
}

/* One child of a node id (slot j; a leaf is its own child 0) in doubles,
 * its sphere as in vhits, carried into A's frame by X if given;
 * secondary volume and leaf count below it. */
static inline void vkid_get(const prox_ist *t, uint32_t id, int j, const prox_xform *X, kid *k)
{
    if (id & IST_LEAF) {
        const float *s = t->sec[id & ~IST_LEAF];
        k->id = id, k->leaves = 1;
        k->x = s[0], k->y = s[1], k->z = s[2], k->R = s[3];
        k->vol = (float)(4.0 / 3.0 * M_PI * (double)s[3] * s[3] * s[3]);
    } else {
        const ist_vrec *v = &t->vrec[id];
        k->id = v->child[j], k->leaves = t->nodes[id].cleaves[j], k->vol = t->nodes[id].cvol[j];
        k->x = v->x[j], k->y = v->y[j], k->z = v->z[j], k->R = v->r[j];
    }
    if (X) {
        prox_vec3 c = prox_xform_point(X, prox_v3(k->x, k->y, k->z));
        k->x = c.x, k->y = c.y, k->z = c.z;
    }
}

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
 * most. (Earlier revisions' queue ran every query depth first, so this
 * order took no effect: deterministic clock, 400 ns a read, p95 error
 * against the full query at 200 us knot1 7.1% -> 1.2%, fandisk 7.1% ->
 * 1.6%, bunny00 4.5% -> 0.7%; at 100 us 7.8-17% -> 2.0-5.6% on the five
 * meshes. Ordered by the estimate alone instead, largest first: 200 us
 * knot1 8.5%, fandisk 6.0%, bunny00 2.5%; at 100 us 3.9-16%.) Measured and
 * not kept: the queued estimates scaled at the end by
 * the ratio of exact to estimated volume of the pairs this query
 * completed (clamped to 0.5-2): heavy bench poses at 100 and 200 us, two
 * runs each, p95 error bunny00 7.7% -> 6.4% at 100 us, but elephant 11% ->
 * 20-32%, armadillo 8% -> 12%, knot1 within the noise: an estimate's
 * error is the pair's own, not a bias the query shares. */
static void push_vol(prox_ctx *c, const prox_pairstate *p, const kid *a, const kid *b, double dist)
{
    /* (widened by 1e-6: the volumes are stored as floats, rounded either
     * way, and a tree against itself at the identity overlaps by exactly
     * its leaf volume: unwidened, the bound came out 5.5e-8 below it) */
    double u1 = a->vol * b->leaves, u2 = b->vol * a->leaves, ub = (u1 < u2 ? u1 : u2) * (1 + 1e-6);
    double lens, est = expected_vol(p, a, b, dist, &lens), key = -est;
    if (p->query->deadline_ns) {
        /* past the deadline the expansion still pushes every pair (the
         * bounds need them) but with the cheap eq. 8 estimate, so the
         * query stops within about one expansion. (Measured and not kept:
         * Vol^(1) for those late pairs too, heavy bench poses at 100 and
         * 200 us under a clock that advances a fixed 400 ns a read, so
         * both runs cut at the same place: p95 error against the full
         * query the same on knot1, fandisk and bunny00 (7.1%, 7.1%, 4.5%
         * at 200 us); what is left at a cut is in the queued pairs.) */
        ist_fx *f = pair_fx(p);
        if (!f->late && (++f->tick & 3) == 0 && past_deadline(p)) /* a clock read every 4 pushes (~0.1 us each) */
            prox_ctx_deadline_passed(c); /* the engine stops after this expansion */
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

static void acc_flush(prox_ctx *c, const prox_pairstate *p, vol_acc *s)
{
    prox_ctx_count(c, 0, s->leaf_tests);
    prox_ctx_add_volume_sum(c, p, s->vol, s->F, s->M, s->deepest, s->la, s->lb);
    memset(s, 0, sizeof *s);
}

/* The lens of the secondary spheres (ca, ra) of A's leaf la and (cb, rb)
 * of B's leaf lb (A's frame), into the sum: its volume pushes B along the
 * line from A's centre to B's (+z where they coincide). A force along that
 * line has the same torque about any point of it: taken at A's centre. */
static inline void leaf_lens(vol_acc *s, prox_vec3 ca, double ra, prox_vec3 cb, double rb, uint32_t la, uint32_t lb)
{
    double ux = cb.x - ca.x, uy = cb.y - ca.y, uz = cb.z - ca.z, d2 = ux * ux + uy * uy + uz * uz, sr = ra + rb;
    s->leaf_tests++;
    if (d2 >= sr * sr)
        return;
    double d = sqrt(d2), dr = ra - rb, v;
    if (d <= fabs(dr)) {
        double rm = ra < rb ? ra : rb;
        v = 4.0 / 3.0 * M_PI * rm * rm * rm;
    } else {
        double g = sr - d;
        v = M_PI * g * g * (d2 + 2.0 * d * sr - 3.0 * dr * dr) / (12.0 * d);
    }
    prox_vec3 f = d > 0 ? prox_v3_scale(prox_v3(ux, uy, uz), v / d) : prox_v3(0, 0, v);
    s->vol += v;
    s->F = prox_v3_add(s->F, f);
    s->M = prox_v3_add(s->M, prox_v3_cross(ca, f));
    if (v > s->deepest)
        s->deepest = v, s->la = la, s->lb = lb;
}

/* the lens of two leaves' secondary spheres, into the sum */
static void leaf_volume(const prox_pairstate *p, uint32_t la, uint32_t lb, vol_acc *s)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    leaf_lens(s, sec_centre(A, la, NULL), A->sec[la][3], sec_centre(B, lb, &p->b_in_a), B->sec[lb][3], la, lb);
}

/* one sphere (centre cl, volume v, A's frame) inside the secondary sphere
 * centred at cs: its force along the line A's centre -> B's */
static inline void contained_one(prox_vec3 cl, double v, int node_in_a, prox_vec3 cs, vol_acc *s)
{
    prox_vec3 ca = node_in_a ? cl : cs, cb = node_in_a ? cs : cl;
    prox_vec3 u = prox_v3_sub(cb, ca);
    double d = prox_v3_len(u);
    prox_vec3 dir = d > 0 ? prox_v3_scale(u, 1.0 / d) : prox_v3(0, 0, 1), f = prox_v3_scale(dir, v);
    s->F = prox_v3_add(s->F, f);
    s->M = prox_v3_add(s->M, prox_v3_cross(ca, f)); /* any point of the line: as leaf_lens */
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
    prox_vec3 cs = sec_centre(S, sphere, node_in_a ? &p->b_in_a : NULL);
    uint32_t stack[256], n = 0; /* inner nodes only: 3 per level */
    const prox_xform *X = node_in_a ? NULL : &p->b_in_a;
    if (node & IST_LEAF) {
        double rl = T->sec[node & ~IST_LEAF][3];
        contained_one(sec_centre(T, node & ~IST_LEAF, X), sphere_vol(rl), node_in_a, cs, s);
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
                double rl = T->sec[c & ~IST_LEAF][3];
                contained_one(sec_centre(T, c & ~IST_LEAF, X), sphere_vol(rl), node_in_a, cs, s);
            } else if (n < 256)
                stack[n++] = c;
            else {
                /* a tree deeper than about 85 levels: that subtree pushes
                 * as one ball at its volume's centroid */
                float g[4];
                ist_id_ball(T, c, g);
                prox_vec3 gc = prox_v3(g[0], g[1], g[2]);
                contained_one(X ? prox_xform_point(X, gc) : gc, nd->cvol[j], node_in_a, cs, s);
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
 * node's bounding sphere inside the leaf's secondary sphere? (A leaf's kid
 * is its secondary sphere.) */
static inline int contained(const kid *a, const kid *b, double dist)
{
    int al = (a->id & IST_LEAF) != 0, bl = (b->id & IST_LEAF) != 0;
    if (al == bl)
        return 0;
    return dist + (bl ? a->R : b->R) <= (bl ? b->R : a->R);
}

/* The child pairs of (na, nb) whose bounding spheres come within `m` of
 * each other (0: overlap): leaf pairs (exact lens, zero if apart) and
 * containment shortcuts go into *s, and into the contact front when
 * recording; every other such pair goes on `stack` (depth first) or,
 * without one or when it is full, to the engine's queue. Returns the number
 * of child pairs tested. */
static inline __attribute__((always_inline)) uint32_t penvol_children(prox_ctx *c, pv_frame *fr, uint32_t na, uint32_t nb, vol_acc *s,
                                                                      pv_stack *stack, double m, int record)
{
    /* rows[m]: the pair bits 4i+j of every slot i in the 4-bit mask m */
    static const uint16_t rows[16] = {0x0000, 0x000f, 0x00f0, 0x00ff, 0x0f00, 0x0f0f, 0x0ff0, 0x0fff,
                                      0xf000, 0xf00f, 0xf0f0, 0xf0ff, 0xff00, 0xff0f, 0xfff0, 0xffff};
    const prox_pairstate *p = fr->p;
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    const uint32_t *ida, *idb;
    uint32_t leaf_a[4], leaf_b[4], tests;
    pv_lanes la;
    const float *al;
    const pv_lanes *bl;
    unsigned hit = vhits(fr, na, nb, &ida, &idb, leaf_a, leaf_b, &la, &al, &bl, &tests), moved = 0;
    /* the hits by kind, each kind in its own loop (fewer mispredicted
     * branches than one loop deciding per pair) */
#if defined(__SSE2__) /* the ids' top bits (IST_LEAF) as a 4-bit mask */
    unsigned ma = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_loadu_si128((const __m128i *)ida)));
    unsigned mb = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_loadu_si128((const __m128i *)idb)));
#else
    unsigned ma = ida[0] >> 31 | (ida[1] >> 31) << 1 | (ida[2] >> 31) << 2 | (ida[3] >> 31) << 3;
    unsigned mb = idb[0] >> 31 | (idb[1] >> 31) << 1 | (idb[2] >> 31) << 2 | (idb[3] >> 31) << 3;
#endif
    unsigned LA = rows[ma], LB = mb * 0x1111u;
    unsigned ll = hit & LA & LB, ii = hit & ~(LA | LB), rest = hit & (LA ^ LB);
    /* two inner nodes that may overlap: descend without the double test
     * (a pair apart by less than the float margin only costs the tests of
     * its children) */
    if (stack)
        for (; ii && stack->n < PV_STACK; ii &= ii - 1) {
            int k = __builtin_ctz(ii);
            stack->na[stack->n] = ida[k >> 2], stack->nb[stack->n] = idb[k & 3], stack->n++;
        }
    rest |= ii;
    /* two leaves: their exact lens (zero if apart) */
    prox_vec3 cb[4]; /* B's leaves' secondary centres in A's frame, once each */
    for (; ll; ll &= ll - 1) {
        int k = __builtin_ctz(ll), i = k >> 2, j = k & 3;
        uint32_t la = ida[i] & ~IST_LEAF, lb = idb[j] & ~IST_LEAF;
        if (!(moved >> (8 + j) & 1))
            cb[j] = sec_centre(B, lb, &p->b_in_a), moved |= 1u << (8 + j);
        leaf_lens(s, sec_centre(A, la, NULL), A->sec[la][3], cb[j], B->sec[lb][3], la, lb);
        if (record)
            prox_front_record(p, ida[i], idb[j], 0.0f);
    }
    /* a leaf and an inner node (and inner pairs the stack had no room for) */
    kid ka[4], kb[4];
    for (; rest; rest &= rest - 1) {
        int k = __builtin_ctz(rest), i = k >> 2, j = k & 3;
        if (stack && stack->n < PV_STACK) {
            /* descend as above unless the leaf may hold the node's sphere:
             * the containment shortcut below decides that in double */
            float dx = bl->x[j] - al[i], dy = bl->y[j] - al[4 + i], dz = bl->z[j] - al[8 + i];
            float d = sqrtf(dx * dx + dy * dy + dz * dz), rb = bl->r[j] - fr->grow, ra = al[12 + i], slack = 2 * fr->margin;
            if ((ida[i] & IST_LEAF) ? d + rb > ra + slack : d + ra > rb + slack) {
                stack->na[stack->n] = ida[i], stack->nb[stack->n] = idb[j], stack->n++;
                continue;
            }
        }
        if (!(moved >> (4 + j) & 1))
            vkid_get(B, nb, j, &p->b_in_a, &kb[j]), moved |= 1u << (4 + j);
        if (!(moved >> i & 1))
            vkid_get(A, na, i, NULL, &ka[i]), moved |= 1u << i;
        const kid *a = &ka[i], *b = &kb[j];
        double dx = b->x - a->x, dy = b->y - a->y, dz = b->z - a->z;
        double d2 = dx * dx + dy * dy + dz * dz, rr = a->R + b->R + m;
        if (d2 >= rr * rr)
            continue; /* bounding spheres apart (by more than m): nothing below overlaps */
        double dist = sqrt(d2);
        /* containment shortcut: a hierarchy sphere inside a (secondary)
         * inner sphere overlaps it with all its leaf volume, added at once */
        if (contained(a, b, dist)) {
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
    return tests;
}

/* a node id itself as a kid (its own bounding sphere; a leaf: its
 * secondary sphere), carried by X */
static void self_kid(const prox_ist *t, uint32_t id, const prox_xform *X, kid *k)
{
    float s[4], v;
    uint32_t l;
    ist_id_sphere(t, id, s, &v, &l);
    if (id & IST_LEAF)
        memcpy(s, t->sec[id & ~IST_LEAF], sizeof s);
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

/* A clock read costs ~27 ns on this machine (TSC, vDSO); a depth-first
 * expansion ~50-100 ns (knot1 heavy: 48 ns on average), so reading every 4
 * took a tenth of a budgeted query; every 8 keeps the deadline within
 * about half a microsecond of work (a power of two). */
#define PV_CLOCK_EVERY 8u

/* Depth first below (na, nb) (not both leaves), pairs within m; with a
 * deadline the clock is read every PV_CLOCK_EVERY expansions and what is
 * left at the deadline goes back to the queue, where it counts in the
 * estimate and the bounds. */
static void penvol_dfs(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, vol_acc *s, double m, int record)
{
    const uint64_t deadline = p->query->deadline_ns;
    pv_stack st;
    st.n = 0;
    pv_frame fr;
    pv_frame_init(&fr, p, m);
    uint32_t tests = 0, expansions = 0;
    for (;;) {
        tests += penvol_children(c, &fr, na, nb, s, &st, m, record);
        if (!st.n)
            break;
        if (deadline && (expansions & (PV_CLOCK_EVERY - 1)) == PV_CLOCK_EVERY - 1 && past_deadline(p)) {
            for (uint32_t k = 0; k < st.n; k++) {
                kid a, b;
                push_vol(c, p, &a, &b, pair_kid(p, st.na[k], st.nb[k], &a, &b));
            }
            if (record)
                prox_front_invalidate(p); /* not a complete front */
            /* the engine stops after this expansion: it reads the clock
             * only every few pops, and each pair popped meanwhile would run
             * PV_CLOCK_EVERY expansions before this check cut it again */
            prox_ctx_deadline_passed(c);
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
 * compute per pushed pair), reading the clock every 8 expansions; what is
 * left at the deadline goes back to the queue. Larger pairs are expanded
 * one level, their children queued by Algorithm 3's priority. Median error
 * over the five meshes' heavy and light sets at 25, 50, 100 and 200 us
 * (two runs each): 4096, 16384 and 65536 were alike and better than 1024
 * or alike at 50-200 us (at 25 us within about a point either way); at
 * 1024 a query pushed ~950 pairs (knot1 heavy), a third of its time. */
#define PV_DFS_LEAVES 16384u

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
               (uint64_t)id_leaves(p->a->impl, na) * id_leaves(p->b->impl, nb) > PV_DFS_LEAVES) {
        pv_frame fr;
        pv_frame_init(&fr, p, 0.0);
        prox_ctx_count(c, penvol_children(c, &fr, na, nb, &s, NULL, 0.0, 0), 0);
    } else
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
    return prox_xform_motion_bound(X0, X1, prox_v3(B->root[0], B->root[1], B->root[2]), B->root[3]);
}

static void root_penvol(prox_ctx *c, const prox_pairstate *p)
{
    ist_fx_prepare(p);
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
                } else if (contained(&a, &b, pair_kid(p, na, nb, &a, &b))) {
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
void ist_register_penvol(prox_bank *bank)
{
    prox_handler h;
    memset(&h, 0, sizeof h);
    h.name = "ist-ist penetration volume";
    h.root = root_penvol;
    h.expand = expand_penvol;
    h.finish = finish_penvol;
    prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_IST, PROX_QUERY_PENVOL, &h);
}
