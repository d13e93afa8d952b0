/* fuzz_vox.c - libFuzzer target (make fuzz): a .vox voxel map file as
 * input; a map that loads must take a distance and a collision query
 * against a ball without a fault. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "prox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    static prox_mesh *ball;
    static prox_bvh *bb;
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/hapticd-fuzz-%d.vox", (int)getpid());
        ball = prox_mesh_make_sphere(0.05, 1);
        bb = ball ? prox_bvh_build(ball) : NULL;
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    prox_voxmap *m;
    char err[512];
    if (prox_voxmap_load(path, &m, err, sizeof err) != 0)
        return 0;
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine_def def = prox_engine_def_default();
    prox_engine *e = prox_engine_create(&def, bank);
    if (e && bb) {
        prox_object_pair p = {prox_voxmap_tree(m), prox_bvh_tree(bb), prox_xform_identity(), prox_xform_identity(), NULL};
        const prox_query_kind kinds[] = {PROX_QUERY_DISTANCE, PROX_QUERY_COLLIDE};
        for (int k = 0; k < 2; k++) {
            prox_query q = prox_query_default(kinds[k]);
            prox_result r;
            prox_query_run(e, &q, &p, 1, &r);
        }
    }
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_voxmap_free(m);
    return 0;
}
