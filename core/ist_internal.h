/* ist_internal.h - the inner sphere tree layout, for handlers in libprox.
 *
 * Node ids seen by the engine: an inner node index, or IST_LEAF | sphere
 * index. Every inner node record holds its up to four children's bounding
 * spheres struct-of-arrays, so one node-pair expansion reads two records
 * and tests 16 child pairs. A child's bounding sphere encloses both
 * spheres of every leaf below it, the inner (primary) sphere and the
 * secondary sphere (its own centre, see sec), so it bounds both the
 * distance model and the volume model; a leaf child's is centred on its
 * inner sphere. All in the mesh's local frame, floats.
 */
#ifndef PROX_IST_INTERNAL_H
#define PROX_IST_INTERNAL_H

#include <math.h>
#include <stddef.h>

#include "prox_bvh.h"
#include "prox_ist.h"
#include "triangle_internal.h"

#define IST_LEAF 0x80000000u
#define IST_EMPTY 0xffffffffu

typedef struct ist_node {
    float cx[4], cy[4], cz[4], cr[4]; /* children's bounding spheres */
    float cvol[4];                    /* secondary volume below each child */
    uint32_t cleaves[4];              /* leaf count below each child */
    uint32_t child[4];                /* node index, IST_LEAF | sphere, or IST_EMPTY */
} ist_node;

typedef struct ist_sphere {
    float x, y, z;
    float r;   /* inner (primary) radius: inside the mesh, no overlaps */
    float r2;  /* secondary radius: the volume it accounts for (centre: prox_ist.sec) */
    uint32_t tri; /* closest triangle of the centre */
} ist_sphere;

/* A node's record for the volume queries (derived, per inner node): its
 * children's spheres bounding only their secondary spheres (a leaf child:
 * its secondary sphere itself; an inner child: about the node record's
 * centre, never larger than cr; an empty slot: radius -1e30, so it never
 * overlaps), and the child ids, in one 80-byte record. */
typedef struct ist_vrec {
    float x[4], y[4], z[4], r[4];
    uint32_t child[4];
} ist_vrec;

/* Box tree over the triangles (ist_tritree.c): closest-point queries for the
 * distance refinement. Built with the tree and stored in .ist files
 * (version 2 on; derived at load from older ones). A node is a
 * float box rounded outwards; leaf: a = IST_BOX_LEAF | first index into
 * order, b = count; inner: a, b = children. */
#define IST_BOX_LEAF 0x80000000u
/* triangles in a leaf of the triangle box tree, at most: the wide tree's
 * leaves hold them as four SSE lanes (checked on load) */
#define IST_LEAF_TRIS 4
typedef struct ist_box {
    float lo[3], hi[3];
    uint32_t a, b;
} ist_box;
/* The same tree collapsed to four children a node for the queries
 * (derived at build and load, never stored): child oriented boxes as SSE lanes,
 * leaves of up to four triangles as lanes (axis i of a vector in row i; an
 * empty lane repeats lane 0). A leaf holds what the float kernel needs of
 * each triangle a, b, c besides the query point, computed at load in
 * floats as the kernel would compute them (ist_tritree.c, widen_leaf). */
#define IST_WIDE_LEAF 0x80000000u
typedef struct ist_wnode {
    _Alignas(16) float ax[9][4]; /* lane k's box axes: axis i, component c in ax[3i + c][k] */
    float lo[3][4], hi[3][4];    /* its extent along axis i; an empty lane: lo = +inf, hi = -inf (never near) */
    uint32_t child[4];           /* wide node, IST_WIDE_LEAF | leaf block, or IST_EMPTY */
} ist_wnode;
typedef struct ist_wleaf {
    _Alignas(16) float a[3][4], b[3][4];        /* corners a and b */
    float ab[3][4], ac[3][4], bc[3][4], n[3][4]; /* b - a, c - a, c - b, ab x ac */
    float d00[4], d01[4], d11[4], dbc[4];       /* ab . ab, ab . ac, ac . ac, bc . bc */
    float den[4];                               /* d00 d11 - d01^2 (|n|^2) */
    uint32_t solid[4];                          /* all ones where den > 1e-6 d00 d11, else 0 */
    uint32_t first, count;                      /* their range of `order` (leaf order) */
} ist_wleaf;
/* Rows on 16 bytes (malloc's alignment on x86-64, alignof(max_align_t)):
 * the SSE kernels load them aligned, and GCC folds such loads into the
 * arithmetic (ist_tritree.c, row). A block is 400 bytes, 392 before. */
