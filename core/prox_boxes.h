/* prox_boxes.h - inner/outer box hierarchies for convex polyhedra (Arcila,
 * Dinas and Banon, "Un modelo de detector de colisiones basado en cajas
 * rectangulares externas e internas").
 *
 * A closed convex polyhedron is split recursively in two by the plane
 * through each piece's centroid perpendicular to its principal axis (the
 * direction of largest variance of the solid, from its inertia tensor),
 * down to a depth. Every node keeps its convex piece (planes, vertices,
 * edges, in double) and two oriented boxes in the piece's principal frame:
 * the outer box (the smallest box in that frame that encloses the piece)
 * and the inner box (the largest-volume box in that frame inside the
 * piece). The engine sees it as a tree of type PROX_TREE_BOXES. Collide:
 * outer boxes apart -> that pair cannot touch; inner boxes overlapping ->
 * collision, stop at once; two leaves -> an exact separating-axis test of
 * the two convex pieces (face normals and the edge pairs that form faces
 * of their Minkowski difference), which also sees one piece inside the
 * other. Contacts: every overlapping leaf pair.
 *
 * Frames and units: everything is in the polyhedron's local frame, in the
 * mesh's units. Touching counts as overlap: pieces whose separation along
 * every axis is at most 1e-12 of the pair's size (both root box radii plus
 * the distance between the frames) collide.
 *
 * Results: leaf ids (prox_result.leaf_a/leaf_b, prox_contact.leaf_a/b) are
 * node ids of the two hierarchies (prox_boxes_node describes them). When
 * the overlap was certified by the two nodes' inner boxes rather than an
 * exact test of two leaf pieces, both ids carry PROX_BOXES_INNER (the
 * paper's Table 2 counts these, I_CI, against the exact tests, I_CP).
 * node_tests counts box-pair tests, leaf_tests exact piece-pair tests.
 *
 * Build and free allocate: call them off the real-time thread. Queries
 * through the engine and the accessors are RT safe (no allocation, no
 * locks, no prints); any number of threads may query one hierarchy.
 */
#ifndef PROX_BOXES_H
#define PROX_BOXES_H

#include <stddef.h>
#include <stdint.h>

#include "prox_engine.h"
#include "prox_mesh.h"

typedef struct prox_boxes prox_boxes;

/* Set in result and contact leaf ids when inner boxes decided the overlap. */
#define PROX_BOXES_INNER 0x80000000u
/* A leaf's child id. */
#define PROX_BOXES_NONE UINT32_MAX

typedef struct prox_boxes_def {
    uint32_t depth;    /* levels of subdivision below the root; 0 = 4 (the paper's level 4: at most
                          31 nodes, 16 leaves). At most 12. */
    double convex_tol; /* how far (relative to the bounding-box diagonal) a vertex may lie outside a face
                          plane and still count as convex, how close to a plane counts as on it, and
                          how close two vertices merge; 0 = 1e-6 (meshes stored in float, as OBJ and
                          STL files mostly are, are coplanar only to about 1e-7) */
} prox_boxes_def;

/* Defaults (all fields 0 mean the defaults above). Any thread. */
prox_boxes_def prox_boxes_def_default(void);

/* Build from a closed, outward-oriented convex mesh (copied: the mesh may
 * be freed afterwards). Vertices no triangle uses are ignored. Coplanar
 * triangles are merged into polygon faces (at most 4096 faces, 32768
 * triangles and 16386 used vertices, as many as one closed surface of
 * 32768 triangles has: this structure is for small polyhedra; use a mesh
 * BVH for large meshes). Returns 0 and *out, or -1 with a one-line message
 * in err naming what is wrong (not closed, not oriented, not convex: how
 * far which vertex lies outside which triangle's plane, too many faces,
 * triangles or vertices, with the count and the limit, degenerate, out of
 * memory). Takes milliseconds for the paper's shapes (0.3 s at 16,000
 * vertices), so it shows no progress. Non-RT. */
