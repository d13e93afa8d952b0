/* boxes_internal.h - the box hierarchy's layout, shared by its build
 * (boxes_build.c) and its handlers (boxes_query.c). Private to libprox.
 *
 * - `nodes` is one flat array, node 0 the root; the two children of an
 *   inner node i are child[i] and child[i] + 1; child[i] == 0 marks a leaf
 *   (the root is never a child).
 * - A node's hot record holds its outer and inner boxes as bvh_node
 *   records (bvh_internal.h: float, centre, axes as columns, half extents
 *   sorted, radius |e|) so that the mesh BVH's relative placement and
 *   separating-axis gap (bvh_place, bvh_rel_placed, bvh_obb_gap) serve
 *   both. The outer box is conservative in float (measured again in the
 *   rounded frame and padded, as the BVH does); the inner box is solved in
 *   the rounded frame and then shrunk until its corners satisfy every plane
 *   of its piece in double, so it lies inside the piece. An inner box with
 *   radius 0 is absent.
 * - The pieces (cold, double): vertices, planes and edges in flat arrays,
 *   indexed by each node's boxes_piece. An edge knows its two faces (local
 *   plane indices), which the exact test needs for its Gauss-map pruning of
 *   edge pairs.
 */
#ifndef PROX_BOXES_INTERNAL_H
#define PROX_BOXES_INTERNAL_H

#include "bvh_internal.h"
#include "prox_boxes.h"

typedef struct boxes_node {
    bvh_node outer;
    bvh_node inner;
} boxes_node;
_Static_assert(sizeof(boxes_node) == 128, "boxes_node is two cache lines");

/* a piece's edge: vertices a, b and faces f0, f1, local to the piece */
typedef struct boxes_edge {
    uint16_t a, b, f0, f1;
} boxes_edge;
_Static_assert(sizeof(boxes_edge) == 8, "boxes_edge is 8 bytes");

enum boxes_piece_flags {
    BOXES_EXTERIOR = 1u << 0,  /* a face lies on the polyhedron's surface */
    BOXES_ADJACENCY = 1u << 1, /* every edge has its two faces (Gauss-map pruning allowed) */
};

/* Pieces are limited so that local indices fit 16 bits. */
#define BOXES_MAX_FACES 4096u
#define BOXES_MAX_LOCAL 65535u
/* A mesh takes at most 8 BOXES_MAX_FACES triangles, and one closed surface
 * of T triangles uses T / 2 + 2 vertices (Euler), so more used vertices
 * than this mean several surfaces or zero-area triangles. The limit also
 * bounds the root's vertex merge, quadratic in the vertices (0.3 s at it). */
#define BOXES_MAX_TRIANGLES (8u * BOXES_MAX_FACES)
#define BOXES_MAX_VERTICES (BOXES_MAX_TRIANGLES / 2 + 2)

typedef struct boxes_piece {
    uint32_t v0, nv; /* vertices[v0 .. v0 + nv) */
    uint32_t f0, nf; /* plane_n, plane_d [f0 .. f0 + nf) */
    uint32_t e0, ne; /* edges[e0 .. e0 + ne) */
    uint32_t flags, level;
    prox_vec3 centroid; /* strictly inside */
    double volume;
} boxes_piece;

struct prox_boxes {
    prox_tree tree;
    boxes_node *nodes;
    uint32_t *child;
    boxes_piece *pieces;
    uint32_t node_count;
    prox_vec3 *vertices;
    uint32_t vertex_count;
    prox_vec3 *plane_n;
    double *plane_d;
    uint32_t plane_count;
    boxes_edge *edges;
    uint32_t edge_count;
    double size; /* the root outer box's radius: the scale of tolerances */
    prox_boxes_stats stats;
};

#endif
