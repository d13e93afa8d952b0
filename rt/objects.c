/* objects.c - loading scene objects for the service. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prox_bvh.h"
#include "rt_objects.h"
#include "rt_service.h"

static void free_mesh_bvh(void *p)
{
    void **pp = p;
    prox_bvh_free(pp[0]);
    prox_mesh_free(pp[1]);
    free(pp);
}

int rt_object_from_mesh(prox_mesh *m, int want_ist, rt_object *out, char *err, size_t errlen)
{
    (void)want_ist;
    memset(out, 0, sizeof *out);
    prox_bvh *b = prox_bvh_build(m);
    void **own = malloc(2 * sizeof(void *));
    if (!b || !own) {
        prox_bvh_free(b);
        free(own);
        prox_mesh_free(m);
        snprintf(err, errlen, "out of memory building a BVH");
        return -1;
    }
    own[0] = b;
    own[1] = m;
    out->tree = prox_bvh_tree(b);
    out->owner = own;
    out->free_owner = free_mesh_bvh;
    out->type = PROX_TREE_MESH;
    return 0;
}

int rt_object_load(const char *path, rt_object *out, char *err, size_t errlen)
{
    prox_mesh *m;
    if (prox_mesh_load(path, &m, err, errlen) != 0)
        return -1;
    return rt_object_from_mesh(m, 1, out, err, errlen);
}

void rt_object_free(rt_object *o)
{
    if (o && o->free_owner)
        o->free_owner(o->owner);
    if (o)
        memset(o, 0, sizeof *o);
}

const char *rt_object_voxel_check(const rt_object *o, const struct rt_voxel_update *u, uint32_t count)
{
    (void)u;
    (void)count;
    if (o->type != PROX_TREE_VOXEL)
        return "not a voxel map";
    return NULL;
}

void rt_object_voxel_apply(const prox_tree *tree, const struct rt_voxel_update *u)
{
    (void)tree;
    (void)u;
}
