/* prox_engine.h - the query engine: trees, the bank of handlers, forests of
 * object pairs, one duplex priority queue, budgets, certified bounds, caches.
 *
 * Part of libprox (core/). See ARCHITECTURE.md, "The query engine".
 *
 * Thread rules: prox_bank_* and prox_engine_create/destroy allocate and run
 * off the real-time thread. prox_query_run and prox_query_combined never
 * allocate, lock or print; they read CLOCK_MONOTONIC for the deadline only.
 * They are real-time safe. One engine serves one thread at a time.
 */
#ifndef PROX_ENGINE_H
#define PROX_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "prox_math.h"

/* ---- trees ---- */

typedef enum prox_tree_type {
    PROX_TREE_MESH = 0,  /* mesh BVH over triangles (prox_bvh.h) */
    PROX_TREE_IST = 1,   /* inner sphere tree (prox_ist.h) */
    PROX_TREE_VOXEL = 2, /* hierarchical voxel map (prox_voxel.h) */
    PROX_TREE_BOXES = 3, /* inner/outer box hierarchy for convex polyhedra */
    PROX_TREE_USER0 = 4, /* free for applications and tests */
    PROX_TREE_USER1 = 5,
    PROX_TREE_TYPE_COUNT = 8
} prox_tree_type;

/* A tree as the engine sees it. Nodes are 32-bit ids owned by `impl`; the
 * engine never dereferences impl, handlers do. A tree is immutable while a
 * query runs on it (voxel maps are changed between queries, on the thread
 * that queries them). */
typedef struct prox_tree {
    uint32_t type;    /* prox_tree_type */
    uint32_t root;    /* root node id */
    const void *impl; /* type-specific object */
    double volume;    /* enclosed volume, 0 if unknown or open */
    prox_vec3 com;    /* centre of mass in the local frame (torque reference) */
} prox_tree;

typedef enum prox_query_kind {
    PROX_QUERY_COLLIDE = 0,   /* stop at the first overlapping leaf pair */
    PROX_QUERY_CONTACTS = 1,  /* all overlapping leaf pairs (up to the caller's capacity) */
    PROX_QUERY_DISTANCE = 2,  /* minimum distance with witness points */
    PROX_QUERY_TOLERANCE = 3, /* is the distance below query.tolerance? */
    PROX_QUERY_PENVOL = 4,    /* penetration volume with force and torque */
    PROX_QUERY_KIND_COUNT = 5
} prox_query_kind;

/* Voxel classes a query counts (bit 1 << class). */
#define PROX_CLASS_ALL 0xffffffffu

/* ---- coherence cache (caller owned, one per object pair) ---- */

typedef struct prox_front_entry {
    uint32_t na, nb;
    float key;    /* handler use: e.g. a lower bound on the pair's distance where it was recorded */
    float dir[3]; /* handler use: e.g. a leaf pair's closest direction (0 if none) */
} prox_front_entry;

typedef struct prox_cache {
    uint32_t valid;          /* set by the engine after a query that found a best leaf pair */
    uint32_t leaf_a, leaf_b; /* best leaf pair of the last query (closest, or deepest overlap) */
    uint32_t kind;           /* query kind that filled the cache */
    /* Optional front storage: the caller points `front` at front_capacity
     * entries; handlers that track fronts fill it. front_count = 0 and
     * front = NULL disable front tracking. */
    prox_front_entry *front;
    uint32_t front_count, front_capacity;
    uint32_t front_valid; /* 0: none; 1 or 2: which half of `front` holds the last front (prox_front_keep flips it while a query records in place) */
    uint32_t front_next_count, front_overflow; /* the front being recorded (handler use) */
    uint32_t front_base; /* size of the last front grown from the roots (handler use) */
    double front_drift;  /* handler use: e.g. summed motion bounds since the front was grown from the roots */
    const void *front_a, *front_b; /* the trees the front belongs to (a cache used for another pair starts over) */
    uint32_t hint_a, hint_b; /* handler use: e.g. the triangle pair that refined the last IST distance */
    /* handler use: a front valid while B moves (relative to A) by less than
     * front_margin from front_pose (B in A's frame when it was recorded) */
    prox_xform front_pose;
    double front_margin;
    double last_value; /* value of the last query on this pair */
} prox_cache;

