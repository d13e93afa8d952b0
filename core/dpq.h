/* dpq.h - duplex priority queue (Thoren 2018, section 3.7, Algorithm 11).
 *
 * Private to the engine. A stack takes every item no worse than the best
 * item in the heap; the heap takes the rest; pop takes the stack first.
 * Because the heap only ever receives items worse than its minimum, its
 * minimum never decreases while the stack is non-empty, so a popped stack
 * item is never worse than any heap item: the search stays best-first
 * across the heap while depth-first runs cost no heap operations.
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
    /* a lower bound on the stack's keys: the smallest pushed since the stack
     * was last empty (pops leave it stale, hence conservative), so the
     * queue's smallest key is known in O(1) at a deadline */
    double stack_min;
    uint64_t heap_ops; /* sift steps, for counters */
} prox_dpq;

int prox_dpq_init(prox_dpq *q, uint32_t capacity); /* allocates; non-RT */
void prox_dpq_free(prox_dpq *q);
static inline void prox_dpq_clear(prox_dpq *q) { q->stack_n = q->heap_n = 0; }
static inline uint32_t prox_dpq_size(const prox_dpq *q) { return q->stack_n + q->heap_n; }
/* the heap halves of push and pop (dpq.c) */
void prox_dpq_heap_insert(prox_dpq *q, const prox_item *it);
int prox_dpq_heap_pop(prox_dpq *q, prox_item *out);
/* 0, or -1 when full. Inline: the stack half is a few instructions and a
 * distance query pushes and pops about once per node test. */
static inline int prox_dpq_push(prox_dpq *q, const prox_item *it)
{
    if (q->stack_n + q->heap_n >= q->capacity)
        return -1;
    if (q->heap_n == 0 || it->key <= q->heap[0].key) {
        if (q->stack_n == 0 || it->key < q->stack_min)
            q->stack_min = it->key;
        q->stack[q->stack_n++] = *it;
    } else
        prox_dpq_heap_insert(q, it);
    return 0;
}
/* 0, or -1 when empty */
static inline int prox_dpq_pop(prox_dpq *q, prox_item *out)
{
    if (q->stack_n) {
        *out = q->stack[--q->stack_n];
        return 0;
    }
    return prox_dpq_heap_pop(q, out);
}
/* The key the next pop returns at most... exactly: the next item's key. */
double prox_dpq_peek_key(const prox_dpq *q);
/* A lower bound on the smallest key held, O(1): exact for the heap part,
 * conservative for the stack (Thoren's invariant puts every stack item at or
 * below the heap's minimum). For certified bounds at the end. */
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
