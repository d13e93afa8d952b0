/* prox_bvh.h - bounding volume hierarchy over a mesh's triangles.
 *
 * A binary tree of oriented bounding boxes built top down (PQP style:
 * covariance frame, split at the mean along the longest axis), one triangle
 * per leaf. The engine sees it as a tree of type PROX_TREE_MESH; leaf ids in
 * results are the mesh's triangle indices.
 *
 * Build and free allocate (non-RT). Queries through the engine and
 * prox_bvh_contains_point are RT safe.
 */
#ifndef PROX_BVH_H
#define PROX_BVH_H

#include "prox_engine.h"
#include "prox_mesh.h"

typedef struct prox_bvh prox_bvh;

/* Build from a mesh (copied: the mesh may be freed afterwards). NULL on an
 * empty mesh or out of memory. */
prox_bvh *prox_bvh_build(const prox_mesh *m);
void prox_bvh_free(prox_bvh *b);
/* The tree the engine descends; valid while b lives. */
const prox_tree *prox_bvh_tree(const prox_bvh *b);
/* Point inside the (closed) mesh? Ray parity, majority of three rays. */
int prox_bvh_contains_point(const prox_bvh *b, prox_vec3 p);
uint32_t prox_bvh_node_count(const prox_bvh *b);
uint32_t prox_bvh_triangle_count(const prox_bvh *b);
size_t prox_bvh_memory_bytes(const prox_bvh *b);

#endif
