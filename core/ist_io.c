/* ist_io.c - .ist cache files.
 *
 * Layout (native little-endian, checked): 8-byte magic "PROXIST\0", then a
 * header of uint32 fields (version, endian tag 0x01020304, node count,
 * sphere count, vertex count, triangle count, root id, root leaf count),
 * 4 floats of the root sphere, 9 doubles (root volume, mesh volume, voxel
 * size, voxel volume, surface gap, build seconds, centre of mass), a uint32
 * inside-voxel count, then the arrays (nodes, spheres, vertices as doubles,
 * triangles); version 2 adds what loading would otherwise derive (tens of
 * ms on a 75k-triangle mesh): a uint32 box count, the edge adjacency (3
 * uint32 per triangle), the triangle box tree (32-byte nodes), its leaf
 * order (uint32 per triangle) and leaf-ordered float triangles (9 floats);
 * version 3 adds the secondary spheres' centres (3 floats per sphere;
 * their radii are the spheres' r2); version 4 the spheres' outer radii (a
 * float per sphere: the distance query's bound on the surface piece each
 * sphere stands for, ist_outer.c; a build-time computation, about 0.4 s
 * for a 75k-triangle mesh, redone at load for older files); version 5 the
 * triangle box tree's oriented boxes (15 floats per box: axes, lower and
 * upper extents along them, ist_tritree_obb; about 0.13 s for 75k
 * triangles, redone at load for older files); then a CRC-32 (zlib) of
 * everything
 * after the magic. Loading reads the file once and validates sizes,
 * checksum, every index and every number before the tree is used (the box
 * tree's shape too: one parent a node, at most IST_TRITREE_MAX_DEPTH deep), and that
 * each node record's sphere of a leaf child encloses both of the leaf's
 * spheres. Older files still load: version 1 files (no derived block) get
 * it derived, versions 1 to 3 their outer radii; the secondary centres of
 * versions 1 and 2 cannot be (they come from the voxel assignment of the
 * build), so such a tree keeps the model it was built with, each secondary
 * sphere about its inner sphere's centre (rebuild for the centroid model). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ist_internal.h"

#define IST_MAGIC "PROXIST"
#define IST_VERSION 5u
#define IST_HEADER_U32 8

_Static_assert(sizeof(ist_node) == 112, "ist_node layout is part of the file format");
_Static_assert(sizeof(ist_sphere) == 24, "ist_sphere layout is part of the file format");
_Static_assert(sizeof(ist_box) == 32, "ist_box layout is part of the file format");

static size_t payload_size(uint32_t nodes, uint32_t spheres, uint32_t verts, uint32_t tris)
{
    return IST_HEADER_U32 * 4 + 4 * 4 + 9 * 8 + 4 + (size_t)nodes * sizeof(ist_node) + (size_t)spheres * sizeof(ist_sphere) +
           (size_t)verts * sizeof(prox_vec3) + (size_t)tris * sizeof(uint32_t[3]);
}

/* version 2's derived block after that: box count, adjacency, boxes, order, float triangles */
static size_t derived_size(uint32_t tris, uint32_t boxes)
{
    return 4 + (size_t)tris * sizeof(uint32_t[3]) + (size_t)boxes * sizeof(ist_box) + (size_t)tris * sizeof(uint32_t) +
           (size_t)tris * sizeof(float[9]);
}

/* version 3's secondary centres after that */
static size_t centres_size(uint32_t spheres) { return (size_t)spheres * sizeof(float[3]); }

/* version 4's outer radii after that */
static size_t outer_size(uint32_t spheres) { return (size_t)spheres * sizeof(float); }

/* version 5's oriented boxes of the triangle box tree after that */
static size_t obb_size(uint32_t boxes) { return (size_t)boxes * sizeof(float[15]); }

