/* engine.c - the generic descent over a forest of object pairs.
 *
 * One duplex priority queue holds node pairs of every object pair (Thoren's
 * forest search): a single bound prunes the whole forest. It is taken best
 * first or depth first (prox_query.order; dpq.h). All geometry
 * knowledge lives in the bank's handlers (Himmelstein et al.); the engine
 * dispatches once per node-pair expansion. No allocation after create.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "dpq.h"
#include "handlers.h"
#include "prox_engine.h"

#define PROX_DEFAULT_CHECK_EVERY 4u

typedef struct pair_priv {
    const prox_handler *h;
    double best;          /* this pair's best distance */
    uint32_t la, lb;      /* its best leaf pair (handler order) */
    int have_best;
    const prox_tree *caller_b; /* torque reference */
    prox_xform caller_pose_b;
} pair_priv;

struct prox_ctx {
    prox_engine *e;
    const prox_query *q;
    uint32_t kind;
    double best; /* best distance over the forest */
    uint32_t best_pair, best_la, best_lb;
    prox_vec3 best_pa, best_pb; /* world, caller order */
    int have_best;
    int done;
    int deadline_seen; /* a handler found the deadline passed (prox_ctx_deadline_passed) */
    int overlap;
    double dropped_min_key;
    double dropped_est, dropped_ub;
    double vol_exact;
    /* PENVOL shares of the queued items, kept as running sums so that a
     * deadline costs O(1), not a pass over the queue; infinite upper bounds
     * are counted apart (inf - inf would poison the sum) */
    double queued_est, queued_ub, pushed_ub;
    uint64_t queued_ub_inf, sum_ops;
    prox_vec3 force, torque;
    double bound_offset;
    double unsettled_min; /* DISTANCE: smallest key of a leaf pair a handler settled heuristically */
    int traversal_complete;
    prox_result *r;
};

struct prox_engine {
    const prox_bank *bank;
    prox_dpq q;
    uint32_t max_pairs;
    prox_pairstate *ps;
    pair_priv *pp;
    unsigned char *scratch; /* max_pairs * PROX_PAIR_SCRATCH */
    uint32_t *root_order;   /* max_pairs: the order the roots are visited in */
    double *root_key;       /* max_pairs: their handlers' root bounds */
    prox_ctx ctx;
};

prox_query prox_query_default(prox_query_kind kind)
{
    prox_query q;
    memset(&q, 0, sizeof q);
    q.kind = kind;
    q.voxel_classes = PROX_CLASS_ALL;
    q.use_cache = 1;
    q.precise = 1;
    return q;
}

prox_engine_def prox_engine_def_default(void)
{
    prox_engine_def d = {65536, 256};
    return d;
}

prox_engine *prox_engine_create(const prox_engine_def *def, const prox_bank *bank)
{
    prox_engine_def d = def ? *def : prox_engine_def_default();
    if (!d.queue_capacity)
        d.queue_capacity = 65536;
    if (!d.max_pairs)
        d.max_pairs = 256;
    prox_engine *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->bank = bank;
    e->max_pairs = d.max_pairs;
    e->ps = calloc(d.max_pairs, sizeof *e->ps);
    e->scratch = aligned_alloc(64, (size_t)d.max_pairs * PROX_PAIR_SCRATCH);
    e->pp = calloc(d.max_pairs, sizeof *e->pp);
    e->root_order = calloc(d.max_pairs, sizeof *e->root_order);
    e->root_key = calloc(d.max_pairs, sizeof *e->root_key);
    if (!e->ps || !e->pp || !e->scratch || !e->root_order || !e->root_key || prox_dpq_init(&e->q, d.queue_capacity) != 0) {
        prox_engine_destroy(e);
        return NULL;
    }
    memset(e->scratch, 0, (size_t)d.max_pairs * PROX_PAIR_SCRATCH); /* touch the pages now */
    return e;
}

void prox_engine_destroy(prox_engine *e)
{
    if (!e)
        return;
    free(e->root_order);
    free(e->root_key);
    prox_dpq_free(&e->q);
    free(e->ps);
    free(e->scratch);
    free(e->pp);
    free(e);
}