/* ---- queries and results ---- */

typedef struct prox_contact {
    uint32_t pair;           /* index into the forest */
    uint32_t leaf_a, leaf_b; /* leaf ids (triangle, inner sphere, voxel, ...) */
    prox_vec3 point;         /* a point of the overlap, world frame */
} prox_contact;

typedef struct prox_query {
    uint32_t kind;          /* prox_query_kind */
    double tolerance;       /* TOLERANCE: the threshold distance */
    double rel_err;         /* DISTANCE: stop when lower >= upper * (1 - rel_err); 0 = exact */
    double max_distance;    /* DISTANCE: measure only below this range; 0 = no range (see prox_query_run) */
    uint64_t deadline_ns;   /* absolute CLOCK_MONOTONIC deadline; 0 = none */
    uint32_t check_every;   /* expansions between clock reads; 0 = engine default (4) */
    uint32_t voxel_classes; /* classes of voxel maps that count; 0 = PROX_CLASS_ALL */
    prox_contact *contacts; /* CONTACTS (and optional for PENVOL): caller-owned output */
    uint32_t max_contacts;
    int stop_on_overlap;    /* DISTANCE: stop as soon as any leaf pair overlaps (combined query) */
    int use_cache;          /* read and write the pairs' caches */
    uint32_t order;         /* prox_query_order: which node pair the traversal takes next */
    int precise;            /* DISTANCE between inner sphere trees: after the refinement, search
                               the closest points' neighbourhood (a voxel) for another local
                               minimum (range queries in each mesh's triangle tree, up to 12
                               triangle pair tests; no allocation, stops at the deadline).
                               Never below the exact distance, never above the answer without
                               it for the same pose and cache state. 1 = on, the default
                               (prox_query_default): without it the answer may stop at a local
                               minimum near the true one, up to 4.8% above the exact distance
                               on the bench's held-out poses, against at most 1.3% with it (one
                               pose of 50,000 above 0.5%; README).
                               0 = off (prox --fast), for speed: the search costs +2% to +24%
                               instructions on the bench meshes. As with use_cache, 0 is not
                               the default: start from prox_query_default */
} prox_query;

/* The traversal's order. Best first takes the pair with the smallest key
 * (distance: the lowest bound; penetration volume with a deadline: the
 * largest gap between a pair's bounding lens and its expected overlap,
 * Algorithm 3 of Weller & Zachmann), through Thoren's duplex priority
 * queue. Depth first takes the pair pushed last: no heap operations, and
 * the handlers push their children so that it dives toward a close (or
 * overlapping) leaf pair first. Exact answers do not depend on the order;
 * answers cut by a deadline do, and so do the IST distance refinement's
 * (whose leaf pair settling was tuned depth first). AUTO: best first for
 * penetration volume with a deadline, depth first otherwise (measured on
 * the bench poses: best first cut heavy budgeted penetration-volume errors
 * several times; for distance, random poses of bunny00, armadillo and knot1,
 * the median time rose 37-84% for inner sphere trees and 21-36% for mesh
 * BVHs (bunny00, knot1), its heap operations outweighing the expansions
 * it saved). */
typedef enum prox_query_order {
    PROX_ORDER_AUTO = 0,
    PROX_ORDER_BEST_FIRST = 1,
    PROX_ORDER_DEPTH_FIRST = 2
} prox_query_order;

/* Initialise a query of `kind` with defaults (no deadline, exact). */
prox_query prox_query_default(prox_query_kind kind);

