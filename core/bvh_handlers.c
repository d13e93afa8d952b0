/* bvh_handlers.c - (MESH, MESH) handlers: collide, contacts, distance,
 * tolerance. RT safe: no allocation, no locks.
 *
 * Each expansion descends the node with the larger bounding sphere (the
 * other one if that is a leaf) and pushes the child pairs (distance: the
 * grandchildren, four in one float pass) with a lower bound on the distance
 * of every triangle pair below as key. Leaves run the exact triangle tests
 * in double (distance and tolerance: with the best so far as a threshold,
 * so that a separating axis can end a useless test early). For closed
 * meshes, the root hook checks containment (one vertex of each mesh against
 * the other, BVH ray parity): one mesh wholly inside the other overlaps
 * although no triangles meet.
 *
 * Measured and rejected (callgrind on the bench poses; numbers in the git
 * log): the box face axes (SAT) in the four-lane key, 13-field lane blocks
 * (third axis as a cross product), per-node motion bounds for front
 * entries (entries kept with a decayed bound come back sooner), bounding-
 * sphere skips of feature pairs in the exact triangle test, holes instead
 * of closing up the rewritten front, other front restart limits.
 */
#include "bvh_internal.h"
#include "handlers.h"

#include <float.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

/* a float no larger than x (front keys stay lower bounds) */
static inline float key_down(double x)
{
    /* lowered by 2^-22 of itself first, rounding to nearest cannot land above
     * x (normal floats); the library step only for what is left */
    float f = (float)(x - fabs(x) * 0x1p-22);
    return (double)f > x ? nextafterf(f, -INFINITY) : f;
}

/* What a distance query keeps in its pair's scratch: whether it records a
 * front (its keys stored with the cache's front_drift). A front entry's key
 * is its pair's lower bound at the pose it was recorded at plus the front's
 * drift then (the summed motion bounds of B since the front was grown from the
 * roots); the bound still holds at a later pose less the motion since,
 * which the summed step bounds exceed (each step's bound exceeds the
 * largest displacement of a point of B in that step; displacements add up
 * at most), so key - drift now is a lower bound now, and an entry whose key
 * is at least the cut (best * (1 - rel_err)) + drift needs no look: no
 * rewrite either. */
typedef struct dist_scratch {
    int fronts;
    /* the rotations of b_in_a and a_in_b as float columns (x, y, z, 0),
     * for carrying a fixed node's axes into the lanes' frame (quad_fix) */
    float rot[2][3][4];
} dist_scratch;
_Static_assert(sizeof(dist_scratch) <= PROX_PAIR_SCRATCH, "fits the pair scratch");