/* ---- the handler interface ---- */

static int ctx_push_item(prox_ctx *c, const prox_item *it)
{
    if (prox_dpq_push(&c->e->q, it) == 0) {
        c->r->queue_pushes++;
        if (c->kind == PROX_QUERY_PENVOL) { /* the other kinds' items carry no volume */
            c->queued_est += it->est;
            if (isinf(it->ub)) {
                c->queued_ub_inf++;
            } else {
                c->queued_ub += it->ub;
                c->pushed_ub += fabs((double)it->ub);
            }
            c->sum_ops++;
        }
        return 0;
    }
    c->r->dropped++;
    c->r->flags |= PROX_RESULT_OUT_OF_MEMORY;
    if (it->key < c->dropped_min_key)
        c->dropped_min_key = it->key;
    c->dropped_est += it->est;
    c->dropped_ub += it->ub;
    return -1;
}

static inline void report_pruned(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double key)
{
    const prox_handler *h = c->e->pp[p->index].h;
    if (h->pruned)
        h->pruned(c, p, na, nb, key);
}

int prox_ctx_push(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double key)
{
    /* prune at the door: nothing below can beat what we have */
    if ((c->kind == PROX_QUERY_DISTANCE && key >= c->best * (1.0 - c->q->rel_err)) ||
        (c->kind == PROX_QUERY_TOLERANCE && key >= c->q->tolerance)) {
        report_pruned(c, p, na, nb, key);
        return 0;
    }
    if ((c->kind == PROX_QUERY_COLLIDE || c->kind == PROX_QUERY_CONTACTS) && key > 0.0)
        return 0;
    prox_item it = {key, p->index, na, nb, 0.0f, 0.0f};
    return ctx_push_item(c, &it);
}

int prox_ctx_push_vol(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double key, double est, double ub)
{
    prox_item it = {key, p->index, na, nb, (float)est, (float)ub};
    /* float rounding must not break the certified upper bound */
    if ((double)it.ub < ub)
        it.ub = nextafterf(it.ub, INFINITY);
    return ctx_push_item(c, &it);
}

double prox_ctx_best(const prox_ctx *c) { return c->best; }

void prox_ctx_deadline_passed(prox_ctx *c) { c->deadline_seen = 1; }

void prox_ctx_note_unsettled(prox_ctx *c, double key)
{
    if (key < c->unsettled_min)
        c->unsettled_min = key;
}

void prox_ctx_set_bound_offset(prox_ctx *c, const prox_pairstate *p, double offset)
{
    (void)p;
    if (offset > c->bound_offset)
        c->bound_offset = offset;
}

int prox_ctx_pair_best(const prox_ctx *c, const prox_pairstate *p, double *value, uint32_t *la, uint32_t *lb)
{
    const pair_priv *pp = &c->e->pp[p->index];
    if (!pp->have_best)
        return -1;
    *value = pp->best;
    *la = pp->la;
    *lb = pp->lb;
    return 0;
}

int prox_ctx_complete(const prox_ctx *c) { return c->traversal_complete; }

int prox_ctx_done(const prox_ctx *c) { return c->done; }

void prox_ctx_count(prox_ctx *c, uint32_t node_tests, uint32_t leaf_tests)
{
    c->r->node_tests += node_tests;
    c->r->leaf_tests += leaf_tests;
}

void prox_ctx_count_expansions(prox_ctx *c, uint32_t expansions) { c->r->expansions += expansions; }

