/* mesh.c - mesh construction, welding, cleaning and analysis. Non-RT. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prox_mesh.h"

void prox_mesh_free(prox_mesh *m)
{
    if (!m)
        return;
    free(m->vertices);
    free(m->triangles);
    free(m);
}

static uint64_t hash_vec(prox_vec3 v)
{
    uint64_t h = 1469598103934665603ull;
    double c[3] = {v.x + 0.0, v.y + 0.0, v.z + 0.0}; /* +0.0 folds -0 into 0 */
    unsigned char b[sizeof c];
    memcpy(b, c, sizeof c);
    for (size_t i = 0; i < sizeof b; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

int prox_mesh_arrays_ok(const prox_vec3 *vertices, uint32_t vertex_count, const uint32_t (*triangles)[3], uint32_t triangle_count)
{
    for (uint32_t t = 0; t < triangle_count; t++)
        for (int k = 0; k < 3; k++)
            if (triangles[t][k] >= vertex_count)
                return -1;
    for (uint32_t i = 0; i < vertex_count; i++)
        if (!prox_v3_isfinite(vertices[i]))
            return -1;
    return 0;
}

prox_mesh *prox_mesh_from_arrays(const prox_vec3 *vertices, uint32_t vertex_count, const uint32_t (*triangles)[3],
                                 uint32_t triangle_count)
{
    if (prox_mesh_arrays_ok(vertices, vertex_count, triangles, triangle_count) != 0)
        return NULL;
    prox_mesh *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    uint32_t *remap = malloc(sizeof(uint32_t) * (vertex_count ? vertex_count : 1));
    size_t cap = 16;
    while (cap < 2 * (size_t)vertex_count)
        cap <<= 1;
    uint32_t *table = malloc(sizeof(uint32_t) * cap);
    m->vertices = malloc(sizeof(prox_vec3) * (vertex_count ? vertex_count : 1));
    m->triangles = malloc(sizeof(uint32_t[3]) * (triangle_count ? triangle_count : 1));
    if (!remap || !table || !m->vertices || !m->triangles) {
        free(remap);
        free(table);
        prox_mesh_free(m);
        return NULL;
    }
    memset(table, 0xff, sizeof(uint32_t) * cap);
    uint32_t nv = 0;
    for (uint32_t i = 0; i < vertex_count; i++) {
        prox_vec3 v = vertices[i];
        size_t h = hash_vec(v) & (cap - 1);
        for (;;) {
            uint32_t s = table[h];
            if (s == UINT32_MAX) {
                table[h] = nv;
                m->vertices[nv] = v;
                remap[i] = nv++;
                break;
            }
            prox_vec3 w = m->vertices[s];
            if (w.x == v.x && w.y == v.y && w.z == v.z) {
                remap[i] = s;
                break;
            }
            h = (h + 1) & (cap - 1);
        }
    }
    free(table);
    m->vertex_count = nv;
    m->welded_vertices = vertex_count - nv;
    uint32_t nt = 0;
    for (uint32_t t = 0; t < triangle_count; t++) {
        uint32_t a = remap[triangles[t][0]], b = remap[triangles[t][1]], c = remap[triangles[t][2]];
        if (a == b || b == c || a == c) {
            m->dropped_degenerate++;
            continue;
        }
        prox_vec3 n = prox_v3_cross(prox_v3_sub(m->vertices[b], m->vertices[a]), prox_v3_sub(m->vertices[c], m->vertices[a]));
        if (!(prox_v3_len2(n) > 0.0)) {
            m->dropped_degenerate++;
            continue;
        }
        m->triangles[nt][0] = a;
        m->triangles[nt][1] = b;
        m->triangles[nt][2] = c;
        nt++;
    }
    free(remap);
    m->triangle_count = nt;
    if (prox_mesh_analyze(m) != 0) {
        prox_mesh_free(m);
        return NULL;
    }
    return m;
}

/* a triangle's edge, filed under its lower vertex */
typedef struct edge_rec {
    uint32_t hi;      /* the higher vertex */
    uint32_t forward; /* 1 if the triangle runs lo -> hi */
} edge_rec;

static int edge_cmp(const void *pa, const void *pb)
{
    const edge_rec *a = pa, *b = pb;
    return a->hi < b->hi ? -1 : a->hi > b->hi;
}

/* the edges filed under one vertex, in order of hi: by insertion where
 * they are few (a vertex's degree), else qsort (a fan's apex) */
static void sort_edges(edge_rec *e, size_t n)
{
    if (n > 16) {
        qsort(e, n, sizeof *e, edge_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        const edge_rec x = e[i];
        size_t j = i;
        for (; j > 0 && e[j - 1].hi > x.hi; j--)
            e[j] = e[j - 1];
        e[j] = x;
    }
}

int prox_mesh_check_arrays(const prox_mesh *m)
{
    if (!m || (m->triangle_count && (!m->vertices || !m->triangles)))
        return -1;
    for (uint32_t t = 0; t < m->triangle_count; t++)
        for (int k = 0; k < 3; k++) {
            uint32_t v = m->triangles[t][k];
            if (v >= m->vertex_count || !prox_v3_isfinite(m->vertices[v]))
                return -1;
        }
    return 0;
}

int prox_mesh_write_off(const prox_mesh *m, const char *path, char *err, size_t errlen)
{
    int ok = prox_mesh_check_arrays(m) == 0;
    for (uint32_t i = 0; ok && i < m->vertex_count; i++)
        ok = prox_v3_isfinite(m->vertices[i]);
    if (!ok) {
        snprintf(err, errlen, "%s: not written: the mesh has an index out of range or a coordinate that is not finite", path);
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    int bad = fprintf(f, "OFF\n%u %u 0\n", m->vertex_count, m->triangle_count) < 0;
    for (uint32_t i = 0; !bad && i < m->vertex_count; i++)
        bad = fprintf(f, "%.17g %.17g %.17g\n", m->vertices[i].x, m->vertices[i].y, m->vertices[i].z) < 0;
    for (uint32_t t = 0; !bad && t < m->triangle_count; t++)
        bad = fprintf(f, "3 %u %u %u\n", m->triangles[t][0], m->triangles[t][1], m->triangles[t][2]) < 0;
    int e = bad ? errno : 0;
    if (fclose(f) != 0 && !bad)
        bad = 1, e = errno;
    if (bad) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

int prox_mesh_analyze(prox_mesh *m)
{
    const uint32_t nv = m->vertex_count, nt = m->triangle_count;
    for (uint32_t t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++)
            if (m->triangles[t][k] >= nv)
                return -1;
    /* the edges filed by their lower vertex (a counting sort: a qsort of
     * all of them took 25 of a 37 ms load of bunny00), then each vertex's
     * by the higher one: equal edges side by side */
    const size_t ne = (size_t)nt * 3;
    edge_rec *e = malloc(sizeof *e * (ne ? ne : 1));
    size_t *end = calloc((size_t)nv + 1, sizeof *end); /* end[v + 1]: counts, then where vertex v's edges end */
    if (!e || !end) {
        free(e);
        free(end);
        return -1;
    }
    for (uint32_t t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++) {
            const uint32_t a = m->triangles[t][k], b = m->triangles[t][(k + 1) % 3];
            end[(a < b ? a : b) + 1]++;
        }
    for (uint32_t v = 0; v < nv; v++)
        end[v + 1] += end[v]; /* end[v]: where vertex v's edges begin */
    for (uint32_t t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++) {
            const uint32_t a = m->triangles[t][k], b = m->triangles[t][(k + 1) % 3];
            edge_rec *r = &e[end[a < b ? a : b]++]; /* end[v] moves to where vertex v's edges end */
            r->hi = a < b ? b : a;
            r->forward = a < b;
        }
    m->boundary_edges = m->nonmanifold_edges = m->misoriented_edges = 0;
    for (uint32_t v = 0; v < nv; v++) {
        const size_t from = v ? end[v - 1] : 0, to = end[v];
        sort_edges(e + from, to - from);
        for (size_t i = from; i < to;) {
            size_t j = i + 1;
            while (j < to && e[j].hi == e[i].hi)
                j++;
            const size_t n = j - i;
            if (n == 1)
                m->boundary_edges++;
            else if (n > 2)
                m->nonmanifold_edges++;
            else if (e[i].forward == e[i + 1].forward)
                m->misoriented_edges++;
            i = j;
        }
    }
    free(e);
    free(end);
    m->closed = m->triangle_count > 0 && m->boundary_edges == 0 && m->nonmanifold_edges == 0;

    double vol = 0, area = 0;
    prox_vec3 cv = {0, 0, 0}, ca = {0, 0, 0};
    prox_vec3 lo = {0, 0, 0}, hi = {0, 0, 0};
    for (uint32_t i = 0; i < m->vertex_count; i++) {
        lo = i ? prox_v3_min(lo, m->vertices[i]) : m->vertices[i];
        hi = i ? prox_v3_max(hi, m->vertices[i]) : m->vertices[i];
    }
    for (uint32_t t = 0; t < m->triangle_count; t++) {
        prox_vec3 a = m->vertices[m->triangles[t][0]], b = m->vertices[m->triangles[t][1]], c = m->vertices[m->triangles[t][2]];
        double v6 = prox_v3_dot(a, prox_v3_cross(b, c)); /* 6 x signed tetra volume with the origin */
        vol += v6;
        cv = prox_v3_madd(cv, prox_v3_add(prox_v3_add(a, b), c), v6);
        double ar = 0.5 * prox_v3_len(prox_v3_cross(prox_v3_sub(b, a), prox_v3_sub(c, a)));
        area += ar;
        ca = prox_v3_madd(ca, prox_v3_add(prox_v3_add(a, b), c), ar / 3.0);
    }
    m->volume = vol / 6.0;
    m->area = area;
    m->bbox_min = lo;
    m->bbox_max = hi;
    if (m->closed && vol != 0.0)
        m->centroid = prox_v3_scale(cv, 1.0 / (4.0 * vol));
    else
        m->centroid = area > 0 ? prox_v3_scale(ca, 1.0 / area) : prox_v3_scale(prox_v3_add(lo, hi), 0.5);
    m->oriented = m->misoriented_edges == 0 && (!m->closed || m->volume > 0);
    return 0;
}

void prox_mesh_transform(prox_mesh *m, double scale, prox_vec3 t)
{
    for (uint32_t i = 0; i < m->vertex_count; i++)
        m->vertices[i] = prox_v3_add(prox_v3_scale(m->vertices[i], scale), t);
    if (scale < 0) /* a mirror flips orientation: keep outward normals */
        for (uint32_t k = 0; k < m->triangle_count; k++) {
            uint32_t tmp = m->triangles[k][1];
            m->triangles[k][1] = m->triangles[k][2];
            m->triangles[k][2] = tmp;
        }
    prox_mesh_analyze(m);
}

double prox_winding_number(const prox_vec3 *verts, const uint32_t (*tris)[3], uint32_t n, prox_vec3 p)
{
    /* sum of signed solid angles / 4 pi (Van Oosterom & Strackee) */
    double w = 0;
    for (uint32_t t = 0; t < n; t++) {
        prox_vec3 a = prox_v3_sub(verts[tris[t][0]], p);
        prox_vec3 b = prox_v3_sub(verts[tris[t][1]], p);
        prox_vec3 c = prox_v3_sub(verts[tris[t][2]], p);
        double la = prox_v3_len(a), lb = prox_v3_len(b), lc = prox_v3_len(c);
        double num = prox_v3_dot(a, prox_v3_cross(b, c));
        double den = la * lb * lc + prox_v3_dot(a, b) * lc + prox_v3_dot(b, c) * la + prox_v3_dot(c, a) * lb;
        w += 2.0 * atan2(num, den);
    }
    return w / (4.0 * M_PI);
}

int prox_mesh_contains_point(const prox_mesh *m, prox_vec3 p)
{
    return prox_winding_number(m->vertices, (const uint32_t (*)[3])m->triangles, m->triangle_count, p) > 0.5;
}