enum prox_result_flags {
    PROX_RESULT_DEADLINE = 1u << 0,    /* stopped at the deadline */
    PROX_RESULT_OUT_OF_MEMORY = 1u << 1, /* queue full: some pairs were dropped (bounds stay certified) */
    PROX_RESULT_CONTACTS_FULL = 1u << 2,
    PROX_RESULT_NO_HANDLER = 1u << 3,  /* some pair had no handler for this kind */
    PROX_RESULT_OVERLAP = 1u << 4,     /* some leaf pair overlaps */
    PROX_RESULT_BAD_INPUT = 1u << 5    /* non-finite pose or null tree */
};

typedef struct prox_result {
    double value; /* best estimate: distance, penetration volume, 1/0 for collide/tolerance */
    double lower; /* certified lower bound on the true value */
    double upper; /* certified upper bound on the true value */
    int complete; /* 1 if the traversal finished (value exact up to rel_err) */
    uint32_t flags;
    /* Best leaf pair (closest pair for distance, first overlap for collide). */
    uint32_t pair, leaf_a, leaf_b;
    prox_vec3 point_a, point_b; /* witness points, world frame */
    /* PENVOL: force and torque acting on each pair's object B, world frame,
     * torque about B's centre of mass; summed over the forest. Force is
     * volume-weighted direction (units of volume); the caller scales it by a
     * stiffness. */
    prox_vec3 force, torque;
    uint32_t contact_count;
    /* counters */
    uint64_t expansions, node_tests, leaf_tests, queue_pushes, queue_pops, dropped;
    double elapsed_us;
} prox_result;

/* the largest translation component a pose may have (see prox_query_run):
 * the inner sphere trees rank in floats, and past about 1e18 their squared
 * distances overflowed to an "exact" +inf (1e15 is a petametre in metres,
 * far beyond any scene) */
#define PROX_MAX_TRANSLATION 1e15
/* every component of t finite and within PROX_MAX_TRANSLATION */
static inline int prox_translation_ok(prox_vec3 t)
{
    return fabs(t.x) <= PROX_MAX_TRANSLATION && fabs(t.y) <= PROX_MAX_TRANSLATION && fabs(t.z) <= PROX_MAX_TRANSLATION;
}

/* What is wrong with a pose, where prox_query_run would refuse it as bad
 * input (prox_xform_fault); PROX_XFORM_OK where it takes it. */
typedef enum prox_xform_fault {
    PROX_XFORM_OK = 0,
    PROX_XFORM_NOT_FINITE,     /* a NaN or inf in R or t */
    PROX_XFORM_TOO_FAR,        /* a translation component beyond PROX_MAX_TRANSLATION */
    PROX_XFORM_NOT_ROTATION    /* R not orthonormal with det +1 (prox_m3_is_rotation) */
} prox_xform_fault;
/* the engine's test (a NaN or inf fails both compares: the rotation
 * test's defect becomes NaN); only a refused pose is looked at further, to
 * say why. RT safe. */
static inline prox_xform_fault prox_xform_check(const prox_xform *x)
{
    if (prox_translation_ok(x->t) && prox_m3_is_rotation(&x->R))
        return PROX_XFORM_OK;
    int finite = prox_v3_isfinite(x->t);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            finite = finite && isfinite(x->R.m[i][j]);
    if (!finite)
        return PROX_XFORM_NOT_FINITE;
    return prox_translation_ok(x->t) ? PROX_XFORM_NOT_ROTATION : PROX_XFORM_TOO_FAR;
}

/* One object pair of a forest: A at pose_a, B at pose_b (world frame). */
typedef struct prox_object_pair {
    const prox_tree *a, *b;
    prox_xform pose_a, pose_b;
    prox_cache *cache; /* may be NULL */
} prox_object_pair;

/* ---- handlers ---- */

typedef struct prox_ctx prox_ctx; /* the engine's traversal state */