void prox_ctx_offer_distance(prox_ctx *c, const prox_pairstate *p, double d, prox_vec3 pa, prox_vec3 pb, uint32_t la,
                             uint32_t lb)
{
    pair_priv *pp = &c->e->pp[p->index];
    /* distances do not go below 0: a handler's overlap depth (a sphere
     * inside a voxel) is an overlap, distance 0. Negative values made the
     * first overlap found the answer with lower = upper, and two runs of
     * the same query disagreed ("certified" -0.0074 and -0.0855) */
    if (d < 0)
        d = 0;
    if (!pp->have_best || d < pp->best) {
        pp->best = d;
        pp->la = la;
        pp->lb = lb;
        pp->have_best = 1;
    }
    if (d == 0.0) {
        c->overlap = 1;
        if (c->q->stop_on_overlap || c->kind == PROX_QUERY_COLLIDE)
            c->done = 1;
    }
    if (c->kind == PROX_QUERY_TOLERANCE && d < c->q->tolerance)
        c->done = 1;
    /* (the range, if any, starts the best: nothing at or beyond it counts;
     * a NaN is kept if it comes first, for the caller to see) */
    if (d < c->best || (!c->have_best && isnan(d))) {
        c->best = d;
        c->have_best = 1;
        prox_vec3 wa = prox_xform_point(&p->pose_a, pa), wb = prox_xform_point(&p->pose_a, pb);
        c->best_pair = p->index;
        if (p->swapped) {
            c->best_pa = wb, c->best_pb = wa, c->best_la = lb, c->best_lb = la;
        } else {
            c->best_pa = wa, c->best_pb = wb, c->best_la = la, c->best_lb = lb;
        }
    }
}

void prox_ctx_report_overlap(prox_ctx *c, const prox_pairstate *p, uint32_t la, uint32_t lb, prox_vec3 point)
{
    prox_vec3 w = prox_xform_point(&p->pose_a, point);
    pair_priv *pp = &c->e->pp[p->index];
    pp->best = 0;
    pp->la = la;
    pp->lb = lb;
    pp->have_best = 1;
    if (!c->overlap) {
        c->best_pair = p->index;
        c->best_la = p->swapped ? lb : la;
        c->best_lb = p->swapped ? la : lb;
        c->best_pa = c->best_pb = w;
    }
    c->overlap = 1;
    c->best = 0;
    c->have_best = 1;
    if (c->kind == PROX_QUERY_CONTACTS || c->q->contacts) {
        prox_result *r = c->r;
        if (c->q->contacts && r->contact_count < c->q->max_contacts) {
            prox_contact *ct = &c->q->contacts[r->contact_count++];
            ct->pair = p->index;
            ct->leaf_a = p->swapped ? lb : la;
            ct->leaf_b = p->swapped ? la : lb;
            ct->point = w;
        } else {
            r->flags |= PROX_RESULT_CONTACTS_FULL;
            if (c->kind == PROX_QUERY_CONTACTS)
                c->done = 1;
        }
    }
    if (c->kind != PROX_QUERY_CONTACTS && c->kind != PROX_QUERY_PENVOL)
        c->done = 1;
}

void prox_ctx_add_volume(prox_ctx *c, const prox_pairstate *p, double volume, prox_vec3 dir_on_b, prox_vec3 point,
                         uint32_t la, uint32_t lb)
{
    prox_vec3 f = prox_v3_scale(dir_on_b, volume);
    prox_ctx_add_volume_sum(c, p, volume, f, prox_v3_cross(point, f), volume, la, lb);
}

void prox_ctx_add_volume_sum(prox_ctx *c, const prox_pairstate *p, double volume, prox_vec3 F, prox_vec3 M,
                             double deepest, uint32_t la, uint32_t lb)
{
    if (!(volume > 0.0))
        return;
    c->vol_exact += volume;
    c->overlap = 1;
    pair_priv *pp = &c->e->pp[p->index];
    if (!pp->have_best || -deepest < pp->best) {
        pp->best = -deepest;
        pp->la = la;
        pp->lb = lb;
        pp->have_best = 1;
    }
    /* world: f = R F; torque about com = sum (R p_i + t - com) x (R f_i)
     * = R M + (t - com) x f */
    prox_vec3 f = prox_xform_vector(&p->pose_a, F), m = prox_xform_vector(&p->pose_a, M);
    prox_vec3 com = prox_xform_point(&pp->caller_pose_b, pp->caller_b->com);
    prox_vec3 tq = prox_v3_add(m, prox_v3_cross(prox_v3_sub(p->pose_a.t, com), f));
    if (p->swapped) { /* the caller's B is the handler's A */
        f = prox_v3_scale(f, -1.0);
        tq = prox_v3_scale(tq, -1.0);
    }
    c->force = prox_v3_add(c->force, f);
    c->torque = prox_v3_add(c->torque, tq);
}