_Static_assert(sizeof(ist_wnode) % 16 == 0 && sizeof(ist_wleaf) % 16 == 0, "wide tree rows on 16 bytes");
_Static_assert(_Alignof(max_align_t) >= _Alignof(ist_wleaf) && _Alignof(max_align_t) >= _Alignof(ist_wnode),
               "malloc and realloc return blocks aligned for the wide tree's rows");
typedef struct ist_tritree {
    ist_box *nodes;
    uint32_t *order; /* triangle indices, leaf ranges */
    float (*ltri)[9]; /* the triangles in leaf order, float: one stream per leaf */
    uint32_t node_count;
    float (*obb)[15]; /* per binary node: an oriented box, axes (3 x 3), lo[3], hi[3] along them (ist_tritree_obb) */
    ist_wnode *wide;  /* wide node 0 is the root */
    ist_wleaf *wleaf;
    uint32_t wide_count, wleaf_count;
} ist_tritree;

struct prox_ist {
    prox_tree tree;
    float root[4]; /* bounding sphere of everything */
    double root_vol;
    uint32_t root_leaves;
    ist_node *nodes;
    uint32_t node_count;
    ist_sphere *spheres;
    uint32_t sphere_count;
    uint32_t thin_spheres; /* of them, added for thin parts at build (not stored in files: 0 after a load) */
    prox_vec3 *verts;
    uint32_t (*tris)[3];
    uint32_t vert_count, tri_count;
    double mesh_volume, voxel_size, voxel_volume, surface_gap, build_seconds;
    uint32_t voxels_inside;
    prox_vec3 com;
    /* derived (not stored in files): every inner node's own bounding
     * sphere, secondary volume and leaf count, from its parent's record */
    float (*nsph)[4];
    float *nvol;
    uint32_t *nleaves;
    uint32_t (*adj)[3]; /* edge-adjacent triangles (closed mesh: always 3) */
    uint8_t *tri_flat;  /* bit i of byte i / 8: triangle i is flat (point_triangle_flat) */
    /* per node record, per child: radius about the child's centre that
     * encloses the primary spheres below it (distance, collide, contacts
     * only need those; the record's cr also covers the secondary radii,
     * about 1.4x larger) */
    float (*dr)[4];
    /* outer balls (ist_outer.c): per sphere a radius about its centre
     * that reaches every surface point assigned to it, so the balls cover
     * the surface; per node record, its children's outer radii about the
     * record's child centres. The distance query bounds the surfaces with
     * them. */
    float *orad_leaf;
    float (*orad)[4];
    /* slabs (ist_outer.c): per sphere, a unit normal (its attached
     * triangle's) and the range [lo, hi] of n . x over the surface piece
     * assigned to it (stored in files from version 6 on, computed at load
     * for older ones); no slab: n = 0, lo = -inf, hi = inf. Derived: the
     * flat ones marked (sflat, 1 where thinner than IST_SLAB_FLAT times
     * the outer radius). The distance query bounds flat pieces with them. */
    float (*slab)[5];
    uint8_t *sflat;
    /* per node: centroid of its leaves' secondary volume and the radius of
     * a ball of that volume (the expected-overlap model, see
     * expected_vol in ist_penvol.c) */
    float (*ncen)[4];
    /* per node record: its children's volume balls as lanes (x[4], y[4],
     * z[4], r[4]; r = 0 for an empty slot), for the expected overlap */
    float (*cball)[16];
    ist_tritree tritree;
    /* per sphere: its secondary sphere (4.2.1), the volume model of
     * penetration volume: centre (the centroid of the voxels it accounts
     * for; in version 1 and 2 files the inner sphere's centre) and radius
     * (a copy of spheres[].r2). Apart from ist_sphere so a volume query
     * reads one aligned 16-byte record per leaf and distance queries never
     * load it. */
    float (*sec)[4];
    /* derived: per sphere, the radius about its (primary) centre that
     * encloses both of its spheres (a node record's sphere for a leaf child) */
    float *lbr;
    ist_vrec *vrec; /* derived, per node: see ist_vrec */
    /* a mesh BVH of the surface (verts, tris; leaf ids = triangle indices),
     * for queries against mesh BVHs (ist_mesh.c); NULL until
     * prox_ist_prepare_mesh builds it (not stored in files) */
    prox_bvh *mesh_bvh;
};

