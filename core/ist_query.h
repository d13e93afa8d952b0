/* ist_query.h - private to the (IST, IST) handlers (ist_query.c,
 * ist_distance.c, ist_penvol.c): the per-query float frame kept in a pair's
 * scratch, the deadline check, and a node's children as float lanes (for
 * the 4x4 SSE prefilter) or as double "kids" (for the exact re-test).
 *
 * Expansion tests all child pairs of two 4-ary nodes (up to 16) from the
 * nodes' struct-of-arrays records, in one float SSE pass with a margin
 * that makes it conservative; survivors are tested again in double.
 */
#ifndef PROX_IST_QUERY_H
#define PROX_IST_QUERY_H

#include <stddef.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
/* lane i of the four floats in v, in every lane (pshufd) */
#define FX_LANE(v, i) _mm_castsi128_ps(_mm_shuffle_epi32((v), (i) * 0x55))
#endif

#include "handlers.h"
#include "ist_internal.h"
#include "sphere.h"



/* Per-query state of a pair, at a fixed offset of its scratch after the
 * distance candidates, set by ist_fx_prepare in the root hooks: B's frame in
 * A's in floats with the rounding margin of the float prefilter, the
 * deadline seen, and penetration volume's contact-front recording. */
typedef struct ist_fx {
    float r[9], t[3];
    float margin;
    int late;          /* the deadline has been seen passed: no more clock reads */
    uint32_t tick;     /* pushes since the last clock read */
    int record;        /* penetration volume: recording a contact front */
    float far_margin;  /* distance: > 0 where B is far from A (IST_FAR), keys in doubles grown by this; 0 else */
    double rec_margin; /* ... of the pairs within this distance */
} ist_fx;
#define IST_FX_OFFSET 1968 /* after ist_distance.c's places, projection memo and deferred pairs */
_Static_assert(IST_FX_OFFSET + sizeof(ist_fx) <= PROX_PAIR_SCRATCH, "scratch layout");
_Static_assert(IST_FX_OFFSET % _Alignof(ist_fx) == 0, "the float frame aligned in the scratch");

static inline ist_fx *pair_fx(const prox_pairstate *p) { return (ist_fx *)((char *)p->scratch + IST_FX_OFFSET); }

/* B's frame in A's in floats, the float margin, deadline and recording
 * state reset: every root hook calls it first. */
void ist_fx_prepare(const prox_pairstate *p);

/* the (IST, IST) handlers of each query family (prox_ist_register) */
void ist_register_distance(prox_bank *bank);
void ist_register_penvol(prox_bank *bank);

/* Past the deadline? Reads the clock until it says yes once, then
 * remembers (per query: ist_fx_prepare at the root resets it). */
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

/* carry lanes into A's frame (floats), radii grown by the float margin */
static inline void lanes_move(const ist_fx *f, lanes *L)
{
#if defined(__SSE2__)
    /* the scalar loop's sums, term by term in the same order. f's numbers
     * broadcast by pshufd from rows loaded once (r[0..3], r[4..7], and t
     * with the margin after it: a broadcast from memory takes two
     * instructions); the same lanes bit for bit, 0.3-0.9% fewer
     * instructions in the default distance query (callgrind, 40 random /
     * 80 coherent bench poses) */
    const __m128 x = _mm_loadu_ps(L->x), y = _mm_loadu_ps(L->y), z = _mm_loadu_ps(L->z);
    _Static_assert(offsetof(ist_fx, margin) == offsetof(ist_fx, t) + 3 * sizeof(float), "t and margin one row");
    const __m128i r0 = _mm_castps_si128(_mm_loadu_ps(f->r)), r1 = _mm_castps_si128(_mm_loadu_ps(f->r + 4));
    const __m128i tm = _mm_castps_si128(_mm_loadu_ps((const float *)((const char *)f + offsetof(ist_fx, t)))); /* t[0..2], margin */
    __m128 s = _mm_add_ps(_mm_mul_ps(FX_LANE(r0, 0), x), _mm_mul_ps(FX_LANE(r0, 1), y));
    _mm_storeu_ps(L->x, _mm_add_ps(_mm_add_ps(s, _mm_mul_ps(FX_LANE(r0, 2), z)), FX_LANE(tm, 0)));
    s = _mm_add_ps(_mm_mul_ps(FX_LANE(r0, 3), x), _mm_mul_ps(FX_LANE(r1, 0), y));
    _mm_storeu_ps(L->y, _mm_add_ps(_mm_add_ps(s, _mm_mul_ps(FX_LANE(r1, 1), z)), FX_LANE(tm, 1)));
    s = _mm_add_ps(_mm_mul_ps(FX_LANE(r1, 2), x), _mm_mul_ps(FX_LANE(r1, 3), y));
    _mm_storeu_ps(L->z, _mm_add_ps(_mm_add_ps(s, _mm_mul_ps(_mm_set1_ps(f->r[8]), z)), FX_LANE(tm, 2)));
    _mm_storeu_ps(L->r, _mm_add_ps(_mm_loadu_ps(L->r), FX_LANE(tm, 3)));
#else
    for (int j = 0; j < 4; j++) {
        float x = L->x[j], y = L->y[j], z = L->z[j];
        L->x[j] = f->r[0] * x + f->r[1] * y + f->r[2] * z + f->t[0];
        L->y[j] = f->r[3] * x + f->r[4] * y + f->r[5] * z + f->t[1];
        L->z[j] = f->r[6] * x + f->r[7] * y + f->r[8] * z + f->t[2];
        L->r[j] += f->margin;
    }
#endif
}

/* One child of a node id (slot j of an inner node; a leaf is its own child
 * 0) in doubles: a bounding sphere (which one is the user's: the distance
 * model's or the volume model's), carried into A's frame if asked;
 * secondary volume and leaf count below it. */
typedef struct kid {
    uint32_t id, leaves;
    double x, y, z, R, vol;
} kid;

#endif
