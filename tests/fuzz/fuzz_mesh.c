/* fuzz_mesh.c - libFuzzer target (make fuzz): a mesh file as input, read
 * by the loader (prox's header checks, assimp, then prox's checks); the
 * first byte picks the suffix (its value modulo the table's length):
 * .off or .ply, the formats whose headers and bodies prox checks, then
 * .stl, .obj and every other suffix assimp 5.2.5 names a reader for, read
 * by assimp alone unless the loader refuses the format (a suffix assimp
 * does not know is refused by the loader: fuzz_cloud says why). The first
 * four keep selectors 0 to 3 and fuzz_seeds' SEL_ names the next ones, so
 * a seed keeps its format; a corpus file kept from a run before the table
 * grew, whose first byte is 4 or more, now reads as another format. A
 * mesh that loads gets a bounding volume
 * hierarchy and a distance query against itself.
 * FUZZ_MESH_ONLY=gltf,glb (suffixes, comma-separated) reads only the
 * inputs whose selector names one of them, to give a few formats a run of
 * their own (libFuzzer's count of executions then includes the few inputs
 * skipped because a mutation changed their first byte). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_assimp.h"
#include "fuzz_query.h"
#include "prox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const suffix[] = {
        "off",   "ply",       "stl",    "obj",     "gltf", "glb",  "dae",     "3ds",  "x",       "fbx",      "ms3d",
        "lwo",   "blend",     "3mf",    "ase",     "md2",  "md3",  "mdl",     "ifc",  "ac",      "nff",      "raw",
        "smd",   "xgl",       "amf",    "irrmesh", "irr",  "b3d",  "cob",     "csm",  "bvh",     "dxf",      "hmp",
        "iqm",   "lws",       "lxo",    "md5mesh", "mdc",  "mesh", "mesh.xml", "ndo", "ogex",    "pk3",      "pmx",
        "q3o",   "q3s",       "sib",    "ter",     "uc",   "x3d",  "zgl",     "3d",   "ask",     "assbin",   "zae",
        "xml",   "mot",       "enff",   "scn",     "bsp",  "prj",  "vta",     "ac3d", "acc",     "step",     "stp",
        "md5anim", "md5camera", "ifczip", "x3db"};
    enum { N = sizeof suffix / sizeof suffix[0] };
    static int filtered = -1, wanted[N];
    if (filtered < 0) {
        const char *only = getenv("FUZZ_MESH_ONLY");
        filtered = only && *only;
        for (int i = 0; filtered && i < N; i++) {
            const size_t len = strlen(suffix[i]);
            for (const char *p = only; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
                wanted[i] |= strncmp(p, suffix[i], len) == 0 && (p[len] == ',' || p[len] == 0);
        }
    }
    if (size < 1)
        return 0;
    const int sel = data[0] % N;
    if (filtered && !wanted[sel])
        return 0;
    const char *path = fuzz_file(suffix[sel], data + 1, size - 1);
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
