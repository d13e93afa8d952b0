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
 * triangles, redone at load for older files); version 6 the spheres'
 * slabs (5 floats per sphere: a unit normal and the range of offsets
 * along it of the surface piece the sphere stands for, ist_outer.c; the
 * distance query's bound on flat pieces; computed at load for older files,
 * with the outer-ball pass: about 0.2 s for 75k triangles); then a CRC-32
 * (zlib) of everything
 * after the magic. Loading reads the file once and validates sizes,
 * checksum, every index and every number before the tree is used (the box
 * tree's shape too: one parent a node, at most IST_TRITREE_MAX_DEPTH deep;
 * the voxel size against the mesh), the sphere tree's shape, leaf counts
 * and volumes, and that every record's sphere encloses both spheres of
 * every leaf below it (check_contents); saving checks the same, so it
 * never writes a file loading refuses. Older files still load: version 1
 * files (no derived block) get it derived, versions 1 to 3 their outer
 * radii; the secondary centres of versions 1 and 2 cannot be (they come
 * from the voxel assignment of the build), so such a tree keeps the model
 * it was built with, each secondary sphere about its inner sphere's centre
 * (rebuild for the centroid model; their builds' records enclose that
 * model, so the enclosure check holds for them as written). */
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ist_internal.h"

#define IST_MAGIC "PROXIST"
#define IST_VERSION 6u
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

/* version 6's slabs after that */
static size_t slab_size(uint32_t spheres) { return (size_t)spheres * sizeof(float[5]); }

/* a slab as the build makes it: none (normal 0, offsets -inf to inf), or
 * a unit normal (within float rounding) and finite offsets lo <= hi */
static int slab_ok(const float *s)
{
    if (s[0] == 0 && s[1] == 0 && s[2] == 0)
        return s[3] == -INFINITY && s[4] == INFINITY;
    if (!isfinite(s[0]) || !isfinite(s[1]) || !isfinite(s[2]) || !isfinite(s[3]) || !isfinite(s[4]) || !(s[3] <= s[4]))
        return 0;
    double n2 = (double)s[0] * s[0] + (double)s[1] * s[1] + (double)s[2] * s[2];
    return fabs(n2 - 1) < 1e-5;
}

static int valid_id(const prox_ist *t, uint32_t id)
{
    if (id == IST_EMPTY)
        return 1;
    return (id & IST_LEAF) ? (id & ~IST_LEAF) < t->sphere_count : id < t->node_count;
}

/* A bounding sphere (centre, radius) as within() takes it: its radius
 * widened to the build's rounding (it rounds every bounding radius up,
 * relative 1e-6, from the same float centres and radii) */
static inline void bound_of(double o[4], float x, float y, float z, float r)
{
    o[0] = x, o[1] = y, o[2] = z, o[3] = (double)r * (1 + 1e-5) + 1e-7;
}

/* sphere s (centre, radius) inside bound b (bound_of): squared, without a
 * root, as loading checks every leaf against all of its ancestors */
static inline int within(const double b[4], const double s[4])
{
    double dx = s[0] - b[0], dy = s[1] - b[1], dz = s[2] - b[2], room = b[3] - s[3];
    return room >= 0 && dx * dx + dy * dy + dz * dz <= room * room;
}

/* Leaves at most this deep on average (the sum of their depths at most
 * this many times the sphere count): check_sphere_tree checks each leaf
 * against every record above it, so a crafted chain of nodes would make
 * loading quadratic. The build's four-way splits make trees 6 to 8 levels
 * deep on average, 10 at most (the bench meshes at 4096 spheres, bunny at
 * 28.8k, a 10^4:1 box at 50k). */
#define IST_MAX_MEAN_DEPTH 64

/* The sphere tree as the build makes it. Children come after their
 * parents (checked before), so there are no cycles; here: every node but
 * the root below exactly one record slot (so all reached from the root),
 * the root below none, every sphere in exactly one leaf slot, no record
 * without children; the leaf counts and volumes of the records and the
 * header those of the leaves below; and every record's sphere, the root
 * sphere too, enclosing both spheres of every leaf below it (the queries
 * prune on them: a sphere too small, moved or negative drops contacts and
 * volume silently). A record's sphere need not enclose its child's own
 * records (the build encloses each group's leaves directly; in the bench
 * trees most of those stick out a little), so each leaf is checked against
 * all of its ancestors. NULL if it holds, else what does not; *oom = 1 out
 * of memory. */
