/* geom.c - load a geometry argument of the prox tool. */
#include "geom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "prox_boxes.h"
#include "prox_bvh.h"
#include "prox_ist.h"
#include "prox_voxel.h"

prox_loader cli_loader; /* (no program: in this process, until prox's main sets it) */

static int has_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), e = strlen(ext);
    return n > e && !strcasecmp(path + n - e, ext);
}

void cli_normalize_mesh(prox_mesh *m)
{
    prox_vec3 c = prox_v3_scale(prox_v3_add(m->bbox_min, m->bbox_max), 0.5);
    double diag = prox_v3_dist(m->bbox_min, m->bbox_max);
    double s = diag > 0 ? 1.0 / diag : 1.0;
    prox_mesh_transform(m, s, prox_v3_scale(c, -s));
}

static void free_bvh(void *p) { prox_bvh_free(p); }
static void free_ist(void *p) { prox_ist_free(p); }
static void free_vox(void *p) { prox_voxmap_free(p); }
static void free_boxes(void *p) { prox_boxes_free(p); }

int cli_geom_load(const char *path, const cli_geom_opts *o, cli_geom *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (has_ext(path, ".ist")) {
        prox_ist *t;
        if (prox_ist_load(path, &t, err, errlen) != 0)
            return -1;
        out->owner = t;
        out->free_owner = free_ist;
        out->tree = prox_ist_tree(t);
        return 0;
    }
    if (has_ext(path, ".vox")) {
        prox_voxmap *v;
        if (prox_voxmap_load(path, &v, err, errlen) != 0)
            return -1;
        out->owner = v;
        out->free_owner = free_vox;
        out->tree = prox_voxmap_tree(v);
        return 0;
    }
    prox_mesh *m = NULL;
    if (prox_mesh_load_apart(&cli_loader, path, &m, err, errlen) != 0)
        return -1;
    if (o && o->normalize)
        cli_normalize_mesh(m);
    /* the tree asked for, or why there is none */
    void *owner = NULL;
    void (*free_owner)(void *) = NULL;
    const prox_tree *tree = NULL;
    char e2[400] = "";
    if (o && o->want_ist) {
        prox_ist_def d = prox_ist_def_default();
        if (o->ist_spheres > 0)
            d.target_spheres = (uint32_t)o->ist_spheres;
        prox_ist *t;
        if (prox_ist_build(m, &d, &t, e2, sizeof e2) == 0)
            owner = t, free_owner = free_ist, tree = prox_ist_tree(t);
    } else if (o && o->want_boxes) {
        prox_boxes *t;
        if (prox_boxes_build(m, NULL, &t, e2, sizeof e2) == 0)
            owner = t, free_owner = free_boxes, tree = prox_boxes_tree(t);
    } else {
        prox_bvh *b = prox_bvh_build(m);
        if (b)
            owner = b, free_owner = free_bvh, tree = prox_bvh_tree(b);
        else
            snprintf(e2, sizeof e2, "cannot build a BVH (out of memory?)");
    }
    if (!owner) {
        snprintf(err, errlen, "%s: %s", path, e2);
        prox_mesh_free(m);
        return -1;
    }
    out->mesh = m;
    out->owner = owner;
    out->free_owner = free_owner;
    out->tree = tree;
    return 0;
}

void cli_geom_free(cli_geom *g)
{
    if (g->free_owner)
        g->free_owner(g->owner);
    prox_mesh_free(g->mesh);
    memset(g, 0, sizeof *g);
}
