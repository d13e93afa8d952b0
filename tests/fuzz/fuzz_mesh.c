/* fuzz_mesh.c - libFuzzer target (make fuzz): a mesh file as input, read
 * by the loader (prox's header checks, assimp, then prox's checks); the
 * first byte picks the suffix: .off or .ply, the formats whose headers
 * and bodies prox checks, or .stl or .obj, read by assimp alone (a suffix
 * assimp does not know is refused by the loader: fuzz_cloud says why). A
 * mesh that loads gets a bounding volume hierarchy and a distance query
 * against itself. */
#include <stdint.h>

#include "fuzz_assimp.h"
#include "fuzz_query.h"
#include "prox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const suffix[] = {"off", "ply", "stl", "obj"};
    if (size < 1)
        return 0;
    const char *path = fuzz_file(suffix[data[0] % (sizeof suffix / sizeof suffix[0])], data + 1, size - 1);
    prox_mesh *m;
    char err[512];
    if (!path || prox_mesh_load(path, &m, err, sizeof err) != 0)
        return 0;
    prox_bvh *b = prox_bvh_build(m);
    const prox_query_kind kinds[] = {PROX_QUERY_DISTANCE};
    fuzz_queries(b ? prox_bvh_tree(b) : NULL, b ? prox_bvh_tree(b) : NULL, kinds, 1);
    prox_bvh_free(b);
    prox_mesh_free(m);
    return 0;
}