static const char *check_sphere_tree(const prox_ist *t, int *oom)
{
    const uint32_t nn = t->node_count, ns = t->sphere_count, root = t->tree.root, none = UINT32_MAX;
    /* per node: its record slot (node << 2 | slot), depth, leaves and
     * secondary volume below; per sphere: its leaf slot */
    uint32_t *parent = malloc(sizeof *parent * nn), *depth = malloc(sizeof *depth * nn), *leaves = malloc(sizeof *leaves * nn);
    uint32_t *lslot = malloc(sizeof *lslot * (ns ? ns : 1));
    double *vol = malloc(sizeof *vol * nn);
    uint32_t *stack = NULL;
    double (*path)[4] = NULL;
    const char *why = NULL;
    if (!parent || !depth || !leaves || !lslot || !vol) {
        *oom = 1;
        goto out;
    }
    memset(parent, 0xff, sizeof *parent * nn);
    memset(lslot, 0xff, sizeof *lslot * ns);
    uint64_t depth_sum = 0;
    for (uint32_t i = 0; i < nn && !why; i++) {
        /* every parent of i comes before it: its slot is known by now */
        if ((i == root) != (parent[i] == none)) {
            why = i == root ? "the root below a parent" : "a node not reached from the root";
            break;
        }
        depth[i] = i == root ? 0 : depth[parent[i] >> 2] + 1;
        int kids = 0;
        for (uint32_t j = 0; j < 4; j++) {
            uint32_t c = t->nodes[i].child[j];
            if (c == IST_EMPTY)
                continue;
            kids++;
            uint32_t *at = (c & IST_LEAF) ? &lslot[c & ~IST_LEAF] : &parent[c];
            if (*at != none)
                why = (c & IST_LEAF) ? "a sphere in two leaf slots" : "a node below two parents";
            *at = i << 2 | j;
            if (c & IST_LEAF)
                depth_sum += depth[i] + 1;
        }
        if (!kids)
            why = "a node record without children";
    }
    for (uint32_t s = 0; s < ns && !why; s++)
        if (lslot[s] == none)
            why = "a sphere in no leaf slot";
    if (!why && depth_sum > (uint64_t)IST_MAX_MEAN_DEPTH * ns)
        why = "the sphere tree is too deep";
    /* leaf counts and volumes bottom up (the build's are the leaves' sum,
     * rounded to float once) */
    for (uint32_t i = nn; !why && i-- > 0;) {
        const ist_node *nd = &t->nodes[i];
        uint32_t l = 0;
        double v = 0;
        for (int j = 0; j < 4; j++) {
            uint32_t c = nd->child[j];
            if (c == IST_EMPTY)
                continue;
            uint32_t cl = 1;
            double cv;
            if (c & IST_LEAF) {
                double r2 = t->spheres[c & ~IST_LEAF].r2;
                cv = 4.0 / 3.0 * M_PI * r2 * r2 * r2;
            } else
                cl = leaves[c], cv = vol[c];
            if (nd->cleaves[j] != cl || !(fabs(nd->cvol[j] - cv) <= 1e-5 * cv + FLT_TRUE_MIN))
                why = "a record's leaf count or volume not those of the leaves below";
            l += cl, v += cv;
        }
        leaves[i] = l, vol[i] = v;
    }
    if (!why && (t->root_leaves != leaves[root] || !(fabs(t->root_vol - vol[root]) <= 1e-5 * vol[root] + FLT_TRUE_MIN)))
        why = "the root's leaf count or volume not those of the leaves";
    /* each leaf's two spheres inside every record sphere above it and the
     * root sphere (depth_sum tests): depth first, with the spheres on the
     * path from the root in path[0 .. depth] (contiguous: the tests read
     * no node records but the leaves' parents) */
    if (!why) {
        stack = malloc(sizeof *stack * nn);
        path = malloc(sizeof *path * ((size_t)nn + 1));
        if (!stack || !path) {
            *oom = 1;
            goto out;
        }
        uint32_t n = 0;
        stack[n++] = root;
        while (n && !why) {
            const uint32_t i = stack[--n], d = depth[i];
            const ist_node *nd = &t->nodes[i];
            if (i == root)
                bound_of(path[0], t->root[0], t->root[1], t->root[2], t->root[3]);
            else {
                const ist_node *pn = &t->nodes[parent[i] >> 2];
                const uint32_t pj = parent[i] & 3;
                bound_of(path[d], pn->cx[pj], pn->cy[pj], pn->cz[pj], pn->cr[pj]);
            }
            for (int j = 0; j < 4 && !why; j++) {
                uint32_t c = nd->child[j];
                if (c == IST_EMPTY)
                    continue;
                if (!(c & IST_LEAF)) {
                    stack[n++] = c; /* (each node once: at most nn on the stack) */
                    continue;
                }
                const ist_sphere *q = &t->spheres[c & ~IST_LEAF];
                const float *c2 = t->sec[c & ~IST_LEAF];
                const double s1[4] = {q->x, q->y, q->z, q->r}, s2[4] = {c2[0], c2[1], c2[2], c2[3]};
                double b[4];
                bound_of(b, nd->cx[j], nd->cy[j], nd->cz[j], nd->cr[j]);
                int in = within(b, s1) && within(b, s2);
                for (uint32_t k = 0; in && k <= d; k++)
                    in = within(path[k], s1) && within(path[k], s2);
                if (!in)
                    why = "a record's or the root's sphere not enclosing a leaf below it";
            }
        }
    }
out:
    free(stack);
    free(path);
    free(parent);
    free(depth);
    free(leaves);
    free(lslot);
    free(vol);
    return why;
}