/* record (na, nb) with lower bound `bound` into this query's front */
static inline prox_front_entry *front_put(const prox_pairstate *p, uint32_t na, uint32_t nb, double bound)
{
    const dist_scratch *s = p->scratch;
    return s->fronts ? prox_front_record(p, na, nb, key_down(bound + p->cache->front_drift)) : NULL;
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
            /* only a distance below the best (the tolerance) matters: a
             * separating axis that shows the pair no closer ends the test
             * early (61-78% of the leaf tests on the bench meshes' random
             * poses; 2-5% fewer instructions per query) */
            prox_vec3 pa, pb, axis;
            int exact;
            double below = kind == PROX_QUERY_DISTANCE ? prox_ctx_best(c) : p->query->tolerance;
            double d = prox_triangle_distance_below(P, Q, below, &pa, &pb, &axis, &exact);
            if (kind == PROX_QUERY_DISTANCE) {
                /* a leaf pair ends the cut; with the direction between
                 * its closest points (or the separating axis), which
                 * bounds it cheaply next time */
                prox_front_entry *fe = front_put(p, na, nb, d);
                if (fe && exact && d > 0)
                    for (int k = 0; k < 3; k++)
                        fe->dir[k] = (float)((prox_v3_get(pb, k) - prox_v3_get(pa, k)) / d);
                else if (fe && !exact)
                    for (int k = 0; k < 3; k++)
                        fe->dir[k] = (float)prox_v3_get(axis, k);
            }
            if (exact)
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


/* ---- distance expansions, four bounds in one float pass ----
 *
 * The node of a pair that is split is replaced by up to four of its
 * descendants ("lanes": its grandchildren; a child that is a leaf stands for
 * itself), each paired with the other node ("fixed"), whose rectangle is
 * carried once into the lanes' mesh frame. Each lane's key is the larger
 * of the sphere gap and the projection RSS bound (bvh_rss_gap_uv's
 * algorithm, with the roles of the two rectangles swapped so that the
 * lanes need no placement), computed in float, four lanes at once, less a
 * margin that covers float rounding: every term is at most
 * S = |d| + both radii in size (d: centre offset, formed in double), a
 * chain of ~30 float operations errs by far less than 1e-5 S, so the key
 * stays a lower bound and the leaves (exact, double) decide the answer. */
#define QUAD_MARGIN 1e-5f

typedef struct quad_fixed {
    double c[3]; /* centre, in the lanes' mesh frame */
#if defined(__SSE2__)
    __m128 fu[3], fv[3]; /* rectangle axes 0 and 1, same frame, each coordinate in all lanes */
#else
    float u[3], v[3];
#endif
    float e0, e1, e2, rad;
} quad_fixed;

/* Node f carried by X (rot: X's rotation as float columns): the centre in
 * double (offsets from it decide near far-from-origin contacts), the axes
 * in float (their rounding, a few 1e-7 of each half length, is far inside
 * QUAD_MARGIN) */
static inline void quad_fix(const bvh_node *f, const float rect[2], const prox_xform *X, const float rot[3][4], quad_fixed *q)
{
    const double(*M)[3] = X->R.m;
    for (int i = 0; i < 3; i++)
        q->c[i] = M[i][0] * f->c[0] + M[i][1] * f->c[1] + M[i][2] * f->c[2] + prox_v3_get(X->t, i);
#if defined(__SSE2__)
    __m128 m0 = _mm_loadu_ps(rot[0]), m1 = _mm_loadu_ps(rot[1]), m2 = _mm_loadu_ps(rot[2]);
    __m128 u = _mm_add_ps(_mm_add_ps(_mm_mul_ps(m0, _mm_set1_ps(f->R[0][0])), _mm_mul_ps(m1, _mm_set1_ps(f->R[1][0]))),
                          _mm_mul_ps(m2, _mm_set1_ps(f->R[2][0])));
    __m128 v = _mm_add_ps(_mm_add_ps(_mm_mul_ps(m0, _mm_set1_ps(f->R[0][1])), _mm_mul_ps(m1, _mm_set1_ps(f->R[1][1]))),
                          _mm_mul_ps(m2, _mm_set1_ps(f->R[2][1])));
    q->fu[0] = _mm_shuffle_ps(u, u, 0x00), q->fu[1] = _mm_shuffle_ps(u, u, 0x55), q->fu[2] = _mm_shuffle_ps(u, u, 0xaa);
    q->fv[0] = _mm_shuffle_ps(v, v, 0x00), q->fv[1] = _mm_shuffle_ps(v, v, 0x55), q->fv[2] = _mm_shuffle_ps(v, v, 0xaa);
#else
    for (int i = 0; i < 3; i++) {
        q->u[i] = rot[0][i] * f->R[0][0] + rot[1][i] * f->R[1][0] + rot[2][i] * f->R[2][0];
        q->v[i] = rot[0][i] * f->R[0][1] + rot[1][i] * f->R[1][1] + rot[2][i] * f->R[2][1];
    }
#endif
    q->e0 = rect[0], q->e1 = rect[1], q->e2 = f->e[2], q->rad = f->radius;
}

#if defined(__SSE2__)
static inline __m128 q_clamp(__m128 x, __m128 h) { return _mm_min_ps(_mm_max_ps(x, _mm_sub_ps(_mm_setzero_ps(), h)), h); }
static inline __m128 q_abs(__m128 x) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), x); }
static inline __m128 q_dot(__m128 x0, __m128 x1, __m128 x2, __m128 y0, __m128 y1, __m128 y2)
{
    return _mm_add_ps(_mm_add_ps(_mm_mul_ps(x0, y0), _mm_mul_ps(x1, y1)), _mm_mul_ps(x2, y2));
}
/* centre offset F.c - lane centre, in double, rounded once */
static inline __m128 q_offset(double fc, __m128 lc)
{
    __m128d f = _mm_set1_pd(fc);
    __m128d lo = _mm_sub_pd(f, _mm_cvtps_pd(lc)), hi = _mm_sub_pd(f, _mm_cvtps_pd(_mm_movehl_ps(lc, lc)));
    return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi));
}
#endif

#if defined(__SSE2__)
/* four node records, transposed: R00 R01 R02 R10 R11 R12 R20 R21 R22 c0 c1 c2 e0 e1 e2 radius */
static inline void q_load4(const float *r[4], __m128 v[16])
{
    for (int j = 0; j < 4; j++) {
        v[4 * j] = _mm_loadu_ps(r[0] + 4 * j), v[4 * j + 1] = _mm_loadu_ps(r[1] + 4 * j);
        v[4 * j + 2] = _mm_loadu_ps(r[2] + 4 * j), v[4 * j + 3] = _mm_loadu_ps(r[3] + 4 * j);
        _MM_TRANSPOSE4_PS(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
    }
}

/* the RSS rectangles' half lengths of four nodes, transposed */
static inline void q_rect4(float (*rect)[2], const uint32_t id[4], __m128 *r0, __m128 *r1)
{
    __m128 lo = _mm_loadh_pi(_mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)rect[id[0]]), (const __m64 *)rect[id[1]]);
    __m128 hi = _mm_loadh_pi(_mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)rect[id[2]]), (const __m64 *)rect[id[3]]);
    *r0 = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    *r1 = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
}