int prox_ist_save(const prox_ist *t, const char *path, char *err, size_t errlen)
{
    uint32_t boxes = t->tritree.nodes ? t->tritree.node_count : 0;
    if (!t->adj || (t->tri_count && (!boxes || !t->tritree.obb)) || !t->orad_leaf) {
        snprintf(err, errlen, "%s: inner sphere tree not fully derived", path);
        return -1;
    }
    size_t n = payload_size(t->node_count, t->sphere_count, t->vert_count, t->tri_count) + derived_size(t->tri_count, boxes) +
               centres_size(t->sphere_count) + outer_size(t->sphere_count) + obb_size(boxes);
    unsigned char *buf = malloc(8 + n + 4);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    memcpy(buf, IST_MAGIC, 8);
    unsigned char *p = buf + 8;
    uint32_t h[IST_HEADER_U32] = {IST_VERSION, 0x01020304u, t->node_count, t->sphere_count, t->vert_count, t->tri_count,
                                  t->tree.root, t->root_leaves};
    memcpy(p, h, sizeof h), p += sizeof h;
    memcpy(p, t->root, 16), p += 16;
    double dd[9] = {t->root_vol, t->mesh_volume, t->voxel_size, t->voxel_volume, t->surface_gap, t->build_seconds,
                    t->com.x, t->com.y, t->com.z};
    memcpy(p, dd, sizeof dd), p += sizeof dd;
    memcpy(p, &t->voxels_inside, 4), p += 4;
    memcpy(p, t->nodes, sizeof(ist_node) * t->node_count), p += sizeof(ist_node) * t->node_count;
    memcpy(p, t->spheres, sizeof(ist_sphere) * t->sphere_count), p += sizeof(ist_sphere) * t->sphere_count;
    memcpy(p, t->verts, sizeof(prox_vec3) * t->vert_count), p += sizeof(prox_vec3) * t->vert_count;
    memcpy(p, t->tris, sizeof(uint32_t[3]) * t->tri_count), p += sizeof(uint32_t[3]) * t->tri_count;
    memcpy(p, &boxes, 4), p += 4;
    if (t->tri_count) {
        memcpy(p, t->adj, sizeof(uint32_t[3]) * t->tri_count), p += sizeof(uint32_t[3]) * t->tri_count;
        memcpy(p, t->tritree.nodes, sizeof(ist_box) * boxes), p += sizeof(ist_box) * boxes;
        memcpy(p, t->tritree.order, sizeof(uint32_t) * t->tri_count), p += sizeof(uint32_t) * t->tri_count;
        memcpy(p, t->tritree.ltri, sizeof(float[9]) * t->tri_count), p += sizeof(float[9]) * t->tri_count;
    }
    for (uint32_t i = 0; i < t->sphere_count; i++)
        memcpy(p, t->sec[i], sizeof(float[3])), p += sizeof(float[3]);
    memcpy(p, t->orad_leaf, outer_size(t->sphere_count)), p += outer_size(t->sphere_count);
    if (boxes)
        memcpy(p, t->tritree.obb, obb_size(boxes)), p += obb_size(boxes);
    uint32_t crc = (uint32_t)crc32(0L, buf + 8, (uInt)n);
    memcpy(p, &crc, 4);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf, 1, 8 + n + 4, f) == 8 + n + 4;
    if (f && fclose(f) != 0)
        ok = 0;
    free(buf);
    if (!ok) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int valid_id(const prox_ist *t, uint32_t id)
{
    if (id == IST_EMPTY)
        return 1;
    return (id & IST_LEAF) ? (id & ~IST_LEAF) < t->sphere_count : id < t->node_count;
}

