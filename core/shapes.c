/* shapes.c - procedural meshes for tests, demos and benchmarks. Non-RT. */
#include <stdlib.h>

#include "prox_mesh.h"

prox_mesh *prox_mesh_make_box(prox_vec3 h)
{
    prox_vec3 v[8];
    for (int i = 0; i < 8; i++)
        v[i] = prox_v3((i & 1) ? h.x : -h.x, (i & 2) ? h.y : -h.y, (i & 4) ? h.z : -h.z);
    static const uint32_t t[12][3] = {{0, 2, 1}, {1, 2, 3}, {4, 5, 6}, {5, 7, 6}, {0, 1, 4}, {1, 5, 4},
                                      {2, 6, 3}, {3, 6, 7}, {0, 4, 2}, {2, 4, 6}, {1, 3, 5}, {3, 7, 5}};
    return prox_mesh_from_arrays(v, 8, t, 12);
}

typedef struct shape_buf {
    prox_vec3 *v;
    uint32_t (*t)[3];
    uint32_t nv, nt, cv, ct;
    int failed;
} shape_buf;

static uint32_t sb_vertex(shape_buf *b, prox_vec3 p)
{
    if (b->nv == b->cv) {
        b->cv = b->cv ? 2 * b->cv : 64;
        void *n = realloc(b->v, sizeof *b->v * b->cv);
        if (!n) {
            b->failed = 1;
            b->cv = b->nv;
            return 0;
        }
        b->v = n;
    }
    b->v[b->nv] = p;
    return b->nv++;
}

static void sb_tri(shape_buf *b, uint32_t x, uint32_t y, uint32_t z)
{
    if (b->nt == b->ct) {
        b->ct = b->ct ? 2 * b->ct : 64;
        void *n = realloc(b->t, sizeof *b->t * b->ct);
        if (!n) {
            b->failed = 1;
            b->ct = b->nt;
            return;
        }
        b->t = n;
    }
    b->t[b->nt][0] = x;
    b->t[b->nt][1] = y;
    b->t[b->nt][2] = z;
    b->nt++;
}

static prox_mesh *sb_finish(shape_buf *b)
{
    prox_mesh *m = b->failed ? NULL : prox_mesh_from_arrays(b->v, b->nv, (const uint32_t(*)[3])b->t, b->nt);
    free(b->v);
    free(b->t);
    return m;
}

prox_mesh *prox_mesh_make_tiled_box(prox_vec3 h, int n)
{
    if (n < 1 || n > 1024)
        return NULL;
    shape_buf b = {0};
    const double he[3] = {h.x, h.y, h.z};
    /* face `side` of axis a, squares over the next two axes (b, c) = (a + 1,
     * a + 2): e_b x e_c = e_a, so (0, 0), (1, 0), (1, 1), (0, 1) in (b, c)
     * wind outward on the upper face and are reversed on the lower. Every
     * corner is computed by the same formula on every face, so the faces'
     * shared corners weld exactly. */
    for (int a = 0; a < 3 && !b.failed; a++)
        for (int side = 0; side < 2; side++)
            for (int u = 0; u < n; u++)
                for (int w = 0; w < n; w++) {
                    uint32_t q[4];
                    static const int du[4] = {0, 1, 1, 0}, dw[4] = {0, 0, 1, 1};
                    for (int k = 0; k < 4; k++) {
                        int g[3];
                        g[a] = side ? n : 0, g[(a + 1) % 3] = u + du[k], g[(a + 2) % 3] = w + dw[k];
                        double x[3];
                        for (int c = 0; c < 3; c++)
                            x[c] = g[c] == n ? he[c] : he[c] * (2.0 * g[c] / n - 1);
                        q[k] = sb_vertex(&b, prox_v3(x[0], x[1], x[2]));
                    }
                    if (side)
                        sb_tri(&b, q[0], q[1], q[2]), sb_tri(&b, q[0], q[2], q[3]);
                    else
                        sb_tri(&b, q[0], q[2], q[1]), sb_tri(&b, q[0], q[3], q[2]);
                }
    return sb_finish(&b);
}

