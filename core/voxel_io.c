/* voxel_io.c - voxel maps from point clouds (PLY via assimp, XYZ text). */
#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "voxel_internal.h"

static int read_xyz(const char *path, prox_vec3 **pts, size_t *n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1024, k = 0;
    prox_vec3 *v = malloc(sizeof *v * cap);
    char line[512];
    int lineno = 0;
    while (v && fgets(line, sizeof line, f)) {
        lineno++;
        char *h = strchr(line, '#');
        if (h)
            *h = 0;
        double x, y, z;
        int got = sscanf(line, "%lf %lf %lf", &x, &y, &z);
        if (got <= 0)
            continue;
        if (got != 3 || !isfinite(x) || !isfinite(y) || !isfinite(z)) {
            snprintf(err, errlen, "%s:%d: want 'x y z' (finite numbers)", path, lineno);
            free(v);
            fclose(f);
            return -1;
        }
        if (k == cap) {
            prox_vec3 *nv = realloc(v, sizeof *v * (cap *= 2));
            if (!nv) {
                free(v);
                v = NULL;
                break;
            }
            v = nv;
        }
        v[k++] = prox_v3(x, y, z);
    }
    fclose(f);
    if (!v) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    *pts = v;
    *n = k;
    return 0;
}

static int read_assimp_points(const char *path, prox_vec3 **pts, size_t *n, char *err, size_t errlen)
{
    const struct aiScene *sc = aiImportFile(path, 0);
    if (!sc) {
        snprintf(err, errlen, "%s: not a readable point cloud (%s)", path, aiGetErrorString());
        return -1;
    }
    size_t total = 0;
    for (unsigned i = 0; i < sc->mNumMeshes; i++)
        total += sc->mMeshes[i]->mNumVertices;
    prox_vec3 *v = malloc(sizeof *v * (total ? total : 1));
    if (!v) {
        aiReleaseImport(sc);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    size_t k = 0;
    for (unsigned i = 0; i < sc->mNumMeshes; i++)
        for (unsigned j = 0; j < sc->mMeshes[i]->mNumVertices; j++) {
            struct aiVector3D p = sc->mMeshes[i]->mVertices[j];
            v[k++] = prox_v3(p.x, p.y, p.z);
        }
    aiReleaseImport(sc);
    *pts = v;
    *n = k;
    return 0;
}

int prox_voxmap_from_cloud(const char *path, double cell, uint32_t cls, prox_voxmap **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!(cell > 0) || !isfinite(cell)) {
        snprintf(err, errlen, "cell size must be a positive number");
        return -1;
    }
    if (cls != PROX_VOXEL_OBSTACLE && cls != PROX_VOXEL_UNKNOWN) {
        snprintf(err, errlen, "class must be obstacle (1) or unknown (2)");
        return -1;
    }
    size_t n = strlen(path);
    int xyz = n > 4 && !strcasecmp(path + n - 4, ".xyz");
    prox_vec3 *p = NULL;
    size_t np = 0;
    if ((xyz ? read_xyz(path, &p, &np, err, errlen) : read_assimp_points(path, &p, &np, err, errlen)) != 0)
        return -1;
    if (np == 0) {
        free(p);
        snprintf(err, errlen, "%s: the cloud has no points", path);
        return -1;
    }
    prox_vec3 lo = p[0], hi = p[0];
    for (size_t i = 1; i < np; i++)
        lo = prox_v3_min(lo, p[i]), hi = prox_v3_max(hi, p[i]);
    prox_voxmap_def d;
    memset(&d, 0, sizeof d);
    d.cell = cell;
    d.origin = lo;
    double ext[3] = {hi.x - lo.x, hi.y - lo.y, hi.z - lo.z};
    for (int a = 0; a < 3; a++) {
        double c = floor(ext[a] / cell) + 1;
        if (c > 65536) {
            free(p);
            snprintf(err, errlen, "%s: the cloud spans %.0f cells on an axis at cell %g (at most 65536); use a larger cell",
                     path, c, cell);
            return -1;
        }
        d.dims[a] = (uint32_t)c;
    }
    d.capacity = np < (1u << 24) ? (uint32_t)np + 16 : (1u << 24);
    prox_voxmap *m = prox_voxmap_create(&d, err, errlen);
    if (!m) {
        free(p);
        return -1;
    }
    for (size_t i = 0; i < np; i++) {
        int32_t x = (int32_t)floor((p[i].x - lo.x) / cell), y = (int32_t)floor((p[i].y - lo.y) / cell),
                z = (int32_t)floor((p[i].z - lo.z) / cell);
        if (prox_voxmap_set(m, x, y, z, cls) == PROX_VOXEL_FULL) {
            free(p);
            prox_voxmap_free(m);
            snprintf(err, errlen, "%s: more occupied cells than capacity", path);
            return -1;
        }
    }
    free(p);
    *out = m;
    return 0;
}
