/* test_dpq.c - the duplex priority queue against a plain binary heap. */
#include <time.h>

#include "check.h"
#include "../core/dpq.h"

/* Invariant (Thoren 3.7): every pop returns an item no worse than every
 * item in the heap part; and the DPQ holds exactly the pushed-not-popped
 * multiset. A best-first search that stops when the popped key can no
 * longer improve finds the same optimum with either queue. */
static void test_random_sequences(void)
{
    unsigned long long s = 3;
    prox_dpq q;
    prox_heap h;
    CHECK(prox_dpq_init(&q, 4096) == 0 && prox_heap_init(&h, 4096) == 0, "init");
    for (int round = 0; round < 50; round++) {
        prox_dpq_clear(&q);
        h.n = 0;
        double sum_in = 0, sum_out = 0;
        int bad = 0, bad_min = 0;
        for (int i = 0; i < 3000; i++) {
            if (check_rng_uniform(&s, 0, 1) < 0.6 || prox_dpq_size(&q) == 0) {
                prox_item it = {check_rng_uniform(&s, 0, 100), (uint32_t)i, 0, 0, 0, 0};
                if (prox_dpq_push(&q, &it) == 0) {
                    prox_heap_push(&h, &it);
                    sum_in += it.key;
                }
            } else {
                prox_item a, b;
                CHECK(prox_dpq_pop(&q, &a) == 0, "pop");
                sum_out += a.key;
                /* no heap item is better than what the DPQ returned */
                if (q.heap_n && q.heap[0].key < a.key)
                    bad++;
                (void)b;
            }
            if (i % 50 == 0) { /* min_key is a lower bound on every key held, exact when only the heap holds items */
                double m = INFINITY;
                for (uint32_t k = 0; k < q.stack_n; k++)
                    m = q.stack[k].key < m ? q.stack[k].key : m;
                for (uint32_t k = 0; k < q.heap_n; k++)
                    m = q.heap[k].key < m ? q.heap[k].key : m;
                double mk = prox_dpq_min_key(&q);
                if (mk > m || (q.stack_n == 0 && mk != m))
                    bad_min++;
            }
        }
        CHECK(bad == 0, "%d pops returned an item worse than the heap's best", bad);
        CHECK(bad_min == 0, "%d times min_key exceeded the smallest key held", bad_min);
        /* drain both: the same multiset */
        prox_item a;
        double rest = 0;
        while (prox_dpq_pop(&q, &a) == 0)
            rest += a.key;
        double hrest = 0;
        while (prox_heap_pop(&h, &a) == 0)
            hrest += a.key;
        CHECK_NEAR(sum_out + rest, sum_in, 1e-6, "DPQ keeps every item");
        CHECK_NEAR(hrest, sum_in, 1e-6, "heap keeps every item");
    }
    prox_item full = {1, 0, 0, 0, 0, 0};
    prox_dpq_clear(&q);
    for (uint32_t i = 0; i < 4096; i++)
        prox_dpq_push(&q, &full);
    CHECK(prox_dpq_push(&q, &full) == -1, "full queue refuses");
    prox_dpq_free(&q);
    prox_heap_free(&h);
}

/* best-first search on a toy problem: the smallest leaf of a random binary
 * tree with monotone keys (a child is never better than its parent's key) */
typedef struct toy {
    double key[1 << 15];
} toy;
static toy T;

static double search(int use_dpq, uint64_t *ops, double *secs)
{
    prox_dpq q;
    prox_heap h;
    prox_dpq_init(&q, 1 << 16);
    prox_heap_init(&h, 1 << 16);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    prox_item it = {T.key[1], 1, 0, 0, 0, 0};
    use_dpq ? prox_dpq_push(&q, &it) : prox_heap_push(&h, &it);
    double best = INFINITY;
    *ops = 0;
    while ((use_dpq ? prox_dpq_pop(&q, &it) : prox_heap_pop(&h, &it)) == 0) {
        (*ops)++;
        if (it.key >= best)
            continue;
        uint32_t n = it.pair;
        if (n >= (1u << 14)) { /* leaf */
            best = it.key;
            continue;
        }
        for (uint32_t c = 2 * n; c <= 2 * n + 1; c++) {
            prox_item ch = {T.key[c], c, 0, 0, 0, 0};
            if (ch.key < best)
                use_dpq ? prox_dpq_push(&q, &ch) : prox_heap_push(&h, &ch);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    prox_dpq_free(&q);
    prox_heap_free(&h);
    return best;
}

static void test_same_optimum(void)
{
    unsigned long long s = 11;
    for (int round = 0; round < 20; round++) {
        T.key[1] = 0;
        for (uint32_t n = 2; n < (1u << 15); n++)
            T.key[n] = T.key[n / 2] + check_rng_uniform(&s, 0, 1);
        double brute = INFINITY;
        for (uint32_t n = 1u << 14; n < (1u << 15); n++)
            brute = fmin(brute, T.key[n]);
        uint64_t od, oh;
        double sd, sh;
        double bd = search(1, &od, &sd), bh = search(0, &oh, &sh);
        CHECK(bd == brute && bh == brute, "optimum: dpq %g heap %g brute %g", bd, bh, brute);
        if (round == 0)
            fprintf(stderr, "    toy search: dpq %llu pops %.3f ms, heap %llu pops %.3f ms\n", (unsigned long long)od, sd * 1e3,
                    (unsigned long long)oh, sh * 1e3);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    RUN_TEST(test_random_sequences);
    RUN_TEST(test_same_optimum);
    return check_summary(argv[0]);
}
