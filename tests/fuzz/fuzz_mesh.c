/* fuzz_mesh.c - libFuzzer target (make fuzz): a mesh file (OFF) as input,
 * read by the loader (assimp, then prox's checks); a mesh that loads gets
 * a bounding volume hierarchy and a distance query against itself. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "prox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/hapticd-fuzz-%d.off", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    prox_mesh *m;
    char err[512];
    if (prox_mesh_load(path, &m, err, sizeof err) != 0)
        return 0;
    prox_bvh *b = prox_bvh_build(m);
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine_def def = prox_engine_def_default();
    prox_engine *e = prox_engine_create(&def, bank);
    if (b && e) {
        prox_object_pair p = {prox_bvh_tree(b), prox_bvh_tree(b), prox_xform_identity(), prox_xform_identity(), NULL};
        p.pose_b.t.x = 0.5;
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_result r;
        prox_query_run(e, &q, &p, 1, &r);
    }
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_bvh_free(b);
    prox_mesh_free(m);
    return 0;
}
