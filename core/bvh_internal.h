/* bvh_internal.h - the mesh BVH's layout, for handlers in libprox (the mesh
 * handlers, and cross-type handlers such as voxel map x mesh).
 *
 * Layout (read this before writing a handler against a mesh BVH):
 * - `nodes` is one flat array; node 0 is the root. Each node is a 64-byte
 *   record (one cache line) holding its bounding volume in float, in the
 *   mesh's local frame. `child[i]` says what node i is:
 *     inner node: child[i] = first child k; the second child is k + 1;
 *     leaf:       child[i] = BVH_LEAF_BIT | triangle index (source mesh order).
 *   A tree over n triangles has 2n - 1 nodes and exactly one triangle per
 *   leaf.
 * - The bounding volume is an oriented box: centre c, unit axes = columns
 *   of R (R[row][col]), half extents e sorted e[0] >= e[1] >= e[2]. The same
 *   record is also a rectangle swept sphere (RSS, as in PQP): the rectangle
 *   spanned by axes 0 and 1 with half lengths e[0], e[1], swept by a sphere
 *   of radius e[2], contains the box and so every triangle below.
 * - Conservative in float: the axes and centre are rounded to float first
 *   and the extents are then measured against the rounded frame in double
 *   and inflated by BVH_FLOAT_PAD * |e| (covers the rounded axes' tiny
 *   non-orthonormality and the gap arithmetic), so bounds computed from
 *   these records never exceed the true distance. Exact work at the leaves
 *   uses the double triangles in `tri`.
 * - For the distance query only: `rect` (a tighter RSS rectangle per node,
 *   same sweep radius) and `quad` (each inner node's expansion lanes,
 *   transposed). Other handlers need neither.
 */
#ifndef PROX_BVH_INTERNAL_H
#define PROX_BVH_INTERNAL_H

#include "prox_bvh.h"

typedef struct bvh_node {
    float R[3][3]; /* box axes as columns (R[row][axis]) */
    float c[3];    /* box centre */
    float e[3];    /* half extents, e[0] >= e[1] >= e[2] */
    float radius;  /* |e|: a bounding sphere about c */
} bvh_node;
_Static_assert(sizeof(bvh_node) == 64, "bvh_node is one cache line");

#define BVH_LEAF_BIT 0x80000000u
#define BVH_FLOAT_PAD 2e-6

static inline int bvh_is_leaf(uint32_t child) { return (child & BVH_LEAF_BIT) != 0; }
static inline uint32_t bvh_leaf_triangle(uint32_t child) { return child & ~BVH_LEAF_BIT; }

/* The lanes a distance expansion of an inner node tests, transposed for
 * four-wide SIMD: its grandchildren (a child that is a leaf stands for
 * itself; unused lanes repeat the last one). v[f][lane], the fields of a
 * bvh_node record (R row-major, centre) except that e[0], e[1] are the RSS
 * rectangle's half lengths (rect), then e[2], radius. id: the lanes' node
 * ids. Inner node i's quad is quad[(child[i] - 1) / 2] (the first children
 * of inner nodes are the odd ids 1, 3, 5, ...). 272 bytes an inner node:
 * the expansions read one aligned block instead of gathering and
 * transposing four records (16-17% fewer instructions per random query). */
typedef struct bvh_quad {
    _Alignas(16) float v[16][4];
    uint32_t id[4];
} bvh_quad;

struct prox_bvh {
    prox_tree tree;
    bvh_node *nodes;     /* node_count */
    uint32_t *child;     /* node_count: first child, or BVH_LEAF_BIT | triangle */
    /* node_count: a tighter rectangle for the same swept sphere (radius
     * e[2]): half lengths rect[i][k] <= e[k], shrunk as far as the sweep
     * still covers every vertex (the box's corners hold no vertex, mostly);
     * what the distance handler's RSS bound uses (bvh.c, fit_box) */
    float (*rect)[2];
    bvh_quad *quad; /* tri_count - 1 (none for one triangle): the distance expansions' lanes */
    uint32_t node_count;
    prox_vec3 (*tri)[3]; /* triangle vertices, source triangle order, double */
    uint32_t tri_count;
    int closed;
};

/* A node's box in double: centre, axes as columns, half extents. */
typedef struct bvh_box {
    prox_vec3 c;
    prox_mat3 R;
    double e[3];
} bvh_box;

static inline bvh_box bvh_node_box(const bvh_node *n)
{
    bvh_box b;
    b.c = prox_v3(n->c[0], n->c[1], n->c[2]);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            b.R.m[i][j] = n->R[i][j];
    b.e[0] = n->e[0], b.e[1] = n->e[1], b.e[2] = n->e[2];
    return b;
}

/* Box b expressed in box a's coordinates: Rab = Ra^T Rb, Tab = Ra^T (cb - ca). */
typedef struct bvh_rel {
    double R[3][3];
    double T[3];
} bvh_rel;

/* Node b's box frame carried into A's mesh frame by b_in_a. */
typedef struct bvh_placed {
    double R[3][3]; /* axes as columns */
    double c[3];
} bvh_placed;