int prox_boxes_build(const prox_mesh *m, const prox_boxes_def *def, prox_boxes **out, char *err, size_t errlen);
/* NULL is ignored. Non-RT. */
void prox_boxes_free(prox_boxes *b);
/* The tree the engine descends; valid while b lives. Any thread, RT safe. */
const prox_tree *prox_boxes_tree(const prox_boxes *b);
/* Bytes held by b. Any thread, RT safe. */
size_t prox_boxes_memory_bytes(const prox_boxes *b);

typedef struct prox_boxes_stats {
    uint32_t nodes, leaves, depth; /* depth reached (the deepest leaf's level) */
    uint32_t interior_pieces;      /* pieces with no face on the polyhedron's surface (the paper's INTERIOR;
                                      never split further) */
    uint32_t faces, vertices;      /* of the root polyhedron after merging coplanar triangles */
    uint32_t max_leaf_faces, max_leaf_vertices;
    uint32_t pieces_without_adjacency; /* pieces whose edges could not all be paired with their two faces
                                          (their leaf tests project on every edge pair; 0 normally) */
    double volume;              /* of the polyhedron */
    double root_inner_volume;   /* the root's inner box */
    double leaf_inner_volume;   /* the leaves' inner boxes, summed (disjoint: the pieces partition) */
    double leaf_outer_volume;   /* the leaves' outer boxes, summed */
    size_t memory_bytes;
    double build_seconds;
} prox_boxes_stats;
/* Any thread, RT safe. */
void prox_boxes_get_stats(const prox_boxes *b, prox_boxes_stats *out);

/* An oriented box: centre c, unit axes as the columns of R, half extents e
 * (the stored float record, widened to double). */
typedef struct prox_boxes_box {
    prox_vec3 c;
    prox_mat3 R;
    double e[3];
} prox_boxes_box;

/* One node, read only (pointers into b, valid while b lives). */
typedef struct prox_boxes_node {
    uint32_t child[2]; /* PROX_BOXES_NONE for a leaf */
    uint32_t level;    /* 0 at the root */
    int exterior;      /* the piece has a face on the polyhedron's surface */
    prox_boxes_box outer, inner; /* inner.e all 0: no inner box (a piece too thin for one) */
    double volume;
    prox_vec3 centroid;
    uint32_t vertex_count, plane_count;
    const prox_vec3 *vertices;   /* the piece's vertices */
    const prox_vec3 *plane_n;    /* the piece's face planes: unit outward normal n ... */
    const double *plane_d;       /* ... and offset d: the piece is { x : n . x <= d } */
} prox_boxes_node;

/* 0, or -1 for a node id out of range. Any thread, RT safe. */
int prox_boxes_node_get(const prox_boxes *b, uint32_t node, prox_boxes_node *out);

/* The largest-volume box with axes the columns of R (unit, orthogonal up to
 * float rounding) inside the polytope { x : n_k . x <= d_k, k < m }, the
 * problem of the paper's section 4: maximise sum(log h_i) subject to
 * a_k . y + |a_k| . h <= d_k - n_k . p with a_k = R^T n_k, centre p + R y,
 * half extents h. Solved by a log-barrier interior-point method with damped
 * Newton steps (6 unknowns; the barrier weight grows 10x a round until the
 * duality gap m / t is below 1e-11, so the log volume is within 1e-11 of
 * the optimum). `interior` must lie strictly inside. Where the polytope is
 * open both ways along a direction no box axis follows (a prism along a
 * slanted axis, a slab), the largest boxes slide along it without end; the
 * one returned is the one nearest `interior` along it (centre - interior
 * is perpendicular to every such direction). Writes the centre and the
 * half extents; returns the number of Newton steps, or -1 (interior not
 * strictly inside, m = 0, no largest box: the polytope is open along a
 * box axis or grows without end, or open one way only, where the largest
 * boxes lie from some place on to infinity and no centre is preferred; or
 * no progress). Allocates nothing; any thread, but iterative (a few
 * hundred steps): not for the RT loop. */
int prox_boxes_inner_box(const prox_vec3 *n, const double *d, uint32_t m, const prox_mat3 *R, prox_vec3 interior,
                         prox_vec3 *centre, double half[3]);

#endif
