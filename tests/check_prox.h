/* check_prox.h - helpers for the tests on prox types: random vectors and
 * quaternions, a mesh's distance by brute force, meshes written as files,
 * the prox tool of the same build, and time. Include after check.h and
 * prox.h. */
#ifndef CHECK_PROX_H
#define CHECK_PROX_H

#include <sys/wait.h>
#include <unistd.h>

/* Random draws. C leaves unspecified the order in which a call's arguments
 * are evaluated, and indeterminate the order of an initialiser list's
 * elements, so draws written inside prox_v3(...) or {...} depend on the
 * compiler. The tests' poses were chosen under gcc, which evaluates
 * arguments right to left and initialiser elements left to right; the
 * helpers below and the tests draw into named variables in that order, so
 * the poses stay those the tests were written for, on any compiler. */

/* a vector uniform in [lo, hi)^3, drawn z first, then y, then x (the order
 * gcc gave prox_v3(draw, draw, draw)) */
static inline prox_vec3 check_rng_v3(unsigned long long *s, double lo, double hi)
{
    double z = check_rng_uniform(s, lo, hi), y = check_rng_uniform(s, lo, hi), x = check_rng_uniform(s, lo, hi);
    return prox_v3(x, y, z);
}

/* a quaternion whose four components are uniform in [-1, 1), not
 * normalised; drawn w, x, y, z (the order gcc gave {draw, draw, draw, draw}) */
static inline prox_quat check_rng_quat(unsigned long long *s)
{
    prox_quat q;
    q.w = check_rng_uniform(s, -1, 1);
    q.x = check_rng_uniform(s, -1, 1);
    q.y = check_rng_uniform(s, -1, 1);
    q.z = check_rng_uniform(s, -1, 1);
    return q;
}

/* a rotation: check_rng_quat normalised (not uniform over rotations) */
static inline prox_quat check_rng_rotation(unsigned long long *s) { return prox_quat_normalize(check_rng_quat(s)); }

/* the distance of p to triangle tri (indices into v) */
static inline double check_tri_dist(const prox_vec3 *v, const uint32_t tri[3], prox_vec3 p)
{
    return sqrt(prox_point_triangle_dist2(p, v[tri[0]], v[tri[1]], v[tri[2]], NULL));
}

/* the distance of p to the surface of the n triangles tris (indices into
 * v), over every triangle: the brute force the trees are checked against */
static inline double check_tris_surface_dist(const prox_vec3 *v, uint32_t (*tris)[3], uint32_t n, prox_vec3 p)
{
    double best = INFINITY;
    for (uint32_t t = 0; t < n; t++) {
        double d2 = prox_point_triangle_dist2(p, v[tris[t][0]], v[tris[t][1]], v[tris[t][2]], NULL);
        if (d2 < best)
            best = d2;
    }
    return sqrt(best);
}

/* the distance of p to m's surface, over every triangle */
static inline double check_mesh_surface_dist(const prox_mesh *m, prox_vec3 p)
{
    return check_tris_surface_dist(m->vertices, m->triangles, m->triangle_count, p);
}

/* The least distance between the surfaces of a at pose xa and b at pose xb
 * (world), over every triangle pair: the brute force the trees' distances
 * are checked against. Where pairs is not NULL, the meeting pairs (a's
 * triangle, b's; prox_triangle_intersect) go there, up to cap of them, and
 * *n_pairs counts them all. */
static inline double check_mesh_pair_dist(const prox_mesh *a, const prox_xform *xa, const prox_mesh *b, const prox_xform *xb,
                                          uint32_t (*pairs)[2], uint32_t cap, uint32_t *n_pairs)
{
    double best = INFINITY;
    prox_vec3 P[3], Q[3], pp, qq;
    if (n_pairs)
        *n_pairs = 0;
    for (uint32_t i = 0; i < a->triangle_count; i++) {
        for (int k = 0; k < 3; k++)
            P[k] = prox_xform_point(xa, a->vertices[a->triangles[i][k]]);
        for (uint32_t j = 0; j < b->triangle_count; j++) {
            for (int k = 0; k < 3; k++)
                Q[k] = prox_xform_point(xb, b->vertices[b->triangles[j][k]]);
            best = fmin(best, prox_triangle_distance(P, Q, &pp, &qq));
            if (n_pairs && prox_triangle_intersect(P, Q)) {
                if (pairs && *n_pairs < cap)
                    pairs[*n_pairs][0] = i, pairs[*n_pairs][1] = j;
                (*n_pairs)++;
            }
        }
    }
    return best;
}

