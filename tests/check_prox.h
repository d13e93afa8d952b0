/* check_prox.h - helpers for the tests that write meshes and run the prox
 * tool of the same build, and time (test_bvh, test_boxes, test_mesh,
 * test_ist). Include after check.h and prox.h. */
#ifndef CHECK_PROX_H
#define CHECK_PROX_H

/* m as an OBJ file at path (17 significant digits: the mesh read back is the
 * same bit for bit); a failure to open is a failed check */
static inline void check_write_obj(const char *path, const prox_mesh *m)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f)
        return;
    for (uint32_t i = 0; i < m->vertex_count; i++)
        fprintf(f, "v %.17g %.17g %.17g\n", m->vertices[i].x, m->vertices[i].y, m->vertices[i].z);
    for (uint32_t i = 0; i < m->triangle_count; i++)
        fprintf(f, "f %u %u %u\n", m->triangles[i][0] + 1, m->triangles[i][1] + 1, m->triangles[i][2] + 1);
    fclose(f);
}

/* m as an OFF file at path (prox_mesh_write_off); a failure is a failed
 * check */
static inline void check_write_off(const char *path, const prox_mesh *m)
{
    char err[512];
    int rc = prox_mesh_write_off(m, path, err, sizeof err);
    CHECK(rc == 0, "%s", rc == 0 ? "" : err);
}

/* seconds on the clock the queries' deadlines use (prox_now_ns) */
static inline double check_now_s(void) { return 1e-9 * (double)prox_now_ns(); }

/* the prox tool of the same build: $PROX_BIN, else ../prox beside the test
 * binary's folder (build/tests/x -> build/prox) */
static inline void check_find_prox(const char *argv0, char *out, size_t size)
{
    const char *env = getenv("PROX_BIN");
    if (env) {
        snprintf(out, size, "%s", env);
        return;
    }
    const char *slash = strrchr(argv0, '/');
    int len = slash ? (int)(slash - argv0) : 1;
    snprintf(out, size, "%.*s/../prox", len, slash ? argv0 : ".");
}

#endif
