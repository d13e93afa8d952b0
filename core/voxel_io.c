/* voxel_io.c - voxel maps from point clouds: XYZ, OBJ and OFF text and PLY
 * (own readers), other formats' vertices through assimp. */
#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "off_keyword.h"
#include "ply_types.h"
#include "prox_mesh.h"
#include "voxel_internal.h"

/* The text clouds read here, line by line:
 * - XYZ: `x y z` a line.
 * - OBJ: the 'v' lines. assimp 5.2.5 read an OBJ without faces as points
 *   only with no 'o' or 'g' line (with one, the cloud "had no points"),
 *   skipped a 'v' line written with a tab and refused vertex colours. Every
 *   other OBJ line (faces, normals, texture coordinates, groups, materials)
 *   is skipped; a vertex's extra values (w, or colours) are ignored.
 * - OFF: the vertices after the header ([keyword] [dimension] vertex, face
 *   and edge counts, checked first by prox_mesh_check_header). assimp 5.2.5
 *   refuses an OFF without faces ("There are no valid faces"), the way
 *   point sets are written (CGAL's among them). Values after x y z (normals,
 *   colours, texture coordinates) are ignored; 4OFF's fourth divides them;
 *   a dimension other than 3 is refused, and binary OFF by the header
 *   check. The faces after the vertices are not read. */
enum text_cloud { CLOUD_XYZ, CLOUD_OBJ, CLOUD_OFF };

/* One line of an OFF header (comments cut): advances *state (0 the keyword
 * or the vertex count, 1 the dimension, 2 the vertex count, 3 the face
 * count, 4 done: the rest of that line, edges, ignored). 0, or -1 with err. */
static int off_header_line(char *s, int *state, int *hom, unsigned long long *nv, const char *path, int lineno, char *err,
                           size_t errlen)
{
    while (*state < 4) {
        s += strspn(s, " \t\r\n\v\f");
        if (!*s)
            return 0;
        const size_t len = strcspn(s, " \t\r\n\v\f");
        int h, dim;
        if (*state == 0 && off_keyword_at(s, s + len, &h, &dim) == s + len) { /* the whole word */
            *hom = h;
            s += len; /* (binary OFF: refused by the header check) */
            *state = dim ? 1 : 2;
            continue;
        }
        char *end;
        errno = 0;
        const unsigned long long c = strtoull(s, &end, 10);
        if (end != s + len || errno || *s == '-' || *s == '+') {
            snprintf(err, errlen, "%s:%d: unreadable OFF header (want [OFF] then vertex, face and edge counts)", path, lineno);
            return -1;
        }
        if (*state == 1 && c != 3) {
            snprintf(err, errlen, "%s:%d: OFF of dimension %llu (only 3 is read)", path, lineno, c);
            return -1;
        }
        if (*state == 0 || *state == 2)
            *nv = c;
        *state = *state == 0 ? 3 : *state + 1;
        s += len;
    }
    return 0;
}

