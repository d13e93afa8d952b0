/* prox_ist.h - inner sphere trees (Weller & Zachmann).
 *
 * A closed mesh is filled with non-overlapping inner spheres (greedy
 * packing on a voxelized distance field), each with a secondary radius so
 * that the spheres' volumes add up to the voxelized volume, organised in a
 * 4-ary hierarchy built by batch neural gas. The engine sees it as a tree
 * of type PROX_TREE_IST: distance (refined with the exact triangles),
 * penetration volume with force and torque, time-critical variants. A
 * distance query with a deadline first dives to the closest inner spheres
 * (closer than any distance found so far) so that an answer cut at the
 * deadline is near the true one; it is never below it, and without a
 * deadline's cut it may differ from the unbudgeted answer within the same
 * certified bounds.
 *
 * Build, load, save and free allocate: non-RT. Queries are RT safe.
 */
#ifndef PROX_IST_H
#define PROX_IST_H

#include <stddef.h>
#include <stdint.h>

#include "prox_engine.h"
#include "prox_mesh.h"

typedef struct prox_ist prox_ist;

typedef struct prox_ist_def {
    uint32_t target_spheres; /* stop packing at this many spheres; 0 = 4096 */
    uint32_t voxels;         /* approximate number of voxels in the bounding box grid; 0 = 48 * target_spheres, within [2e5, 2e7] */
    int progress;            /* print progress on stderr when it is a terminal */
    double min_radius;       /* smallest inner sphere, in voxel sizes; 0 = 0.5. Smaller (down to
                                0.1) reaches fine targets on a coarse grid with tiny spheres near
                                the surface, which make penetration-volume queries slower */
    double thin_gap;         /* parts too thin for a voxel centre inside get spheres of their own until
                                every surface point is within about this many voxel sizes of a sphere
                                (at most target_spheres more); 0 = the default, below 0 = none */
} prox_ist_def;

prox_ist_def prox_ist_def_default(void);

/* Build from a closed mesh. -1 with a message naming the problem (mesh not
 * closed, out of memory). */
int prox_ist_build(const prox_mesh *m, const prox_ist_def *def, prox_ist **out, char *err, size_t errlen);
void prox_ist_free(prox_ist *ist);
const prox_tree *prox_ist_tree(const prox_ist *ist);

/* Queries against mesh BVHs (PROX_TREE_MESH: open meshes, scanned
 * surfaces) need a mesh BVH of the tree's own surface: this builds it (the
 * same triangles, in the same order: leaf ids in those queries are
 * triangle indices of the IST's mesh). Distance, tolerance, collide and
 * contacts are then exact against the surfaces, in either argument order
 * (a closed IST wholly around an open mesh overlaps it); penetration
 * volume stays undefined against a mesh BVH (PROX_RESULT_NO_HANDLER).
 * Without it such a query answers nothing certain for the pair: lower
 * bound 0, incomplete, flagged PROX_RESULT_DEADLINE.
 * Not built by default: on the bench meshes (default trees) it adds
 * 136-159% to the tree's memory, 15-21 times a .ist load's time and 7-46%
 * to a build's (bunny00, 75k triangles: +37 MB over 24 MB, +0.21 s over a
 * 10.6 ms load). Queries through it cost what (MESH, MESH) queries of the
 * same surfaces cost (knot1 against elephant-with-holes, 2000 poses: 80.0
 * and 79.9 us mean, the same answers).
 * 0 (also when already built), or -1 with a message (out of memory).
 * Non-RT: allocates. It only adds what queries of other pairs never read;
 * run it before a query against a mesh BVH can reach this tree, with that
 * handoff ordered (a lock, or a release/acquire queue as the service's
 * command ring), and never two at once on one tree. */
int prox_ist_prepare_mesh(prox_ist *ist, char *err, size_t errlen);
/* whether prox_ist_prepare_mesh has run on ist. Any thread. */
int prox_ist_mesh_ready(const prox_ist *ist);
/* What queries between trees a and b need built first, built: where one is
 * an inner sphere tree and the other a mesh BVH, prox_ist_prepare_mesh on
 * the tree; nothing for other pairs. The caller owns the trees (made by a
 * build or a load, not const objects) and no query on them runs meanwhile.
 * 0, or -1 with a message. Non-RT. */
int prox_ist_prepare_pair(const prox_tree *a, const prox_tree *b, char *err, size_t errlen);

/* .ist cache files: versioned, checksummed (CRC-32 from zlib). */
int prox_ist_save(const prox_ist *ist, const char *path, char *err, size_t errlen);
int prox_ist_load(const char *path, prox_ist **out, char *err, size_t errlen);

typedef struct prox_ist_stats {
    uint32_t spheres, nodes, voxels_inside;
    uint32_t thin_spheres; /* of the spheres, added for thin parts by this build (0 for a loaded tree) */
    double voxel_size, mesh_volume, inner_volume, secondary_volume, voxel_volume;
    double surface_gap; /* certified: every surface point is within this of some inner sphere */
    size_t memory_bytes; /* including the surface's mesh BVH once prepared (mesh_bvh_bytes) */
    size_t mesh_bvh_bytes; /* the surface's mesh BVH (prox_ist_prepare_mesh), 0 if none */
    double build_seconds;
} prox_ist_stats;
void prox_ist_get_stats(const prox_ist *ist, prox_ist_stats *out);

#endif