/* Everything a query will follow or compute with, as loading reads it (t
 * before ist_derive; t->adj and the box tree present from version 2 on,
 * t->orad_leaf from version 4 on, t->slab from version 6 on) and as saving writes it. NULL if valid,
 * else what is not; *oom = 1 out of memory. */
static const char *check_contents(const prox_ist *t, int *oom)
{
    *oom = 0;
    const uint32_t root = t->tree.root;
    if (!(t->node_count > 0 && valid_id(t, root) && root != IST_EMPTY && !(root & IST_LEAF)))
        return "bad root node";
    const double dd[9] = {t->root_vol, t->mesh_volume, t->voxel_size, t->voxel_volume, t->surface_gap, t->build_seconds,
                          t->com.x, t->com.y, t->com.z};
    for (int k = 0; k < 9; k++)
        if (!isfinite(dd[k]))
            return "a number not finite";
    for (int k = 0; k < 4; k++)
        if (!isfinite(t->root[k]))
            return "a number not finite";
    if (!(t->root[3] >= 0))
        return "a negative radius";
    if (!(t->mesh_volume > 0) || !(t->root_vol >= 0) || !(t->voxel_volume >= 0) || !(t->surface_gap >= 0))
        return "a negative volume or gap, or a mesh volume not positive";
    if (!(t->build_seconds >= 0))
        return "a negative build time";
    for (uint32_t i = 0; i < t->node_count; i++)
        for (int j = 0; j < 4; j++) {
            const ist_node *nd = &t->nodes[i];
            if (!valid_id(t, nd->child[j]) || (nd->child[j] != IST_EMPTY && nd->child[j] <= i))
                return "a child out of range or not after its parent";
            if (!isfinite(nd->cx[j]) || !isfinite(nd->cy[j]) || !isfinite(nd->cz[j]) || !isfinite(nd->cr[j]) || !isfinite(nd->cvol[j]))
                return "a number not finite";
            if (!(nd->cr[j] >= 0) || !(nd->cvol[j] >= 0))
                return "a negative radius or volume";
        }
    for (uint32_t i = 0; i < t->sphere_count; i++) {
        const ist_sphere *s = &t->spheres[i];
        if (!isfinite(s->x) || !isfinite(s->y) || !isfinite(s->z) || !isfinite(s->r) || !isfinite(s->r2) || !isfinite(t->sec[i][0]) ||
            !isfinite(t->sec[i][1]) || !isfinite(t->sec[i][2]) || (t->orad_leaf && !isfinite(t->orad_leaf[i])))
            return "a number not finite";
        if (!(s->r >= 0) || !(s->r2 >= 0))
            return "a negative radius";
        if (s->tri >= t->tri_count)
            return "a sphere's triangle out of range";
        if (t->orad_leaf && !(t->orad_leaf[i] >= s->r))
            return "an outer radius below its sphere's";
        if (t->slab && !slab_ok(t->slab[i]))
            return "a bad slab (normal not unit, or offsets not finite and ordered)";
    }
    for (uint32_t i = 0; i < t->tri_count; i++)
        if (t->tris[i][0] >= t->vert_count || t->tris[i][1] >= t->vert_count || t->tris[i][2] >= t->vert_count)
            return "a triangle's vertex out of range";
    for (uint32_t i = 0; i < t->vert_count; i++)
        if (!prox_v3_isfinite(t->verts[i]))
            return "a number not finite";
    /* the voxel size: positive, and no finer than the build's grid allows
     * over this mesh (the bounding box of all its vertices, as the build's;
     * the same numbers give the same count) */
    if (!(t->voxel_size > 0))
        return "voxel size not positive";
    if (t->vert_count) {
        prox_vec3 lo = t->verts[0], hi = t->verts[0];
        for (uint32_t i = 1; i < t->vert_count; i++)
            lo = prox_v3_min(lo, t->verts[i]), hi = prox_v3_max(hi, t->verts[i]);
        if (!(ist_grid_cells(prox_v3_sub(hi, lo), t->voxel_size) <= IST_MAX_GRID_CELLS))
            return "voxel size too small for the mesh: no build makes a grid that fine";
        /* the centre of mass (the solid's centroid: torques are taken
         * about it) lies in the vertices' bounding box, rounding aside */
        const double slack = 1e-6 * prox_v3_dist(lo, hi);
        const prox_vec3 c = t->com;
        if (!(c.x >= lo.x - slack && c.y >= lo.y - slack && c.z >= lo.z - slack && c.x <= hi.x + slack && c.y <= hi.y + slack &&
              c.z <= hi.z + slack))
            return "the centre of mass outside the mesh's bounding box";
    }
    if (t->adj) {
        /* the derived block: adjacency in range; the box tree a tree (children
         * after their parent), leaves covering order[] within range, finite */
        const ist_tritree *g = &t->tritree;
        for (uint32_t i = 0; i < t->tri_count; i++)
            if (t->adj[i][0] >= t->tri_count || t->adj[i][1] >= t->tri_count || t->adj[i][2] >= t->tri_count ||
                g->order[i] >= t->tri_count)
                return "a neighbour or leaf-order triangle out of range";
        for (uint32_t i = 0; i < t->tri_count; i++)
            for (int k = 0; k < 9; k++)
                if (!isfinite(g->ltri[i][k]))
                    return "a number not finite";
        if (g->node_count == 0)
            return "no triangle box tree";
        int ok = 1;
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
        if (!ok)
            return "a bad box of the triangle box tree";
        int shape = ist_tritree_shape_ok(g);
        if (shape < 0) {
            *oom = 1;
            return NULL;
        }
        if (!shape)
            return "the triangle box tree not a tree";
    }
    return check_sphere_tree(t, oom);
}