static inline bvh_placed bvh_place(const bvh_node *b, const prox_xform *b_in_a)
{
    bvh_placed p;
    const double(*X)[3] = b_in_a->R.m;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            p.R[i][j] = X[i][0] * b->R[0][j] + X[i][1] * b->R[1][j] + X[i][2] * b->R[2][j];
        p.c[i] = X[i][0] * b->c[0] + X[i][1] * b->c[1] + X[i][2] * b->c[2] + prox_v3_get(b_in_a->t, i);
    }
    return p;
}

/* A placed box in node a's box frame. */
static inline bvh_rel bvh_rel_placed(const bvh_node *a, const bvh_placed *b)
{
    bvh_rel r;
    double d[3] = {b->c[0] - a->c[0], b->c[1] - a->c[1], b->c[2] - a->c[2]};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            r.R[i][j] = a->R[0][i] * b->R[0][j] + a->R[1][i] * b->R[1][j] + a->R[2][i] * b->R[2][j];
        r.T[i] = a->R[0][i] * d[0] + a->R[1][i] * d[1] + a->R[2][i] * d[2];
    }
    return r;
}

/* Lower bound from the nodes' bounding spheres (b placed). */
static inline double bvh_sphere_gap(const bvh_node *a, const bvh_node *b, const bvh_placed *pb)
{
    double d0 = pb->c[0] - a->c[0], d1 = pb->c[1] - a->c[1], d2 = pb->c[2] - a->c[2];
    return sqrt(d0 * d0 + d1 * d1 + d2 * d2) - (double)a->radius - (double)b->radius;
}

/* Relative placement of node b (of the mesh placed by b_in_a) in node a's
 * box frame. */
bvh_rel bvh_relative(const bvh_node *a, const bvh_node *b, const prox_xform *b_in_a);

/* Separating-axis gap of two boxes (15 axes): a lower bound on their
 * distance; <= 0 when they may overlap (then the value means nothing more).
 * Returns as soon as an axis gives a gap >= threshold (pass INFINITY for
 * the largest gap over all axes, 0 for a plain overlap test). */
double bvh_obb_gap(const bvh_rel *r, const float ea[3], const float eb[3], double threshold);

/* RSS lower bound: exact distance between the two nodes' rectangles minus
 * both sweep radii (e[2]); may be negative. With a finite threshold it
 * gives up early and returns -INFINITY (no information) as soon as the
 * bound is sure to fall below threshold; pass INFINITY for the value. */
double bvh_rss_gap(const bvh_rel *r, const float ea[3], const float eb[3], double threshold);

/* A cheaper RSS lower bound: the rectangles' separation along the
 * direction found by an alternating projection (A's point nearest B's
 * centre, B's point nearest that, A's point nearest that). Exact when that
 * pair is the closest pair, a valid lower bound always: projection on any
 * unit direction never lengthens a segment. */
double bvh_rss_gap_approx(const bvh_rel *r, const float ea[3], const float eb[3]);

/* The same from B's rectangle axes u, v and centre T in A's box frame
 * (what a handler that skips the third column computes). */
static inline double bvh_rss_gap_uv(const double u[3], const double v[3], const double T[3], const float ea[3],
                                    const float eb[3])
{
    double a0 = ea[0], a1 = ea[1], b0 = eb[0], b1 = eb[1];
    double p0 = T[0] < -a0 ? -a0 : (T[0] > a0 ? a0 : T[0]), p1 = T[1] < -a1 ? -a1 : (T[1] > a1 ? a1 : T[1]);
    double d0 = p0 - T[0], d1 = p1 - T[1], d2 = -T[2];
    double s = d0 * u[0] + d1 * u[1] + d2 * u[2], t = d0 * v[0] + d1 * v[1] + d2 * v[2];
    s = s < -b0 ? -b0 : (s > b0 ? b0 : s);
    t = t < -b1 ? -b1 : (t > b1 ? b1 : t);
    double q0 = T[0] + s * u[0] + t * v[0], q1 = T[1] + s * u[1] + t * v[1], q2 = T[2] + s * u[2] + t * v[2];
    p0 = q0 < -a0 ? -a0 : (q0 > a0 ? a0 : q0);
    p1 = q1 < -a1 ? -a1 : (q1 > a1 ? a1 : q1);
    double n0 = q0 - p0, n1 = q1 - p1, n2 = q2;
    double len = sqrt(n0 * n0 + n1 * n1 + n2 * n2);
    if (!(len > 0))
        return -INFINITY;
    double nu = n0 * u[0] + n1 * u[1] + n2 * u[2], nv = n0 * v[0] + n1 * v[1] + n2 * v[2];
    double gap = (n0 * T[0] + n1 * T[1] + n2 * T[2]) - b0 * fabs(nu) - b1 * fabs(nv) - a0 * fabs(n0) - a1 * fabs(n1);
    return gap / (len * (1.0 + 1e-12)) - (double)ea[2] - (double)eb[2];
}

/* The (MESH, MESH) handler of a query kind (bvh_handlers.c), or NULL where
 * there is none (penetration volume); what prox_bvh_register registers.
 * Cross-type handlers that bring a mesh BVH of their own run its hooks on
 * a copy of the pair state whose tree is that BVH's (ist_mesh.c). */
const prox_handler *bvh_mesh_handler(uint32_t kind);

#endif