/* What a handler sees of a pair. Node ids of tree a, tree b. All geometry is
 * in A's local frame: b_in_a maps B-local points to A-local points. */
typedef struct prox_pairstate {
    const prox_tree *a, *b;
    prox_xform b_in_a;
    prox_xform a_in_b; /* the inverse */
    prox_xform pose_a, pose_b; /* world */
    uint32_t index;   /* index in the forest */
    uint32_t swapped; /* 1 if the caller's pair was (B, A) and the engine swapped it */
    prox_cache *cache;
    const prox_query *query;
    /* PROX_PAIR_SCRATCH bytes for the pair's handler during one query,
     * zeroed before its seed and root hooks (preallocated, aligned) */
    void *scratch;
} prox_pairstate;

#define PROX_PAIR_SCRATCH 2048

/* A handler serves one (type A, type B, query kind). All hooks except
 * `expand` are optional. Hooks run on the querying thread and must be
 * real-time safe. */
typedef struct prox_handler {
    const char *name;
    /* Push the root pair(s) with their keys; NULL: engine pushes
     * (a->root, b->root) with key 0 (est 0, ub +inf for PENVOL). */
    void (*root)(prox_ctx *c, const prox_pairstate *p);
    /* Use the cache before the traversal (e.g. the exact distance of the
     * cached leaf pair gives a tight upper bound). */
    void (*seed)(prox_ctx *c, const prox_pairstate *p);
    /* Expand node pair (na, nb): push child pairs with prox_ctx_push*, or do
     * the leaf work and report with prox_ctx_offer_* / prox_ctx_add_*. */
    void (*expand)(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb);
    /* After the traversal (complete or not): update the cache, e.g. fronts. */
    void (*finish)(prox_ctx *c, const prox_pairstate *p);
    void *user;
    /* DISTANCE / TOLERANCE: the engine dropped (na, nb) unexpanded because
     * its key (a lower bound on its distance, passed along) cannot beat the
     * best (at the push or at the pop). Handlers that record traversal
     * fronts use it; NULL costs nothing. */
    void (*pruned)(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double key);
    /* Queries with a deadline: a lower bound on what the pair can offer
     * (DISTANCE: its distance), called before the roots; the engine visits
     * the roots of a forest in increasing order of it (pairs without one
     * first, in pair order). NULL: pair order. */
    double (*root_bound)(const prox_pairstate *p);
} prox_handler;

/* The bank: handlers by (type A, type B, kind), changeable at run time. */
typedef struct prox_bank prox_bank;

prox_bank *prox_bank_create(void);
void prox_bank_destroy(prox_bank *bank);
/* Register every built-in handler (meshes, inner sphere trees, voxel maps,
 * boxes, and their cross-type pairs). */
void prox_bank_register_defaults(prox_bank *bank);
/* Set (replace) or, with h == NULL, remove a handler. The handler struct is
 * copied. (B, A) queries are served by the (A, B) handler with the inverse
 * transform when no (B, A) handler exists. Not RT: do not change a bank
 * while a query on it runs. */
void prox_bank_set(prox_bank *bank, uint32_t type_a, uint32_t type_b, uint32_t kind, const prox_handler *h);
const prox_handler *prox_bank_get(const prox_bank *bank, uint32_t type_a, uint32_t type_b, uint32_t kind);
/* The handler a query of two such trees runs: (A, B)'s, else (B, A)'s with
 * *swapped set (the engine then swaps the pair); NULL when neither exists. */
const prox_handler *prox_bank_find(const prox_bank *bank, uint32_t type_a, uint32_t type_b, uint32_t kind, int *swapped);

/* ---- the engine ---- */

typedef struct prox_engine_def {
    uint32_t queue_capacity; /* node pairs in the queue; 0 = 65536 */
    uint32_t max_pairs;      /* object pairs per forest query; 0 = 256 */
} prox_engine_def;

