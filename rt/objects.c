/* objects.c - loading scene objects for the service. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "prox_bvh.h"
#include "prox_ist.h"
#include "prox_voxel.h"
#include "rt_objects.h"
#include "rt_service.h"


static void free_mesh_bvh(void *p)
{
    void **pp = p;
    prox_bvh_free(pp[0]);
    prox_mesh_free(pp[1]);
    free(pp);
}

static void free_ist(void *p) { prox_ist_free(p); }
static void free_vox(void *p) { prox_voxmap_free(p); }

void rt_object_from_voxmap(prox_voxmap *m, rt_object *out)
{
    out->tree = prox_voxmap_tree(m);
    out->owner = m;
    out->free_owner = free_vox;
    out->type = PROX_TREE_VOXEL;
}

/* out owns inner sphere tree t */
static void object_of_ist(prox_ist *t, rt_object *out)
{
    out->tree = prox_ist_tree(t);
    out->owner = t;
    out->free_owner = free_ist;
    out->type = PROX_TREE_IST;
}

int rt_object_from_mesh(prox_mesh *m, uint32_t ist_spheres, rt_object *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (ist_spheres && m->closed) {
        prox_ist_def d = prox_ist_def_default();
        d.target_spheres = ist_spheres;
        d.progress = 0;
        prox_ist *t;
        int rc = prox_ist_build(m, &d, &t, err, errlen);
        prox_mesh_free(m);
        if (rc != 0)
            return -1;
        object_of_ist(t, out);
        return 0;
    }
    /* open meshes (or on request): a BVH gives distance and contact, no volume */
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

static int has_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), e = strlen(ext);
    return n > e && !strcasecmp(path + n - e, ext);
}

int rt_object_is_file(const char *path) { return has_ext(path, ".ist") || has_ext(path, ".vox"); }

int rt_object_load(const char *path, uint32_t ist_spheres, const prox_loader *loader, rt_object *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (has_ext(path, ".ist")) {
        prox_ist *t;
        if (prox_ist_load(path, &t, err, errlen) != 0)
            return -1;
        object_of_ist(t, out);
        return 0;
    }
    if (has_ext(path, ".vox")) {
        prox_voxmap *v;
        if (prox_voxmap_load(path, &v, err, errlen) != 0)
            return -1;
        rt_object_from_voxmap(v, out);
        return 0;
    }
    prox_mesh *m;
    if (prox_mesh_load_apart(loader, path, &m, err, errlen) != 0)
        return -1;
    char e2[400];
    if (rt_object_from_mesh(m, ist_spheres, out, e2, sizeof e2) != 0) {
        snprintf(err, errlen, "%s: %s", path, e2);
        return -1;
    }
    return 0;
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
    if (o->type != PROX_TREE_VOXEL)
        return "not a voxel map";
    prox_voxmap_def d;
    prox_voxmap_def_get(o->owner, &d);
    for (uint32_t i = 0; i < count; i++) {
        if (u[i].x < 0 || u[i].y < 0 || u[i].z < 0 || (uint32_t)u[i].x >= d.dims[0] || (uint32_t)u[i].y >= d.dims[1] ||
            (uint32_t)u[i].z >= d.dims[2])
            return "a cell lies outside the map; nothing applied";
        if (u[i].cls >= PROX_VOXEL_CLASS_COUNT)
            return "unknown voxel class (" RT_VOXEL_CLASS_NAMES "); nothing applied";
    }
    return NULL;
}

int rt_object_voxel_apply(const prox_tree *tree, const struct rt_voxel_update *u)
{
    /* the RT thread owns the live map between queries: the one writer */
    if (!tree || tree->type != PROX_TREE_VOXEL)
        return 0; /* (the service drops updates for a removed map before this) */
    prox_voxmap *m = (prox_voxmap *)tree->impl;
    /* checked on entry, so only a full map refuses (and changes nothing) */
    return prox_voxmap_set(m, u->x, u->y, u->z, u->cls) == PROX_VOXEL_OK ? 0 : -1;
}