/* Keys of four lane nodes L (transposed records as in bvh_quad: R
 * row-major, centre, RSS rectangle half lengths, e[2], radius) against four
 * other nodes F given in L's mesh frame: centre offset
 * d = F.c - L.c, rectangle axes fu, fv, half lengths fb0, fb1, sweep radius
 * fb2, sphere radius frad. */
static inline __m128 q_keys(const __m128 L[16], const __m128 d[3], const __m128 fu[3], const __m128 fv[3], __m128 fb0,
                            __m128 fb1, __m128 fb2, __m128 frad)
{
    /* F's centre and axes in each lane's box frame */
    __m128 T0 = q_dot(L[0], L[3], L[6], d[0], d[1], d[2]), T1 = q_dot(L[1], L[4], L[7], d[0], d[1], d[2]);
    __m128 T2 = q_dot(L[2], L[5], L[8], d[0], d[1], d[2]);
    __m128 u0 = q_dot(L[0], L[3], L[6], fu[0], fu[1], fu[2]), u1 = q_dot(L[1], L[4], L[7], fu[0], fu[1], fu[2]);
    __m128 u2 = q_dot(L[2], L[5], L[8], fu[0], fu[1], fu[2]);
    __m128 v0 = q_dot(L[0], L[3], L[6], fv[0], fv[1], fv[2]), v1 = q_dot(L[1], L[4], L[7], fv[0], fv[1], fv[2]);
    __m128 v2 = q_dot(L[2], L[5], L[8], fv[0], fv[1], fv[2]);
    __m128 E0 = L[12], E1 = L[13];
    /* the projection bound: lane rectangle point nearest F's centre, F's
     * point nearest that, lane point nearest that; separation along it */
    __m128 p0 = q_clamp(T0, E0), p1 = q_clamp(T1, E1);
    __m128 dd0 = _mm_sub_ps(p0, T0), dd1 = _mm_sub_ps(p1, T1), dd2 = _mm_sub_ps(_mm_setzero_ps(), T2);
    __m128 s = q_clamp(q_dot(dd0, dd1, dd2, u0, u1, u2), fb0), t = q_clamp(q_dot(dd0, dd1, dd2, v0, v1, v2), fb1);
    __m128 q0 = _mm_add_ps(T0, _mm_add_ps(_mm_mul_ps(s, u0), _mm_mul_ps(t, v0)));
    __m128 q1 = _mm_add_ps(T1, _mm_add_ps(_mm_mul_ps(s, u1), _mm_mul_ps(t, v1)));
    __m128 q2 = _mm_add_ps(T2, _mm_add_ps(_mm_mul_ps(s, u2), _mm_mul_ps(t, v2)));
    __m128 n0 = _mm_sub_ps(q0, q_clamp(q0, E0)), n1 = _mm_sub_ps(q1, q_clamp(q1, E1)), n2 = q2;
    __m128 len = _mm_sqrt_ps(q_dot(n0, n1, n2, n0, n1, n2));
    __m128 nu = q_abs(q_dot(n0, n1, n2, u0, u1, u2)), nv = q_abs(q_dot(n0, n1, n2, v0, v1, v2));
    __m128 gap = _mm_sub_ps(q_dot(n0, n1, n2, T0, T1, T2),
                            _mm_add_ps(_mm_add_ps(_mm_mul_ps(fb0, nu), _mm_mul_ps(fb1, nv)),
                                       _mm_add_ps(_mm_mul_ps(E0, q_abs(n0)), _mm_mul_ps(E1, q_abs(n1)))));
    __m128 ok = _mm_cmpgt_ps(len, _mm_set1_ps(1e-30f));
    __m128 rss = _mm_sub_ps(_mm_div_ps(gap, _mm_or_ps(_mm_and_ps(ok, len), _mm_andnot_ps(ok, _mm_set1_ps(1.0f)))),
                            _mm_add_ps(L[14], fb2));
    rss = _mm_or_ps(_mm_and_ps(ok, rss), _mm_andnot_ps(ok, _mm_set1_ps(-INFINITY)));
    __m128 dl = _mm_sqrt_ps(q_dot(d[0], d[1], d[2], d[0], d[1], d[2])), rr = _mm_add_ps(L[15], frad);
    __m128 k = _mm_max_ps(_mm_sub_ps(dl, rr), rss);
    return _mm_sub_ps(k, _mm_mul_ps(_mm_set1_ps(QUAD_MARGIN), _mm_add_ps(dl, rr)));
}
#endif