/* Float margins grow with the coordinates' size: the distance query's
 * prefilter's (ist_fx_prepare) with |t|, the triangle box tree's
 * (ist_tritree_closest) with the query point's. Far apart they outgrow the
 * objects and prune nothing (knot1, unit bounding box diagonal, against
 * itself at |t| = 1e4: margins of 0.1 and 0.04, 45,000 expansions a
 * query where |t| = 100 took 1,450). Where the prefilter's margin exceeds
 * this fraction of the objects' size (the sum of the root spheres' radii),
 * the distance query works in doubles instead (ist_fx.far_margin): on
 * knot1 from |t| ~ 300 on. Measured (callgrind, 20 poses a set, knot1
 * against itself at |t| = K + U(0, 1)): in doubles 1,400 expansions a
 * query from K = 300 to 1e8, 1.95M instructions; in floats at K = 100
 * 1,450 and 1.17M, at 1e3 2,450 and 1.8M, at 1e4 45,000 and 20M. At 1e-4
 * (doubles from K ~ 10 on) K = 100 took 1.7x the instructions. */
#define IST_FAR 3e-3

int ist_tritree_build(prox_ist *t); /* 0, or -1 out of memory */
/* the wide tree from the binary one (build and load); 0, or -1 out of memory */
int ist_tritree_widen(ist_tritree *g);
/* the binary nodes' oriented boxes (build, and load of files before version 5); 0, or -1 out of memory */
int ist_tritree_obb(ist_tritree *g);
/* A loaded box tree's shape: every node below one parent at most, and no
 * deeper than IST_TRITREE_MAX_DEPTH (the build's surface-area splits stop
 * at depth 40, its median splits add at most 30): 1, 0 if not, -1 out of
 * memory. The derivations recurse over the tree. */
#define IST_TRITREE_MAX_DEPTH 80
int ist_tritree_shape_ok(const ist_tritree *g);
/* A slab counts as flat (and the distance query bounds its piece with it)
 * when its thickness is at most this fraction of its outer radius. Flat
 * faces give 0; the median over the bench meshes' default trees is 0.14
 * (fandisk) to 0.50 (armadillo), and about a quarter of bunny00's and
 * fandisk's spheres hold no surface at all (no slab). Measured: see
 * settle_leaf in ist_distance.c. */
#define IST_SLAB_FLAT 0.05f

/* outer balls and slabs: per sphere (every triangle against the tree:
 * build time; outer radii already set, as loaded from a file, are kept)
 * and per node record (bottom up: load time; the slabs' flat marks too).
 * 0, or -1 out of memory. */
int ist_outer_build(prox_ist *t);
/* The inner sphere nearest p (t's frame) in the |p - c| - r sense: a
 * depth-first descent of the records, nearer children first, pruned by the
 * primary bounding radii (dr). No allocation or recursion: a stack of 256
 * holds any tree up to 84 levels deep (the builds' are 6-10); past it
 * branches are skipped, and the sphere is a near one, not the nearest. */
uint32_t ist_nearest_sphere(const prox_ist *t, prox_vec3 p);
int ist_outer_lanes(prox_ist *t);
void ist_tritree_free(ist_tritree *g);
/* Closest point of the surface to p (mesh frame), searching only closer
 * than `bound` (INFINITY: anywhere). Returns the distance and sets *tri and
 * *closest, or INFINITY with *tri = UINT32_MAX when nothing is closer than
 * bound. Adds the triangles tested to *tests. No allocation. deadline_ns
 * (0: none; CLOCK_MONOTONIC): past it the search stops and answers with the
 * closest triangle found so far (a real one, not necessarily the closest)
 * and sets *cut (if given; left alone otherwise). */
double ist_tritree_closest(const prox_ist *t, prox_vec3 p, double bound, uint32_t *tri, prox_vec3 *closest, uint32_t *tests,
                           uint64_t deadline_ns, int *cut);

/* ist_tritree_closest in doubles (ist_far.c), for points whose
 * coordinates are large for the mesh (IST_FAR): its float ranking's margin,
 * 4e-6 of the coordinates' size, would keep every triangle. The same
 * contract, and the answer is the least exact distance below `bound`
 * (lowest triangle index at a tie). */
__attribute__((cold)) double ist_tritree_closest_far(const prox_ist *t, prox_vec3 p, double bound, uint32_t *tri, prox_vec3 *closest,
                                                     uint32_t *tests, uint64_t deadline_ns, int *cut);

