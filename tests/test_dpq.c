/* test_dpq.c - the duplex priority queue against a plain binary heap. */
#include <time.h>

#include "check.h"
#include "../core/dpq.h"

/* Algorithm 11 is a priority queue: the same pushes and pops, interleaved
 * at random (keys drawn from few values, so ties occur), give the same
 * sequence of popped keys as a plain binary heap; min_key is the smallest
 * key held; nothing is lost. Pushes in the pattern of a best-first
 * descent (children no better than their parent) mostly stay on the
 * stack; pushes in increasing order go to the heap. (The earlier queue
 * put every item on the stack while the heap was empty, so it popped in
 * push order, and this test fails on it at the first out-of-order pop.) */
static void test_random_sequences(void)
{
    unsigned long long s = 3;
    prox_dpq q;
    prox_heap h;
    CHECK(prox_dpq_init(&q, 4096) == 0 && prox_heap_init(&h, 4096) == 0, "init");
    int out_of_order = 0, bad_min = 0, used_stack = 0, used_heap = 0;
    for (int round = 0; round < 50; round++) {
        prox_dpq_clear(&q);
        h.n = 0;
        double sum_in = 0, sum_out = 0;
        const int coarse = round & 1; /* integer keys: many ties */
        for (int i = 0; i < 3000; i++) {
            if (check_rng_uniform(&s, 0, 1) < 0.6 || prox_dpq_size(&q) == 0) {
                double k = check_rng_uniform(&s, 0, 100);
                prox_item it = {coarse ? floor(k / 10) : k, (uint32_t)i, 0, 0, 0, 0};
                if (prox_dpq_push(&q, &it) == 0) {
                    CHECK(prox_heap_push(&h, &it) == 0, "heap push");
                    sum_in += it.key;
                }
            } else {
                prox_item a, b;
                CHECK(prox_dpq_pop(&q, &a) == 0 && prox_heap_pop(&h, &b) == 0, "pop");
                sum_out += a.key;
                if (a.key != b.key)
                    out_of_order++;
            }
            used_stack |= q.stack_n > 1, used_heap |= q.heap_n > 1;
            double m = INFINITY;
            for (uint32_t k = 0; k < q.stack_n; k++)
                m = q.stack[k].key < m ? q.stack[k].key : m;
            for (uint32_t k = 0; k < q.heap_n; k++)
                m = q.heap[k].key < m ? q.heap[k].key : m;
            if (prox_dpq_min_key(&q) != m)
                bad_min++;
        }
        /* drain both: the same keys in the same order */
        prox_item a, b;
        double rest = 0;
        while (prox_dpq_pop(&q, &a) == 0) {
            CHECK(prox_heap_pop(&h, &b) == 0, "heap drains with the DPQ");
            if (a.key != b.key)
                out_of_order++;
            rest += a.key;
        }
        CHECK(h.n == 0, "heap empty with the DPQ");
        CHECK_NEAR(sum_out + rest, sum_in, 1e-6, "DPQ keeps every item");
    }
    CHECK(out_of_order == 0, "%d pops differ from the binary heap's", out_of_order);
    CHECK(bad_min == 0, "min_key was not the smallest key held %d times", bad_min);
    CHECK(used_stack && used_heap, "both halves were used (stack %d, heap %d)", used_stack, used_heap);

    /* a descent with a near child and a far one under every node: the near
     * ones run on the stack (no heap operation), the far ones wait in the
     * heap */
    prox_dpq_clear(&q);
    prox_item root = {0, 0, 0, 0, 0, 0}, it;
    prox_dpq_push(&q, &root);
    uint32_t from_stack = 0, pops = 0;
    for (int i = 0; i < 1000 && prox_dpq_size(&q); i++) {
        from_stack += (uint32_t)prox_dpq_stack_first(&q), pops++;
        prox_dpq_pop(&q, &it);
        prox_item c1 = {it.key + 10, 0, 0, 0, 0, 0}, c2 = {it.key + 0.01, 0, 0, 0, 0, 0};
        prox_dpq_push(&q, &c1);
        prox_dpq_push(&q, &c2);
    }
    CHECK(from_stack > pops / 2 && q.heap_n > 0, "the descent ran mostly on the stack (%u of %u pops), the heap holding the rest (%u)", from_stack, pops, q.heap_n);
    double last = -INFINITY;
    int rising = 1;
    while (prox_dpq_pop(&q, &it) == 0)
        rising &= it.key >= last, last = it.key;
    CHECK(rising, "drained in key order");

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
