/* mesh_load.c - load meshes through assimp (OBJ, OFF, STL, PLY, glTF, ...).
 *
 * We use assimp rather than our own parsers: it is well kept, in Debian,
 * and reads every format users bring. We only merge the scene's meshes
 * (applying node transforms), then weld and clean like every other mesh.
 */
#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "prox_mesh.h"

typedef struct load_acc {
    prox_vec3 *v;
    uint32_t (*t)[3];
    size_t nv, nt, cv, ct;
    int failed;
} load_acc;

static void acc_node(load_acc *acc, const struct aiScene *sc, const struct aiNode *node, struct aiMatrix4x4 parent)
{
    struct aiMatrix4x4 m = parent;
    aiMultiplyMatrix4(&m, &node->mTransformation);
    for (unsigned i = 0; i < node->mNumMeshes && !acc->failed; i++) {
        const struct aiMesh *mesh = sc->mMeshes[node->mMeshes[i]];
        if (!(mesh->mPrimitiveTypes & aiPrimitiveType_TRIANGLE))
            continue;
        if (acc->nv + mesh->mNumVertices > UINT32_MAX || acc->nt + mesh->mNumFaces > UINT32_MAX) {
            acc->failed = 1;
            return;
        }
        size_t base = acc->nv;
        if (acc->nv + mesh->mNumVertices > acc->cv) {
            acc->cv = 2 * (acc->nv + mesh->mNumVertices);
            void *n = realloc(acc->v, sizeof *acc->v * acc->cv);
            if (!n) {
                acc->failed = 1;
                return;
            }
            acc->v = n;
        }
        for (unsigned k = 0; k < mesh->mNumVertices; k++) {
            struct aiVector3D p = mesh->mVertices[k];
            aiTransformVecByMatrix4(&p, &m);
            acc->v[acc->nv++] = prox_v3(p.x, p.y, p.z);
        }
        if (acc->nt + mesh->mNumFaces > acc->ct) {
            acc->ct = 2 * (acc->nt + mesh->mNumFaces);
            void *n = realloc(acc->t, sizeof *acc->t * acc->ct);
            if (!n) {
                acc->failed = 1;
                return;
            }
            acc->t = n;
        }
        for (unsigned f = 0; f < mesh->mNumFaces; f++) {
            const struct aiFace *face = &mesh->mFaces[f];
            if (face->mNumIndices != 3)
                continue;
            for (int k = 0; k < 3; k++)
                acc->t[acc->nt][k] = (uint32_t)(base + face->mIndices[k]);
            acc->nt++;
        }
    }
    for (unsigned c = 0; c < node->mNumChildren && !acc->failed; c++)
        acc_node(acc, sc, node->mChildren[c], m);
}

int prox_mesh_load(const char *path, prox_mesh **out, char *err, size_t errlen)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: is a directory, not a mesh file", path);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    fclose(f);
    if (st.st_size == 0) {
        snprintf(err, errlen, "%s: file is empty", path);
        return -1;
    }
    const struct aiScene *sc = aiImportFile(path, aiProcess_Triangulate | aiProcess_JoinIdenticalVertices);
    if (!sc) {
        const char *msg = aiGetErrorString();
        snprintf(err, errlen, "%s: not a readable mesh (%s)", path, msg && *msg ? msg : "unknown format");
        return -1;
    }
    if (!sc->mRootNode || sc->mNumMeshes == 0) {
        aiReleaseImport(sc);
        snprintf(err, errlen, "%s: the file holds no mesh", path);
        return -1;
    }
    load_acc acc = {0};
    struct aiMatrix4x4 id;
    aiIdentityMatrix4(&id);
    acc_node(&acc, sc, sc->mRootNode, id);
    aiReleaseImport(sc);
    if (acc.failed) {
        free(acc.v);
        free(acc.t);
        snprintf(err, errlen, "%s: out of memory or too large", path);
        return -1;
    }
    if (acc.nt == 0) {
        free(acc.v);
        free(acc.t);
        snprintf(err, errlen, "%s: the mesh has no triangles", path);
        return -1;
    }
    prox_mesh *m = prox_mesh_from_arrays(acc.v, (uint32_t)acc.nv, (const uint32_t(*)[3])acc.t, (uint32_t)acc.nt);
    free(acc.v);
    free(acc.t);
    if (!m) {
        snprintf(err, errlen, "%s: invalid mesh data (non-finite coordinates or bad indices)", path);
        return -1;
    }
    if (m->triangle_count == 0) {
        prox_mesh_free(m);
        snprintf(err, errlen, "%s: every triangle is degenerate", path);
        return -1;
    }
    *out = m;
    return 0;
}
