/* subdivide.c - bench helper: IN.off OUT.off [LEVELS]: split every
 * triangle into four at its edge midpoints, LEVELS times (default 1). The
 * shape stays the same, the triangle count grows fourfold a level, and
 * the mesh stays closed (one midpoint vertex per edge, shared by the two
 * triangles on it). The libcgal-demo meshes top out at 88,928 triangles;
 * this makes the 100k-plus-triangle meshes the build bench needs from
 * them. Reads with libprox's loader (assimp), writes OFF. */
#include <stdio.h>
#include <stdlib.h>

#include "prox_mesh.h"
#include "bench_util.h"

typedef struct edge {
    uint32_t lo, hi, tri, k; /* vertices, the triangle and its edge k (corners k, k + 1) */
} edge;

static int edge_cmp(const void *pa, const void *pb)
{
    const edge *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return a->hi < b->hi ? -1 : a->hi > b->hi;
}

/* one level: *v, *t (counts *nv, *nt) replaced by the split mesh; -1 out of memory */
static int split(prox_vec3 **v, uint32_t *nv, uint32_t (**t)[3], uint32_t *nt)
{
    size_t ne = (size_t)*nt * 3;
    edge *e = malloc(sizeof *e * ne);
    uint32_t *mid = malloc(sizeof *mid * ne); /* per (triangle, edge): its midpoint vertex */
    prox_vec3 *v2 = malloc(sizeof *v2 * ((size_t)*nv + ne));
    uint32_t(*t2)[3] = malloc(sizeof *t2 * (size_t)*nt * 4);
    if (!e || !mid || !v2 || !t2) {
        free(e), free(mid), free(v2), free(t2);
        return -1;
    }
    for (uint32_t i = 0; i < *nt; i++)
        for (uint32_t k = 0; k < 3; k++) {
            uint32_t a = (*t)[i][k], b = (*t)[i][(k + 1) % 3];
            e[(size_t)i * 3 + k] = (edge){a < b ? a : b, a < b ? b : a, i, k};
        }
    qsort(e, ne, sizeof *e, edge_cmp);
    uint32_t n = *nv;
    for (uint32_t i = 0; i < n; i++)
        v2[i] = (*v)[i];
    for (size_t q = 0; q < ne; q++) {
        if (q == 0 || e[q].lo != e[q - 1].lo || e[q].hi != e[q - 1].hi)
            v2[n++] = prox_v3_scale(prox_v3_add((*v)[e[q].lo], (*v)[e[q].hi]), 0.5);
        mid[(size_t)e[q].tri * 3 + e[q].k] = n - 1;
    }
    for (uint32_t i = 0; i < *nt; i++) {
        const uint32_t *c = (*t)[i], *m = &mid[(size_t)i * 3]; /* m[k]: midpoint of corners k, k + 1 */
        const uint32_t q[4][3] = {{c[0], m[0], m[2]}, {c[1], m[1], m[0]}, {c[2], m[2], m[1]}, {m[0], m[1], m[2]}};
        for (int s = 0; s < 4; s++)
            for (int k = 0; k < 3; k++)
                t2[(size_t)i * 4 + s][k] = q[s][k];
    }
    free(e), free(mid), free(*v), free(*t);
    *v = v2, *nv = n, *t = t2, *nt *= 4;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: subdivide IN.off OUT.off [LEVELS]\n");
        return 2;
    }
    int levels = argc == 4 ? atoi(argv[3]) : 1;
    if (levels < 1 || levels > 4) {
        fprintf(stderr, "subdivide: LEVELS is 1 to 4, got '%s'\n", argv[3]);
        return 2;
    }
    char err[512];
    prox_mesh *m;
    if (prox_mesh_load(argv[1], &m, err, sizeof err)) {
        fprintf(stderr, "subdivide: %s\n", err);
        return 1;
    }
    uint32_t nv = m->vertex_count, nt = m->triangle_count;
    prox_vec3 *v = malloc(sizeof *v * nv);
    uint32_t(*t)[3] = malloc(sizeof *t * nt);
    if (!v || !t) {
        fprintf(stderr, "subdivide: out of memory\n");
        return 1;
    }
    for (uint32_t i = 0; i < nv; i++)
        v[i] = m->vertices[i];
    for (uint32_t i = 0; i < nt; i++)
        for (int k = 0; k < 3; k++)
            t[i][k] = m->triangles[i][k];
    prox_mesh_free(m);
    for (int l = 0; l < levels; l++)
        if (split(&v, &nv, &t, &nt) != 0) {
            fprintf(stderr, "subdivide: out of memory\n");
            return 1;
        }
    prox_mesh out = {.vertex_count = nv, .triangle_count = nt, .vertices = v, .triangles = t};
    int rc = bench_write_off(argv[2], &out);
    free(v), free(t);
    return rc != 0;
}