/* The triangles of t within `radius` of p (t's frame) that reach past the
 * plane u . x = level (u a unit vector) by more than `above`: max u . v -
 * level over their corners v (floats, both tests grown by their rounding
 * error; boxes that reach no further are not descended). At most `cap`
 * (the nearest to p kept; their indices into tri, float distances into
 * dist); cap 0: none kept, only *most wanted. *most: at least the largest
 * reach among them (an upper bound, never below `above`). Returns how many
 * were kept. No allocation: a fixed stack (children beyond its 128 entries
 * are skipped). deadline_ns (0: none; CLOCK_MONOTONIC): past it the search
 * stops, sets *cut (if not NULL) and answers with what it found (*most
 * then bounds nothing). */
uint32_t ist_tritree_reach(const prox_ist *t, prox_vec3 p, double radius, prox_vec3 u, double level, double above, uint32_t cap,
                           uint32_t *tri, float *dist, double *most, uint64_t deadline_ns, int *cut);

/* tri_flat's size: a bit a triangle */
#define IST_TRI_FLAT_BYTES(n) ((size_t)(n) / 8 + 1)

/* distance from p to triangle `tri` of t (t's frame), its closest point in
 * *q. A triangle's flatness comes from tri_flat (ist_derive, which every
 * tree goes through, computes it by the same expression from the same
 * vertices: the same answers bit for bit); the flat ones, rare, take
 * prox_point_triangle_dist2_edges out of line (the whole test inlined a
 * second time beside the solid case, the query ran 0.3-0.4% more
 * instructions than before instead of 0.1-1.6% fewer). Callgrind, default
 * query, 40 random / 80 coherent bench poses: armadillo 22.89M -> 22.53M /
 * 31.50M -> 31.07M, bunny00 34.68M -> 34.21M / 37.82M -> 37.42M, knot1
 * 17.85M -> 17.67M / 29.40M -> 29.13M, fandisk 17.05M -> 16.89M / 13.95M
 * -> 13.94M, elephant 14.67M -> 14.47M / 40.69M -> 40.24M. */

static inline double ist_point_tri_dist(const prox_ist *t, uint32_t tri, prox_vec3 p, prox_vec3 *q)
{
    const prox_vec3 *v = t->verts;
    const prox_vec3 a = v[t->tris[tri][0]], b = v[t->tris[tri][1]], c = v[t->tris[tri][2]];
    if (t->tri_flat[tri >> 3] >> (tri & 7) & 1)
        return sqrt(prox_point_triangle_dist2_edges(p, a, b, c, q));
    return sqrt(point_triangle_dist2_solid(p, a, b, c, q));
}

/* Fill the derived per-sphere and per-node data (sec radii, lbr, nsph,
 * nvol, nleaves, dr, ncen, cball, vrec)
 * and, for version 1 files, adjacency and the triangle box tree (build and
 * load). 0, or -1 out of memory. */
int ist_derive(prox_ist *t);

/* The build's voxel grid over a bounding box of extent ext at voxel size
 * h: per axis the extent in voxels rounded up and a border voxel either
 * side, multiplied. In double, so no ratio overflows (the build casts the
 * per-axis counts to int only below the limit). The build refuses grids
 * of more than IST_MAX_GRID_CELLS cells (every version has), and loading
 * refuses a file whose voxel size makes a larger grid over its own mesh:
 * no build wrote it, and loading versions 1 to 5 cuts every triangle into
 * cells of half a voxel (ist_outer_build). */
#define IST_MAX_GRID_CELLS 60000000.0
static inline double ist_grid_cells(prox_vec3 ext, double h)
{
    return (ceil(ext.x / h) + 2) * (ceil(ext.y / h) + 2) * (ceil(ext.z / h) + 2);
}

/* The radius about (cx, cy, cz) that encloses four lanes of spheres
 * (centres x, y, z, radii r; lanes whose child is IST_EMPTY skipped). */
static inline double ist_enclose_lanes(const float x[4], const float y[4], const float z[4], const float r[4],
                                       const uint32_t child[4], double cx, double cy, double cz)
{
    double R = 0;
    for (int k = 0; k < 4; k++) {
        if (child[k] == IST_EMPTY)
            continue;
        double dx = (double)x[k] - cx, dy = (double)y[k] - cy, dz = (double)z[k] - cz;
        double rk = sqrt(dx * dx + dy * dy + dz * dz) + r[k];
        R = rk > R ? rk : R;
    }
    return R;
}

/* The radius about node record i's child-j centre that encloses the
 * spheres of that child's own children (record centres, radii r[c][k]):
 * the bottom-up step shared by the per-lane radii derived at load. */
