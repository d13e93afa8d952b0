/* fuzz_seeds.c - make fuzz: fuzz_seeds DIR writes the fuzz targets' first
 * inputs into DIR/ist, DIR/vox, DIR/osc, DIR/mesh and DIR/cloud (the
 * scenarios' come from sim/scenarios): a small inner sphere tree, a voxel
 * map with a few cells, one OSC message per address hapticd answers plus a
 * bundle, a box and a ball as OFF meshes and a tetrahedron as PLY, STL and
 * OBJ, and point clouds in each form fuzz_cloud reads (the mesh and cloud
 * inputs' first byte picks the suffix). */
#include <errno.h>
#include <lo/lo.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "prox.h"

static int write_file(const char *dir, const char *name, const void *data, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size) {
        fprintf(stderr, "fuzz_seeds: cannot write %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f) ? -1 : 0;
}

static int osc_seed(const char *dir, int k, const char *path, lo_message m)
{
    unsigned char buf[2048];
    size_t size = sizeof buf;
    char name[32];
    snprintf(name, sizeof name, "m%02d", k);
    int rc = lo_message_serialise(m, path, buf, &size) ? write_file(dir, name, buf, size) : -1;
    lo_message_free(m);
    return rc;
}

/* a mesh seed: the suffix selector (fuzz_mesh: 0 off, 1 ply, 2 stl, 3 obj),
 * then m as prox_mesh_write_off writes it */
static int mesh_seed(const char *dir, const char *name, uint8_t sel, const prox_mesh *m, char *err, size_t errlen)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.tmp", dir, name);
    static uint8_t buf[16384];
    buf[0] = sel;
    if (prox_mesh_write_off(m, path, err, errlen))
        return -1;
    FILE *f = fopen(path, "rb");
    const size_t n = f ? fread(buf + 1, 1, sizeof buf - 1, f) : 0;
    const int whole = f && feof(f);
    if (f)
        fclose(f);
    remove(path);
    if (!whole || n == 0) {
        snprintf(err, errlen, "%s: not read back whole (at most %zu bytes)", path, sizeof buf - 1);
        return -1;
    }
    return write_file(dir, name, buf, n + 1);
}

/* a mesh or cloud seed: the suffix selector (fuzz_mesh: as mesh_seed's;
 * fuzz_cloud: 0 xyz, 1 obj, 2 ply, 3 off, 4 stl; plus 5 for the class
 * unknown), then size bytes of the file */
static int suffix_seed(const char *dir, const char *name, uint8_t sel, const void *data, size_t size)
{
    uint8_t buf[2048];
    if (size + 1 > sizeof buf)
        return -1;
    buf[0] = sel;
    memcpy(buf + 1, data, size);
    return write_file(dir, name, buf, size + 1);
}

static int suffix_text(const char *dir, const char *name, uint8_t sel, const char *text)
{
    return suffix_seed(dir, name, sel, text, strlen(text));
}

/* a binary PLY of 5 vertices, byte order big or little: layout 0 float
 * x, y, z and a colour; 1 double x, y, z and one face; 2 integers of
 * several sizes, x, y, z among other properties */
