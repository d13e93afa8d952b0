/* geom.h - the prox tool's geometry arguments: load a file into a tree.
 * Meshes (anything assimp reads) become mesh BVHs, or inner sphere trees
 * with --ist, or inner/outer box hierarchies with --boxes (convex meshes);
 * `.ist` files load inner sphere trees; `.vox` voxel maps. */
#ifndef PROX_CLI_GEOM_H
#define PROX_CLI_GEOM_H

#include <stddef.h>

#include "prox.h"
#include "prox_loader.h"

typedef struct cli_geom {
    const prox_tree *tree;
    prox_mesh *mesh; /* when loaded from a mesh file */
    void *owner;     /* the object behind tree */
    void (*free_owner)(void *);
} cli_geom;

typedef struct cli_geom_opts {
    int normalize; /* scale to a unit bounding-box diagonal about the bbox centre */
    int want_ist;  /* build an inner sphere tree from a mesh */
    int ist_spheres;
    int want_boxes; /* build an inner/outer box hierarchy from a convex mesh */
} cli_geom_opts;

int cli_geom_load(const char *path, const cli_geom_opts *o, cli_geom *out, char *err, size_t errlen);
void cli_geom_free(cli_geom *g);
/* How the tool reads meshes (cli_geom_load, info, build): in this process
 * (no exe) for the benchmarks' generators; prox's main sets
 * prox_loader_default's limits and points exe at itself, so that a mesh
 * reader's crash or hang becomes one error message. */
extern prox_loader cli_loader;
/* Normalize a mesh the way --normalize does (benchmarks apply the same). */
void cli_normalize_mesh(prox_mesh *m);

#endif
