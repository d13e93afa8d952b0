/* prox_bvh.h - bounding volume hierarchy over a mesh's triangles.
 *
 * A binary tree built top down (PQP style: area-weighted covariance frame,
 * split at the mean along the longest axis), one triangle per leaf, nodes
 * in flat arrays indexed by 32-bit ids. Each node is an oriented box that
 * doubles as a rectangle swept sphere (RSS), stored conservatively in
 * float (layout: bvh_internal.h). The engine sees it as a tree of type
 * PROX_TREE_MESH with handlers for collide, contacts, distance and
 * tolerance against other meshes (bvh_handlers.c); leaf ids in results are
 * the mesh's triangle indices. A closed mesh is treated as a solid: one
 * closed mesh inside another overlaps.
 *
 * Build and free allocate: call them off the real-time thread. Queries
 * through the engine and prox_bvh_contains_point are RT safe (no
 * allocation, no locks); any number of threads may query one BVH at once.
 */
#ifndef PROX_BVH_H
#define PROX_BVH_H

#include "prox_engine.h"
#include "prox_mesh.h"

typedef struct prox_bvh prox_bvh;

/* Build from a mesh (triangles copied: the mesh may be freed afterwards).
 * NULL on a NULL or empty mesh, more than 2^31 - 1 triangles, a triangle
 * index past the vertices or a vertex of a triangle that is not finite (a
 * mesh filled by hand; the loaders refuse both), or out of memory. Non-RT. O(n log n): 0.24 s and 41 MB for an 82k-triangle sphere
 * here (0.15 s and 17 MB before the distance query's RSS rectangles and
 * per-node lane blocks). */
prox_bvh *prox_bvh_build(const prox_mesh *m);
void prox_bvh_free(prox_bvh *b);
/* The tree the engine descends; valid while b lives. */
const prox_tree *prox_bvh_tree(const prox_bvh *b);
/* Point (mesh frame) inside the closed mesh? Crossing parity of one ray
 * through the BVH; if that ray grazes an edge, a vertex or a face plane,
 * the majority of three more. Outside the root box: 0 at once. RT safe. */
int prox_bvh_contains_point(const prox_bvh *b, prox_vec3 p);
/* Statistics: nodes (2n - 1), triangles, bytes held. */
uint32_t prox_bvh_node_count(const prox_bvh *b);
uint32_t prox_bvh_triangle_count(const prox_bvh *b);
size_t prox_bvh_memory_bytes(const prox_bvh *b);

#endif
