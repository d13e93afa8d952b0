/* prox_voxel.h - dynamic hierarchical voxel maps (Himmelstein et al.).
 *
 * An occupancy map over a fixed cell size: leaf voxels carry a class
 * (OBSTACLE, UNKNOWN; free space is the absence of a voxel). Above the
 * leaves, level l holds a bounding voxel for every 2x2x2 block of level
 * l - 1 that has something in it, with per-class leaf counts, so a voxel
 * exists exactly while a leaf below it exists and class-filtered queries
 * prune whole blocks. Setting or clearing a cell touches only its chain of
 * ancestors (O(levels)), never rebuilds and never allocates: every level's
 * hash table is sized at creation. The engine sees the map as a tree of
 * type PROX_TREE_VOXEL; queries see changes immediately.
 *
 * Thread rules: create, load, save and free allocate (non-RT). Set, clear
 * and batch updates are RT safe; they must not run while a query on the
 * same map runs (the service applies them between queries on its RT
 * thread).
 */
#ifndef PROX_VOXEL_H
#define PROX_VOXEL_H

#include <stddef.h>
#include <stdint.h>

#include "prox_engine.h"

enum prox_voxel_class {
    PROX_VOXEL_FREE = 0, /* clears the cell */
    PROX_VOXEL_OBSTACLE = 1,
    PROX_VOXEL_UNKNOWN = 2,
    PROX_VOXEL_CLASS_COUNT = 3
};

typedef struct prox_voxmap prox_voxmap;

typedef struct prox_voxmap_def {
    double cell;        /* cell edge length (metres) */
    prox_vec3 origin;   /* world position of cell (0,0,0)'s minimum corner, in the map's frame */
    uint32_t dims[3];   /* cells per axis: coordinates are 0 <= c < dims; at most 65536 */
    uint32_t capacity;  /* leaf voxels the map holds at least; 0 = 1 << 18 */
} prox_voxmap_def;

/* Packed update record: 16 bytes, little endian: int32 x, int32 y, int32 z,
 * uint32 class. This is what the service's voxel queue and OSC blobs carry. */
typedef struct prox_voxel_record {
    int32_t x, y, z;
    uint32_t cls;
} prox_voxel_record;

enum prox_voxel_status {
    PROX_VOXEL_OK = 0,
    PROX_VOXEL_OUT_OF_RANGE = -1,
    PROX_VOXEL_BAD_CLASS = -2,
    PROX_VOXEL_FULL = -3 /* capacity reached: nothing changed */
};

prox_voxmap *prox_voxmap_create(const prox_voxmap_def *def, char *err, size_t errlen);
void prox_voxmap_free(prox_voxmap *m);
const prox_tree *prox_voxmap_tree(const prox_voxmap *m);

/* Set (class != FREE) or clear (class == FREE) one cell. RT safe. */
int prox_voxmap_set(prox_voxmap *m, int32_t x, int32_t y, int32_t z, uint32_t cls);
/* Apply records in order; returns how many were applied; stops at the
 * first refused record and stores its status in *status (if not NULL). */
uint32_t prox_voxmap_apply(prox_voxmap *m, const prox_voxel_record *r, uint32_t count, int *status);
/* Class of a cell (FREE when absent). */
uint32_t prox_voxmap_get(const prox_voxmap *m, int32_t x, int32_t y, int32_t z);
/* Decode a voxel leaf id reported in query results (leaf_a / leaf_b,
 * contacts) into its cell; valid until the next update of the map.
 * Returns 0, or -1 if the id is not a current leaf. */
int prox_voxmap_leaf_cell(const prox_voxmap *m, uint32_t leaf, int32_t *x, int32_t *y, int32_t *z);
/* Leaf voxels of a class (or all with PROX_CLASS_ALL as a mask of 1 << class). */
uint32_t prox_voxmap_count(const prox_voxmap *m, uint32_t class_mask);
void prox_voxmap_def_get(const prox_voxmap *m, prox_voxmap_def *out);
uint32_t prox_voxmap_levels(const prox_voxmap *m);
size_t prox_voxmap_memory_bytes(const prox_voxmap *m);
/* Check the hierarchy invariant (every bounding voxel exists iff a leaf
 * below it exists, with the right counts). For tests; O(size). */
int prox_voxmap_validate(const prox_voxmap *m, char *err, size_t errlen);
/* Visit every leaf voxel (non-RT helpers: saving, tests). */
void prox_voxmap_foreach(const prox_voxmap *m, void (*fn)(int32_t x, int32_t y, int32_t z, uint32_t cls, void *u), void *u);

/* .vox text files (docs/voxels.md):
 *   hapticd-voxmap 1
 *   cell S
 *   origin X Y Z
 *   dims NX NY NZ
 *   # then one voxel per line: x y z class   (class: 1 obstacle, 2 unknown)
 * Out-of-range cells, unknown classes and truncated files are refused. */
int prox_voxmap_load(const char *path, prox_voxmap **out, char *err, size_t errlen);
int prox_voxmap_save(const prox_voxmap *m, const char *path, char *err, size_t errlen);
/* A point cloud quantised to `cell`; the map's origin and dims cover the
 * cloud's bounding box. .ply (ascii or binary, read here: the vertices'
 * x, y, z of any scalar type, at most 64 vertex properties), .xyz (text,
 * `x y z` a line, # comments, blank lines, a header line of words before
 * the first point, a UTF-8 byte order mark), the 'v' lines of .obj and
 * the vertices of .off (faces or none) are read by prox; other formats
 * through assimp (docs/voxels.md). What does not read is refused with the
 * file and the line (a header line) or the vertex (from 0 in a binary
 * PLY, from 1 through assimp). */
int prox_voxmap_from_cloud(const char *path, double cell, uint32_t cls, prox_voxmap **out, char *err, size_t errlen);

#endif
