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
    double rec_margin; /* ... of the pairs within this distance */
} ist_fx;
#define IST_FX_OFFSET 384
_Static_assert(IST_FX_OFFSET + sizeof(ist_fx) <= PROX_PAIR_SCRATCH, "scratch layout");

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

/* primary: the distance model (a leaf is its inner sphere, a child's
 * radius is dr); else the volume model: a leaf is its secondary sphere,
 * a child's sphere is the record's (cr, bounding both models). Penetration
 * volume uses its own tighter records (ist_vrec, in ist_penvol.c). */
static inline void lanes_load_r(const prox_ist *t, uint32_t id, int primary, lanes *L)
{
    if (id & IST_LEAF) {
        const ist_sphere *q = &t->spheres[id & ~IST_LEAF];
        const float *s = t->sec[id & ~IST_LEAF];
        memset(L, 0, sizeof *L);
        if (primary)
            L->x[0] = q->x, L->y[0] = q->y, L->z[0] = q->z, L->r[0] = q->r;
        else
            L->x[0] = s[0], L->y[0] = s[1], L->z[0] = s[2], L->r[0] = s[3];
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
 * 0) in doubles: its sphere (primary: as in lanes_load_r; else the volume
 * model's: a leaf, also a leaf child, is its secondary sphere, an inner
 * child the record's sphere), carried into A's frame by X if given; secondary volume
 * and leaf count below it. */
typedef struct kid {
    uint32_t id, leaves;
    double x, y, z, R, vol;
} kid;

static inline void kid_get_r(const prox_ist *t, uint32_t id, int j, const prox_xform *X, int primary, kid *k)
{
    if (id & IST_LEAF) {
        const ist_sphere *q = &t->spheres[id & ~IST_LEAF];
        const float *s = t->sec[id & ~IST_LEAF];
        k->id = id, k->leaves = 1;
        if (primary)
            k->x = q->x, k->y = q->y, k->z = q->z, k->R = q->r;
        else
            k->x = s[0], k->y = s[1], k->z = s[2], k->R = s[3];
        k->vol = (float)(4.0 / 3.0 * M_PI * (double)q->r2 * q->r2 * q->r2);
    } else {
        const ist_node *nd = &t->nodes[id];
        k->id = nd->child[j], k->leaves = nd->cleaves[j];
        k->x = nd->cx[j], k->y = nd->cy[j], k->z = nd->cz[j], k->R = primary ? t->dr[id][j] : nd->cr[j], k->vol = nd->cvol[j];
        if (!primary && (k->id & IST_LEAF)) {
            const float *s = t->sec[k->id & ~IST_LEAF];
            k->x = s[0], k->y = s[1], k->z = s[2], k->R = s[3];
        }
    }
    if (X) {
        prox_vec3 c = prox_xform_point(X, prox_v3(k->x, k->y, k->z));
        k->x = c.x, k->y = c.y, k->z = c.z;
    }
}


#endif