/* keys of a node's expansion lanes (its quad; n of them are real) against F */
static void quad_bounds(const prox_bvh *L, const bvh_quad *qd, int n, const quad_fixed *F, float key[4])
{
#if defined(__SSE2__)
    (void)L, (void)n;
    const __m128 *lanes = (const __m128 *)qd->v;
    __m128 d[3] = {q_offset(F->c[0], lanes[9]), q_offset(F->c[1], lanes[10]), q_offset(F->c[2], lanes[11])};
    _mm_storeu_ps(key, q_keys(lanes, d, F->fu, F->fv, _mm_set1_ps(F->e0), _mm_set1_ps(F->e1), _mm_set1_ps(F->e2), _mm_set1_ps(F->rad)));
#else
    for (int k = 0; k < n; k++) {
        const uint32_t *id = qd->id;
        float (*rect)[2] = L->rect;
        const bvh_node *N = &L->nodes[id[k]];
        float d[3], T[3], u[3], v[3];
        for (int i = 0; i < 3; i++)
            d[i] = (float)(F->c[i] - (double)N->c[i]);
        for (int j = 0; j < 3; j++) {
            T[j] = N->R[0][j] * d[0] + N->R[1][j] * d[1] + N->R[2][j] * d[2];
            u[j] = N->R[0][j] * F->u[0] + N->R[1][j] * F->u[1] + N->R[2][j] * F->u[2];
            v[j] = N->R[0][j] * F->v[0] + N->R[1][j] * F->v[1] + N->R[2][j] * F->v[2];
        }
        float a0 = rect[id[k]][0], a1 = rect[id[k]][1], b0 = F->e0, b1 = F->e1;
        float p0 = fminf(fmaxf(T[0], -a0), a0), p1 = fminf(fmaxf(T[1], -a1), a1);
        float dd0 = p0 - T[0], dd1 = p1 - T[1], dd2 = -T[2];
        float s = fminf(fmaxf(dd0 * u[0] + dd1 * u[1] + dd2 * u[2], -b0), b0);
        float t = fminf(fmaxf(dd0 * v[0] + dd1 * v[1] + dd2 * v[2], -b1), b1);
        float q0 = T[0] + (s * u[0] + t * v[0]), q1 = T[1] + (s * u[1] + t * v[1]), q2 = T[2] + (s * u[2] + t * v[2]);
        float n0 = q0 - fminf(fmaxf(q0, -a0), a0), n1 = q1 - fminf(fmaxf(q1, -a1), a1), n2 = q2;
        float len = sqrtf(n0 * n0 + n1 * n1 + n2 * n2);
        float rss = -INFINITY;
        if (len > 1e-30f) {
            float nu = fabsf(n0 * u[0] + n1 * u[1] + n2 * u[2]), nv = fabsf(n0 * v[0] + n1 * v[1] + n2 * v[2]);
            float gap = (n0 * T[0] + n1 * T[1] + n2 * T[2]) - ((b0 * nu + b1 * nv) + (a0 * fabsf(n0) + a1 * fabsf(n1)));
            rss = gap / len - (N->e[2] + F->e2);
        }
        float dl = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]), rr = N->radius + F->rad;
        key[k] = fmaxf(dl - rr, rss) - QUAD_MARGIN * (dl + rr);
    }
#endif
}

