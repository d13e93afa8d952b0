/* ist_mesh.c - (IST, MESH) handlers: distance, tolerance, collide and
 * contacts between an inner sphere tree and a mesh BVH, exact against the
 * two surfaces. (MESH, IST) is served by the engine with the pair swapped.
 *
 * An inner sphere tree keeps its surface mesh; prox_ist_prepare_mesh gives
 * it a mesh BVH of that surface (same triangles, same order), and these
 * handlers run the (MESH, MESH) handlers (bvh_handlers.c) on a copy of the
 * pair state whose A tree is that BVH. What the engine keeps per pair stays
 * consistent with the swap of trees:
 * - node ids in the queue are the surface BVH's (the copy pushes them, and
 *   every hook of this pair gets the copy again before it reads one);
 * - the cache's leaf ids are triangle indices of the IST's mesh, as the
 *   BVH's leaf ids are (the seed reads them back the same way);
 * - a traversal front is recorded against the copy's trees (the surface
 *   BVH, the mesh BVH): prox_front_begin compares the cache's front_a with
 *   the copy's A, so a front recorded by another pair type in the same
 *   cache is never taken for this one.
 * The surface BVH is closed, so a closed IST wholly around an open mesh
 * overlaps it (the mesh handlers' containment test at the roots).
 * Penetration volume has no handler here: an open mesh bounds no volume.
 *
 * RT safe: the copy lives on the stack, nothing allocates or locks.
 * Measured (bench meshes): see prox_ist_prepare_mesh in prox_ist.h.
 */
#include <stdio.h>
#include <string.h>

#include "bvh_internal.h"
#include "handlers.h"
#include "ist_internal.h"

int prox_ist_prepare_mesh(prox_ist *t, char *err, size_t errlen)
{
    if (!t) {
        snprintf(err, errlen, "no inner sphere tree");
        return -1;
    }
    if (t->mesh_bvh)
        return 0;
    /* a view of the tree's own arrays (prox_bvh_build copies what it
     * keeps); closed: every inner sphere tree's mesh is */
    prox_mesh m;
    memset(&m, 0, sizeof m);
    m.vertex_count = t->vert_count;
    m.triangle_count = t->tri_count;
    m.vertices = t->verts;
    m.triangles = t->tris;
    m.closed = 1;
    m.oriented = 1;
    m.volume = t->mesh_volume;
    m.centroid = t->com;
    t->mesh_bvh = prox_bvh_build(&m);
    if (!t->mesh_bvh) {
        snprintf(err, errlen, "out of memory building the mesh BVH of an inner sphere tree's surface (%u triangles)",
                 t->tri_count);
        return -1;
    }
    return 0;
}

int prox_ist_mesh_ready(const prox_ist *t) { return t && t->mesh_bvh != NULL; }

int prox_ist_prepare_pair(const prox_tree *a, const prox_tree *b, char *err, size_t errlen)
{
    const prox_tree *ist = a->type == PROX_TREE_IST && b->type == PROX_TREE_MESH   ? a
                           : a->type == PROX_TREE_MESH && b->type == PROX_TREE_IST ? b
                                                                                   : NULL;
    /* (the tree is the caller's: made mutable by a build or a load) */
    return ist ? prox_ist_prepare_mesh((prox_ist *)ist->impl, err, errlen) : 0;
}

/* The pair as the mesh handlers see it: A the IST's surface BVH. A hook
 * the engine calls back with the copy (pruned, from a push) gets it as is.
 * NULL where the IST has no surface BVH. */
static const prox_pairstate *on_surface(const prox_pairstate *p, prox_pairstate *tmp)
{
    if (p->a->type != PROX_TREE_IST)
        return p;
    const prox_ist *t = p->a->impl;
    if (!t->mesh_bvh)
        return NULL;
    *tmp = *p;
    tmp->a = prox_bvh_tree(t->mesh_bvh);
    return tmp;
}

static void wrap_root(prox_ctx *c, const prox_pairstate *p)
{
    prox_pairstate tmp;
    const prox_pairstate *q = on_surface(p, &tmp);
    if (!q) {
        /* not prepared: nothing is known of this pair, and the answer says
         * so (lower bound 0, incomplete) instead of missing it */
        prox_ctx_note_unsettled(c, 0.0);
        prox_ctx_deadline_passed(c);
        return;
    }
    const prox_handler *h = bvh_mesh_handler(p->query->kind);
    if (h->root)
        h->root(c, q);
    else
        prox_ctx_push(c, q, q->a->root, q->b->root, 0.0);
}

static void wrap_seed(prox_ctx *c, const prox_pairstate *p)
{
    prox_pairstate tmp;
    const prox_pairstate *q = on_surface(p, &tmp);
    const prox_handler *h = bvh_mesh_handler(p->query->kind);
    if (q && h->seed)
        h->seed(c, q);
}

static void wrap_expand(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    prox_pairstate tmp;
    const prox_pairstate *q = on_surface(p, &tmp);
    if (q) /* (only pairs the root pushed reach here) */
        bvh_mesh_handler(p->query->kind)->expand(c, q, na, nb);
}

static void wrap_finish(prox_ctx *c, const prox_pairstate *p)
{
    prox_pairstate tmp;
    const prox_pairstate *q = on_surface(p, &tmp);
    const prox_handler *h = bvh_mesh_handler(p->query->kind);
    if (q && h->finish)
        h->finish(c, q);
}

static void wrap_pruned(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb, double key)
{
    prox_pairstate tmp;
    const prox_pairstate *q = on_surface(p, &tmp);
    const prox_handler *h = bvh_mesh_handler(p->query->kind);
    if (q && h->pruned)
        h->pruned(c, q, na, nb, key);
}

void prox_ist_mesh_register(prox_bank *bank)
{
    static const char *const names[PROX_QUERY_KIND_COUNT] = {
        [PROX_QUERY_COLLIDE] = "ist-mesh collide (surface BVH)",
        [PROX_QUERY_CONTACTS] = "ist-mesh contacts (surface BVH)",
        [PROX_QUERY_DISTANCE] = "ist-mesh distance (surface BVH)",
        [PROX_QUERY_TOLERANCE] = "ist-mesh tolerance (surface BVH)",
    };
    for (uint32_t k = 0; k < PROX_QUERY_KIND_COUNT; k++) {
        const prox_handler *m = bvh_mesh_handler(k);
        if (!m)
            continue;
        prox_handler h = {0};
        h.name = names[k];
        h.root = wrap_root;
        h.seed = m->seed ? wrap_seed : NULL;
        h.expand = wrap_expand;
        h.finish = m->finish ? wrap_finish : NULL;
        h.pruned = m->pruned ? wrap_pruned : NULL;
        prox_bank_set(bank, PROX_TREE_IST, PROX_TREE_MESH, k, &h);
    }
}