static int cloud_ply_binary(const char *dir, const char *name, int layout, int big)
{
    static const char *const head[3] = {
        "property float x\nproperty float y\nproperty float z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\n",
        "property double x\nproperty double y\nproperty double z\n",
        "property int16 x\nproperty uint8 flags\nproperty int32 y\nproperty char z\nproperty uint confidence\n"};
    uint8_t buf[1024];
    size_t k = (size_t)snprintf((char *)buf, sizeof buf, "ply\nformat %s 1.0\ncomment seed\nelement vertex 5\n%s%s",
                                big ? "binary_big_endian" : "binary_little_endian", head[layout],
                                layout == 1 ? "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
                                            : "end_header\n");
    /* each value's bytes little endian first, reversed for big endian */
    const int size[3][6] = {{4, 4, 4, 1, 1, 1}, {8, 8, 8}, {2, 1, 4, 1, 4}};
    const int kinds[3][6] = {{2, 2, 2, 1, 1, 1}, {2, 2, 2}, {0, 1, 0, 0, 1}}; /* 0 int, 1 uint, 2 float */
    const int nprop = layout == 0 ? 6 : layout == 1 ? 3 : 5;
    for (int i = 0; i < 5; i++)
        for (int p = 0; p < nprop; p++) {
            const double val = (double)(p * 7 + i * 3 % 5) - 4.5 * (p < 3) + (kinds[layout][p] == 2 ? 0.25 : 0);
            uint8_t b[8];
            if (kinds[layout][p] == 2 && size[layout][p] == 4) {
                const float f = (float)val;
                memcpy(b, &f, 4);
            } else if (kinds[layout][p] == 2) {
                memcpy(b, &val, 8);
            } else {
                const int64_t v = (int64_t)val;
                memcpy(b, &v, 8);
            }
            for (int j = 0; j < size[layout][p]; j++)
                buf[k++] = big ? b[size[layout][p] - 1 - j] : b[j];
        }
    if (layout == 1) { /* the face: 3 corners */
        const uint8_t face_le[13] = {3, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0}, face_be[13] = {3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2};
        memcpy(buf + k, big ? face_be : face_le, 13);
        k += 13;
    }
    return suffix_seed(dir, name, 2, buf, k);
}

