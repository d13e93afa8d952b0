/* bvh_internal.h - the mesh BVH's layout, for handlers in libprox.
 *
 * Nodes live in one array; node 0 is the root. An inner node has two
 * children; a leaf holds one triangle (its index in the source mesh).
 * Boxes are in the mesh's local frame: centre c, axes = columns of R,
 * half extents e. Triangle vertices are stored per triangle (original
 * order) so a leaf test touches one cache line run.
 */
#ifndef PROX_BVH_INTERNAL_H
#define PROX_BVH_INTERNAL_H

#include "prox_bvh.h"

typedef struct bvh_node {
    prox_vec3 c;   /* box centre */
    prox_mat3 R;   /* box axes as columns */
    prox_vec3 e;   /* half extents along the axes */
    double radius; /* |e|: bounding sphere about c */
    uint32_t left, right; /* children; for a leaf left = triangle index, right = UINT32_MAX */
} bvh_node;

#define BVH_IS_LEAF(n) ((n)->right == UINT32_MAX)

struct prox_bvh {
    prox_tree tree;
    bvh_node *nodes;
    uint32_t node_count;
    prox_vec3 (*tri)[3]; /* triangle vertices, original triangle order */
    uint32_t tri_count;
    int closed;
};

/* Lower bound on the distance between box a and box b, where b's box is
 * given in a's frame (Rb, cb). Returns <= 0 when the boxes overlap. */
double prox_obb_gap(const bvh_node *a, const prox_mat3 *Rb, prox_vec3 cb, prox_vec3 eb);

/* Lower bound from the nodes' rectangle swept spheres: each box lies inside
 * the rectangle of its two largest axes swept by a sphere of its smallest
 * half extent, so rectangle distance minus both radii bounds the distance
 * (PQP's RSS, here derived from the fitted box). Tight for flat nodes. */
double prox_rss_gap(const bvh_node *a, const prox_mat3 *Rb, prox_vec3 cb, prox_vec3 eb);

#endif