static inline double ist_enclose_children(const prox_ist *t, uint32_t i, int j, const float (*r)[4])
{
    const ist_node *nd = &t->nodes[i], *cn = &t->nodes[nd->child[j]];
    return ist_enclose_lanes(cn->cx, cn->cy, cn->cz, r[nd->child[j]], cn->child, nd->cx[j], nd->cy[j], nd->cz[j]);
}

/* A node id's volume ball: the centroid of its leaves' secondary volume
 * (own frame) and the radius of a ball of that volume (ncen); a leaf's is
 * its secondary sphere. */
static inline void ist_id_ball(const prox_ist *t, uint32_t id, float ball[4])
{
    if (id & IST_LEAF) {
        for (int k = 0; k < 4; k++)
            ball[k] = t->sec[id & ~IST_LEAF][k];
    } else {
        for (int k = 0; k < 4; k++)
            ball[k] = t->ncen[id][k];
    }
}

/* Bounding sphere (of both sphere models), volume and leaf count of any
 * node id. */
static inline void ist_id_sphere(const prox_ist *t, uint32_t id, float s[4], float *vol, uint32_t *leaves)
{
    if (id & IST_LEAF) {
        const ist_sphere *p = &t->spheres[id & ~IST_LEAF];
        s[0] = p->x, s[1] = p->y, s[2] = p->z, s[3] = t->lbr[id & ~IST_LEAF];
        *vol = (float)(4.0 / 3.0 * M_PI * (double)p->r2 * p->r2 * p->r2);
        *leaves = 1;
    } else {
        s[0] = t->nsph[id][0], s[1] = t->nsph[id][1], s[2] = t->nsph[id][2], s[3] = t->nsph[id][3];
        *vol = t->nvol[id];
        *leaves = t->nleaves[id];
    }
}

/* The children of a node id (a leaf is its own single child), with their
 * bounding spheres optionally carried into another frame by X. */
typedef struct kids {
    int n;
    uint32_t id[4], leaves[4];
    double x[4], y[4], z[4], R[4], vol[4];
} kids;

static inline void get_kids_r(const prox_ist *t, uint32_t id, const prox_xform *X, kids *k, int primary)
{
    k->n = 0;
    if (id & IST_LEAF) {
        float s[4], v;
        uint32_t l;
        ist_id_sphere(t, id, s, &v, &l);
        if (primary)
            s[3] = t->spheres[id & ~IST_LEAF].r;
        k->id[0] = id, k->leaves[0] = 1;
        k->x[0] = s[0], k->y[0] = s[1], k->z[0] = s[2], k->R[0] = s[3], k->vol[0] = v;
        k->n = 1;
    } else {
        const ist_node *nd = &t->nodes[id];
        for (int j = 0; j < 4; j++) {
            if (nd->child[j] == IST_EMPTY)
                continue;
            int m = k->n++;
            k->id[m] = nd->child[j];
            k->leaves[m] = nd->cleaves[j];
            k->x[m] = nd->cx[j], k->y[m] = nd->cy[j], k->z[m] = nd->cz[j], k->vol[m] = nd->cvol[j];
            k->R[m] = primary ? t->dr[id][j] : nd->cr[j];
        }
    }
    if (X)
        for (int m = 0; m < k->n; m++) {
            prox_vec3 c = prox_xform_point(X, prox_v3(k->x[m], k->y[m], k->z[m]));
            k->x[m] = c.x, k->y[m] = c.y, k->z[m] = c.z;
        }
}

/* children with bounding spheres of both sphere models (penetration volume) */
static inline void get_kids(const prox_ist *t, uint32_t id, const prox_xform *X, kids *k) { get_kids_r(t, id, X, k, 0); }


/* whether p is within the range the triangle trees rank in (floats,
 * 1e30 a coordinate; beyond it no ranking: an empty lane's inverted box
 * would turn NaN and count as near) */
static inline int ist_in_float_range(prox_vec3 p) { return fabs(p.x) <= 1e30 && fabs(p.y) <= 1e30 && fabs(p.z) <= 1e30; }

/* the size of the coordinates a distance from p to the triangle tree g
 * is computed with (|p|, plus extra, plus the root box's corners): the
 * searches scale their rounding margins by it */
static inline double ist_coord_scale(const ist_tritree *g, prox_vec3 p, double extra)
{
    double s = fabs(p.x) + fabs(p.y) + fabs(p.z) + extra;
    for (int k = 0; k < 3; k++)
        s += fabs(g->nodes[0].lo[k]) + fabs(g->nodes[0].hi[k]);
    return s;
}

#endif
