/* dpq.c - duplex priority queue and the plain binary heap. */
#include "dpq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void heap_up(prox_item *a, uint32_t i, uint64_t *ops)
{
    prox_item x = a[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (a[p].key <= x.key)
            break;
        a[i] = a[p];
        i = p;
        (*ops)++;
    }
    a[i] = x;
}

static void heap_down(prox_item *a, uint32_t n, uint64_t *ops)
{
    uint32_t i = 0;
    prox_item x = a[0];
    for (;;) {
        uint32_t l = 2 * i + 1;
        if (l >= n)
            break;
        uint32_t m = (l + 1 < n && a[l + 1].key < a[l].key) ? l + 1 : l;
        if (x.key <= a[m].key)
            break;
        a[i] = a[m];
        i = m;
        (*ops)++;
    }
    a[i] = x;
}

int prox_dpq_init(prox_dpq *q, uint32_t capacity)
{
    q->stack = malloc(sizeof(prox_item) * (capacity ? capacity : 1));
    q->heap = malloc(sizeof(prox_item) * (capacity ? capacity : 1));
    q->capacity = capacity;
    q->stack_n = q->heap_n = 0;
    q->depth_first = 0;
    q->stack_min = INFINITY;
    q->heap_ops = 0;
    if (!q->stack || !q->heap) {
        prox_dpq_free(q);
        return -1;
    }
    /* touch every page now: a first-touch page fault inside a real-time
     * query costs tens of microseconds */
    memset(q->stack, 0, sizeof(prox_item) * (capacity ? capacity : 1));
    memset(q->heap, 0, sizeof(prox_item) * (capacity ? capacity : 1));
    return 0;
}

void prox_dpq_free(prox_dpq *q)
{
    free(q->stack);
    free(q->heap);
    q->stack = q->heap = NULL;
    q->capacity = 0;
}

void prox_dpq_heap_insert(prox_dpq *q, const prox_item *it)
{
    q->heap[q->heap_n] = *it;
    heap_up(q->heap, q->heap_n++, &q->heap_ops);
}

int prox_dpq_heap_pop(prox_dpq *q, prox_item *out)
{
    if (!q->heap_n)
        return -1;
    *out = q->heap[0];
    q->heap[0] = q->heap[--q->heap_n];
    if (q->heap_n)
        heap_down(q->heap, q->heap_n, &q->heap_ops);
    return 0;
}

double prox_dpq_min_key(const prox_dpq *q)
{
    if (q->depth_first)
        return q->stack_n ? q->stack_min : INFINITY; /* the heap is unused */
    if (prox_dpq_stack_first(q))
        return q->stack[q->stack_n - 1].key;
    return q->heap_n ? q->heap[0].key : INFINITY;
}

void prox_dpq_stack_reverse(prox_dpq *q, uint32_t from)
{
    if (!q->depth_first)
        return; /* the stack's order is the priority's */
    for (uint32_t i = from, j = q->stack_n; i + 1 < j; i++, j--) {
        prox_item t = q->stack[i];
        q->stack[i] = q->stack[j - 1];
        q->stack[j - 1] = t;
    }
}

int prox_heap_init(prox_heap *h, uint32_t capacity)
{
    h->a = malloc(sizeof(prox_item) * (capacity ? capacity : 1));
    h->n = 0;
    h->capacity = capacity;
    return h->a ? 0 : -1;
}

void prox_heap_free(prox_heap *h)
{
    free(h->a);
    h->a = NULL;
}

int prox_heap_push(prox_heap *h, const prox_item *it)
{
    uint64_t ops = 0;
    if (h->n >= h->capacity)
        return -1;
    h->a[h->n] = *it;
    heap_up(h->a, h->n++, &ops);
    return 0;
}

int prox_heap_pop(prox_heap *h, prox_item *out)
{
    uint64_t ops = 0;
    if (!h->n)
        return -1;
    *out = h->a[0];
    h->a[0] = h->a[--h->n];
    if (h->n)
        heap_down(h->a, h->n, &ops);
    return 0;
}