static void expand_distance(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    const bvh_node *a = &A->nodes[na], *b = &B->nodes[nb];
    uint32_t cha = A->child[na], chb = B->child[nb];
    int la = bvh_is_leaf(cha), lb = bvh_is_leaf(chb);
    if (la && lb) {
        expand_common(c, p, na, nb, PROX_QUERY_DISTANCE);
        return;
    }
    int split_a = lb || (!la && a->radius >= b->radius);
    const prox_bvh *L = split_a ? A : B;
    uint32_t first = split_a ? cha : chb;
    const bvh_quad *qd = &L->quad[(first - 1) >> 1];
    const uint32_t *id = qd->id;
    int n = 4 - (id[3] == id[2]) - (id[2] == id[1]); /* unused lanes repeat the last */
    const dist_scratch *s = p->scratch;
    quad_fixed F;
    quad_fix(split_a ? b : a, split_a ? B->rect[nb] : A->rect[na], split_a ? &p->b_in_a : &p->a_in_b, s->rot[split_a ? 0 : 1], &F);
    float key[4];
    quad_bounds(L, qd, n, &F, key);
    prox_ctx_count(c, (uint32_t)n, 0);
    /* lanes that cannot beat the best end here (into the front, when one
     * is recorded: two siblings pruned together as their parent's pair, one
     * entry instead of two, so that the next query's front stays as coarse
     * as a one-level descent would have left it); the others are pushed,
     * the worst first so that the best pops first from the stack */
    double best = prox_ctx_best(c);
    uint32_t pid[4], up[4];
    float pkey[4];
    int m = 0;
    if (s->fronts) { /* the lanes' parents, for sibling pairs */
        int u = 0;
        for (uint32_t k = first; k <= first + 1; k++)
            if (bvh_is_leaf(L->child[k]))
                up[u++] = UINT32_MAX;
            else
                up[u++] = k, up[u++] = k;
    }
    for (int i = 0; i < n; i++) {
        if (!(key[i] < best)) {
            if (!s->fronts)
                continue;
            uint32_t ra = split_a ? id[i] : na, rb = split_a ? nb : id[i];
            float k = key[i];
            if (i + 1 < n && up[i] != UINT32_MAX && up[i] == up[i + 1] && !(key[i + 1] < best)) {
                k = key[i] < key[i + 1] ? key[i] : key[i + 1]; /* bounds both halves */
                ra = split_a ? up[i] : na, rb = split_a ? nb : up[i];
                i++;
            }
            front_put(p, ra, rb, k);
            continue;
        }
        int j = m++;
        for (; j > 0 && key[i] > pkey[j - 1]; j--)
            pkey[j] = pkey[j - 1], pid[j] = pid[j - 1];
        pkey[j] = key[i], pid[j] = id[i];
    }
    for (int i = 0; i < m; i++) {
        double k = pkey[i] > 0 ? (double)pkey[i] : 0.0;
        if (split_a)
            prox_ctx_push(c, p, pid[i], nb, k);
        else
            prox_ctx_push(c, p, na, pid[i], k);
    }
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
 * sphere at each level, the other one at level `flip`) and offer its exact
 * distance, so that the traversal starts with a finite upper bound (and a
 * query stopped at once by its budget has a finite answer). Costs about
 * two sphere tests per level and one triangle test.
 * root_distance makes the greedy dive (flip -1) and one taking the other
 * child at level `flip` for each of the top DIVE_FLIPS levels. A better
 * first bound prunes more of the descent that follows (the engine's stack
 * runs depth first below the best pair): with 12 extra dives, 15-28% fewer
 * expansions and a 5-25% lower median on random poses of the bench meshes
 * (0, 4, 8, 12, 20 measured; 20 no better than 12); a seed with the exact
 * answer would save ~38% on knot1. */
#define DIVE_FLIPS 12
static void dive_distance(prox_ctx *c, const prox_pairstate *p, int flip)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    uint32_t na = p->a->root, nb = p->b->root;
    for (int level = 0;; level++) {
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
            na = (g0 <= g1) != (level == flip) ? cha : cha + 1;
        } else {
            prox_vec3 ca = prox_xform_point(&p->a_in_b, prox_v3(a->c[0], a->c[1], a->c[2]));
            const bvh_node *b0 = &B->nodes[chb], *b1 = &B->nodes[chb + 1];
            double g0 = prox_v3_dist(ca, prox_v3(b0->c[0], b0->c[1], b0->c[2])) - b0->radius;
            double g1 = prox_v3_dist(ca, prox_v3(b1->c[0], b1->c[1], b1->c[2])) - b1->radius;
            nb = (g0 <= g1) != (level == flip) ? chb : chb + 1;
        }
    }
    uint32_t ta = bvh_leaf_triangle(A->child[na]), tb = bvh_leaf_triangle(B->child[nb]);
    prox_vec3 Q[3], pa, pb;
    leaf_tri_in_a(B, tb, &p->b_in_a, Q);
    int exact; /* the first dive (best still infinite) is always exact */
    double d = prox_triangle_distance_below(A->tri[ta], Q, prox_ctx_best(c), &pa, &pb, NULL, &exact);
    prox_ctx_count(c, 0, 1);
    if (exact)
        prox_ctx_offer_distance(c, p, d, pa, pb, ta, tb);
}

/* Keys of up to four front pairs (A node, B node; B placed by X), the
 * same bound and margin as quad_bounds with each lane's own B node. */
