/* bench_util.h - small helpers the bench generators share: one random
 * stream (xorshift64: the same numbers for a seed on every machine) and an
 * OFF writer's error report. Include after prox.h. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdio.h>

/* the stream's state: seed it by assigning (never 0) */
static unsigned long long bench_rng = 1;

/* uniform in [0, 1) */
static inline double bench_urand(void)
{
    bench_rng ^= bench_rng << 13, bench_rng ^= bench_rng >> 7, bench_rng ^= bench_rng << 17;
    return (double)(bench_rng >> 11) / 9007199254740992.0;
}

/* m as a triangle OFF file at path (prox_mesh_write_off: %.17g, the
 * doubles as they are); 0, or -1 with the reason on stderr */
static inline int bench_write_off(const char *path, const prox_mesh *m)
{
    char err[512];
    if (prox_mesh_write_off(m, path, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "%s\n", err);
    return -1;
}

#endif
