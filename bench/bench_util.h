/* bench_util.h - small helpers the bench generators share: one random
 * stream (xorshift64: the same numbers for a seed on every machine) and an
 * OFF writer. Include after prox.h. */
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

/* m as a triangle OFF file at path (%.17g: read back bit for bit); 0, or
 * -1 if it cannot be written */
static inline int bench_write_off(const char *path, const prox_mesh *m)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "OFF\n%u %u 0\n", m->vertex_count, m->triangle_count);
    for (uint32_t i = 0; i < m->vertex_count; i++)
        fprintf(f, "%.17g %.17g %.17g\n", m->vertices[i].x, m->vertices[i].y, m->vertices[i].z);
    for (uint32_t t = 0; t < m->triangle_count; t++)
        fprintf(f, "3 %u %u %u\n", m->triangles[t][0], m->triangles[t][1], m->triangles[t][2]);
    return fclose(f) == 0 ? 0 : -1;
}

#endif