int prox_ist_save(const prox_ist *t, const char *path, char *err, size_t errlen)
{
    uint32_t boxes = t->tritree.nodes ? t->tritree.node_count : 0;
    if (!t->adj || (t->tri_count && (!boxes || !t->tritree.obb)) || !t->orad_leaf || !t->slab) {
        snprintf(err, errlen, "%s: inner sphere tree not fully derived", path);
        return -1;
    }
    /* never write what loading would refuse (a file prox build wrote and
     * cannot read back sends the user round in a circle) */
    int oom;
    const char *why = check_contents(t, &oom);
    if (oom) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (why) {
        snprintf(err, errlen, "%s: not written: the tree fails the checks of loading (%s)", path, why);
        return -1;
    }
    size_t n = payload_size(t->node_count, t->sphere_count, t->vert_count, t->tri_count) + derived_size(t->tri_count, boxes) +
               centres_size(t->sphere_count) + outer_size(t->sphere_count) + obb_size(boxes) + slab_size(t->sphere_count);
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
    memcpy(p, t->slab, slab_size(t->sphere_count)), p += slab_size(t->sphere_count);
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
        snprintf(err, errlen, "%s: %s", path, buf ? "cannot read" : "out of memory");
        fclose(f);
        free(buf);
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
    if (h[0] >= 6)
        n += slab_size(h[3]);
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
    if (h[0] >= 6) {
        t->slab = malloc(slab_size(t->sphere_count));
        if (!t->slab)
            goto oom;
        memcpy(t->slab, p, slab_size(t->sphere_count)), p += slab_size(t->sphere_count);
    }
    /* validate everything a query will follow or compute with */
    int oom = 0;
    const char *why = check_contents(t, &oom);
    if (oom)
        goto oom;
    if (why) {
        snprintf(err, errlen, "%s: inconsistent .ist contents (%s); rebuild it with prox build", path, why);
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