/* ---- the query ---- */

/* A pose the queries cannot take (prox_xform_check): not finite, a
 * translation beyond PROX_MAX_TRANSLATION (squared distances would
 * overflow), or a matrix that is no rotation: the handlers invert poses by
 * transposing, and R = 3 I or 0 gave answers that contradicted each other
 * (collide none, distance 0.79) */
static int bad_xform(const prox_xform *x) { return prox_xform_check(x) != PROX_XFORM_OK; }

int prox_query_run(prox_engine *e, const prox_query *q, const prox_object_pair *pairs, uint32_t pair_count,
                   prox_result *out)
{
    uint64_t t0 = prox_now_ns();
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    out->lower = 0;
    out->upper = INFINITY;
    /* rel_err in [0, 1) and a finite tolerance >= 0: a NaN rel_err made NaN
     * bounds, 1 or more pruned every pair (an "exact" answer of inf), a NaN
     * tolerance pruned nothing; max_distance >= 0 (inf: none) */
    if (!e || !q || (!pairs && pair_count) || pair_count > (e ? e->max_pairs : 0) || q->kind >= PROX_QUERY_KIND_COUNT ||
        !(q->rel_err >= 0 && q->rel_err < 1) || !(q->tolerance >= 0 && q->tolerance < INFINITY) || !(q->max_distance >= 0) ||
        q->order > PROX_ORDER_DEPTH_FIRST) {
        out->flags |= PROX_RESULT_BAD_INPUT;
        return -1;
    }
    for (uint32_t i = 0; i < pair_count; i++)
        if (!pairs[i].a || !pairs[i].b || bad_xform(&pairs[i].pose_a) || bad_xform(&pairs[i].pose_b)) {
            out->flags |= PROX_RESULT_BAD_INPUT;
            return -1;
        }

    prox_ctx *c = &e->ctx;
    memset(c, 0, sizeof *c);
    c->e = e;
    c->q = q;
    c->kind = q->kind;
    c->r = out;
    /* the range: pruned as a best distance found at M would be, but no
     * value until an offer comes below it */
    c->best = q->kind == PROX_QUERY_DISTANCE && q->max_distance > 0 ? q->max_distance : INFINITY;
    c->dropped_min_key = INFINITY;
    c->unsettled_min = INFINITY;
    prox_dpq_clear(&e->q);
    const int depth_first = q->order == PROX_ORDER_DEPTH_FIRST ||
                            (q->order == PROX_ORDER_AUTO && !(q->kind == PROX_QUERY_PENVOL && q->deadline_ns));
    prox_dpq_set_depth_first(&e->q, depth_first);

    /* set up pairs: pick handlers, swap where only (B, A) is registered */
    for (uint32_t i = 0; i < pair_count; i++) {
        prox_pairstate *ps = &e->ps[i];
        pair_priv *pp = &e->pp[i];
        const prox_object_pair *op = &pairs[i];
        memset(pp, 0, sizeof *pp);
        pp->caller_b = op->b;
        pp->caller_pose_b = op->pose_b;
        int swapped;
        const prox_handler *h = prox_bank_find(e->bank, op->a->type, op->b->type, q->kind, &swapped);
        pp->h = h;
        if (!h)
            out->flags |= PROX_RESULT_NO_HANDLER;
        ps->a = swapped ? op->b : op->a;
        ps->b = swapped ? op->a : op->b;
        ps->pose_a = swapped ? op->pose_b : op->pose_a;
        ps->pose_b = swapped ? op->pose_a : op->pose_b;
        ps->b_in_a = prox_xform_relative(&ps->pose_a, &ps->pose_b);
        ps->a_in_b = prox_xform_inverse(&ps->b_in_a);
        ps->index = i;
        ps->swapped = (uint32_t)swapped;
        ps->cache = op->cache;
        ps->query = q;
        ps->scratch = e->scratch + (size_t)i * PROX_PAIR_SCRATCH;
        memset(ps->scratch, 0, PROX_PAIR_SCRATCH);
    }
    /* coherence: seed with cached leaf pairs (tight upper bounds first) */
    if (q->use_cache)
        for (uint32_t i = 0; i < pair_count; i++) {
            const prox_handler *h = e->pp[i].h;
            if (h && h->seed && e->ps[i].cache && e->ps[i].cache->valid)
                h->seed(c, &e->ps[i]);
        }
    /* roots, in pair order; with a deadline, nearest first where handlers
     * bound their pairs (root_bound), so that the pairs most likely to
     * hold the answer spend the budget first */
    uint32_t *ord = e->root_order;
    for (uint32_t i = 0; i < pair_count; i++) {
        const prox_handler *h = e->pp[i].h;
        double k = q->deadline_ns && h && h->root_bound ? h->root_bound(&e->ps[i]) : -INFINITY;
        uint32_t m = i;
        while (m > 0 && e->root_key[m - 1] > k) /* stable: equal bounds keep pair order */
            e->root_key[m] = e->root_key[m - 1], ord[m] = ord[m - 1], m--;
        e->root_key[m] = k, ord[m] = i;
    }
    /* depth first, what the roots pushed is taken in reverse: turned
     * around, the nearest pair's comes off first */
    const uint32_t roots_from = e->q.stack_n;
    for (uint32_t o = 0; o < pair_count && !c->done; o++) {
        const uint32_t i = ord[o];
        const prox_handler *h = e->pp[i].h;
        if (!h)
            continue;
        if (h->root)
            h->root(c, &e->ps[i]);
        else if (q->kind == PROX_QUERY_PENVOL)
            prox_ctx_push_vol(c, &e->ps[i], e->ps[i].a->root, e->ps[i].b->root, 0.0, 0.0, INFINITY);
        else
            prox_ctx_push(c, &e->ps[i], e->ps[i].a->root, e->ps[i].b->root, 0.0);
    }
    if (q->deadline_ns)
        prox_dpq_stack_reverse(&e->q, roots_from);

    uint32_t check_every = q->check_every ? q->check_every : PROX_DEFAULT_CHECK_EVERY;
    /* the first pass reads the clock: a query started past its deadline
     * (the second stage of a combined query) does no expansion at all */
    uint32_t since_check = check_every - 1;
    int deadline_hit = 0;
    prox_item it;
    const double rel = 1.0 - q->rel_err;
    while (!c->done && !(deadline_hit = c->deadline_seen)) {
        if (q->deadline_ns && ++since_check >= check_every) {
            since_check = 0;
            if (prox_now_ns() >= q->deadline_ns) {
                deadline_hit = 1;
                break;
            }
        }
        if (prox_dpq_pop(&e->q, &it) != 0)
            break;
        out->queue_pops++;
        if (c->kind == PROX_QUERY_PENVOL) {
            c->queued_est -= it.est;
            if (isinf(it.ub))
                c->queued_ub_inf--;
            else
                c->queued_ub -= it.ub;
            c->sum_ops++;
        }
        const prox_pairstate *ps = &e->ps[it.pair];
        /* prune: a pair that cannot beat the best is dropped for good */
        if ((c->kind == PROX_QUERY_DISTANCE && it.key >= c->best * rel) ||
            (c->kind == PROX_QUERY_TOLERANCE && it.key >= q->tolerance)) {
            report_pruned(c, ps, it.na, it.nb, it.key);
            continue;
        }
        out->expansions++;
        e->pp[it.pair].h->expand(c, ps, it.na, it.nb);
    }

    int exhausted = !deadline_hit && prox_dpq_size(&e->q) == 0;
    c->traversal_complete = exhausted && !(out->flags & PROX_RESULT_OUT_OF_MEMORY);
    /* finish hooks (refinement, fronts) may still offer values */
    for (uint32_t i = 0; i < pair_count; i++)
        if (e->pp[i].h && e->pp[i].h->finish)
            e->pp[i].h->finish(c, &e->ps[i]);
    /* results and certified bounds */
    double left_min = prox_dpq_min_key(&e->q);
    if (c->dropped_min_key < left_min)
        left_min = c->dropped_min_key;
    switch (c->kind) {
    case PROX_QUERY_DISTANCE:
        /* nothing offered (or nothing below the range): +inf */
        out->value = c->have_best ? c->best : INFINITY;
        out->upper = out->value;
        if (c->done) { /* stop_on_overlap: distance 0 (offers never go below 0) */
            out->lower = 0.0;
            out->complete = 1;
        } else {
            double lo = c->best * rel;
            if (!exhausted && left_min < lo)
                lo = left_min;
            if (c->dropped_min_key < lo)
                lo = c->dropped_min_key;
            if (c->unsettled_min < lo)
                lo = c->unsettled_min;
            lo -= c->bound_offset;
            out->lower = lo < 0 ? 0 : lo;
            if (out->lower > out->upper)
                out->lower = out->upper;
            out->complete = c->traversal_complete ? 1 : (out->lower >= out->upper);
        }
        break;
    case PROX_QUERY_COLLIDE:
    case PROX_QUERY_TOLERANCE:
        if (c->done) {
            out->value = out->lower = out->upper = 1;
            out->complete = 1;
        } else {
            int certain = !deadline_hit && !(out->flags & PROX_RESULT_OUT_OF_MEMORY);
            out->value = 0;
            out->lower = 0;
            out->upper = certain ? 0 : 1;
            out->complete = certain;
        }
        if (c->kind == PROX_QUERY_TOLERANCE)
            out->value = c->done ? 1 : 0;
        break;
    case PROX_QUERY_CONTACTS: {
        int certain = !deadline_hit && !(out->flags & (PROX_RESULT_OUT_OF_MEMORY | PROX_RESULT_CONTACTS_FULL));
        out->value = out->contact_count;
        out->lower = out->contact_count;
        out->upper = certain ? out->contact_count : INFINITY;
        out->complete = certain;
        break;
    }
    case PROX_QUERY_PENVOL: {
        /* the running sums' rounding error is at most one ulp of the
         * pushed total per operation: widen the upper bound by that much */
        double qe = prox_dpq_size(&e->q) ? c->queued_est : 0.0;
        double qu = prox_dpq_size(&e->q) ? c->queued_ub : 0.0;
        if (qe < 0)
            qe = 0;
        if (qu < 0)
            qu = 0;
        if (prox_dpq_size(&e->q))
            qu += (double)c->sum_ops * DBL_EPSILON * c->pushed_ub;
        if (c->queued_ub_inf)
            qu = INFINITY;
        double est = c->dropped_est + qe, ub = c->dropped_ub + qu;
        out->value = c->vol_exact + est;
        out->lower = c->vol_exact;
        out->upper = c->vol_exact + ub;
        out->complete = exhausted && !(out->flags & PROX_RESULT_OUT_OF_MEMORY);
        out->force = c->force;
        out->torque = c->torque;
        break;
    }
    default:
        break;
    }
    if (deadline_hit)
        out->flags |= PROX_RESULT_DEADLINE;
    if (c->overlap)
        out->flags |= PROX_RESULT_OVERLAP;
    if (c->have_best) {
        out->pair = c->best_pair;
        out->leaf_a = c->best_la;
        out->leaf_b = c->best_lb;
        out->point_a = c->best_pa;
        out->point_b = c->best_pb;
    }
    /* caches and finish hooks */
    for (uint32_t i = 0; i < pair_count; i++) {
        pair_priv *pp = &e->pp[i];
        prox_cache *cache = e->ps[i].cache;
        if (q->use_cache && cache && pp->have_best) {
            cache->valid = 1;
            cache->leaf_a = pp->la;
            cache->leaf_b = pp->lb;
            cache->kind = q->kind;
            cache->last_value = pp->best;
        }
    }
    out->elapsed_us = (double)(prox_now_ns() - t0) * 1e-3;
    return 0;
}

