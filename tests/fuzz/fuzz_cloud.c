/* fuzz_cloud.c - libFuzzer target (make fuzz): a point cloud file as input
 * to prox_voxmap_from_cloud. The first byte picks the suffix, so the
 * reader: .xyz, .obj and .off (our text reader; .off behind the mesh
 * loader's header checks), .ply (our PLY reader), .stl (assimp). Not a
 * suffix assimp does not know: such a file goes to whichever of its
 * importers claims it by content (a 26-byte "quick3do" file made the
 * Quick3D reader ask for 630 GB: a failed allocation, refused cleanly
 * outside the sanitizer, which aborts on it). The rest is the
 * file. A cloud that reads must give a valid map of cells of the class
 * asked for that spans its grid exactly (the cloud's lowest point on each
 * axis is in cell 0, its highest in the last), with no more cells than
 * the file could hold points (3 bytes a point at least: a binary PLY of
 * one-byte x, y, z); a refusal must leave no map and say why on one line
 * that starts with the file's path. A broken rule aborts. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_assimp.h"
#include "fuzz_query.h"
#include "prox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct span {
    int32_t lo[3], hi[3];
    uint32_t cls, dims[3];
    int bad;
} span;

static void visit(int32_t x, int32_t y, int32_t z, uint32_t cls, void *u)
{
    span *s = u;
    const int32_t c[3] = {x, y, z};
    for (int a = 0; a < 3; a++) {
        s->bad |= c[a] < 0 || (uint32_t)c[a] >= s->dims[a];
        s->lo[a] = c[a] < s->lo[a] ? c[a] : s->lo[a];
        s->hi[a] = c[a] > s->hi[a] ? c[a] : s->hi[a];
    }
    s->bad |= cls != s->cls;
}

static void broken(const char *what, const char *path, const char *detail)
{
    fprintf(stderr, "fuzz_cloud: %s: %s (%s)\n", path, what, detail);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const suffix[] = {"xyz", "obj", "ply", "off", "stl"};
    if (size < 1)
        return 0;
    const char *path = fuzz_file(suffix[data[0] % 5], data + 1, size - 1);
    if (!path)
        return 0;
    const double cell = 0.01;
    const uint32_t cls = data[0] / 5 % 2 ? PROX_VOXEL_UNKNOWN : PROX_VOXEL_OBSTACLE;
    prox_voxmap *m = (prox_voxmap *)1;
    char err[512];
    memset(err, 0, sizeof err);
    if (prox_voxmap_from_cloud(path, cell, cls, &m, err, sizeof err) != 0) {
        const size_t n = strlen(path);
        if (m)
            broken("a refused cloud left a map", path, err);
        if (strncmp(err, path, n) || err[n] != ':' || !err[n + 1] || strchr(err, '\n'))
            broken("a refusal is not one line that names the file", path, err);
        return 0;
    }
    if (!m)
        broken("a cloud read gave no map", path, "");
    char verr[256];
    if (prox_voxmap_validate(m, verr, sizeof verr) != 0)
        broken("the map's hierarchy is broken", path, verr);
    prox_voxmap_def d;
    prox_voxmap_def_get(m, &d);
    span s = {{INT32_MAX, INT32_MAX, INT32_MAX}, {INT32_MIN, INT32_MIN, INT32_MIN}, cls, {d.dims[0], d.dims[1], d.dims[2]}, 0};
    prox_voxmap_foreach(m, visit, &s);
    const uint32_t count = prox_voxmap_count(m, PROX_CLASS_ALL);
    char detail[160];
    snprintf(detail, sizeof detail, "%u cells, dims %u %u %u, cells from %d %d %d to %d %d %d, %zu bytes", count, d.dims[0],
             d.dims[1], d.dims[2], s.lo[0], s.lo[1], s.lo[2], s.hi[0], s.hi[1], s.hi[2], size - 1);
    if (d.cell != cell || !(isfinite(d.origin.x) && isfinite(d.origin.y) && isfinite(d.origin.z)))
        broken("the map's cell or origin is wrong", path, detail);
    if (count == 0 || count != prox_voxmap_count(m, 1u << cls) || s.bad)
        broken("the map is empty, or holds a cell outside its grid or of another class", path, detail);
    for (int a = 0; a < 3; a++)
        if (s.lo[a] != 0 || (uint32_t)s.hi[a] != d.dims[a] - 1)
            broken("the map's cells do not span its grid", path, detail);
    if ((size_t)count * 3 > size - 1)
        broken("more cells than the file holds points", path, detail);
    prox_voxmap_free(m);
    return 0;
}
