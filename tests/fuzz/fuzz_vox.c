/* fuzz_vox.c - libFuzzer target (make fuzz): a .vox voxel map file as
 * input; a map that loads must take a distance and a collision query
 * against a ball without a fault. */
#include <stdint.h>

#include "fuzz_query.h"
#include "prox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static prox_mesh *ball;
    static prox_bvh *bb;
    if (!ball) {
        ball = prox_mesh_make_sphere(0.05, 1);
        bb = ball ? prox_bvh_build(ball) : NULL;
    }
    const char *path = fuzz_file("vox", data, size);
    prox_voxmap *m;
    char err[512];
    if (!path || prox_voxmap_load(path, &m, err, sizeof err) != 0)
        return 0;
    const prox_query_kind kinds[] = {PROX_QUERY_DISTANCE, PROX_QUERY_COLLIDE};
    fuzz_queries(prox_voxmap_tree(m), bb ? prox_bvh_tree(bb) : NULL, kinds, 2);
    prox_voxmap_free(m);
    return 0;
}