prox_engine_def prox_engine_def_default(void);

typedef struct prox_engine prox_engine;

/* Allocates all working memory up front. The bank must outlive the engine. */
prox_engine *prox_engine_create(const prox_engine_def *def, const prox_bank *bank);
void prox_engine_destroy(prox_engine *e);

/* Run one query over a forest of object pairs with one duplex priority
 * queue. Returns 0, or -1 on bad arguments (result flags say why; out NULL:
 * -1 alone): no engine or query, pairs missing, more than max_pairs, an
 * unknown kind or order, rel_err outside [0, 1), a tolerance not finite or below 0,
 * a max_distance below 0 or NaN, a tree missing, or a pose that is not finite, translates beyond
 * PROX_MAX_TRANSLATION or does not rotate (prox_m3_is_rotation: R^T R off
 * the identity by 1e-6 or more, Frobenius, or det R <= 0). Distances are never negative: overlapping
 * objects are at distance 0 (PROX_RESULT_OVERLAP).
 * With a max_distance M > 0 a distance query prunes every pair whose bound
 * reaches M: below M the answer is as without it; where nothing comes
 * closer than M, value = upper = +inf and lower is M (less rel_err), a
 * certified "no closer than M" (complete when the traversal finished).
 * A haptic loop whose forces end at a range need not measure farther. RT safe. */
int prox_query_run(prox_engine *e, const prox_query *q, const prox_object_pair *pairs, uint32_t pair_count,
                   prox_result *out);

/* The combined query (IST section 4.3): distance until the first overlapping
 * leaf pair; if there is one, penetration volume (with force and torque)
 * under the remaining budget. out->value is the distance when separated, or
 * minus the penetration volume when overlapping; out->flags has
 * PROX_RESULT_OVERLAP in the second case. RT safe. */
int prox_query_combined(prox_engine *e, const prox_query *q, const prox_object_pair *pairs, uint32_t pair_count,
                        prox_result *out);

/* ---- the interface handlers use (RT safe, only inside hooks) ---- */

/* Push node pair (na, nb) with priority key (smaller pops sooner). For
 * DISTANCE/TOLERANCE the key must be a lower bound on the distance of every
 * leaf pair below; the engine prunes pairs whose key cannot beat the best
 * distance. Returns 0, or -1 when the queue is full (the pair is dropped,
 * counted and flagged; for distance its key still bounds `lower`). */
int prox_ctx_push(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double key);
/* PENVOL push: est is the expected overlap volume below this pair (its share
 * of the running estimate), ub an upper bound on it (its share of the
 * certified upper bound). */
int prox_ctx_push_vol(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double key, double est,
                      double ub);
/* Current best (smallest) distance found: an upper bound; at first +inf, or
 * the query's max_distance (handlers prune against it alike; an offer at or
 * beyond the range is not kept). */
double prox_ctx_best(const prox_ctx *c);
/* A handler that read the clock past the query's deadline: the traversal
 * stops after this expansion, as at the engine's own clock check (push
 * back what the handler left unexplored first, so the bounds cover it). */
void prox_ctx_deadline_passed(prox_ctx *c);
/* Report an exact leaf-pair distance with witness points in A's local frame.
 * d <= 0 means overlap. */
void prox_ctx_offer_distance(prox_ctx *c, const prox_pairstate *p, double d, prox_vec3 pa, prox_vec3 pb, uint32_t la,
                             uint32_t lb);
/* Report an overlapping leaf pair (COLLIDE stops; CONTACTS records it);
 * point in A's local frame. */
void prox_ctx_report_overlap(prox_ctx *c, const prox_pairstate *p, uint32_t la, uint32_t lb, prox_vec3 point);
/* PENVOL: add an exactly computed overlap volume with its force direction
 * (unit, acting on B, A's frame) applied at `point` (A's frame). */