int prox_ist_load(const char *path, prox_ist **out, char *err, size_t errlen)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    size_t min = 8 + payload_size(0, 0, 0, 0) + 4;
    if (size < 0 || (size_t)size < min) {
        fclose(f);
        snprintf(err, errlen, "%s: not an .ist file (too short: %ld bytes)", path, size);
        return -1;
    }
    unsigned char *buf = malloc((size_t)size);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(buf);
        snprintf(err, errlen, "%s: cannot read", path);
        return -1;
    }
    fclose(f);
    prox_ist *t = NULL;
    uint32_t h[IST_HEADER_U32];
    if (memcmp(buf, IST_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not an .ist file (bad magic)", path);
        goto fail;
    }
    memcpy(h, buf + 8, sizeof h);
    if (h[1] != 0x01020304u) {
        snprintf(err, errlen, "%s: .ist file from a machine of other byte order", path);
        goto fail;
    }
    if (h[0] < 1u || h[0] > IST_VERSION) {
        snprintf(err, errlen, "%s: .ist version %u, this prox reads versions 1 to %u; rebuild it with prox build", path, h[0], IST_VERSION);
        goto fail;
    }
    if (h[2] > (1u << 28) || h[3] > (1u << 28) || h[4] > (1u << 28) || h[5] > (1u << 28) || h[3] == 0) {
        snprintf(err, errlen, "%s: corrupt .ist header (counts out of range)", path);
        goto fail;
    }
    size_t n = payload_size(h[2], h[3], h[4], h[5]);
    uint32_t boxes = 0;
    if (h[0] >= 2) {
        if ((size_t)size >= 8 + n + 4 + 4)
            memcpy(&boxes, buf + 8 + n, 4);
        if (boxes > 2 * h[5]) {
            snprintf(err, errlen, "%s: corrupt .ist header (box count out of range)", path);
            goto fail;
        }
        n += derived_size(h[5], boxes);
    }
    if (h[0] >= 3)
        n += centres_size(h[3]);
    if (h[0] >= 4)
        n += outer_size(h[3]);
    if (h[0] >= 5)
        n += obb_size(boxes);
    if ((size_t)size != 8 + n + 4) {
        snprintf(err, errlen, "%s: truncated or padded .ist file (%ld bytes, expected %zu)", path, size, 8 + n + 4);
        goto fail;
    }
    uint32_t crc;
    memcpy(&crc, buf + 8 + n, 4);
    if ((uint32_t)crc32(0L, buf + 8, (uInt)n) != crc) {
        snprintf(err, errlen, "%s: checksum mismatch: the .ist file is corrupt; rebuild it with prox build", path);
        goto fail;
    }
    t = calloc(1, sizeof *t);
    if (!t)
        goto oom;
    t->node_count = h[2], t->sphere_count = h[3], t->vert_count = h[4], t->tri_count = h[5];
    t->tree.root = h[6];
    t->root_leaves = h[7];
    const unsigned char *p = buf + 8 + sizeof h;
    memcpy(t->root, p, 16), p += 16;
    double dd[9];
    memcpy(dd, p, sizeof dd), p += sizeof dd;
    memcpy(&t->voxels_inside, p, 4), p += 4;
    t->root_vol = dd[0], t->mesh_volume = dd[1], t->voxel_size = dd[2], t->voxel_volume = dd[3], t->surface_gap = dd[4];
    t->build_seconds = dd[5];
    t->com = prox_v3(dd[6], dd[7], dd[8]);
    t->nodes = malloc(sizeof(ist_node) * (t->node_count ? t->node_count : 1));
    t->spheres = malloc(sizeof(ist_sphere) * t->sphere_count);
    t->verts = malloc(sizeof(prox_vec3) * (t->vert_count ? t->vert_count : 1));
    t->tris = malloc(sizeof(uint32_t[3]) * (t->tri_count ? t->tri_count : 1));
    t->sec = malloc(sizeof *t->sec * t->sphere_count);
    if (!t->nodes || !t->spheres || !t->verts || !t->tris || !t->sec)
        goto oom;
    memcpy(t->nodes, p, sizeof(ist_node) * t->node_count), p += sizeof(ist_node) * t->node_count;
    memcpy(t->spheres, p, sizeof(ist_sphere) * t->sphere_count), p += sizeof(ist_sphere) * t->sphere_count;
    memcpy(t->verts, p, sizeof(prox_vec3) * t->vert_count), p += sizeof(prox_vec3) * t->vert_count;
    memcpy(t->tris, p, sizeof(uint32_t[3]) * t->tri_count), p += sizeof(uint32_t[3]) * t->tri_count;
    if (h[0] >= 2)
        p += 4; /* box count, read above */
    if (h[0] >= 2 && t->tri_count) {
        ist_tritree *g = &t->tritree;
        t->adj = malloc(sizeof(uint32_t[3]) * t->tri_count);
        g->nodes = malloc(sizeof(ist_box) * (boxes ? boxes : 1));
        g->order = malloc(sizeof(uint32_t) * t->tri_count);
        g->ltri = malloc(sizeof(float[9]) * t->tri_count);
        if (!t->adj || !g->nodes || !g->order || !g->ltri)
            goto oom;
        g->node_count = boxes;
        memcpy(t->adj, p, sizeof(uint32_t[3]) * t->tri_count), p += sizeof(uint32_t[3]) * t->tri_count;
        memcpy(g->nodes, p, sizeof(ist_box) * boxes), p += sizeof(ist_box) * boxes;
        memcpy(g->order, p, sizeof(uint32_t) * t->tri_count), p += sizeof(uint32_t) * t->tri_count;
        memcpy(g->ltri, p, sizeof(float[9]) * t->tri_count), p += sizeof(float[9]) * t->tri_count;
    }
    for (uint32_t i = 0; i < t->sphere_count; i++) {
        const ist_sphere *q = &t->spheres[i];
        if (h[0] >= 3)
            memcpy(t->sec[i], p, sizeof(float[3])), p += sizeof(float[3]);
        else /* versions 1 and 2: secondary spheres about the inner spheres' centres */
            t->sec[i][0] = q->x, t->sec[i][1] = q->y, t->sec[i][2] = q->z;
        t->sec[i][3] = q->r2;
    }
    if (h[0] >= 4) {
        t->orad_leaf = malloc(outer_size(t->sphere_count));
        if (!t->orad_leaf)
            goto oom;
        memcpy(t->orad_leaf, p, outer_size(t->sphere_count)), p += outer_size(t->sphere_count);
    }
    if (h[0] >= 5 && boxes) { /* (boxes <= 2 x triangles: the box tree was read above) */
        t->tritree.obb = malloc(obb_size(boxes));
        if (!t->tritree.obb)
            goto oom;
        memcpy(t->tritree.obb, p, obb_size(boxes)), p += obb_size(boxes);
    }
    /* validate everything a query will follow or compute with */
    int ok = valid_id(t, t->tree.root) && t->tree.root != IST_EMPTY && (t->tree.root & IST_LEAF) == 0 && t->node_count > 0;
    for (int k = 0; k < 4; k++)
        ok = ok && isfinite(t->root[k]);
    for (int k = 0; k < 9; k++)
        ok = ok && isfinite(dd[k]);
    for (uint32_t i = 0; ok && i < t->node_count; i++)
        for (int j = 0; j < 4; j++) {
            const ist_node *nd = &t->nodes[i];
            ok = ok && valid_id(t, nd->child[j]) && isfinite(nd->cx[j]) && isfinite(nd->cy[j]) && isfinite(nd->cz[j]) &&
                 isfinite(nd->cr[j]) && isfinite(nd->cvol[j]) && (nd->child[j] == IST_EMPTY || nd->child[j] > i);
        }
    for (uint32_t i = 0; ok && i < t->sphere_count; i++) {
        const ist_sphere *s = &t->spheres[i];
        ok = isfinite(s->x) && isfinite(s->y) && isfinite(s->z) && s->r >= 0 && s->r2 >= 0 && isfinite(s->r) &&
             isfinite(s->r2) && s->tri < t->tri_count && isfinite(t->sec[i][0]) && isfinite(t->sec[i][1]) &&
             isfinite(t->sec[i][2]) && (!t->orad_leaf || (isfinite(t->orad_leaf[i]) && t->orad_leaf[i] >= s->r));
    }
    /* a record's sphere of a leaf child encloses both of the leaf's spheres
     * (the volume queries prune on it): a secondary centre moved off its
     * place would drop overlaps silently */
    for (uint32_t i = 0; ok && i < t->node_count; i++)
        for (int j = 0; j < 4; j++) {
            const ist_node *nd = &t->nodes[i];
            uint32_t c = nd->child[j];
            if (c == IST_EMPTY || !(c & IST_LEAF))
                continue;
            const ist_sphere *q = &t->spheres[c & ~IST_LEAF];
            const float *sc = t->sec[c & ~IST_LEAF];
            double cr = (double)nd->cr[j] * (1 + 1e-5) + 1e-7;
            double dx = (double)sc[0] - nd->cx[j], dy = (double)sc[1] - nd->cy[j], dz = (double)sc[2] - nd->cz[j];
            double ex = (double)q->x - nd->cx[j], ey = (double)q->y - nd->cy[j], ez = (double)q->z - nd->cz[j];
            ok = ok && sqrt(dx * dx + dy * dy + dz * dz) + sc[3] <= cr && sqrt(ex * ex + ey * ey + ez * ez) + q->r <= cr;
        }
    for (uint32_t i = 0; ok && i < t->tri_count; i++)
        ok = t->tris[i][0] < t->vert_count && t->tris[i][1] < t->vert_count && t->tris[i][2] < t->vert_count;
    for (uint32_t i = 0; ok && i < t->vert_count; i++)
        ok = prox_v3_isfinite(t->verts[i]);
    if (ok && t->adj) {
        /* the derived block: adjacency in range; the box tree a tree (children
         * after their parent), leaves covering order[] within range, finite */
        const ist_tritree *g = &t->tritree;
        for (uint32_t i = 0; ok && i < t->tri_count; i++)
            ok = t->adj[i][0] < t->tri_count && t->adj[i][1] < t->tri_count && t->adj[i][2] < t->tri_count &&
                 g->order[i] < t->tri_count;
        for (uint32_t i = 0; ok && i < t->tri_count; i++)
            for (int k = 0; k < 9; k++)
                ok = ok && isfinite(g->ltri[i][k]);
        ok = ok && g->node_count > 0;
        for (uint32_t i = 0; ok && i < g->node_count; i++) {
            const ist_box *b = &g->nodes[i];
            for (int k = 0; k < 3; k++)
                ok = ok && isfinite(b->lo[k]) && isfinite(b->hi[k]) && b->lo[k] <= b->hi[k];
            if (b->a & IST_BOX_LEAF)
                ok = ok && b->b >= 1 && b->b <= IST_LEAF_TRIS && (uint64_t)(b->a & ~IST_BOX_LEAF) + b->b <= t->tri_count;
            else
                ok = ok && b->a > i && b->b > i && b->a < g->node_count && b->b < g->node_count;
            for (int k = 0; ok && g->obb && k < 15; k++)
                ok = isfinite(g->obb[i][k]) && (k < 9 || k >= 12 || g->obb[i][k] <= g->obb[i][k + 3]);
            /* the query's box distance needs orthonormal axes (a build's are
             * within a few float ulps) */
            for (int a = 0; ok && g->obb && a < 3; a++)
                for (int c = a; ok && c < 3; c++) {
                    const float *u = g->obb[i] + 3 * a, *v = g->obb[i] + 3 * c;
                    double d = (double)u[0] * v[0] + (double)u[1] * v[1] + (double)u[2] * v[2];
                    ok = fabs(d - (a == c)) < 1e-4;
                }
        }
        int shape = ok ? ist_tritree_shape_ok(g) : 1;
        if (shape < 0)
            goto oom;
        ok = ok && shape;
    }
    if (!ok) {
        snprintf(err, errlen, "%s: inconsistent .ist contents (bad index or number); rebuild it with prox build", path);
        goto fail;
    }
    if (ist_derive(t) != 0)
        goto oom;
    t->tree.type = PROX_TREE_IST;
    t->tree.impl = t;
    t->tree.volume = t->mesh_volume;
    t->tree.com = t->com;
    free(buf);
    *out = t;
    return 0;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
fail:
    free(buf);
    prox_ist_free(t);
    return -1;
}