static int read_text_points(const char *path, enum text_cloud fmt, prox_vec3 **pts, size_t *n, char *err, size_t errlen)
{
    const int obj = fmt == CLOUD_OBJ, off = fmt == CLOUD_OFF;
    /* an OFF's counts against the file's size and lines first (a small
     * file declaring a billion vertices is refused before reading) */
    if (off && prox_mesh_check_header(path, err, errlen) != 0)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1024, k = 0;
    prox_vec3 *v = malloc(sizeof *v * cap);
    char line[512];
    int lineno = 0, got, header = 0, off_state = 0, hom = 0;
    unsigned long long off_nv = 0;
    while (v && !(off && off_state == 4 && k == off_nv) && (got = prox_read_line(f, line, sizeof line)) != 0) {
        lineno++;
        char *s = line;
        if (lineno == 1 && !strncmp(s, "\xef\xbb\xbf", 3)) /* a UTF-8 byte order mark (Windows editors) */
            s += 3;
        /* a carriage return with more after it, a comment included: lines
         * ended by CR alone (classic Mac OS), which read as one line, its
         * first point only (checked before the comment is cut off: a
         * first line's comment would hide the rest; and before a line too
         * long, which is what such a file of more than a few points is:
         * the buffer holds its first part) */
        const char *cr = strchr(s, '\r');
        if (cr && !cr[strspn(cr, " \t\r\n\v\f")])
            cr = NULL; /* a CR at the end: CR LF, or a CR before trailing blanks */
        if (cr) {
            snprintf(err, errlen, "%s:%d: a carriage return inside the line (lines ended by CR alone?): one point a line, lines ended by LF or CR LF",
                     path, lineno);
            goto fail;
        }
        if (obj) {
            s += strspn(s, " \t");
            if (s[0] != 'v' || (s[1] && !strchr(" \t\r\n", s[1])))
                continue; /* not a vertex ('vn' and 'vt' included): a face line of any length */
            s++;
        }
        if (got < 0) {
            char why[96];
            snprintf(err, errlen, "%s:%d: %s", path, lineno, prox_read_line_why(got, sizeof line, why, sizeof why));
            goto fail;
        }
        char *h = strchr(s, '#');
        if (h)
            *h = 0;
        if (off && off_state < 4) {
            if (off_header_line(s, &off_state, &hom, &off_nv, path, lineno, err, errlen) != 0)
                goto fail;
            continue;
        }
        double x, y, z, w = 1;
        int nread = sscanf(s, "%lf %lf %lf %lf", &x, &y, &z, &w);
        if (nread == EOF && !obj) /* blank, or a comment alone */
            continue;
        if (nread == 0 && k == 0 && !header && fmt == CLOUD_XYZ) { /* a header line before the first point ("x y z", "//X Y Z") */
            header = 1;
            continue;
        }
        if (hom) { /* 4OFF: homogeneous coordinates, w needed, finite and not 0 */
            nread = nread == 4 && w != 0 && isfinite(w) ? 3 : 0;
            x /= w, y /= w, z /= w;
        }
        if (nread < 3 || !isfinite(x) || !isfinite(y) || !isfinite(z)) {
            snprintf(err, errlen, "%s:%d: want '%s' (finite numbers%s)", path, lineno, obj ? "v x y z" : hom ? "x y z w" : "x y z",
                     hom ? ", w not 0" : "");
            goto fail;
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
    if (off && (off_state < 4 || k < off_nv)) { /* (the header check counts lines, blank ones not) */
        snprintf(err, errlen, off_state < 4 ? "%s: unreadable OFF header (want [OFF] then vertex, face and edge counts)"
                                            : "%s: truncated OFF (%zu of %llu vertices)",
                 path, k, off_nv);
        free(v);
        return -1;
    }
    *pts = v;
    *n = k;
    return 0;
fail:
    free(v);
    fclose(f);
    return -1;
}

/* A small PLY reader for point clouds. assimp reads vertex-only PLY files
 * but fills missing values of a truncated file silently (with repeated or
 * zero coordinates), so clouds are read here: ascii, binary_little_endian
 * and binary_big_endian; the vertex element's x, y, z of any scalar type,
 * other scalar vertex properties skipped; elements after the vertices
 * (faces) ignored; ascii elements before the vertices skipped by lines. */
typedef struct ply_prop {
    int size, type; /* type: 0 int, 1 uint, 2 float */
    int axis;       /* 0..2 for x, y, z, else -1 */
} ply_prop;

static double ply_binary_value(const unsigned char *b, const ply_prop *p, int big)
{
    unsigned char v[8];
    for (int i = 0; i < p->size; i++)
        v[i] = big ? b[p->size - 1 - i] : b[i];
    if (p->type == PLY_FLOAT) {
        if (p->size == 4) {
            float f;
            memcpy(&f, v, 4);
            return f;
        }
        double d;
        memcpy(&d, v, 8);
        return d;
    }
    uint64_t u = 0;
    for (int i = p->size - 1; i >= 0; i--)
        u = u << 8 | v[i];
    if (p->type == PLY_SIGNED && p->size < 8 && (u >> (8 * p->size - 1)) & 1)
        return (double)(int64_t)(u - (1ull << (8 * p->size)));
    return (double)u;
}

static int read_ply(const char *path, prox_vec3 **pts, size_t *n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    int format = -1, in_vertex = 0, seen_vertex = 0, np = 0, have[3] = {0, 0, 0}, lineno = 0;
    unsigned long nv = 0, skip_lines = 0;
    ply_prop props[64];
    prox_vec3 *v = NULL;
    if (prox_read_line(f, line, sizeof line) != 1 || strncmp(line, "ply", 3)) {
        snprintf(err, errlen, "%s: not a PLY file (no 'ply' magic)", path);
        goto fail;
    }
    lineno = 1;
    for (;;) {
        int got = prox_read_line(f, line, sizeof line);
        lineno++;
        if (got == 0) {
            snprintf(err, errlen, "%s: truncated PLY header (no end_header)", path);
            goto fail;
        }
        if (got < 0) {
            char why[96];
            snprintf(err, errlen, "%s:%d: PLY header: %s", path, lineno, prox_read_line_why(got, sizeof line, why, sizeof why));
            goto fail;
        }
        char a[64] = "", b[64] = "", c[64] = "";
        unsigned long cnt;
        sscanf(line, "%63s %63s %63s", a, b, c);
        if (!strcmp(a, "end_header"))
            break;
        if (!strcmp(a, "format")) {
            format = !strcmp(b, "ascii") ? 0 : !strcmp(b, "binary_little_endian") ? 1 : !strcmp(b, "binary_big_endian") ? 2 : -1;
            if (format < 0) {
                snprintf(err, errlen, "%s:%d: unknown PLY format '%s'", path, lineno, b);
                goto fail;
            }
        } else if (!strcmp(a, "element")) {
            if (sscanf(line, "%*s %*s %lu", &cnt) != 1) {
                snprintf(err, errlen, "%s:%d: malformed element line", path, lineno);
                goto fail;
            }
            in_vertex = !strcmp(b, "vertex");
            if (in_vertex) {
                seen_vertex = 1;
                nv = cnt;
            } else if (!seen_vertex) {
                if (format != 0) {
                    snprintf(err, errlen, "%s: binary PLY with elements before the vertices is not supported", path);
                    goto fail;
                }
                skip_lines += cnt;
            }
        } else if (!strcmp(a, "property") && in_vertex) {
            if (!strcmp(b, "list")) {
                snprintf(err, errlen, "%s:%d: list properties on vertices are not supported", path, lineno);
                goto fail;
            }
            if (np == 64) {
                snprintf(err, errlen, "%s:%d: more than 64 vertex properties", path, lineno);
                goto fail;
            }
            if (ply_scalar_type(b, strlen(b), &props[np].size, &props[np].type) != 0) {
                snprintf(err, errlen, "%s:%d: unsupported vertex property type '%s'", path, lineno, b);
                goto fail;
            }
            props[np].axis = !strcmp(c, "x") ? 0 : !strcmp(c, "y") ? 1 : !strcmp(c, "z") ? 2 : -1;
            if (props[np].axis >= 0)
                have[props[np].axis] = 1;
            np++;
        }
    }
    if (format < 0 || !seen_vertex || !have[0] || !have[1] || !have[2]) {
        snprintf(err, errlen, "%s: PLY header lacks a format or a vertex element with x, y, z", path);
        goto fail;
    }
    if (nv > (1ul << 28)) {
        snprintf(err, errlen, "%s: %lu vertices is too many", path, nv);
        goto fail;
    }
    /* the header's count is only a claim: the array grows as vertices are
     * read (a 150-byte file declaring 2^28 took 6.4 GB before reading one) */
    size_t cap = nv < 65536 ? nv : 65536;
    v = malloc(sizeof *v * (cap ? cap : 1));
    if (!v) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    for (unsigned long i = 0; i < skip_lines; i++)
        if (prox_read_line(f, line, sizeof line) == 0) { /* (a long line is skipped whole) */
            snprintf(err, errlen, "%s: truncated PLY (elements before the vertices)", path);
            goto fail;
        }
    int rec = 0;
    for (int i = 0; i < np; i++)
        rec += props[i].size;
    for (unsigned long i = 0; i < nv; i++) {
        double xyz[3] = {0, 0, 0};
        if (format == 0) {
            int got = prox_read_line(f, line, sizeof line);
            if (got == 0) {
                snprintf(err, errlen, "%s: truncated PLY (%lu of %lu vertices)", path, i, nv);
                goto fail;
            }
            if (got < 0) {
                char why[96];
                snprintf(err, errlen, "%s: vertex %lu: %s", path, i, prox_read_line_why(got, sizeof line, why, sizeof why));
                goto fail;
            }
            char *s = line;
            for (int k = 0; k < np; k++) {
                char *e;
                double val = strtod(s, &e);
                if (e == s) {
                    snprintf(err, errlen, "%s: vertex %lu has %d values, want %d", path, i, k, np);
                    goto fail;
                }
                s = e;
                if (props[k].axis >= 0)
                    xyz[props[k].axis] = val;
            }
        } else {
            unsigned char buf[512];
            if (rec > (int)sizeof buf || fread(buf, 1, (size_t)rec, f) != (size_t)rec) {
                snprintf(err, errlen, "%s: truncated PLY (%lu of %lu vertices)", path, i, nv);
                goto fail;
            }
            int off = 0;
            for (int k = 0; k < np; k++) {
                if (props[k].axis >= 0)
                    xyz[props[k].axis] = ply_binary_value(buf + off, &props[k], format == 2);
                off += props[k].size;
            }
        }
        if (!isfinite(xyz[0]) || !isfinite(xyz[1]) || !isfinite(xyz[2])) {
            snprintf(err, errlen, "%s: vertex %lu is not finite", path, i);
            goto fail;
        }
        if (i == cap) {
            cap = 2 * cap < nv ? 2 * cap : nv;
            prox_vec3 *g = realloc(v, sizeof *v * cap);
            if (!g) {
                snprintf(err, errlen, "%s: out of memory", path);
                goto fail;
            }
            v = g;
        }
        v[i] = prox_v3(xyz[0], xyz[1], xyz[2]);
    }
    fclose(f);
    *pts = v;
    *n = nv;
    return 0;
fail:
    free(v);
    fclose(f);
    return -1;
}

static int read_assimp_points(const char *path, prox_vec3 **pts, size_t *n, char *err, size_t errlen)
{
    /* assimp reserves what an OFF or PLY header declares before reading:
     * the mesh loader's header checks first (a 300-byte OFF declaring 1e9
     * vertices took 15.6 GB) */
    if (prox_mesh_check_header(path, err, errlen) != 0)
        return -1;
    /* validated, as the mesh loader's input, before assimp's own scene
     * preprocessing: that read past the faces of an OFF whose face lines
     * of no corners outnumber the faces declared (assimp 5.2.5 counted
     * them down past zero; SIGSEGV). Validation refuses a mesh without
     * faces: PLY, OBJ and XYZ clouds are read by prox (above). */
    const struct aiScene *sc = aiImportFile(path, aiProcess_ValidateDataStructure);
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
            if (!isfinite(p.x) || !isfinite(p.y) || !isfinite(p.z)) {
                aiReleaseImport(sc);
                free(v);
                snprintf(err, errlen, "%s: vertex %zu is not finite", path, k + 1);
                return -1;
            }
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
        snprintf(err, errlen, "%s: the cell size must be a positive number", path);
        return -1;
    }
    if (cls != PROX_VOXEL_OBSTACLE && cls != PROX_VOXEL_UNKNOWN) {
        snprintf(err, errlen, "%s: the class must be obstacle (1) or unknown (2), got %u", path, cls);
        return -1;
    }
    size_t n = strlen(path);
    const char *suffix = n > 4 ? path + n - 4 : "";
    const int xyz = !strcasecmp(suffix, ".xyz"), obj = !strcasecmp(suffix, ".obj"), off = !strcasecmp(suffix, ".off");
    prox_vec3 *p = NULL;
    size_t np = 0;
    int rc = xyz || obj || off ? read_text_points(path, obj ? CLOUD_OBJ : off ? CLOUD_OFF : CLOUD_XYZ, &p, &np, err, errlen)
         : !strcasecmp(suffix, ".ply") ? read_ply(path, &p, &np, err, errlen)
                                      : read_assimp_points(path, &p, &np, err, errlen);
    if (rc != 0)
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
        int st = prox_voxmap_set(m, x, y, z, cls);
        if (st == PROX_VOXEL_FULL || st == PROX_VOXEL_OUT_OF_RANGE) {
            free(p);
            prox_voxmap_free(m);
            if (st == PROX_VOXEL_FULL) /* (the capacity is the point count, up to what a map file holds) */
                snprintf(err, errlen, "%s: the cloud occupies more than %u cells at cell %g, the most a map file holds; use a larger cell",
                         path, d.capacity, cell);
            else
                snprintf(err, errlen, "%s: a point falls outside the map (not finite?)", path);
            return -1;
        }
    }
    free(p);
    *out = m;
    return 0;
}