static int cloud_seeds(const char *dir)
{
    int bad = 0;
    bad |= suffix_text(dir, "plain.xyz", 0, "0 0 0\n0.05 0.02 0.01\n-0.03 0.04 0.1\n0.2 -0.1 0.05\n");
    bad |= suffix_text(dir, "header.xyz", 5,
                       "\xef\xbb\xbf" "x y z\n# scanner export\n\n1.5 2.5 -0.5 # first\n1.52e0 2.51 -0.49\n  1.6\t2.4 -0.45\n");
    bad |= suffix_text(dir, "crlf.xyz", 0, "//X Y Z\r\n0.1 0.2 0.3\r\n0.12 0.22 0.31 \r\n# end\r\n0.4 0.1 0.2\r\n");
    bad |= suffix_text(dir, "cr-alone.xyz", 0, "0 0 0\r1 1 1\r2 2 2\r");
    bad |= suffix_text(dir, "mesh.obj", 1,
                       "# an OBJ cloud\nmtllib scan.mtl\no scan\ng part\nv 0 0 0\nv 0.1 0 0 0.5 0.25 1\n\tv\t0 0.1 0\n"
                       "vn 0 0 1\nvt 0.5 0.5\nv 0.02 0.03 0.05 1.0\nusemtl none\ns off\nf 1 2 3\nf 1/1/1 2/1/1 4/1/1\n");
    bad |= suffix_text(dir, "points.obj", 6, "v -1 -1 -1\nv 1 1 1 # corner\nv 0.5 -0.5 0.25 0 0 0\n");
    bad |= suffix_text(dir, "ascii.ply", 2,
                       "ply\nformat ascii 1.0\ncomment made by hand\nelement vertex 4\nproperty float x\nproperty float y\n"
                       "property float z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\n"
                       "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
                       "0 0 0 255 0 0\n0.1 0 0 0 255 0\n0 0.1 0 0 0 255\n0.05 0.05 0.2 9 9 9\n3 0 1 2\n");
    bad |= suffix_text(dir, "camera-first.ply", 7,
                       "ply\nformat ascii 1.0\nelement camera 2\nproperty float view_px\nproperty float view_py\n"
                       "element vertex 3\nproperty double nx\nproperty double z\nproperty double y\nproperty double x\n"
                       "end_header\n1 2\n3 4\n0 0.5 0.25 -1\n1 0.5 0.3 -1.1\n0 0.6 0.2 -0.9\n");
    for (int layout = 0; layout < 3; layout++)
        for (int big = 0; big < 2; big++) {
            char name[32];
            snprintf(name, sizeof name, "binary%d-%s.ply", layout, big ? "be" : "le");
            bad |= cloud_ply_binary(dir, name, layout, big);
        }
    bad |= suffix_text(dir, "points.off", 3, "OFF\n# a cloud\n4 0 0\n0 0 0\n0.1 0 0\n0 0.1 0\n0 0 0.1\n");
    bad |= suffix_text(dir, "colours.off", 8, "COFF 3 1 0\n\n0 0 0 1 0 0 1\n0.1 0 0 0 1 0 1\n0 0.1 0 0 0 1 1\n3 0 1 2 0.5 0.5 0.5\n");
    bad |= suffix_text(dir, "hom.off", 3, "# homogeneous\n4nOFF\n3\n2 0 0\n0 0 0 2\n0.2 0.4 0.6 2\n");
    bad |= suffix_text(dir, "tri.stl", 4,
                       "solid cloud\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 0.1 0 0\nvertex 0 0.1 0\n"
                       "endloop\nendfacet\nendsolid cloud\n");
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    char d[5][512], err[512];
    const char *sub[5] = {"ist", "vox", "osc", "mesh", "cloud"};
    if (mkdir(argv[1], 0755) && errno != EEXIST)
        return 1;
    for (int i = 0; i < 5; i++) {
        snprintf(d[i], sizeof d[i], "%s/%s", argv[1], sub[i]);
        if (mkdir(d[i], 0755) && errno != EEXIST) {
            fprintf(stderr, "fuzz_seeds: %s: %s\n", d[i], strerror(errno));
            return 1;
        }
    }
    /* a ball of 80 triangles, 24 inner spheres */
    prox_mesh *m = prox_mesh_make_sphere(0.05, 1);
    prox_ist_def def = prox_ist_def_default();
    def.target_spheres = 24;
    prox_ist *t;
    char path[600];
    snprintf(path, sizeof path, "%s/ball.ist", d[0]);
    if (!m || prox_ist_build(m, &def, &t, err, sizeof err) || prox_ist_save(t, path, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_ist_free(t);
    if (mesh_seed(d[3], "ball.off", 0, m, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_mesh_free(m);
    m = prox_mesh_make_box(prox_v3(0.1, 0.2, 0.05));
    if (!m || mesh_seed(d[3], "box.off", 0, m, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_mesh_free(m);
    static const char ply_tet[] = "ply\nformat ascii 1.0\ncomment a tetrahedron\nelement vertex 4\nproperty float x\n"
                                  "property float y\nproperty float z\nelement face 4\nproperty list uchar int vertex_indices\n"
                                  "end_header\n0 0 0\n0.1 0 0\n0 0.1 0\n0 0 0.1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n";
    char ply_lf[sizeof ply_tet + 1]; /* after a line end, where assimp finds the magic too */
    snprintf(ply_lf, sizeof ply_lf, "\n%s", ply_tet);
    static const char stl_tet[] = "solid tet\nfacet normal 0 0 -1\nouter loop\nvertex 0 0 0\nvertex 0 0.1 0\nvertex 0.1 0 0\nendloop\n"
                                  "endfacet\nfacet normal 0 -1 0\nouter loop\nvertex 0 0 0\nvertex 0.1 0 0\nvertex 0 0 0.1\nendloop\n"
                                  "endfacet\nfacet normal -1 0 0\nouter loop\nvertex 0 0 0\nvertex 0 0 0.1\nvertex 0 0.1 0\nendloop\n"
                                  "endfacet\nfacet normal 1 1 1\nouter loop\nvertex 0.1 0 0\nvertex 0 0.1 0\nvertex 0 0 0.1\nendloop\n"
                                  "endfacet\nendsolid tet\n";
    static const char obj_tet[] = "# a tetrahedron\no tet\nv 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nvn 0 0 -1\nvt 0 0\n"
                                  "f 1 3 2\nf 1/1/1 2/1/1 4/1/1\nf 1//1 4//1 3//1\nf 2 3 4\n";
    if (suffix_text(d[3], "tet.ply", 1, ply_tet) || suffix_text(d[3], "tet-lf.ply", 1, ply_lf) ||
        suffix_text(d[3], "tet.stl", 2, stl_tet) || suffix_text(d[3], "tet.obj", 3, obj_tet))
        return 1;
    prox_voxmap_def vd = {0.01, prox_v3(0, 0, 0), {8, 8, 8}, 256};
    prox_voxmap *vm = prox_voxmap_create(&vd, err, sizeof err);
    snprintf(path, sizeof path, "%s/map.vox", d[1]);
    for (int i = 0; vm && i < 6; i++)
        prox_voxmap_set(vm, i, i % 3, 2, 1 + i % 2);
    if (!vm || prox_voxmap_save(vm, path, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_voxmap_free(vm);
    int k = 0, bad = 0;
    bad |= osc_seed(d[2], k++, "/version", lo_message_new());
    bad |= osc_seed(d[2], k++, "/status", lo_message_new());
    lo_message p = lo_message_new();
    lo_message_add_string(p, "ball");
    for (int i = 0; i < 7; i++)
        lo_message_add_float(p, i == 3 ? 1.0f : 0.0f);
    bad |= osc_seed(d[2], k++, "/pose", p);
    lo_message tool = lo_message_new();
    lo_message_add_string(tool, "ball");
    bad |= osc_seed(d[2], k++, "/tool", tool);
    lo_message bud = lo_message_new();
    lo_message_add_double(bud, 200.0);
    bad |= osc_seed(d[2], k++, "/budget", bud);
    lo_message gains = lo_message_new();
    const float gv[7] = {2e6f, 0.005f, 400, 2, 800, 4, 1};
    for (int i = 0; i < 7; i++)
        lo_message_add_float(gains, gv[i]);
    bad |= osc_seed(d[2], k++, "/gains", gains);
    lo_message lim = lo_message_new();
    const float lv[6] = {8, 1, 0.5f, 0.5f, 50, 20};
    for (int i = 0; i < 6; i++)
        lo_message_add_float(lim, lv[i]);
    bad |= osc_seed(d[2], k++, "/limits", lim);
    lo_message fo = lo_message_new();
    lo_message_add_int32(fo, 1);
    bad |= osc_seed(d[2], k++, "/forces", fo);
    lo_message vs = lo_message_new();
    lo_message_add_string(vs, "map");
    for (int i = 0; i < 4; i++)
        lo_message_add_int32(vs, i == 3 ? 1 : i);
    bad |= osc_seed(d[2], k++, "/voxel/set", vs);
    int32_t rec[8] = {1, 2, 3, 1, 4, 5, 6, 2};
    lo_blob blob = lo_blob_new(sizeof rec, rec);
    lo_message vb = lo_message_new();
    lo_message_add_string(vb, "map");
    lo_message_add_blob(vb, blob);
    bad |= osc_seed(d[2], k++, "/voxel/batch", vb);
    lo_blob_free(blob);
    lo_message rm = lo_message_new();
    lo_message_add_string(rm, "ball");
    bad |= osc_seed(d[2], k++, "/remove", rm);
    lo_message ts = lo_message_new();
    lo_message_add_int32(ts, 10);
    bad |= osc_seed(d[2], k++, "/telemetry/subscribe", ts);
    lo_message dp = lo_message_new();
    for (int i = 0; i < 7; i++)
        lo_message_add_float(dp, i == 3 ? 1.0f : 0.0f);
    bad |= osc_seed(d[2], k++, "/device/pose", dp);
    /* a bundle: a budget and a pose, tagged "immediately" */
    lo_timetag now = {0, 1};
    lo_bundle b = lo_bundle_new(now);
    lo_message b1 = lo_message_new(), b2 = lo_message_new();
    lo_message_add_float(b1, 150.0f);
    lo_message_add_string(b2, "ball");
    for (int i = 0; i < 7; i++)
        lo_message_add_float(b2, i == 3 ? 1.0f : 0.0f);
    lo_bundle_add_message(b, "/budget", b1);
    lo_bundle_add_message(b, "/pose", b2);
    unsigned char buf[2048];
    size_t size = sizeof buf;
    bad |= lo_bundle_serialise(b, buf, &size) ? write_file(d[2], "bundle", buf, size) : -1;
    lo_bundle_free_recursive(b);
    bad |= cloud_seeds(d[4]);
    return bad ? 1 : 0;
}
