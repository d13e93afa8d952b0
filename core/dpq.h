/* dpq.h - duplex priority queue (Thoren 2018, section 3.7, Algorithm 11).
 *
 * Private to the engine. A priority queue (smallest key first) made of a
 * stack and a binary heap. An item goes on the stack when it is no worse
 * than the stack's top (or, with the stack empty, better than the heap's
 * best); otherwise into the heap. So the stack's keys never increase from
 * bottom to top and its top is its minimum; pop takes the better of the two
 * tops. Every pop returns a smallest key held (ties: the latest pushed
 * first), and a descent whose best child is no better than its parent runs
 * on the stack at O(1) a push and a pop.
 *
 * Depth-first order (prox_dpq_set_depth_first) uses the stack alone: last
 * pushed, first popped. The queries whose answer does not depend on the
 * order run faster that way (see PROX_ORDER_DEPTH_FIRST in prox_engine.h).
 *
 * (Revisions before this one pushed onto the stack whenever the item was no
 * worse than the heap's best, without comparing it with the stack's top:
 * the heap, empty at the start, stayed empty, so every query ran depth
 * first, and no priority, Algorithm 3's included, took effect.)
 * Fixed capacity, no allocation after init. RT safe.
 */
#ifndef PROX_DPQ_H
#define PROX_DPQ_H

#include <stdint.h>

typedef struct prox_item {
    double key; /* smaller pops sooner */
    uint32_t pair, na, nb;
    float est, ub; /* PENVOL: expected and upper-bound volume below this pair */
} prox_item;

_Static_assert(sizeof(prox_item) == 32, "prox_item is a hot 32-byte record");

typedef struct prox_dpq {
    prox_item *stack, *heap; /* each `capacity` items (the total is bounded by capacity) */
    uint32_t stack_n, heap_n, capacity;
    uint32_t depth_first; /* 1: the stack alone, last in first out */
    /* depth first: a lower bound on the stack's keys, the smallest pushed
     * since the stack was last empty (pops leave it stale, hence
     * conservative), so the smallest key held is known in O(1) at a
     * deadline */
    double stack_min;
    uint64_t heap_ops; /* sift steps, for counters */
} prox_dpq;

int prox_dpq_init(prox_dpq *q, uint32_t capacity); /* allocates; non-RT */
void prox_dpq_free(prox_dpq *q);
static inline void prox_dpq_clear(prox_dpq *q) { q->stack_n = q->heap_n = 0; }
/* the order of the pops until the next call: 1 depth first, 0 smallest key
 * first; only while the queue is empty */
static inline void prox_dpq_set_depth_first(prox_dpq *q, int on) { q->depth_first = on != 0; }
static inline uint32_t prox_dpq_size(const prox_dpq *q) { return q->stack_n + q->heap_n; }
/* the heap halves of push and pop (dpq.c) */
void prox_dpq_heap_insert(prox_dpq *q, const prox_item *it);
int prox_dpq_heap_pop(prox_dpq *q, prox_item *out);
/* depth first: reverse the stack's items from position `from` to the top
 * (items pushed in the order they should be taken come off first) */
void prox_dpq_stack_reverse(prox_dpq *q, uint32_t from);
/* whether the next pop comes from the stack */
static inline int prox_dpq_stack_first(const prox_dpq *q)
{
    return q->stack_n && (q->depth_first || q->heap_n == 0 || q->stack[q->stack_n - 1].key <= q->heap[0].key);
}
/* 0, or -1 when full. Inline: the stack half is a few instructions and a
 * distance query pushes and pops about once per node test. */
static inline int prox_dpq_push(prox_dpq *q, const prox_item *it)
{
    if (q->stack_n + q->heap_n >= q->capacity)
        return -1;
    if (q->depth_first) {
        if (q->stack_n == 0 || it->key < q->stack_min)
            q->stack_min = it->key;
        q->stack[q->stack_n++] = *it;
    } else if (q->stack_n ? it->key <= q->stack[q->stack_n - 1].key : (q->heap_n == 0 || it->key < q->heap[0].key))
        q->stack[q->stack_n++] = *it;
    else
        prox_dpq_heap_insert(q, it);
    return 0;
}
/* 0, or -1 when empty */
static inline int prox_dpq_pop(prox_dpq *q, prox_item *out)
{
    if (prox_dpq_stack_first(q)) {
        *out = q->stack[--q->stack_n];
        return 0;
    }
    return prox_dpq_heap_pop(q, out);
}
/* The smallest key held (the next pop's), O(1); depth first, a lower bound
 * on it; INFINITY when empty. For certified bounds at the end. */
double prox_dpq_min_key(const prox_dpq *q);

/* A plain binary min-heap with the same interface, the reference the tests
 * and the benchmark compare against. */
typedef struct prox_heap {
    prox_item *a;
    uint32_t n, capacity;
} prox_heap;
int prox_heap_init(prox_heap *h, uint32_t capacity);
void prox_heap_free(prox_heap *h);
int prox_heap_push(prox_heap *h, const prox_item *it);
int prox_heap_pop(prox_heap *h, prox_item *out);

#endif
