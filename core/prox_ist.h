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

/* .ist cache files: versioned, checksummed (CRC-32 from zlib). */
int prox_ist_save(const prox_ist *ist, const char *path, char *err, size_t errlen);
int prox_ist_load(const char *path, prox_ist **out, char *err, size_t errlen);

typedef struct prox_ist_stats {
    uint32_t spheres, nodes, voxels_inside;
    uint32_t thin_spheres; /* of the spheres, added for thin parts by this build (0 for a loaded tree) */
    double voxel_size, mesh_volume, inner_volume, secondary_volume, voxel_volume;
    double surface_gap; /* certified: every surface point is within this of some inner sphere */
    size_t memory_bytes;
    double build_seconds;
} prox_ist_stats;
void prox_ist_get_stats(const prox_ist *ist, prox_ist_stats *out);

#endif