int prox_query_combined(prox_engine *e, const prox_query *q, const prox_object_pair *pairs, uint32_t pair_count,
                        prox_result *out)
{
    if (!q)
        return prox_query_run(e, NULL, pairs, pair_count, out); /* refused there, out filled alike */
    prox_query d = *q;
    d.kind = PROX_QUERY_DISTANCE;
    d.stop_on_overlap = 1;
    if (prox_query_run(e, &d, pairs, pair_count, out) != 0)
        return -1;
    if (!(out->flags & PROX_RESULT_OVERLAP))
        return 0;
    prox_result first = *out;
    prox_query v = *q;
    v.kind = PROX_QUERY_PENVOL;
    v.stop_on_overlap = 0;
    if (prox_query_run(e, &v, pairs, pair_count, out) != 0)
        return -1;
    out->value = -out->value;
    double lo = out->lower, up = out->upper;
    out->lower = -up;
    out->upper = -lo;
    out->flags |= PROX_RESULT_OVERLAP | (first.flags & ~PROX_RESULT_OVERLAP);
    out->expansions += first.expansions;
    out->node_tests += first.node_tests;
    out->leaf_tests += first.leaf_tests;
    out->queue_pushes += first.queue_pushes;
    out->queue_pops += first.queue_pops;
    out->dropped += first.dropped;
    out->elapsed_us += first.elapsed_us;
    if (out->flags & PROX_RESULT_NO_HANDLER && !(first.flags & PROX_RESULT_NO_HANDLER) && out->expansions == first.expansions) {
        /* no penetration handler for these types: report the overlap itself */
        *out = first;
        out->value = 0;
        out->flags |= PROX_RESULT_NO_HANDLER;
    }
    return 0;
}