void prox_ctx_add_volume(prox_ctx *c, const prox_pairstate *p, double volume, prox_vec3 dir_on_b, prox_vec3 point,
                         uint32_t la, uint32_t lb);
/* PENVOL: add many exactly computed overlaps at once, summed in A's frame
 * by the handler: `volume` their total, F = sum of volume_i * dir_on_b_i,
 * M = sum of point_i x (volume_i * dir_on_b_i) (moments about A's origin);
 * (la, lb) the deepest leaf pair among them with its volume `deepest`. The
 * same force and torque as one prox_ctx_add_volume per overlap, without
 * carrying each into the world frame. */
void prox_ctx_add_volume_sum(prox_ctx *c, const prox_pairstate *p, double volume, prox_vec3 F, prox_vec3 M,
                             double deepest, uint32_t la, uint32_t lb);
/* The leaf values this pair offers are those of a model (inner spheres)
 * whose distance may exceed the true distance by up to `offset`: the
 * engine lowers its certified lower bound by the largest such offset. */
void prox_ctx_set_bound_offset(prox_ctx *c, const prox_pairstate *p, double offset);
/* DISTANCE: a leaf pair was settled by a local search, so the value found
 * for it may exceed its least; `key`, a lower bound on its true value,
 * keeps the engine's certified lower bound at or below it. */
void prox_ctx_note_unsettled(prox_ctx *c, double key);
/* This pair's best leaf so far: 0 and its distance (or -volume) and leaf
 * ids, or -1 if none. */
int prox_ctx_pair_best(const prox_ctx *c, const prox_pairstate *p, double *value, uint32_t *la, uint32_t *lb);
/* Was the traversal complete (finish hooks: queue exhausted, no deadline)? */
int prox_ctx_complete(const prox_ctx *c);
/* Count primitive tests done by the handler. */
void prox_ctx_count(prox_ctx *c, uint32_t node_tests, uint32_t leaf_tests);
/* Count node-pair expansions a handler did itself, below the one the engine
 * dispatched (a handler that finishes a subtree depth first). */
void prox_ctx_count_expansions(prox_ctx *c, uint32_t expansions);
/* Has the query been decided (collide found, tolerance met, stop_on_overlap)? */
int prox_ctx_done(const prox_ctx *c);

/* Traversal fronts (coherence), for handlers: a query records node pairs
 * into the half of the cache's `front` array that does not hold the last
 * front; the next query may start from them instead of the roots. Mesh
 * distance records its terminal pairs (pruned pairs, leaf pairs: a cut of
 * the traversal under which every leaf pair lies once); inner-sphere
 * penetration volume records a contact front (leaf pairs within a margin,
 * valid while B moves less than that: front_pose, front_margin). A front
 * that outgrows its half, or a query that ends incomplete or is
 * invalidated, leaves no front: the next query starts at the roots. */
int prox_front_on(const prox_pairstate *p);
/* Start recording; returns the last valid front and its size, or NULL. The
 * handler may rewrite that front in place (see prox_front_keep). */
prox_front_entry *prox_front_begin(const prox_pairstate *p, uint32_t *count);
/* In-place fronts: the handler has compacted the entries of the last front
 * that it keeps to the start of the array prox_front_begin returned; this
 * query's front is those `kept` entries followed by what it records next
 * (instead of a copy of each into the other half). Call after
 * prox_front_begin, before any prox_front_record. */
void prox_front_keep(const prox_pairstate *p, uint32_t kept);
/* Returns the entry (dir zeroed, for the handler to fill), or NULL when
 * fronts are off or this front is full. */
prox_front_entry *prox_front_record(const prox_pairstate *p, uint32_t na, uint32_t nb, float key);
/* This query's front is not a full cut (e.g. an early answer): drop it. */
void prox_front_invalidate(const prox_pairstate *p);
/* In the finish hook: keep the recorded front if the query completed. */
void prox_front_finish(const prox_ctx *c, const prox_pairstate *p);

#endif
