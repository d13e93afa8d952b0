/* test_rt_ring.c - the SPSC ring under two threads: nothing lost, order
 * kept, a full ring counted and never waited on. Also runs under TSan. */
#include <pthread.h>

#include "check.h"
#include "rt_ring.h"

#define N 500000ull

static rt_ring ring;
static unsigned long long refused; /* written by the producer only; read after join */

static void *producer(void *arg)
{
    (void)arg;
    for (unsigned long long i = 0; i < N;) {
        if (rt_ring_push(&ring, &i) == 0)
            i++;
        else
            refused++;
    }
    return NULL;
}

static void test_spsc_stress(void)
{
    CHECK(rt_ring_init(&ring, 1000, sizeof(unsigned long long)) == 0, "init");
    CHECK(ring.capacity == 1024, "power of two: %u", ring.capacity);
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    unsigned long long expect = 0, v, bad = 0;
    while (expect < N) {
        if (rt_ring_pop(&ring, &v) == 0) {
            if (v != expect)
                bad++;
            expect++;
        }
    }
    pthread_join(t, NULL);
    CHECK(bad == 0, "%llu values out of order or lost", bad);
    CHECK(rt_ring_pop(&ring, &v) == -1, "empty at the end");
    /* every refused push was counted, and nothing else (whether the ring
     * ever filled depends on scheduling; the full path has its own test) */
    CHECK(rt_ring_drops(&ring) == refused, "drops %llu vs refused pushes %llu", (unsigned long long)rt_ring_drops(&ring), refused);
    rt_ring_free(&ring);
}

static void test_full_counted(void)
{
    rt_ring r;
    CHECK(rt_ring_init(&r, 4, sizeof(int)) == 0, "init");
    for (int i = 0; i < 4; i++)
        CHECK(rt_ring_push(&r, &i) == 0, "push %d", i);
    int x = 9;
    CHECK(rt_ring_push(&r, &x) == -1 && rt_ring_drops(&r) == 1, "full ring refuses and counts");
    CHECK(rt_ring_count(&r) == 4, "count");
    for (int i = 0; i < 4; i++) {
        int y;
        CHECK(rt_ring_pop(&r, &y) == 0 && y == i, "fifo %d", i);
    }
    rt_ring_free(&r);
}

/* push_n: all or nothing, wrapping round the end, FIFO with single pushes */
static void test_push_n(void)
{
    rt_ring r;
    CHECK(rt_ring_init(&r, 8, sizeof(int)) == 0, "init");
    int a[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, y;
    CHECK(rt_ring_push_n(&r, a, 9) == -1 && rt_ring_drops(&r) == 1 && rt_ring_count(&r) == 0,
          "more than the capacity refused, counted once, nothing written");
    CHECK(rt_ring_push_n(&r, a, 5) == 0 && rt_ring_count(&r) == 5, "five at once");
    CHECK(rt_ring_push_n(&r, a, 4) == -1 && rt_ring_count(&r) == 5 && rt_ring_drops(&r) == 2, "four more do not fit: none written");
    CHECK(rt_ring_push_n(&r, a + 5, 3) == 0 && rt_ring_count(&r) == 8, "three fill it");
    for (int i = 0; i < 6; i++)
        CHECK(rt_ring_pop(&r, &y) == 0 && y == i, "fifo %d: %d", i, y);
    /* head at 8, tail at 6: the next five wrap round the end */
    int b[5] = {10, 11, 12, 13, 14};
    CHECK(rt_ring_push_n(&r, b, 5) == 0, "wrapping push");
    CHECK(rt_ring_push(&r, &a[0]) == 0 && rt_ring_count(&r) == 8, "a single push after it");
    const int want[8] = {6, 7, 10, 11, 12, 13, 14, 0};
    for (int i = 0; i < 8; i++)
        CHECK(rt_ring_pop(&r, &y) == 0 && y == want[i], "after the wrap %d: %d, want %d", i, y, want[i]);
    CHECK(rt_ring_push_n(&r, a, 0) == 0 && rt_ring_count(&r) == 0, "nothing pushed is fine");
    rt_ring_free(&r);
}

/* push_n under two threads: the consumer never sees part of a group (a
 * group of k records numbered k-1 .. 0, the last 0: wherever a record
 * other than the last has been popped, the next pop must succeed at once) */
#define GROUPS 100000u
static void *group_producer(void *arg)
{
    (void)arg;
    unsigned g[7];
    for (unsigned i = 0; i < GROUPS;) {
        unsigned k = 1 + i % 7;
        for (unsigned j = 0; j < k; j++)
            g[j] = k - 1 - j;
        if (rt_ring_push_n(&ring, g, k) == 0)
            i++;
    }
    return NULL;
}

static void test_push_n_groups_whole(void)
{
    CHECK(rt_ring_init(&ring, 16, sizeof(unsigned)) == 0, "init");
    pthread_t t;
    if (pthread_create(&t, NULL, group_producer, NULL) != 0) {
        CHECK(0, "producer thread");
        rt_ring_free(&ring);
        return;
    }
    unsigned groups = 0, torn = 0, bad = 0, v, left = 0;
    while (groups < GROUPS) {
        if (rt_ring_pop(&ring, &v) != 0) {
            if (left)
                torn++; /* a group seen in part */
            continue;
        }
        unsigned k = 1 + groups % 7;
        if (left == 0 && v != k - 1)
            bad++;
        if (left && v != left - 1)
            bad++;
        left = v;
        if (v == 0)
            groups++;
    }
    pthread_join(t, NULL);
    CHECK(torn == 0, "%u pops found a group in part", torn);
    CHECK(bad == 0, "%u records out of order", bad);
    CHECK(rt_ring_pop(&ring, &v) == -1, "empty at the end");
    rt_ring_free(&ring);
}

int main(int argc, char **argv)
{
    (void)argc;
    RUN_TEST(test_push_n);
    RUN_TEST(test_push_n_groups_whole);
    RUN_TEST(test_full_counted);
    RUN_TEST(test_spsc_stress);
    return check_summary(argv[0]);
}
