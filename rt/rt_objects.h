/* rt_objects.h - scene objects of the service: a tree plus what owns it.
 *
 * Built and freed on non-RT threads; the RT thread only sees `tree`.
 * Meshes become inner sphere trees when the IST module is present (they
 * carry penetration volume), mesh BVHs otherwise; `.ist` files load inner
 * sphere trees; `.vox` files voxel maps. */
#ifndef RT_OBJECTS_H
#define RT_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include "prox.h"
#include "prox_loader.h"

typedef struct rt_object {
    const prox_tree *tree;
    void *owner;
    void (*free_owner)(void *owner);
    uint32_t type; /* prox_tree_type */
} rt_object;

struct rt_voxel_update;

/* inner spheres a mesh object gets by default (rt_config.ist_spheres):
 * the penetration volume of a deep contact completes inside a 300 us
 * budget; a flat face felt through so few pushes sideways (README, known
 * limitations) */
#define RT_IST_SPHERES 500u
/* the most rt_config.ist_spheres may ask for (a build of a million spheres
 * takes about a minute) */
#define RT_IST_SPHERES_MAX 1000000u

/* A mesh (closed: an inner sphere tree of ist_spheres spheres, at least
 * 1; open: a BVH), an .ist or a .vox file. A mesh is read through loader
 * (prox_mesh_load_apart: in a child process when loader->exe is set; NULL
 * or no exe: in this process). */
int rt_object_load(const char *path, uint32_t ist_spheres, const prox_loader *loader, rt_object *out, char *err,
                   size_t errlen);
/* whether rt_object_load reads path as a built object (an .ist or .vox
 * file, by its name) rather than a mesh */
int rt_object_is_file(const char *path);
/* Takes ownership of the voxel map (freed with the object). */
void rt_object_from_voxmap(prox_voxmap *m, rt_object *out);
/* Takes ownership of the mesh. ist_spheres > 0: an inner sphere tree of
 * that many spheres (where the mesh is closed); 0: a BVH. */
int rt_object_from_mesh(prox_mesh *m, uint32_t ist_spheres, rt_object *out, char *err, size_t errlen);
void rt_object_free(rt_object *o);
/* Why these voxel updates cannot apply to o (not a voxel map, cell out of
 * range, unknown class), or NULL. Non-RT. */
const char *rt_object_voxel_check(const rt_object *o, const struct rt_voxel_update *u, uint32_t count);
/* Apply one checked update (RT thread, between queries). RT safe. 0, or
 * -1 when the map is full (nothing changed; the service counts it as a
 * voxel drop). */
int rt_object_voxel_apply(const prox_tree *tree, const struct rt_voxel_update *u);

#endif