prox_mesh *prox_mesh_make_sphere(double radius, int subdivisions)
{
    const double g = (1.0 + sqrt(5.0)) / 2.0;
    shape_buf b = {0};
    const double iv[12][3] = {{-1, g, 0}, {1, g, 0}, {-1, -g, 0}, {1, -g, 0}, {0, -1, g}, {0, 1, g},
                              {0, -1, -g}, {0, 1, -g}, {g, 0, -1}, {g, 0, 1}, {-g, 0, -1}, {-g, 0, 1}};
    static const uint32_t it[20][3] = {{0, 11, 5}, {0, 5, 1}, {0, 1, 7}, {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
                                       {11, 10, 2}, {10, 7, 6}, {7, 1, 8}, {3, 9, 4}, {3, 4, 2}, {3, 2, 6}, {3, 6, 8},
                                       {3, 8, 9}, {4, 9, 5}, {2, 4, 11}, {6, 2, 10}, {8, 6, 7}, {9, 8, 1}};
    for (int i = 0; i < 12; i++)
        sb_vertex(&b, prox_v3_scale(prox_v3_normalize(prox_v3(iv[i][0], iv[i][1], iv[i][2])), radius));
    for (int i = 0; i < 20; i++)
        sb_tri(&b, it[i][0], it[i][1], it[i][2]);
    if (subdivisions < 0)
        subdivisions = 0;
    if (subdivisions > 8)
        subdivisions = 8;
    for (int s = 0; s < subdivisions && !b.failed; s++) {
        /* midpoints are duplicated per triangle; welding merges them exactly
         * because both sides compute the same normalized midpoint */
        uint32_t nt = b.nt;
        uint32_t(*old)[3] = malloc(sizeof *old * nt);
        if (!old) {
            b.failed = 1;
            break;
        }
        for (uint32_t i = 0; i < nt; i++)
            for (int k = 0; k < 3; k++)
                old[i][k] = b.t[i][k];
        b.nt = 0;
        for (uint32_t i = 0; i < nt; i++) {
            uint32_t a = old[i][0], c = old[i][1], d = old[i][2];
            prox_vec3 pa = b.v[a], pc = b.v[c], pd = b.v[d];
            /* midpoint computed with the lower index first so both triangles agree bit for bit */
#define MID(p, q, ip, iq)                                                                                             \
    prox_v3_scale(prox_v3_normalize((ip) < (iq) ? prox_v3_add(p, q) : prox_v3_add(q, p)), radius)
            uint32_t ac = sb_vertex(&b, MID(pa, pc, a, c));
            uint32_t cd = sb_vertex(&b, MID(pc, pd, c, d));
            uint32_t da = sb_vertex(&b, MID(pd, pa, d, a));
#undef MID
            sb_tri(&b, a, ac, da);
            sb_tri(&b, c, cd, ac);
            sb_tri(&b, d, da, cd);
            sb_tri(&b, ac, cd, da);
        }
        free(old);
        /* weld now so indices stay comparable across levels */
        prox_mesh *m = prox_mesh_from_arrays(b.v, b.nv, (const uint32_t(*)[3])b.t, b.nt);
        if (!m) {
            b.failed = 1;
            break;
        }
        b.nv = b.nt = 0;
        for (uint32_t i = 0; i < m->vertex_count; i++)
            sb_vertex(&b, m->vertices[i]);
        for (uint32_t i = 0; i < m->triangle_count; i++)
            sb_tri(&b, m->triangles[i][0], m->triangles[i][1], m->triangles[i][2]);
        prox_mesh_free(m);
    }
    return sb_finish(&b);
}

prox_mesh *prox_mesh_make_torus(double R, double r, int nu, int nv)
{
    if (nu < 3 || nv < 3)
        return NULL;
    shape_buf b = {0};
    for (int i = 0; i < nu; i++) {
        double u = 2 * M_PI * i / nu;
        for (int j = 0; j < nv; j++) {
            double v = 2 * M_PI * j / nv;
            sb_vertex(&b, prox_v3((R + r * cos(v)) * cos(u), (R + r * cos(v)) * sin(u), r * sin(v)));
        }
    }
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            uint32_t a = (uint32_t)(i * nv + j), c = (uint32_t)(((i + 1) % nu) * nv + j);
            uint32_t d = (uint32_t)(((i + 1) % nu) * nv + (j + 1) % nv), e = (uint32_t)(i * nv + (j + 1) % nv);
            sb_tri(&b, a, c, d);
            sb_tri(&b, a, d, e);
        }
    return sb_finish(&b);
}

prox_mesh *prox_mesh_make_soup(uint32_t n, double extent, double size, uint64_t seed)
{
    shape_buf b = {0};
    uint64_t s = seed ? seed : 1;
    for (uint32_t i = 0; i < n; i++) {
        double r[9];
        for (int k = 0; k < 9; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            r[k] = (double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        }
        prox_vec3 c = prox_v3(r[0] * extent, r[1] * extent, r[2] * extent);
        uint32_t a = sb_vertex(&b, c);
        uint32_t bb = sb_vertex(&b, prox_v3_add(c, prox_v3(r[3] * size, r[4] * size, r[5] * size)));
        uint32_t d = sb_vertex(&b, prox_v3_add(c, prox_v3(r[6] * size, r[7] * size, r[8] * size)));
        sb_tri(&b, a, bb, d);
    }
    return sb_finish(&b);
}