/* ---- traversal fronts ---- */

int prox_front_on(const prox_pairstate *p)
{
    return p->query->use_cache && p->cache && p->cache->front && p->cache->front_capacity >= 2;
}

prox_front_entry *prox_front_begin(const prox_pairstate *p, uint32_t *count)
{
    *count = 0;
    if (!prox_front_on(p))
        return NULL;
    prox_cache *k = p->cache;
    k->front_next_count = 0;
    k->front_overflow = 0;
    if ((k->front_valid != 1 && k->front_valid != 2) || k->front_a != (const void *)p->a || k->front_b != (const void *)p->b)
        return NULL;
    uint32_t half = k->front_capacity / 2;
    *count = k->front_count <= half ? k->front_count : half;
    return &k->front[k->front_valid == 1 ? 0 : half];
}

void prox_front_keep(const prox_pairstate *p, uint32_t kept)
{
    if (!prox_front_on(p))
        return;
    prox_cache *k = p->cache;
    if (k->front_valid != 1 && k->front_valid != 2)
        return;
    uint32_t half = k->front_capacity / 2;
    /* records go where the last front lies, after the kept entries; the
     * finish flips front_valid back to that half */
    k->front_valid = k->front_valid == 1 ? 2 : 1;
    k->front_next_count = kept <= half ? kept : half;
}

prox_front_entry *prox_front_record(const prox_pairstate *p, uint32_t na, uint32_t nb, float key)
{
    if (!prox_front_on(p))
        return NULL;
    prox_cache *k = p->cache;
    uint32_t half = k->front_capacity / 2;
    if (k->front_next_count >= half) {
        k->front_overflow = 1;
        return NULL;
    }
    prox_front_entry *e = &k->front[(k->front_valid == 1 ? half : 0) + k->front_next_count++];
    e->na = na;
    e->nb = nb;
    e->key = key;
    e->dir[0] = e->dir[1] = e->dir[2] = 0.0f;
    return e;
}

void prox_front_invalidate(const prox_pairstate *p)
{
    if (prox_front_on(p))
        p->cache->front_overflow = 1;
}

void prox_front_finish(const prox_ctx *c, const prox_pairstate *p)
{
    if (!prox_front_on(p))
        return;
    prox_cache *k = p->cache;
    if (prox_ctx_complete(c) && !k->front_overflow) {
        k->front_valid = k->front_valid == 1 ? 2 : 1;
        k->front_count = k->front_next_count;
        k->front_a = p->a;
        k->front_b = p->b;
    } else
        k->front_valid = 0; /* an incomplete cut: start from the roots next time */
}
