/* ring.c - SPSC ring (see rt_ring.h). */
#include "rt_ring.h"

#include <stdlib.h>
#include <string.h>

int rt_ring_init(rt_ring *r, uint32_t capacity, size_t elem_size)
{
    uint32_t cap = 2;
    while (cap < capacity && cap < (1u << 30))
        cap <<= 1;
    r->data = calloc(cap, elem_size);
    if (!r->data)
        return -1;
    r->capacity = cap;
    r->mask = cap - 1;
    r->elem_size = elem_size;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    atomic_init(&r->drops, 0);
    return 0;
}

void rt_ring_free(rt_ring *r)
{
    free(r->data);
    r->data = NULL;
}

int rt_ring_push_n(rt_ring *r, const void *elems, uint32_t n)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (n > r->capacity || h - t > r->capacity - n) {
        atomic_fetch_add_explicit(&r->drops, 1, memory_order_relaxed);
        return -1;
    }
    const unsigned char *src = elems;
    for (uint32_t i = 0; i < n; i++)
        memcpy(r->data + (size_t)((h + i) & r->mask) * r->elem_size, src + (size_t)i * r->elem_size, r->elem_size);
    atomic_store_explicit(&r->head, h + n, memory_order_release);
    return 0;
}

/* n = 1: the same test (h - t > capacity - 1) and copy */
int rt_ring_push(rt_ring *r, const void *elem) { return rt_ring_push_n(r, elem, 1); }

int rt_ring_pop(rt_ring *r, void *elem)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    if (t == h)
        return -1;
    memcpy(elem, r->data + (size_t)(t & r->mask) * r->elem_size, r->elem_size);
    atomic_store_explicit(&r->tail, t + 1, memory_order_release);
    return 0;
}

uint32_t rt_ring_count(rt_ring *r)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    return (uint32_t)(h - t);
}

uint64_t rt_ring_drops(rt_ring *r) { return atomic_load_explicit(&r->drops, memory_order_relaxed); }