/* an open height field z = amp sin(3.1 x / s) cos(2.3 y / s) over [-s, s]^2
 * in n x n squares, two triangles each (amp 0: a flat open square, a wall);
 * NULL where memory runs out */
static inline prox_mesh *check_mesh_height_field(int n, double s, double amp)
{
    const int nv = (n + 1) * (n + 1);
    prox_vec3 *v = malloc(sizeof *v * (size_t)nv);
    uint32_t(*t)[3] = malloc(sizeof *t * (size_t)(2 * n * n));
    prox_mesh *m = NULL;
    if (v && t) {
        for (int j = 0; j <= n; j++)
            for (int i = 0; i <= n; i++) {
                double x = -s + 2 * s * i / n, y = -s + 2 * s * j / n;
                v[j * (n + 1) + i] = prox_v3(x, y, amp * sin(3.1 * x / s) * cos(2.3 * y / s));
            }
        uint32_t k = 0;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                uint32_t a = (uint32_t)(j * (n + 1) + i), b = a + 1, c = a + (uint32_t)n + 1, d = c + 1;
                t[k][0] = a, t[k][1] = b, t[k][2] = d, k++;
                t[k][0] = a, t[k][1] = d, t[k][2] = c, k++;
            }
        m = prox_mesh_from_arrays(v, (uint32_t)nv, (const uint32_t(*)[3])t, k);
    }
    free(v);
    free(t);
    return m;
}

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

/* a program of the same build: $env_name (the sanitized runs point it at
 * theirs), else ../name beside the test binary's folder (build/tests/x ->
 * build/name) */
static inline void check_find_tool(const char *argv0, const char *env_name, const char *name, char *out, size_t size)
{
    const char *env = getenv(env_name);
    if (env) {
        snprintf(out, size, "%s", env);
        return;
    }
    const char *slash = strrchr(argv0, '/');
    int len = slash ? (int)(slash - argv0) : 1;
    snprintf(out, size, "%.*s/../%s", len, slash ? argv0 : ".", name);
}

/* the prox tool of the same build ($PROX_BIN) */
static inline void check_find_prox(const char *argv0, char *out, size_t size) { check_find_tool(argv0, "PROX_BIN", "prox", out, size); }

/* Run a shell command (the tests call the prox tool so); its stdout lines
 * go to out (up to max lines of 255 characters), the first stderr line to
 * first_err (256 bytes; NULL: not kept) and the last to last_err (the
 * usage, where one is printed; the first says why). Returns the exit
 * status, -1 if it did not exit. */
static inline int check_run_cmd2(const char *cmd, char out[][256], int max, int *nout, char *first_err, char *last_err)
{
    char errpath[64], full[4200];
    snprintf(errpath, sizeof errpath, "/tmp/prox-test-err-%ld.txt", (long)getpid());
    snprintf(full, sizeof full, "%s 2>%s", cmd, errpath);
    FILE *p = popen(full, "r");
    *nout = 0;
    last_err[0] = 0;
    if (first_err)
        first_err[0] = 0;
    if (!p)
        return -1;
    char line[256];
    while (fgets(line, sizeof line, p))
        if (*nout < max)
            strcpy(out[(*nout)++], line);
    int st = pclose(p);
    FILE *e = fopen(errpath, "r");
    if (e) {
        for (int k = 0; fgets(line, sizeof line, e); k++) {
            if (k == 0 && first_err)
                strcpy(first_err, line);
            strcpy(last_err, line);
        }
        fclose(e);
    }
    remove(errpath);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline int check_run_cmd(const char *cmd, char out[][256], int max, int *nout, char *last_err)
{
    return check_run_cmd2(cmd, out, max, nout, NULL, last_err);
}

#endif