static void front_bounds(const prox_bvh *A, const prox_bvh *B, const prox_front_entry *e, int n, const prox_xform *X,
                         float key[4])
{
    const bvh_node *an = A->nodes, *bn = B->nodes;
#if defined(__SSE2__)
    const float *ra[4], *rb[4];
    uint32_t ia[4], ib[4];
    float d[3][4], M[3][3];
    const double(*R)[3] = X->R.m;
    /* centre offsets in double (x, y as a pair, z alone), rounded once */
    const __m128d c0 = _mm_set_pd(R[1][0], R[0][0]), c1 = _mm_set_pd(R[1][1], R[0][1]), c2 = _mm_set_pd(R[1][2], R[0][2]);
    const __m128d txy = _mm_set_pd(X->t.y, X->t.x);
    const double r20 = R[2][0], r21 = R[2][1], r22 = R[2][2], tz = X->t.z;
    for (int k = 0; k < 4; k++) {
        ia[k] = e[k < n ? k : n - 1].na, ib[k] = e[k < n ? k : n - 1].nb;
        const bvh_node *a = &an[ia[k]], *b = &bn[ib[k]];
        ra[k] = (const float *)a, rb[k] = (const float *)b;
        double bx = b->c[0], by = b->c[1], bz = b->c[2];
        __m128d xy = _mm_add_pd(_mm_add_pd(_mm_mul_pd(c0, _mm_set1_pd(bx)), _mm_mul_pd(c1, _mm_set1_pd(by))),
                                _mm_add_pd(_mm_mul_pd(c2, _mm_set1_pd(bz)), txy));
        xy = _mm_sub_pd(xy, _mm_set_pd((double)a->c[1], (double)a->c[0]));
        __m128 xyf = _mm_cvtpd_ps(xy);
        _mm_store_ss(&d[0][k], xyf);
        _mm_store_ss(&d[1][k], _mm_shuffle_ps(xyf, xyf, 0x55));
        d[2][k] = (float)(r20 * bx + r21 * by + r22 * bz + tz - a->c[2]);
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            M[i][j] = (float)R[i][j];
    __m128 L[16], Bv[16];
    q_load4(ra, L);
    q_load4(rb, Bv);
    q_rect4(A->rect, ia, &L[12], &L[13]);
    q_rect4(B->rect, ib, &Bv[12], &Bv[13]);
    __m128 dv[3] = {_mm_loadu_ps(d[0]), _mm_loadu_ps(d[1]), _mm_loadu_ps(d[2])};
    __m128 fu[3], fv[3];
    for (int i = 0; i < 3; i++) {
        __m128 m0 = _mm_set1_ps(M[i][0]), m1 = _mm_set1_ps(M[i][1]), m2 = _mm_set1_ps(M[i][2]);
        fu[i] = q_dot(m0, m1, m2, Bv[0], Bv[3], Bv[6]);
        fv[i] = q_dot(m0, m1, m2, Bv[1], Bv[4], Bv[7]);
    }
    _mm_storeu_ps(key, q_keys(L, dv, fu, fv, Bv[12], Bv[13], Bv[14], Bv[15]));
#else
    for (int k = 0; k < n; k++) {
        const bvh_node *a = &an[e[k].na], *b = &bn[e[k].nb];
        dist_placed pb;
        dist_place(b, X, &pb);
        key[k] = (float)dist_gap(a, b, &pb, X, DBL_MAX);
        key[k] -= QUAD_MARGIN * fabsf(key[k]); /* float rounding: stay below */
    }
#endif
}

/* A leaf pair's separation along the direction its closest points had
 * when it was recorded (A's frame): projecting both triangles on a unit
 * direction never lengthens a segment between them, so this is a lower
 * bound at any pose, and after a small move a tight one (an exact triangle
 * test costs ~20 times more). */
static double leaf_separation(const prox_bvh *A, const prox_bvh *B, const prox_front_entry *e, const prox_xform *X)
{
    uint32_t ca = A->child[e->na], cb = B->child[e->nb];
    double n[3] = {e->dir[0], e->dir[1], e->dir[2]}, len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (!bvh_is_leaf(ca) || !bvh_is_leaf(cb) || !(len > 0))
        return -INFINITY;
    prox_vec3 u = prox_v3(n[0] / len, n[1] / len, n[2] / len), Q[3];
    const prox_vec3 *P = A->tri[bvh_leaf_triangle(ca)];
    leaf_tri_in_a(B, bvh_leaf_triangle(cb), X, Q);
    double pmax = -INFINITY, qmin = INFINITY, mag = 0;
    for (int k = 0; k < 3; k++) {
        double s = prox_v3_dot(u, P[k]), t = prox_v3_dot(u, Q[k]);
        pmax = s > pmax ? s : pmax;
        qmin = t < qmin ? t : qmin;
        mag += fabs(s) + fabs(t);
    }
    return (qmin - pmax) * (1 - 1e-9) - 1e-12 * mag; /* rounding of u's length and the dots */
}

/* Distance coherence: with a front in the cache, start from the last
 * query's cut (pairs pruned, leaf pairs) instead of the root pair. Each
 * entry carries a lower bound on its pair's distance (the node bound, or a
 * leaf pair's exact distance) that holds now less the drift (see
 * dist_scratch). Entries that still cannot beat the seeded best (the cached
 * closest triangle pair) stay in the front untouched; a leaf pair is
 * bounded next by leaf_separation, the others get their node bound at the
 * new pose (four per float pass): kept with the new bound if that cannot
 * beat the best, pushed otherwise. The front is rewritten where it lies
 * (kept entries compacted to its start, prox_front_keep), so an entry left
 * alone costs a compare and a copy. This skips the expansions above the
 * front that a query from the roots repeats, and on a slow path most of the
 * front's bound and leaf tests too. */
static int start_from_front(prox_ctx *c, const prox_pairstate *p, prox_front_entry *f, uint32_t n, double moved)
{
    const prox_bvh *A = p->a->impl, *B = p->b->impl;
    /* the engine's own pruning cut: what is pushed below it is never pruned
     * at the push (which would record into the front mid-rewrite) */
    double cut = prox_ctx_best(c) * (1.0 - p->query->rel_err);
    if (!(cut < INFINITY))
        return -1; /* nothing seeded: the front would prune nothing */
    /* a front only deepens (pairs that drift apart are not raised again):
     * once it has grown by half since the last start from the roots, start
     * over. Median query time on the bench's 500-step paths against a limit
     * of 1/8 (which restarted 28-47% of the queries): armadillo 0.82x,
     * bunny00 0.80x, knot1 1.02x; doubling was worse (armadillo 1.3x, knot1
     * 1.15x: the longer front costs more than the restarts it saves) */
    if (n > p->cache->front_base + p->cache->front_base / 2 + 64)
        return -1;
    double drift = p->cache->front_drift + moved;
    if (!(drift < INFINITY))
        return -1;
    /* keys are floats: once the drift is large against B's size, this pass
     * rewrites every key relative to drift 0 (float precision of the sum) */
    double shift = drift > 0.5 * (double)B->nodes[0].radius ? drift : 0.0, rec = drift - shift;
    double thr = cut + drift;
    float thr_f = (float)thr; /* a float key at or above thr_f is at or above thr */
    if ((double)thr_f < thr)
        thr_f = nextafterf(thr_f, INFINITY);
    p->cache->front_drift = rec;
    prox_front_entry batch[4];
    uint32_t w = 0, i = 0;
    int m = 0;
    for (;;) {
        /* a run of entries left alone: a compare each, and a copy once the
         * front has begun to close up */
        if (shift != 0)
            for (; i < n && f[i].key >= thr_f; i++) {
                f[w] = f[i];
                f[w++].key = key_down((double)f[i].key - shift);
            }
        else if (w == i) {
            while (i < n && f[i].key >= thr_f)
                i++;
            w = i;
        } else
            for (; i < n && f[i].key >= thr_f; i++)
                f[w++] = f[i];
        if (i < n) {
            prox_front_entry e = f[i++];
            if (e.na >= A->node_count || e.nb >= B->node_count)
                return -1; /* not this pair's front (what was pushed is still a valid pair) */
            if (e.dir[0] != 0 || e.dir[1] != 0 || e.dir[2] != 0) {
                double sep = leaf_separation(A, B, &e, &p->b_in_a);
                if (sep >= cut) {
                    e.key = key_down(sep + rec);
                    f[w++] = e;
                    continue;
                }
            }
            batch[m++] = e;
            if (m < 4)
                continue;
        }
        if (m == 0)
            break;
        float key[4];
        front_bounds(A, B, batch, m, &p->b_in_a, key);
        prox_ctx_count(c, (uint32_t)m, 0);
        for (int j = 0; j < m; j++) {
            double g = key[j];
            if (g >= cut) {
                batch[j].key = key_down(g + rec);
                f[w++] = batch[j];
            } else
                prox_ctx_push(c, p, batch[j].na, batch[j].nb, g > 0 ? g : 0.0);
        }
        m = 0;
        if (i == n)
            break;
    }
    prox_front_keep(p, w);
    return 0;
}

/* how far any point of B's tree can have moved between two poses of B in
 * A's frame (B's root sphere) */
static double moved_since(const prox_xform *X0, const prox_xform *X1, const prox_bvh *B)
{
    const bvh_node *r = &B->nodes[0];
    return prox_xform_motion_bound(X0, X1, prox_v3(r->c[0], r->c[1], r->c[2]), r->radius);
}

static void root_distance(prox_ctx *c, const prox_pairstate *p)
{
    uint32_t n_front = 0;
    prox_front_entry *front = NULL;
    dist_scratch *s = p->scratch;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++) {
            s->rot[0][k][i] = (float)p->b_in_a.R.m[i][k];
            s->rot[1][k][i] = (float)p->a_in_b.R.m[i][k];
        }
    if (p->query->kind == PROX_QUERY_DISTANCE && prox_front_on(p)) {
        front = prox_front_begin(p, &n_front);
        s->fronts = 1;
    }
    if (contained_overlap(c, p, 1) && (p->query->stop_on_overlap || p->query->kind != PROX_QUERY_DISTANCE)) {
        prox_front_invalidate(p);
        return;
    }
    if (p->query->kind == PROX_QUERY_DISTANCE && prox_ctx_best(c) <= 0) {
        prox_front_invalidate(p);
        return; /* distance 0 is already certain */
    }
    double moved = INFINITY;
    if (front)
        moved = moved_since(&p->cache->front_pose, &p->b_in_a, p->b->impl);
    if (p->query->kind == PROX_QUERY_DISTANCE && prox_front_on(p))
        p->cache->front_pose = p->b_in_a; /* the pose this query's front is recorded at */
    if (front && start_from_front(c, p, front, n_front, moved) == 0)
        return;
    if (s->fronts) {
        p->cache->front_base = 0; /* measured at finish: a front grown from the roots */
        p->cache->front_drift = 0;
    }
    /* cheap; better than a stale cached pair after a jump */
    for (int f = -1; f < DIVE_FLIPS && !prox_ctx_done(c); f++) {
        if (f >= 0 && p->query->deadline_ns && prox_now_ns() >= p->query->deadline_ns)
            break; /* the first dive gives a budgeted query its finite answer; the rest only speed it up */
        dive_distance(c, p, f);
    }
    if (prox_ctx_done(c))
        return;
    prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

/* distance only (tolerance registers neither) */
static void pruned_distance(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double key)
{
    (void)c;
    front_put(p, na, nb, key);
}

static void finish_distance(prox_ctx *c, const prox_pairstate *p)
{
    if (!prox_front_on(p))
        return;
    const dist_scratch *s = p->scratch;
    if (!s->fronts) {
        /* the root never ran: the seed decided the query (its cached pair
         * overlaps, with stop_on_overlap) and nothing was recorded. Finished
         * as recorded, that "complete" query made an empty front valid, and
         * the next query, started from it, pushed nothing: the service's
         * tool, back beside an open wall after overlapping it, was certified
         * farther than the margin (no force) at 2 mm. From the roots next
         * time. */
        p->cache->front_valid = 0;
        return;
    }
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
    /* the engine keeps the handler's order in the cache (pair_priv's la,
     * lb), swapped pair or not: no swap here (an (IST, MESH) pair given as
     * (MESH, IST) seeded from the wrong triangles with one) */
    uint32_t ta = p->cache->leaf_a, tb = p->cache->leaf_b;
    if (ta >= A->tri_count || tb >= B->tri_count)
        return;
    prox_vec3 Q[3], pa, pb;
    leaf_tri_in_a(B, tb, &p->b_in_a, Q);
    double d = prox_triangle_distance(A->tri[ta], Q, &pa, &pb);
    prox_ctx_count(c, 0, 1);
    prox_ctx_offer_distance(c, p, d, pa, pb, ta, tb);
}

/* The (MESH, MESH) handlers, by kind (none for penetration volume: a mesh
 * BVH has no volume model). Other modules run them on a mesh BVH of their
 * own (ist_mesh.c: an inner sphere tree's surface). */
static const prox_handler mesh_handlers[PROX_QUERY_KIND_COUNT] = {
    [PROX_QUERY_DISTANCE] = {.name = "mesh-mesh distance (OBB+RSS)",
                             .expand = expand_distance,
                             .root = root_distance,
                             .seed = seed_distance,
                             .pruned = pruned_distance,
                             .finish = finish_distance},
    [PROX_QUERY_TOLERANCE] = {.name = "mesh-mesh tolerance (OBB+RSS)",
                              .expand = expand_tolerance,
                              .root = root_distance,
                              .seed = seed_distance},
    [PROX_QUERY_COLLIDE] = {.name = "mesh-mesh collide (OBB)", .expand = expand_collide, .root = root_collide},
    [PROX_QUERY_CONTACTS] = {.name = "mesh-mesh contacts (OBB)", .expand = expand_contacts},
};

const prox_handler *bvh_mesh_handler(uint32_t kind)
{
    return kind < PROX_QUERY_KIND_COUNT && mesh_handlers[kind].expand ? &mesh_handlers[kind] : NULL;
}

void prox_bvh_register(prox_bank *bank)
{
    for (uint32_t k = 0; k < PROX_QUERY_KIND_COUNT; k++)
        if (mesh_handlers[k].expand)
            prox_bank_set(bank, PROX_TREE_MESH, PROX_TREE_MESH, k, &mesh_handlers[k]);
}
