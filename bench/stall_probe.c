/* stall_probe.c - how often this machine stops a running thread.
 *
 *   stall_probe SECONDS
 *
 * Spins on CLOCK_MONOTONIC for SECONDS and records every gap between two
 * consecutive clock reads longer than 1 us: time the thread did not run
 * (interrupts, the guest scheduler, the host taking the virtual CPU away).
 * A deadline that falls at a random moment lands inside such a gap with
 * more than X us of it left with probability sum(max(0, gap - X)) / SECONDS:
 * the share of deadline overshoots above X that the machine alone causes,
 * whatever the query does. Prints one line:
 *   seconds=S gaps_5us=N gaps_10us=N gaps_20us=N max_us=M p_over_5us=P p_over_10us=P p_over_20us=P
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0;
    if (!(seconds > 0 && seconds <= 600)) {
        fprintf(stderr, "usage: stall_probe SECONDS (0 < SECONDS <= 600)\n");
        return 2;
    }
    const uint64_t span = (uint64_t)(seconds * 1e9), x[3] = {5000, 10000, 20000};
    uint64_t t0 = now_ns(), last = t0, count[3] = {0, 0, 0}, longest = 0;
    double over[3] = {0, 0, 0};
    while (last - t0 < span) {
        uint64_t t = now_ns(), g = t - last;
        last = t;
        if (g <= 1000)
            continue;
        if (g > longest)
            longest = g;
        for (int k = 0; k < 3; k++)
            if (g > x[k]) {
                count[k]++;
                over[k] += (double)(g - x[k]);
            }
    }
    double T = (double)(last - t0);
    printf("seconds=%.3f gaps_5us=%llu gaps_10us=%llu gaps_20us=%llu max_us=%.1f p_over_5us=%.5f p_over_10us=%.5f "
           "p_over_20us=%.5f\n",
           T / 1e9, (unsigned long long)count[0], (unsigned long long)count[1], (unsigned long long)count[2],
           (double)longest / 1e3, over[0] / T, over[1] / T, over[2] / T);
    return 0;
}
