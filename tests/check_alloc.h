/* check_alloc.h - counts a test program's calls to the allocator, for the
 * tests that real-time paths allocate nothing (test_engine,
 * test_voxel_cross, test_rt_loop).
 *
 * It defines malloc, calloc, realloc and free over glibc's own, so include
 * it in the test's one .c file only. Plain builds only: ASan and TSan put
 * their own allocator there, and CHECK_ALLOC_ON stays undefined; a test
 * checks its count under #ifdef CHECK_ALLOC_ON.
 *
 * A call counts, into check_alloc_calls, when CHECK_ALLOC_WHEN() is true
 * (free(NULL) never counts). By default that is while check_alloc_counting
 * is set; a test may define CHECK_ALLOC_WHEN() before including this file
 * (test_rt_loop: on the service's real-time thread). */
#ifndef CHECK_ALLOC_H
#define CHECK_ALLOC_H

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CHECK_ALLOC_ON 1

#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static atomic_long check_alloc_calls;
#ifndef CHECK_ALLOC_WHEN
static int check_alloc_counting;
#define CHECK_ALLOC_WHEN() check_alloc_counting
#endif

void *malloc(size_t n);
void *calloc(size_t a, size_t b);
void *realloc(void *p, size_t n);
void free(void *p);
void *malloc(size_t n)
{
    if (CHECK_ALLOC_WHEN())
        atomic_fetch_add(&check_alloc_calls, 1);
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    if (CHECK_ALLOC_WHEN())
        atomic_fetch_add(&check_alloc_calls, 1);
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    if (CHECK_ALLOC_WHEN())
        atomic_fetch_add(&check_alloc_calls, 1);
    return __libc_realloc(p, n);
}
void free(void *p)
{
    if (p && CHECK_ALLOC_WHEN())
        atomic_fetch_add(&check_alloc_calls, 1);
    __libc_free(p);
}
#endif

#endif
