/* ist_far.c - closest triangles of points far from a mesh, in doubles
 * (IST_FAR), where the float ranking of ist_tritree_closest would keep
 * every triangle. Apart from ist_tritree.c so the float search's code
 * stays as it was (a second caller of the point-triangle distance there
 * took it out of line: +0.7% instructions in IST distance, knot1's random
 * bench poses). RT safe. */
#include "ist_internal.h"

/* squared distance from p to the binary tree's float box b, in doubles */
static inline double box_d2(const ist_box *b, prox_vec3 p)
{
    const double x[3] = {p.x, p.y, p.z};
    double s = 0;
    for (int k = 0; k < 3; k++) {
        const double lo = (double)b->lo[k] - x[k], hi = x[k] - (double)b->hi[k];
        const double e = lo > hi ? lo : hi;
        s += e > 0 ? e * e : 0.0;
    }
    return s;
}

/* The binary tree's axis-aligned boxes, not the wide tree's oriented ones:
 * their float corners are exact in doubles, where the oriented boxes' float
 * axes (off unit and square by some 1e-7) scale every distance, an error
 * relative to it, like the floats', that far away exceeds the mesh. A box
 * is skipped where it lies farther than the best exact distance so far by
 * more than `eps`, so no triangle that ties the best is; the nearer child
 * is visited first, the other deferred (a stack entry a level: depth at
 * most IST_TRITREE_MAX_DEPTH, checked at load). */
double ist_tritree_closest_far(const prox_ist *t, prox_vec3 p, double bound, uint32_t *tri, prox_vec3 *closest, uint32_t *tests,
                               uint64_t deadline_ns, int *cut)
{
    const ist_tritree *g = &t->tritree;
    *tri = UINT32_MAX;
    if (!g->nodes || !g->node_count || !ist_in_float_range(p))
        return INFINITY;
    /* the double rounding of a box's distance, a few 1e-16 of the
     * coordinates' size, twenty times over (1e-13 kept every triangle of
     * fandisk's flat faces facing a point 1e6 away within reach: their
     * distances differ by 1e-7; leaf tests 45,000 a query, 22,000 at 1e-14;
     * 6,150 at 1e4. Further away they tie in doubles: 74,000 at 1e8) */
    const double eps = 1e-14 * ist_coord_scale(g, p, 0.0);
    uint32_t stack[IST_TRITREE_MAX_DEPTH + 8];
    double sd[IST_TRITREE_MAX_DEPTH + 8];
    int top = 0;
    double best = bound;
    uint32_t bi = UINT32_MAX, n_tests = 0, visits = 0, node = 0;
    prox_vec3 bq = p;
    if (sqrt(box_d2(&g->nodes[0], p)) - eps > best)
        return INFINITY;
    for (;;) {
        if (deadline_ns && (++visits & 31) == 0 && bi != UINT32_MAX && prox_now_ns() >= deadline_ns) {
            if (cut)
                *cut = 1;
            break;
        }
        const ist_box *b = &g->nodes[node];
        if (b->a & IST_BOX_LEAF) {
            const uint32_t first = b->a & ~IST_BOX_LEAF;
            for (uint32_t k = first; k < first + b->b; k++) {
                const uint32_t ti = g->order[k];
                prox_vec3 q;
                double d = ist_point_tri_dist(t, ti, p, &q);
                n_tests++;
                if (d < best || (d == best && bi != UINT32_MAX && ti < bi))
                    best = d, bi = ti, bq = q;
            }
        } else {
            const double da = sqrt(box_d2(&g->nodes[b->a], p)) - eps, db = sqrt(box_d2(&g->nodes[b->b], p)) - eps;
            const int a_near = !(da > best), b_near = !(db > best);
            if (a_near && b_near) {
                const int a_first = da <= db;
                if (top < (int)(sizeof stack / sizeof stack[0]))
                    stack[top] = a_first ? b->b : b->a, sd[top] = a_first ? db : da, top++;
                node = a_first ? b->a : b->b;
                continue;
            }
            if (a_near || b_near) {
                node = a_near ? b->a : b->b;
                continue;
            }
        }
        while (top > 0 && sd[top - 1] > best)
            top--;
        if (top == 0)
            break;
        node = stack[--top];
    }
    if (tests)
        *tests += n_tests;
    if (bi == UINT32_MAX) /* (found: then best < bound) */
        return INFINITY;
    *tri = bi;
    *closest = bq;
    return best;
}
