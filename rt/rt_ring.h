/* rt_ring.h - single-producer single-consumer ring of fixed-size records.
 *
 * Indices plus caller-sized storage, C11 atomics with acquire/release,
 * power-of-two capacity (as JACK's and PipeWire's rings). A full ring
 * returns -1 and counts a drop; nobody ever waits. Exactly one thread
 * pushes and one thread pops. Push and pop are real-time safe.
 */
#ifndef RT_RING_H
#define RT_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rt_ring {
    _Alignas(64) atomic_uint_fast64_t head; /* written by the producer */
    _Alignas(64) atomic_uint_fast64_t tail; /* written by the consumer */
    _Alignas(64) atomic_uint_fast64_t drops;
    uint32_t capacity, mask;
    size_t elem_size;
    unsigned char *data;
} rt_ring;

/* capacity is rounded up to a power of two. Allocates (non-RT). */
int rt_ring_init(rt_ring *r, uint32_t capacity, size_t elem_size);
void rt_ring_free(rt_ring *r);
/* producer: 0, or -1 when full (counted in drops) */
int rt_ring_push(rt_ring *r, const void *elem);
/* producer: n records at once, published together (the consumer sees
 * none of them or all); 0, or -1 when fewer than n slots are free (nothing
 * written, one drop counted) */
int rt_ring_push_n(rt_ring *r, const void *elems, uint32_t n);
/* consumer: 0, or -1 when empty */
int rt_ring_pop(rt_ring *r, void *elem);
uint32_t rt_ring_count(rt_ring *r);
uint64_t rt_ring_drops(rt_ring *r);

#endif
