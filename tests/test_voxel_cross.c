/* test_voxel_cross.c - hierarchical voxel maps: update invariants, rebuild
 * equivalence, batch records, files and point clouds (the PLY reader, every
 * type, byte order and refusal), the prox tool's info and voxels, and the cross-type
 * handlers against brute force (every voxel against every triangle, inner
 * sphere or voxel), plus the run-time bank. */
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "bvh_internal.h"
#include "ist_internal.h"
#include "prox.h"
#include "sphere.h"
#include "voxel_internal.h"

#include "check_alloc.h"
#include "check_prox.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}
static double urand(void) { return (rnd() & 0xffffff) / (double)0x1000000; }

/* Every draw below goes into a named variable first: C leaves the order of
 * a call's arguments (and of an initialiser's elements) unspecified. The
 * order is the one gcc gave them where they were drawn in place (arguments
 * right to left, initialisers left to right), so the cases stay those the
 * tests were written for (tests/check_prox.h). */

static prox_xform random_pose(double spread)
{
    double az = urand() - 0.5 + 1e-3, ay = urand() - 0.5, ax = urand() - 0.5;
    prox_vec3 axis = prox_v3_normalize(prox_v3(ax, ay, az));
    prox_quat q = prox_quat_axis_angle(axis, urand() * 6.283);
    double tz = (urand() - 0.5) * spread, ty = (urand() - 0.5) * spread, tx = (urand() - 0.5) * spread;
    return prox_xform_from_pose(prox_v3(tx, ty, tz), q);
}

/* a random cell of [0, nx) x [0, ny) x [0, nz) set to class 1 or 2 (the
 * class drawn first, then z, y, x) */
static void set_random(prox_voxmap *m, uint32_t nx, uint32_t ny, uint32_t nz)
{
    uint32_t cls = 1 + rnd() % 2;
    int32_t z = (int32_t)(rnd() % nz), y = (int32_t)(rnd() % ny), x = (int32_t)(rnd() % nx);
    prox_voxmap_set(m, x, y, z, cls);
}

/* a random record of [0, 60) x [0, 60) x [0, 10), class 0 to 2 (drawn x, y,
 * z, class) */
static prox_voxel_record random_record(void)
{
    prox_voxel_record r;
    r.x = (int32_t)(rnd() % 60);
    r.y = (int32_t)(rnd() % 60);
    r.z = (int32_t)(rnd() % 10);
    r.cls = rnd() % 3;
    return r;
}

static prox_voxmap *make_map(uint32_t nx, uint32_t ny, uint32_t nz, double cell, prox_vec3 origin, uint32_t cap)
{
    prox_voxmap_def d;
    memset(&d, 0, sizeof d);
    d.cell = cell, d.origin = origin, d.dims[0] = nx, d.dims[1] = ny, d.dims[2] = nz, d.capacity = cap;
    char err[256];
    prox_voxmap *m = prox_voxmap_create(&d, err, sizeof err);
    CHECK(m != NULL, "%s", err);
    return m;
}

static double run1(prox_engine *e, const prox_query *q, const prox_tree *a, prox_xform pa, const prox_tree *b, prox_xform pb,
                   prox_result *r)
{
    prox_object_pair op;
    memset(&op, 0, sizeof op);
    op.a = a, op.b = b, op.pose_a = pa, op.pose_b = pb;
    int rc = prox_query_run(e, q, &op, 1, r);
    CHECK(rc == 0, "query failed, flags %x", r->flags);
    return r->value;
}

/* ---------------- map invariants ---------------- */

static void test_random_updates(void)
{
    enum { NX = 37, NY = 29, NZ = 21 };
    static uint8_t ref[NX * NY * NZ];
    memset(ref, 0, sizeof ref);
    prox_voxmap *m = make_map(NX, NY, NZ, 0.1, prox_v3(0, 0, 0), 6000);
    char err[256];
    uint32_t n_ob = 0, n_un = 0;
    for (int it = 0; it < 40000; it++) {
        /* cluster the activity so blocks empty and refill */
        int32_t x = (int32_t)(rnd() % NX), y = (int32_t)(rnd() % NY), z = (int32_t)(rnd() % NZ);
        if (it % 3)
            x = x % 9, y = y % 7, z = z % 5;
        uint32_t cls = rnd() % 3;
        int st = prox_voxmap_set(m, x, y, z, cls);
        CHECK(st == PROX_VOXEL_OK, "set (%d %d %d) %u: %d", x, y, z, cls, st);
        uint8_t *r = &ref[(z * NY + y) * NX + x];
        n_ob += (cls == PROX_VOXEL_OBSTACLE) - (*r == PROX_VOXEL_OBSTACLE);
        n_un += (cls == PROX_VOXEL_UNKNOWN) - (*r == PROX_VOXEL_UNKNOWN);
        *r = (uint8_t)cls;
        if (it % 2000 == 0) {
            CHECK(prox_voxmap_validate(m, err, sizeof err) == 0, "after %d updates: %s", it, err);
            CHECK(prox_voxmap_count(m, 1u << PROX_VOXEL_OBSTACLE) == n_ob, "obstacle count");
            CHECK(prox_voxmap_count(m, 1u << PROX_VOXEL_UNKNOWN) == n_un, "unknown count");
        }
    }
    CHECK(prox_voxmap_validate(m, err, sizeof err) == 0, "final: %s", err);
    int bad = 0;
    for (int z = 0; z < NZ; z++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                bad += prox_voxmap_get(m, x, y, z) != ref[(z * NY + y) * NX + x];
    CHECK(bad == 0, "%d cells differ from the reference grid", bad);
    CHECK(prox_voxmap_get(m, -1, 0, 0) == PROX_VOXEL_FREE && prox_voxmap_get(m, NX, 0, 0) == PROX_VOXEL_FREE, "outside");

    /* a map built from scratch with the same final cells answers the same */
    prox_voxmap *s = make_map(NX, NY, NZ, 0.1, prox_v3(0, 0, 0), 6000);
    for (int z = 0; z < NZ; z++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                if (ref[(z * NY + y) * NX + x])
                    CHECK(prox_voxmap_set(s, x, y, z, ref[(z * NY + y) * NX + x]) == 0, "scratch set");
    prox_mesh *mesh = prox_mesh_make_torus(0.3, 0.08, 24, 12);
    prox_bvh *b = prox_bvh_build(mesh);
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine *e = prox_engine_create(NULL, bank);
    static const uint32_t kinds[] = {PROX_QUERY_DISTANCE, PROX_QUERY_COLLIDE};
    static const uint32_t masks[] = {PROX_CLASS_ALL, 1u << PROX_VOXEL_OBSTACLE, 1u << PROX_VOXEL_UNKNOWN};
    for (int i = 0; i < 30; i++) {
        prox_xform pose = random_pose(3.0);
        pose.t = prox_v3_add(pose.t, prox_v3(1.8, 1.4, 1.0));
        prox_query q = prox_query_default(kinds[i % 2]);
        q.voxel_classes = masks[i % 3];
        q.use_cache = 0;
        prox_result r1, r2;
        double v1 = run1(e, &q, prox_voxmap_tree(m), prox_xform_identity(), prox_bvh_tree(b), pose, &r1);
        double v2 = run1(e, &q, prox_voxmap_tree(s), prox_xform_identity(), prox_bvh_tree(b), pose, &r2);
        CHECK(fabs(v1 - v2) <= 1e-12 * (1 + fabs(v1)), "pose %d kind %u: updated map %.15g, rebuilt map %.15g", i, q.kind,
              v1, v2);
        CHECK(r1.complete && r2.complete, "complete");
    }
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_bvh_free(b);
    prox_mesh_free(mesh);
    /* clearing everything leaves nothing above */
    for (int z = 0; z < NZ; z++)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++)
                prox_voxmap_set(m, x, y, z, PROX_VOXEL_FREE);
    CHECK(prox_voxmap_count(m, PROX_CLASS_ALL) == 0, "empty");
    for (uint32_t l = 0; l < prox_voxmap_levels(m); l++)
        CHECK(m->lv[l].n == 0, "level %u still has %u voxels", l, m->lv[l].n);
    CHECK(prox_voxmap_tree(m)->root == VX_NONE, "empty map has no root");
    prox_voxmap_free(s);
    prox_voxmap_free(m);
}

static void test_capacity_and_records(void)
{
    prox_voxmap *m = make_map(64, 64, 64, 0.05, prox_v3(-1, -1, -1), 100);
    uint32_t n = 0;
    int st = 0;
    for (uint32_t i = 0; i < 100000; i++) {
        st = prox_voxmap_set(m, (int32_t)(i % 64), (int32_t)((i / 64) % 64), (int32_t)(i / 4096), PROX_VOXEL_OBSTACLE);
        if (st != PROX_VOXEL_OK)
            break;
        n++;
    }
    char err[256];
    CHECK(st == PROX_VOXEL_FULL, "a full map says so (%d)", st);
    CHECK(n >= 100, "holds at least its capacity (%u)", n);
    CHECK(prox_voxmap_count(m, PROX_CLASS_ALL) == n, "nothing lost or half-added: %u vs %u", prox_voxmap_count(m, PROX_CLASS_ALL), n);
    CHECK(prox_voxmap_validate(m, err, sizeof err) == 0, "%s", err);
    /* changing the class of an existing voxel and clearing still work */
    CHECK(prox_voxmap_set(m, 0, 0, 0, PROX_VOXEL_UNKNOWN) == 0, "reclass when full");
    CHECK(prox_voxmap_set(m, 1, 0, 0, PROX_VOXEL_FREE) == 0, "clear when full");
    CHECK(prox_voxmap_set(m, 63, 63, 63, PROX_VOXEL_OBSTACLE) == 0, "room again after a clear");
    prox_voxmap_free(m);

    m = make_map(8, 8, 8, 0.1, prox_v3(0, 0, 0), 0);
    prox_voxel_record rec[6] = {{1, 2, 3, 1}, {4, 4, 4, 2}, {1, 2, 3, 0}, {7, 7, 7, 1}, {8, 0, 0, 1}, {0, 0, 0, 1}};
    CHECK(sizeof(prox_voxel_record) == 16, "records are 16 bytes");
    int status = 99;
    uint32_t applied = prox_voxmap_apply(m, rec, 6, &status);
    CHECK(applied == 4 && status == PROX_VOXEL_OUT_OF_RANGE, "applied %u, status %d", applied, status);
    CHECK(prox_voxmap_get(m, 1, 2, 3) == PROX_VOXEL_FREE && prox_voxmap_get(m, 4, 4, 4) == PROX_VOXEL_UNKNOWN &&
              prox_voxmap_get(m, 7, 7, 7) == PROX_VOXEL_OBSTACLE && prox_voxmap_get(m, 0, 0, 0) == PROX_VOXEL_FREE,
          "records applied in order, none after the refused one");
    prox_voxel_record badc = {0, 0, 0, 7};
    CHECK(prox_voxmap_apply(m, &badc, 1, &status) == 0 && status == PROX_VOXEL_BAD_CLASS, "unknown class refused");
    /* byte layout: little endian int32 x, y, z, uint32 class */
    uint8_t raw[16] = {3, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 2, 0, 0, 0};
    prox_voxel_record r;
    memcpy(&r, raw, 16);
    CHECK(prox_voxmap_apply(m, &r, 1, &status) == 1 && prox_voxmap_get(m, 3, 5, 6) == PROX_VOXEL_UNKNOWN, "packed bytes");
    int32_t x, y, z;
    uint32_t slot = vx_find(&m->lv[0], ((uint64_t)3 | (uint64_t)5 << 16 | (uint64_t)6 << 32) + 1);
    CHECK(prox_voxmap_leaf_cell(m, VX_ID(0, slot), &x, &y, &z) == 0 && x == 3 && y == 5 && z == 6, "leaf id decodes");
    prox_voxmap_def bad;
    memset(&bad, 0, sizeof bad);
    bad.cell = -1, bad.dims[0] = bad.dims[1] = bad.dims[2] = 4;
    char err2[256] = "";
    CHECK(prox_voxmap_create(&bad, err2, sizeof err2) == NULL && strstr(err2, "cell"), "bad cell: %s", err2);
    bad.cell = 0.1, bad.dims[1] = 0;
    CHECK(prox_voxmap_create(&bad, err2, sizeof err2) == NULL && strstr(err2, "dimensions"), "bad dims: %s", err2);
    prox_voxmap_free(m);
}

/* ---------------- files ---------------- */

static char tmpdir[64];

/* a file of n bytes in tmpdir; its path, in a static buffer (used before
 * the next call) */
static const char *write_bytes(const char *name, const unsigned char *b, size_t n)
{
    static char path[160];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    if (f) {
        CHECK(fwrite(b, 1, n, f) == n, "short write %s", path);
        fclose(f);
    }
    return path;
}

/* a text file in tmpdir (write_bytes's path buffer) */
static const char *write_tmp(const char *name, const char *text)
{
    return write_bytes(name, (const unsigned char *)text, strlen(text));
}

/* the n bytes b as tmpdir/name: a .vox the loader refuses, saying needle
 * and the file's name on one line */
static void expect_load_error_bytes(const char *name, const void *b, size_t n, const char *needle)
{
    const char *p = write_bytes(name, b, n);
    prox_voxmap *m = (prox_voxmap *)1;
    char err[512] = "";
    int rc = prox_voxmap_load(p, &m, err, sizeof err);
    CHECK(rc != 0 && m == NULL, "%s should be refused", name);
    if (rc == 0 && m && m != (prox_voxmap *)1)
        prox_voxmap_free(m);
    CHECK(strstr(err, needle) != NULL && strstr(err, name) != NULL && !strchr(err, '\n'), "%s: message '%s' lacks '%s'", name,
          err, needle);
}

static void expect_load_error(const char *name, const char *text, const char *needle)
{
    expect_load_error_bytes(name, text, strlen(text), needle);
}

/* two maps the same: header and every cell */
static void expect_same_map(const char *what, const prox_voxmap *a, const prox_voxmap *b)
{
    prox_voxmap_def da, db;
    prox_voxmap_def_get(a, &da);
    prox_voxmap_def_get(b, &db);
    CHECK(da.cell == db.cell && da.origin.x == db.origin.x && da.origin.y == db.origin.y && da.origin.z == db.origin.z &&
              da.dims[0] == db.dims[0] && da.dims[1] == db.dims[1] && da.dims[2] == db.dims[2],
          "%s: headers differ (cell %.17g %.17g, dims %u %u %u vs %u %u %u)", what, da.cell, db.cell, da.dims[0], da.dims[1],
          da.dims[2], db.dims[0], db.dims[1], db.dims[2]);
    int diff = 0;
    for (uint32_t z = 0; z < da.dims[2] && z < db.dims[2]; z++)
        for (uint32_t y = 0; y < da.dims[1] && y < db.dims[1]; y++)
            for (uint32_t x = 0; x < da.dims[0] && x < db.dims[0]; x++)
                diff += prox_voxmap_get(a, (int32_t)x, (int32_t)y, (int32_t)z) !=
                        prox_voxmap_get(b, (int32_t)x, (int32_t)y, (int32_t)z);
    CHECK(diff == 0, "%s: %d cells differ", what, diff);
    CHECK(prox_voxmap_count(a, PROX_CLASS_ALL) == prox_voxmap_count(b, PROX_CLASS_ALL), "%s: %u vs %u voxels", what,
          prox_voxmap_count(a, PROX_CLASS_ALL), prox_voxmap_count(b, PROX_CLASS_ALL));
}

static void test_files(void)
{
    strcpy(tmpdir, "/tmp/test_voxel_XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL, "mkdtemp");
    prox_voxmap *m = make_map(20, 10, 5, 0.2, prox_v3(-1, -2, 0.5), 0);
    for (int i = 0; i < 300; i++)
        set_random(m, 20, 10, 5);
    char path[200], err[512];
    snprintf(path, sizeof path, "%s/map.vox", tmpdir);
    CHECK(prox_voxmap_save(m, path, err, sizeof err) == 0, "%s", err);
    prox_voxmap *l = NULL;
    CHECK(prox_voxmap_load(path, &l, err, sizeof err) == 0, "%s", err);
    if (l) {
        expect_same_map("round trip", m, l);
        prox_voxmap_free(l);
    }
    prox_voxmap_free(m);

    const char *hdr = "hapticd-voxmap 1\ncell 0.1\norigin 0 0 0\ndims 4 4 4\n";
    char buf[512];
    expect_load_error("notmap.vox", "solid foo\n", "not a voxel map");
    expect_load_error("empty.vox", "", "empty");
    expect_load_error("trunc.vox", "hapticd-voxmap 1\ncell 0.1\norigin 0 0 0\n", "truncated");
    snprintf(buf, sizeof buf, "%s1 1 1 1\n4 0 0 1\n", hdr);
    expect_load_error("range.vox", buf, "outside");
    snprintf(buf, sizeof buf, "%s1 1 1 1\n0 -1 0 2\n", hdr);
    expect_load_error("neg.vox", buf, "outside");
    {
        /* a NUL byte in a cell line: the reader ended the line at it, and
         * "1 1 1 1\0 junk" loaded as the cell (1, 1, 1) */
        static const char nul_vox[] = "hapticd-voxmap 1\ncell 0.1\norigin 0 0 0\ndims 4 4 4\n1 1 1 1\0 junk\n";
        expect_load_error_bytes("nul.vox", nul_vox, sizeof nul_vox - 1, "nul.vox:5: a NUL byte in the line");
    }
    snprintf(buf, sizeof buf, "%s1 1 1 3\n", hdr);
    expect_load_error("class.vox", buf, "unknown class");
    snprintf(buf, sizeof buf, "%s1 1 1\n", hdr);
    expect_load_error("short.vox", buf, "x y z class");
    expect_load_error("badcell.vox", "hapticd-voxmap 1\ncell -3\n", "malformed");
    expect_load_error("early.vox", "hapticd-voxmap 1\ncell 0.1\n1 2 3 1\n", "before the header");
    prox_voxmap *none = NULL;
    CHECK(prox_voxmap_load("/nonexistent/x.vox", &none, err, sizeof err) != 0 && strstr(err, "/nonexistent/x.vox"), "%s", err);

    /* point clouds: XYZ and PLY, quantised to the cell */
    const char *xyz = write_tmp("cloud.xyz", "# a cloud\n0 0 0\n0.05 0.01 0.02\n0.95 0.5 0.25\n1.0 0.5 0.25\n0.31 0.42 0.1\n");
    prox_voxmap *c = NULL;
    CHECK(prox_voxmap_from_cloud(xyz, 0.1, PROX_VOXEL_OBSTACLE, &c, err, sizeof err) == 0, "%s", err);
    if (c) {
        prox_voxmap_def d;
        prox_voxmap_def_get(c, &d);
        CHECK(d.dims[0] == 11 && d.dims[1] == 6 && d.dims[2] == 3, "cloud dims %u %u %u", d.dims[0], d.dims[1], d.dims[2]);
        CHECK(prox_voxmap_count(c, PROX_CLASS_ALL) == 4, "4 distinct cells, got %u", prox_voxmap_count(c, PROX_CLASS_ALL));
        CHECK(prox_voxmap_get(c, 0, 0, 0) == PROX_VOXEL_OBSTACLE && prox_voxmap_get(c, 3, 4, 1) == PROX_VOXEL_OBSTACLE &&
                  prox_voxmap_get(c, 9, 5, 2) == PROX_VOXEL_OBSTACLE && prox_voxmap_get(c, 10, 5, 2) == PROX_VOXEL_OBSTACLE,
              "quantised cells");
        prox_voxmap_free(c);
    }
    const char *bad = write_tmp("bad.xyz", "0 0 0\n1 2\n");
    CHECK(prox_voxmap_from_cloud(bad, 0.1, 1, &c, err, sizeof err) != 0 && strstr(err, "bad.xyz:2"), "%s", err);
    const char *ply = write_tmp("cloud.ply", "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                                             "property float z\nend_header\n0 0 0\n0.5 0.5 0.5\n0.52 0.5 0.5\n");
    CHECK(prox_voxmap_from_cloud(ply, 0.1, PROX_VOXEL_UNKNOWN, &c, err, sizeof err) == 0, "%s", err);
    if (c) {
        CHECK(prox_voxmap_count(c, 1u << PROX_VOXEL_UNKNOWN) == 2, "PLY cloud cells %u", prox_voxmap_count(c, PROX_CLASS_ALL));
        prox_voxmap_free(c);
    }
    const char *tply = write_tmp("trunc.ply", "ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nproperty float y\n"
                                              "property float z\nend_header\n0 0 0\n0.5 0.5\n");
    CHECK(prox_voxmap_from_cloud(tply, 0.1, 1, &c, err, sizeof err) != 0 && strstr(err, "trunc.ply"), "truncated PLY: %s", err);
    /* binary little endian with an extra property */
    {
        char bp[200];
        snprintf(bp, sizeof bp, "%s/bin.ply", tmpdir);
        FILE *f = fopen(bp, "wb");
        fputs("ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty double x\nproperty uchar r\n"
              "property double y\nproperty double z\nend_header\n", f);
        double pts[2][3] = {{0, 0, 0}, {0.35, 0.05, 0.21}};
        for (int i = 0; i < 2; i++) {
            unsigned char r = 7;
            fwrite(&pts[i][0], 8, 1, f), fwrite(&r, 1, 1, f), fwrite(&pts[i][1], 8, 2, f);
        }
        fclose(f);
        CHECK(prox_voxmap_from_cloud(bp, 0.1, 1, &c, err, sizeof err) == 0, "%s", err);
        if (c) {
            CHECK(prox_voxmap_get(c, 3, 0, 2) == PROX_VOXEL_OBSTACLE && prox_voxmap_count(c, PROX_CLASS_ALL) == 2, "binary PLY");
            prox_voxmap_free(c);
        }
    }
    CHECK(prox_voxmap_from_cloud(xyz, 0.1, 5, &c, err, sizeof err) != 0 && strstr(err, "class"), "%s", err);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    CHECK(system(cmd) == 0, "cleanup");
}

/* ---------------- point clouds: the PLY reader's types, byte orders and refusals ---------------- */


typedef struct ply_col {
    const char *type, *name;
} ply_col;

/* v as the PLY scalar `type` at out, byte by byte in the given order (big:
 * most significant first); returns its size. The sizes are the PLY
 * specification's, written out here rather than taken from the reader, and
 * the bytes come from shifts, so the file is the same on any host. */
static int ply_put(unsigned char *out, const char *type, double v, int big)
{
    static const struct {
        const char *n;
        int size;
    } ints[] = {{"char", 1},  {"int8", 1},  {"uchar", 1}, {"uint8", 1},  {"short", 2}, {"int16", 2},
                {"ushort", 2}, {"uint16", 2}, {"int", 4},   {"int32", 4}, {"uint", 4},  {"uint32", 4}};
    uint64_t bits = 0;
    int size = 0;
    if (!strcmp(type, "float") || !strcmp(type, "float32")) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        bits = u, size = 4;
    } else if (!strcmp(type, "double") || !strcmp(type, "float64")) {
        memcpy(&bits, &v, 8);
        size = 8;
    } else {
        for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
            if (!strcmp(type, ints[i].n))
                size = ints[i].size;
        bits = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v; /* two's complement, cut to size below */
    }
    CHECK(size > 0, "test bug: type %s", type);
    for (int i = 0; i < size; i++)
        out[big ? size - 1 - i : i] = (unsigned char)(bits >> (8 * i));
    return size;
}

/* A binary PLY in buf: nv vertices of the np columns (vals row by row),
 * `after` (more header lines: elements after the vertices) before
 * end_header, then `tail` bytes of those elements. Returns its length. */
static size_t ply_binary(unsigned char *buf, size_t cap, int big, const ply_col *c, int np, int nv, const double *vals,
                         const char *after, const char *tail, size_t tail_len)
{
    size_t n = (size_t)snprintf((char *)buf, cap, "ply\nformat %s 1.0\ncomment made by test_voxel_cross\nelement vertex %d\n",
                                big ? "binary_big_endian" : "binary_little_endian", nv);
    for (int k = 0; k < np; k++)
        n += (size_t)snprintf((char *)buf + n, cap - n, "property %s %s\n", c[k].type, c[k].name);
    n += (size_t)snprintf((char *)buf + n, cap - n, "%send_header\n", after ? after : "");
    for (int i = 0; i < nv; i++)
        for (int k = 0; k < np; k++) {
            CHECK(n + 8 <= cap, "test bug: buffer");
            n += (size_t)ply_put(buf + n, c[k].type, vals[i * np + k], big);
        }
    CHECK(n + tail_len <= cap, "test bug: buffer");
    memcpy(buf + n, tail, tail_len);
    return n + tail_len;
}

/* the cloud at path read at `cell` (class unknown): the map's origin and
 * dims as given, exactly the ncells cells listed occupied */
static void expect_cloud(const char *what, const char *path, double cell, prox_vec3 origin, uint32_t nx, uint32_t ny, uint32_t nz,
                         const int32_t (*cells)[3], int ncells)
{
    prox_voxmap *m = NULL;
    char err[512] = "";
    CHECK(prox_voxmap_from_cloud(path, cell, PROX_VOXEL_UNKNOWN, &m, err, sizeof err) == 0 && m, "%s: %s", what, err);
    if (!m)
        return;
    prox_voxmap_def d;
    prox_voxmap_def_get(m, &d);
    CHECK(d.cell == cell, "%s: cell %.17g", what, d.cell);
    CHECK(d.origin.x == origin.x && d.origin.y == origin.y && d.origin.z == origin.z,
          "%s: origin %.17g %.17g %.17g, want %.17g %.17g %.17g", what, d.origin.x, d.origin.y, d.origin.z, origin.x, origin.y,
          origin.z);
    CHECK(d.dims[0] == nx && d.dims[1] == ny && d.dims[2] == nz, "%s: dims %u %u %u, want %u %u %u", what, d.dims[0], d.dims[1],
          d.dims[2], nx, ny, nz);
    for (int i = 0; i < ncells; i++)
        CHECK(prox_voxmap_get(m, cells[i][0], cells[i][1], cells[i][2]) == PROX_VOXEL_UNKNOWN, "%s: cell %d %d %d not set", what,
              cells[i][0], cells[i][1], cells[i][2]);
    CHECK(prox_voxmap_count(m, 1u << PROX_VOXEL_UNKNOWN) == (uint32_t)ncells &&
              prox_voxmap_count(m, PROX_CLASS_ALL) == (uint32_t)ncells,
          "%s: %u cells, want %d", what, prox_voxmap_count(m, PROX_CLASS_ALL), ncells);
    prox_voxmap_free(m);
}

/* the cloud at path refused: no map, one line naming the file (its last
 * component `name`) and containing `needle` */
static void expect_cloud_error(const char *path, double cell, const char *name, const char *needle)
{
    prox_voxmap *m = (prox_voxmap *)1;
    char err[512] = "";
    int rc = prox_voxmap_from_cloud(path, cell, PROX_VOXEL_OBSTACLE, &m, err, sizeof err);
    CHECK(rc != 0 && m == NULL, "%s should be refused", name);
    if (rc == 0)
        prox_voxmap_free(m);
    const char *at = strstr(err, name);
    CHECK(at && (at[strlen(name)] == ':' || at[strlen(name)] == ' ') && strstr(err, needle) && !strchr(err, '\n'),
          "%s: message '%s' lacks '%s'", name, err, needle);
}

static void test_cloud_reader(void)
{
    strcpy(tmpdir, "/tmp/test_cloud_XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL, "mkdtemp");
    static unsigned char buf[1 << 16];
    size_t n;

    /* signed integers of 1, 2 and 4 bytes (the names and their aliases),
     * negative and positive, an unsigned column between them to skip and
     * faces after the vertices to ignore, in both byte orders; cell 1, so
     * each value is its cell index plus the minimum */
    const ply_col sig[2][4] = {{{"char", "x"}, {"ushort", "red"}, {"short", "y"}, {"int", "z"}},
                               {{"int8", "x"}, {"uint16", "red"}, {"int16", "y"}, {"int32", "z"}}};
    const double sval[] = {-128, 65535, -300, -70000, /**/ 127, 1, 200, -69990, /**/ -1, 0, -1, -69999};
    const int32_t scells[][3] = {{0, 0, 0}, {255, 500, 10}, {127, 299, 1}};
    const char face[] = {3, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0};
    for (int big = 0; big < 2; big++) {
        n = ply_binary(buf, sizeof buf, big, sig[big], 4, 3, sval, "element face 1\nproperty list uchar int vertex_indices\n", face,
                       sizeof face);
        const char *p = write_bytes("signed.ply", buf, n);
        expect_cloud(big ? "signed, big endian" : "signed, little endian", p, 1.0, prox_v3(-128, -300, -70000), 256, 501, 11, scells,
                     3);
        /* the same file cut inside the third vertex (inside its z) */
        p = write_bytes("cut.ply", buf, n - sizeof face - 3);
        expect_cloud_error(p, 1.0, "cut.ply", "truncated PLY (2 of 3 vertices)");
    }
    /* unsigned integers with the top bit set (no sign extension) */
    const ply_col uns[2][4] = {{{"uchar", "x"}, {"char", "pad"}, {"ushort", "y"}, {"uint", "z"}},
                               {{"uint8", "x"}, {"int8", "pad"}, {"uint16", "y"}, {"uint32", "z"}}};
    const double uval[] = {255, -5, 65535, 4294967295.0, /**/ 200, 7, 65500, 4294967200.0, /**/ 0, -1, 65530, 4294967290.0};
    const int32_t ucells[][3] = {{255, 35, 95}, {200, 0, 0}, {0, 30, 90}};
    for (int big = 0; big < 2; big++) {
        n = ply_binary(buf, sizeof buf, big, uns[big], 4, 3, uval, NULL, "", 0);
        expect_cloud(big ? "unsigned, big endian" : "unsigned, little endian", write_bytes("unsigned.ply", buf, n), 1.0,
                     prox_v3(0, 65500, 4294967200.0), 256, 36, 96, ucells, 3);
    }
    /* 4- and 8-byte floats (values exact in a float), cell 0.25 */
    const ply_col flt[4] = {{"float", "x"}, {"double", "nx"}, {"float32", "y"}, {"float64", "z"}};
    const double fval[] = {-2.25, 1e300, 0.5, 3.125, /**/ 1.75, -7, -0.75, 3.0, /**/ 0.0, 0, 0.25, 4.5};
    const int32_t fcells[][3] = {{0, 5, 0}, {16, 0, 0}, {9, 4, 6}};
    for (int big = 0; big < 2; big++) {
        n = ply_binary(buf, sizeof buf, big, flt, 4, 3, fval, NULL, "", 0);
        expect_cloud(big ? "floats, big endian" : "floats, little endian", write_bytes("float.ply", buf, n), 0.25,
                     prox_v3(-2.25, -0.75, 3.0), 17, 6, 7, fcells, 3);
    }
    /* the most vertex properties (64 doubles, a 512-byte record): x first,
     * y in the middle, z last; a 65th is refused on its line (69) */
    {
        ply_col many[65];
        static char names[65][16];
        double mval[2 * 64];
        for (int k = 0; k < 65; k++) {
            snprintf(names[k], sizeof names[k], "p%d", k);
            many[k].type = "double", many[k].name = k == 0 ? "x" : k == 31 ? "y" : k == 63 ? "z" : names[k];
        }
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 64; k++)
                mval[i * 64 + k] = k == 0 ? 1.0 + i : k == 31 ? 2.0 - 2 * i : k == 63 ? 3.0 + 3 * i : -1e9 * k;
        const int32_t mcells[][3] = {{0, 2, 0}, {1, 0, 3}};
        n = ply_binary(buf, sizeof buf, 1, many, 64, 2, mval, NULL, "", 0);
        expect_cloud("64 properties", write_bytes("many.ply", buf, n), 1.0, prox_v3(1, 0, 3), 2, 3, 4, mcells, 2);
        n = ply_binary(buf, sizeof buf, 0, many, 65, 0, mval, NULL, "", 0);
        expect_cloud_error(write_bytes("many65.ply", buf, n), 1.0, "many65.ply", ":69: more than 64 vertex properties");
    }
    /* a non-finite binary vertex: +inf as a big-endian float in the second */
    {
        const ply_col c[3] = {{"float", "x"}, {"float", "y"}, {"float", "z"}};
        const double v[] = {0, 0, 0, 1, INFINITY, 1};
        n = ply_binary(buf, sizeof buf, 1, c, 3, 2, v, NULL, "", 0);
        expect_cloud_error(write_bytes("inf.ply", buf, n), 1.0, "inf.ply", "vertex 1 is not finite");
    }

    /* ascii: the columns in another order with one to skip, an element
     * before the vertices (skipped by lines, one of them longer than the
     * line buffer), comments and obj_info in the header */
    char text[4096], longline[700];
    memset(longline, '7', 600);
    longline[0] = '4', longline[1] = ' ', longline[600] = 0;
    snprintf(text, sizeof text,
             "ply\nformat ascii 1.0\ncomment a cloud\nobj_info from the test\nelement face 2\nproperty list uchar int vertex_indices\n"
             "element vertex 2\nproperty float z\nproperty uchar red\nproperty float x\nproperty float y\nend_header\n"
             "3 0 1 1\n%s\n0.3 255 -1.0 2.0\n0.05 0 0.5 3.0\n",
             longline);
    const int32_t acells[][3] = {{0, 0, 0}, {3, 2, 0}};
    expect_cloud("ascii, permuted columns", write_tmp("perm.ply", text), 0.5, prox_v3(-1, 2, 0.05), 4, 3, 1, acells, 2);
    /* the boundary of 65536 cells on an axis, both ways */
    const int32_t wcells[][3] = {{0, 0, 0}, {65535, 0, 0}};
    const char *hdr3 =
        "ply\nformat ascii 1.0\nelement vertex 2\nproperty double x\nproperty double y\nproperty double z\nend_header\n";
    snprintf(text, sizeof text, "%s0 0 0\n65535.5 0 0\n", hdr3);
    expect_cloud("65536 cells", write_tmp("wide.ply", text), 1.0, prox_v3(0, 0, 0), 65536, 1, 1, wcells, 2);
    snprintf(text, sizeof text, "%s0 0 0\n0 32768 0\n", hdr3);
    expect_cloud_error(write_tmp("wider.ply", text), 0.5, "wider.ply", "spans 65537 cells on an axis at cell 0.5 (at most 65536)");

    /* refusals, each naming the file (and the line or vertex) */
    expect_cloud_error(write_tmp("magic.ply", "plx\nformat ascii 1.0\n"), 1.0, "magic.ply", "not a PLY file");
    expect_cloud_error(write_tmp("empty.ply", ""), 1.0, "empty.ply", "not a PLY file");
    expect_cloud_error(write_tmp("nohdrend.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n"), 1.0, "nohdrend.ply",
                       "truncated PLY header (no end_header)");
    snprintf(text, sizeof text, "ply\nformat ascii 1.0\ncomment %s\nend_header\n", longline);
    expect_cloud_error(write_tmp("longhdr.ply", text), 1.0, "longhdr.ply", "longhdr.ply:3: PLY header: line longer than 510 characters");
    expect_cloud_error(write_tmp("fmt.ply", "ply\nformat binary_middle_endian 1.0\nend_header\n"), 1.0, "fmt.ply",
                       "fmt.ply:2: unknown PLY format 'binary_middle_endian'");
    expect_cloud_error(write_tmp("elem.ply", "ply\nformat ascii 1.0\ncomment x\nelement vertex many\nend_header\n"), 1.0, "elem.ply",
                       "elem.ply:4: malformed element line");
    expect_cloud_error(write_tmp("binfirst.ply", "ply\nformat binary_little_endian 1.0\nelement face 1\n"
                                                 "property list uchar int vertex_indices\nelement vertex 1\nproperty float x\n"
                                                 "property float y\nproperty float z\nend_header\n"),
                       1.0, "binfirst.ply", "binary PLY with elements before the vertices is not supported");
    expect_cloud_error(write_tmp("list.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty list uchar float y\n"
                                             "end_header\n0 1 0\n"),
                       1.0, "list.ply", "list.ply:5: list properties on vertices are not supported");
    expect_cloud_error(write_tmp("half.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
                                             "property half z\nend_header\n0 0 0\n"),
                       1.0, "half.ply", "half.ply:6: unsupported vertex property type 'half'");
    expect_cloud_error(write_tmp("nofmt.ply", "ply\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
                                              "end_header\n0 0 0\n"),
                       1.0, "nofmt.ply", "PLY header lacks a format or a vertex element with x, y, z");
    expect_cloud_error(write_tmp("noz.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\n"
                                            "property float w\nend_header\n0 0 0\n"),
                       1.0, "noz.ply", "PLY header lacks a format or a vertex element with x, y, z");
    expect_cloud_error(write_tmp("novert.ply", "ply\nformat ascii 1.0\nelement point 1\nproperty float x\nproperty float y\n"
                                               "property float z\nend_header\n0 0 0\n"),
                       1.0, "novert.ply", "PLY header lacks a format or a vertex element with x, y, z");
    expect_cloud_error(write_tmp("huge.ply", "ply\nformat ascii 1.0\nelement vertex 300000000\nproperty float x\nproperty float y\n"
                                             "property float z\nend_header\n0 0 0\n"),
                       1.0, "huge.ply", "300000000 vertices is too many");
    expect_cloud_error(write_tmp("before.ply", "ply\nformat ascii 1.0\nelement face 3\nproperty list uchar int vertex_indices\n"
                                               "element vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
                                               "3 0 0 0\n3 0 0 0\n"),
                       1.0, "before.ply", "truncated PLY (elements before the vertices)");
    snprintf(text, sizeof text, "%s0 0 0\n%s\n", hdr3, longline);
    expect_cloud_error(write_tmp("longvert.ply", text), 1.0, "longvert.ply", "vertex 1: line longer than 510 characters");
    /* a NUL byte in a text line refuses the line: the reader ended the
     * line at it, so ".xyz" took (1, 1, 1) and dropped what followed, and
     * where the line was longer than the buffer its tail came back as a
     * point of its own, (5, 5, 5); likewise in a PLY header and vertex */
    {
        static const char nul_short[] = "0 0 0\n1 1 1\0 9 9\n";
        expect_cloud_error(write_bytes("nul.xyz", (const unsigned char *)nul_short, sizeof nul_short - 1), 1.0, "nul.xyz",
                           "nul.xyz:2: a NUL byte in the line");
        unsigned char nul_long[700];
        size_t n = 0;
        memcpy(nul_long, "0 0 0\n1 1 1", 11), n = 11;
        nul_long[n++] = 0;
        memset(nul_long + n, ' ', 600), n += 600;
        memcpy(nul_long + n, "5 5 5\n", 6), n += 6;
        expect_cloud_error(write_bytes("nullong.xyz", nul_long, n), 1.0, "nullong.xyz", "nullong.xyz:2: a NUL byte in the line");
        static const char nul_hdr[] = "ply\nformat ascii 1.0\ncomment a\0b\nelement vertex 1\nproperty float x\nproperty float y\n"
                                      "property float z\nend_header\n0 0 0\n";
        expect_cloud_error(write_bytes("nulhdr.ply", (const unsigned char *)nul_hdr, sizeof nul_hdr - 1), 1.0, "nulhdr.ply",
                           "nulhdr.ply:3: PLY header: a NUL byte in the line");
        static const char nul_vert[] = "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
                                       "property float z\nend_header\n0 0 0\n1 1 1\0 7\n";
        expect_cloud_error(write_bytes("nulvert.ply", (const unsigned char *)nul_vert, sizeof nul_vert - 1), 1.0, "nulvert.ply",
                           "nulvert.ply: vertex 1: a NUL byte in the line");
        /* an OBJ cloud reads its 'v' lines only: a NUL in another line is
         * passed over like the rest of it, in a 'v' line refused */
        static const char nul_obj[] = "v 0 0 0\nf 1 2\0 3\nv 1 1 1\n";
        const int32_t two[2][3] = {{0, 0, 0}, {1, 1, 1}};
        expect_cloud("NUL in an OBJ face line", write_bytes("nulf.obj", (const unsigned char *)nul_obj, sizeof nul_obj - 1), 1.0,
                     prox_v3(0, 0, 0), 2, 2, 2, two, 2);
        static const char nul_objv[] = "v 0 0 0\nv 1 1 1\0 3\n";
        expect_cloud_error(write_bytes("nulv.obj", (const unsigned char *)nul_objv, sizeof nul_objv - 1), 1.0, "nulv.obj",
                           "nulv.obj:2: a NUL byte in the line");
    }
    expect_cloud_error(write_tmp("few.ply", "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                                            "property float z\nproperty uchar red\nend_header\n0 0 0 1\n1 1 1 1\n2 2 2\n"),
                       1.0, "few.ply", "vertex 2 has 3 values, want 4");
    expect_cloud_error(write_tmp("short.ply", "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                                              "property float z\nend_header\n0 0 0\n1 1 1\n"),
                       1.0, "short.ply", "truncated PLY (2 of 3 vertices)");
    expect_cloud_error(write_tmp("nan.ply", "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
                                            "property float z\nend_header\n0 0 0\n1 nan 1\n"),
                       1.0, "nan.ply", "vertex 1 is not finite");
    expect_cloud_error(write_tmp("none.ply", "ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\n"
                                             "property float z\nend_header\n"),
                       1.0, "none.ply", "the cloud has no points");
    expect_cloud_error("/nonexistent/cloud.ply", 1.0, "/nonexistent/cloud.ply", "No such file");
    /* .xyz: a line longer than the buffer, a non-finite point, no points */
    snprintf(text, sizeof text, "0 0 0\n# a comment\n%s\n", longline);
    expect_cloud_error(write_tmp("long.xyz", text), 1.0, "long.xyz", "long.xyz:3: line longer than 510 characters");
    /* the longest line read is 510 characters: one of 510 is a point, one of 511 refused */
    {
        const int32_t ocells[][3] = {{0, 0, 0}, {2, 4, 6}};
        snprintf(text, sizeof text, "0 0 0\n2 4 6%505s\n", "");
        CHECK(strlen(strchr(text, '\n') + 1) == 511, "test bug: %zu", strlen(strchr(text, '\n') + 1));
        expect_cloud("510-character line", write_tmp("510.xyz", text), 1.0, prox_v3(0, 0, 0), 3, 5, 7, ocells, 2);
        snprintf(text, sizeof text, "0 0 0\n2 4 6%506s\n", "");
        expect_cloud_error(write_tmp("511.xyz", text), 1.0, "511.xyz", "511.xyz:2: line longer than 510 characters");
    }
    expect_cloud_error(write_tmp("inf.xyz", "0 0 0\n1 inf 1\n"), 1.0, "inf.xyz", "inf.xyz:2: want 'x y z' (finite numbers)");
    expect_cloud_error(write_tmp("none.xyz", "# nothing\n\n"), 1.0, "none.xyz", "the cloud has no points");
    /* a line that is not numbers at all is refused, not skipped (blank
     * lines and comments are); so is one with a word after a number */
    expect_cloud_error(write_tmp("word.xyz", "0 0 0\n\n  # a comment\nabc\n1 1 1\n"), 1.0, "word.xyz", "word.xyz:4: want 'x y z' (finite numbers)");
    expect_cloud_error(write_tmp("word2.xyz", "0 0 0\n1 one 1\n"), 1.0, "word2.xyz", "word2.xyz:2: want 'x y z' (finite numbers)");
    /* a header line of words before the first point, and a UTF-8 byte
     * order mark (as Windows editors write), are skipped; a second line
     * of words is not */
    {
        const prox_vec3 o = prox_v3(0, 0, 0);
        const int32_t two[2][3] = {{0, 0, 0}, {1, 1, 1}};
        expect_cloud("header line", write_tmp("hdr.xyz", "x y z\n0 0 0\n1 1 1\n"), 1.0, o, 2, 2, 2, two, 2);
        expect_cloud("//X Y Z header", write_tmp("hdr2.xyz", "\n//X Y Z\n0 0 0\n1 1 1\n"), 1.0, o, 2, 2, 2, two, 2);
        expect_cloud("byte order mark", write_tmp("bom.xyz", "\xef\xbb\xbf" "0 0 0\n1 1 1\n"), 1.0, o, 2, 2, 2, two, 2);
        expect_cloud("byte order mark and header", write_tmp("bomh.xyz", "\xef\xbb\xbf" "x y z\n0 0 0\n1 1 1\n"), 1.0, o, 2, 2, 2, two, 2);
        expect_cloud_error(write_tmp("hdr3.xyz", "x y z\nunits m\n0 0 0\n"), 1.0, "hdr3.xyz", "hdr3.xyz:2: want 'x y z' (finite numbers)");
        /* CR LF lines read; CR alone (classic Mac OS) would read as one
         * line and its first point: refused */
        expect_cloud("CR LF", write_tmp("crlf.xyz", "0 0 0\r\n1 1 1\r\n"), 1.0, o, 2, 2, 2, two, 2);
        expect_cloud_error(write_tmp("cr.xyz", "0 0 0\r1 1 1\r"), 1.0, "cr.xyz", "cr.xyz:1: a carriage return inside the line");
        expect_cloud_error(write_tmp("cr2.xyz", "0 0 0 # a\r5 5 5\r"), 1.0, "cr2.xyz", "cr2.xyz:1: a carriage return inside the line");
        expect_cloud_error(write_tmp("cr3.xyz", "# a header\r0 0 0\r1 1 1\r"), 1.0, "cr3.xyz", "cr3.xyz:1: a carriage return inside the line");
        {
            /* a CR-only file longer than a line may be (510): named by its line ends, not its length */
            char many[2000] = "";
            for (int i = 0; i < 100; i++)
                snprintf(many + strlen(many), sizeof many - strlen(many), "%d 0 0\r", i % 10);
            expect_cloud_error(write_tmp("crlong.xyz", many), 1.0, "crlong.xyz", "crlong.xyz:1: a carriage return inside the line");
            char longline[700];
            memset(longline, ' ', sizeof longline - 2);
            memcpy(longline, "0 0 0", 5);
            longline[sizeof longline - 2] = '\n', longline[sizeof longline - 1] = 0;
            expect_cloud_error(write_tmp("long.xyz", longline), 1.0, "long.xyz", "long.xyz:1: line longer than 510 characters");
            /* a line of 510 characters ended by CR LF fits (the CR fills the buffer, its LF follows) */
            char fits[600];
            memset(fits, ' ', 510);
            memcpy(fits, "0 0 0", 5);
            memcpy(fits + 510, "\r\n1 1 1\r\n", sizeof "\r\n1 1 1\r\n");
            expect_cloud("510 characters and CR LF", write_tmp("fits.xyz", fits), 1.0, o, 2, 2, 2, two, 2);
        }
        expect_cloud("CR before trailing spaces", write_tmp("crsp.xyz", "0 0 0\r  \n1 1 1 # c\r\n"), 1.0, o, 2, 2, 2, two, 2);
    }
    /* the cell size */
    const char *ok = write_tmp("ok.xyz", "0 0 0\n1 1 1\n");
    const double bad_cells[] = {0, -1, INFINITY, NAN};
    for (int i = 0; i < 4; i++)
        expect_cloud_error(ok, bad_cells[i], "ok.xyz", "the cell size must be a positive number");

    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    CHECK(system(cmd) == 0, "cleanup");
}

/* ---------------- the prox tool: prox info, prox voxels ---------------- */

static char prox_bin[1024];

/* the value of `key: ` among the n lines of out, or NULL */
static const char *info_value(char out[][256], int n, const char *key)
{
    size_t k = strlen(key);
    for (int i = 0; i < n; i++)
        if (!strncmp(out[i], key, k) && out[i][k] == ':' && out[i][k + 1] == ' ')
            return out[i] + k + 2;
    return NULL;
}

/* `key: a b c` (count numbers) within tol of want */
static void expect_info_numbers(char out[][256], int n, const char *what, const char *key, const double *want, int count)
{
    const char *v = info_value(out, n, key);
    double got[3] = {NAN, NAN, NAN};
    int k = v ? sscanf(v, "%lf %lf %lf", &got[0], &got[1], &got[2]) : 0;
    CHECK(k == count, "%s: '%s' line: %s", what, key, v ? v : "(missing)");
    for (int i = 0; i < count && i < k; i++)
        CHECK(fabs(got[i] - want[i]) <= 1e-9 * (1 + fabs(want[i])), "%s: %s[%d] = %.12g, want %.12g", what, key, i, got[i], want[i]);
}

static void expect_info_text(char out[][256], int n, const char *what, const char *key, const char *want)
{
    const char *v = info_value(out, n, key);
    CHECK(v && !strncmp(v, want, strlen(want)) && v[strlen(want)] == '\n', "%s: '%s' is '%s', want '%s'", what, key,
          v ? v : "(missing)", want);
}

static void test_cli_info_voxels(void)
{
    FILE *t = fopen(prox_bin, "r");
    if (!t) {
        CHECK(0, "prox tool not found at %s (build it first)", prox_bin);
        return;
    }
    fclose(t);
    strcpy(tmpdir, "/tmp/test_voxcli_XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL, "mkdtemp");
    char out[64][256], err[256], cmd[4096], path[256];
    int n;

    /* prox info on a closed box 1 x 2 x 3 centred at (1, -2, 0.25) (every
     * coordinate exact in a float): volume 6, area 2 (2 + 6 + 3) = 22 */
    prox_mesh *box = prox_mesh_make_box(prox_v3(0.5, 1, 1.5));
    prox_mesh_transform(box, 1.0, prox_v3(1, -2, 0.25));
    snprintf(path, sizeof path, "%s/box.off", tmpdir);
    check_write_off(path, box);
    snprintf(cmd, sizeof cmd, "%s info %s", prox_bin, path);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n == 15, "prox info box: %d lines, %s", n, err);
    {
        char want[300];
        snprintf(want, sizeof want, "%s", path);
        expect_info_text(out, n, "box", "file", want);
        expect_info_text(out, n, "box", "triangles", "12");
        expect_info_text(out, n, "box", "vertices", "8");
        expect_info_text(out, n, "box", "welded_vertices", "0");
        expect_info_text(out, n, "box", "dropped_degenerate", "0");
        expect_info_text(out, n, "box", "closed", "yes");
        expect_info_text(out, n, "box", "boundary_edges", "0");
        expect_info_text(out, n, "box", "nonmanifold_edges", "0");
        expect_info_text(out, n, "box", "oriented", "yes");
        expect_info_text(out, n, "box", "misoriented_edges", "0");
        const double vol = 6, area = 22, lo[3] = {0.5, -3, -1.25}, hi[3] = {1.5, -1, 1.75}, c[3] = {1, -2, 0.25};
        expect_info_numbers(out, n, "box", "volume", &vol, 1);
        expect_info_numbers(out, n, "box", "area", &area, 1);
        expect_info_numbers(out, n, "box", "bbox_min", lo, 3);
        expect_info_numbers(out, n, "box", "bbox_max", hi, 3);
        expect_info_numbers(out, n, "box", "centroid", c, 3);
        CHECK(info_value(out, n, "note") == NULL, "a closed mesh has no note");
    }
    /* the same box as a soup: each triangle with 3 vertices of its own,
     * and a 37th vertex, a copy of the first, in a 13th triangle that the
     * weld makes degenerate: 37 - 8 = 29 vertices welded, 1 dropped */
    snprintf(path, sizeof path, "%s/soup.off", tmpdir);
    FILE *sf = fopen(path, "w");
    CHECK(sf != NULL, "cannot write %s", path);
    if (sf) {
        fprintf(sf, "OFF\n37 13 0\n");
        for (int k = 0; k < 37; k++) {
            prox_vec3 v = box->vertices[box->triangles[k < 36 ? k / 3 : 0][k < 36 ? k % 3 : 0]];
            fprintf(sf, "%.17g %.17g %.17g\n", v.x, v.y, v.z);
        }
        for (int k = 0; k < 12; k++)
            fprintf(sf, "3 %d %d %d\n", 3 * k, 3 * k + 1, 3 * k + 2);
        fprintf(sf, "3 0 1 36\n");
        fclose(sf);
    }
    snprintf(cmd, sizeof cmd, "%s info %s", prox_bin, path);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n == 15, "prox info soup: %d lines, %s", n, err);
    expect_info_text(out, n, "soup", "triangles", "12");
    expect_info_text(out, n, "soup", "vertices", "8");
    expect_info_text(out, n, "soup", "welded_vertices", "29");
    expect_info_text(out, n, "soup", "dropped_degenerate", "1");
    expect_info_text(out, n, "soup", "closed", "yes");
    {
        const double vol = 6;
        expect_info_numbers(out, n, "soup", "volume", &vol, 1);
    }
    /* the box less one triangle: that triangle's 3 edges are boundary
     * edges, and the last line says so */
    prox_mesh *open =
        prox_mesh_from_arrays(box->vertices, box->vertex_count, (const uint32_t(*)[3])box->triangles, box->triangle_count - 1);
    snprintf(path, sizeof path, "%s/open.off", tmpdir);
    check_write_off(path, open);
    snprintf(cmd, sizeof cmd, "%s info %s", prox_bin, path);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n == 16, "prox info open: %d lines, %s", n, err);
    expect_info_text(out, n, "open", "triangles", "11");
    expect_info_text(out, n, "open", "closed", "no");
    expect_info_text(out, n, "open", "boundary_edges", "3");
    expect_info_text(out, n, "open", "nonmanifold_edges", "0");
    CHECK(n == 16 && !strcmp(out[15], "note: the mesh is not closed (3 boundary edges); inner sphere trees need a watertight mesh\n"),
          "open mesh note: '%s'", n == 16 ? out[15] : "");
    /* an icosphere of 2 subdivisions: 20 * 4^2 = 320 triangles, 480
     * edges, 2 - 320 + 480 = 162 vertices (Euler); a 16 x 8 torus: 256
     * triangles, 128 vertices */
    prox_mesh *sph = prox_mesh_make_sphere(1.0, 2), *tor = prox_mesh_make_torus(0.6, 0.2, 16, 8);
    const char *names[2] = {"sphere.off", "torus.off"}, *tris[2] = {"320", "256"}, *verts[2] = {"162", "128"};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[k]);
        check_write_off(path, k ? tor : sph);
        snprintf(cmd, sizeof cmd, "%s info %s", prox_bin, path);
        CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n == 15, "prox info %s: %d lines, %s", names[k], n, err);
        expect_info_text(out, n, names[k], "triangles", tris[k]);
        expect_info_text(out, n, names[k], "vertices", verts[k]);
        expect_info_text(out, n, names[k], "closed", "yes");
        expect_info_text(out, n, names[k], "oriented", "yes");
        if (k == 0) {
            /* the icosphere's volume: below the unit ball's, above that of
             * the ball inscribed in it (its faces' centres lie beyond 0.98) */
            const char *v = info_value(out, n, "volume");
            double vol = v ? atof(v) : 0, ball = 4.0 / 3.0 * 3.14159265358979;
            CHECK(vol < ball && vol > ball * 0.98 * 0.98 * 0.98, "icosphere volume %.10g (ball %.10g)", vol, ball);
        }
    }
    /* prox info's refusals: the argument count (2), a missing file (1, named) */
    snprintf(cmd, sizeof cmd, "%s info", prox_bin);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 2 && n == 0 && strstr(err, "usage: prox info MESH"), "no mesh: %s", err);
    snprintf(cmd, sizeof cmd, "%s info %s %s", prox_bin, path, path);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 2 && n == 0 && strstr(err, "usage: prox info MESH"), "two meshes: %s", err);
    snprintf(cmd, sizeof cmd, "%s info %s/missing.off", prox_bin, tmpdir);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 1 && n == 0 && strstr(err, "missing.off"), "missing mesh: %s", err);

    /* prox voxels on a cloud whose cells are worked out by hand (cell 0.1:
     * x 0..1 -> 11 cells, y 0..0.5 -> 6, z 0..0.25 -> 3; 4 distinct
     * cells of 198, 2.020%) */
    char hand[256], cloud[256], vox[256];
    snprintf(hand, sizeof hand, "%s",
             write_tmp("hand.xyz", "# a cloud\n0 0 0\n0.05 0.01 0.02\n0.95 0.5 0.25\n1.0 0.5 0.25\n0.31 0.42 0.1\n"));
    snprintf(cloud, sizeof cloud, "%s", hand);
    snprintf(vox, sizeof vox, "%s/hand.vox", tmpdir);
    for (int cls = 1; cls <= 2; cls++) {
        remove(vox);
        /* the options before the input the second time */
        if (cls == 1)
            snprintf(cmd, sizeof cmd, "%s voxels %s -o %s --cell 0.1", prox_bin, cloud, vox);
        else
            snprintf(cmd, sizeof cmd, "%s voxels --class unknown -o %s --cell 0.1 %s", prox_bin, vox, cloud);
        CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n == 9, "prox voxels hand.xyz: %d lines, %s", n, err);
        expect_info_text(out, n, "voxels", "cloud", cloud);
        expect_info_text(out, n, "voxels", "cell", "0.1");
        expect_info_text(out, n, "voxels", "origin", "0 0 0");
        expect_info_text(out, n, "voxels", "dims", "11 6 3");
        expect_info_text(out, n, "voxels", "voxels",
                         cls == 1 ? "4 (obstacle), 2.020% of the grid" : "4 (unknown), 2.020% of the grid");
        expect_info_text(out, n, "voxels", "written", vox);
        prox_voxmap *m = NULL;
        char lerr[512] = "";
        CHECK(prox_voxmap_load(vox, &m, lerr, sizeof lerr) == 0 && m, "load %s: %s", vox, lerr);
        if (m) {
            prox_voxmap_def d;
            prox_voxmap_def_get(m, &d);
            CHECK(d.cell == 0.1 && d.origin.x == 0 && d.origin.y == 0 && d.origin.z == 0 && d.dims[0] == 11 && d.dims[1] == 6 &&
                      d.dims[2] == 3,
                  "hand.vox header");
            const int32_t want[4][3] = {{0, 0, 0}, {3, 4, 1}, {9, 5, 2}, {10, 5, 2}};
            for (int i = 0; i < 4; i++)
                CHECK(prox_voxmap_get(m, want[i][0], want[i][1], want[i][2]) == (uint32_t)cls, "hand.vox cell %d %d %d", want[i][0],
                      want[i][1], want[i][2]);
            CHECK(prox_voxmap_count(m, 1u << cls) == 4 && prox_voxmap_count(m, PROX_CLASS_ALL) == 4, "hand.vox: %u voxels",
                  prox_voxmap_count(m, PROX_CLASS_ALL));
            prox_voxmap_free(m);
        }
    }
    /* random clouds, a big-endian float PLY and an XYZ file: the written
     * map, read back, is prox_voxmap_from_cloud's on the same file, cell by
     * cell */
    {
        static unsigned char buf[1 << 16];
        enum { NP = 1500 };
        static double vals[NP * 3];
        unsigned long long s = 6060;
        for (int i = 0; i < NP * 3; i++)
            vals[i] = check_rng_uniform(&s, -1.0, 1.5);
        const ply_col c[3] = {{"float", "x"}, {"float", "y"}, {"float", "z"}};
        size_t len = ply_binary(buf, sizeof buf, 1, c, 3, NP, vals, NULL, "", 0);
        write_bytes("rand.ply", buf, len);
        FILE *f = fopen(write_tmp("rand.xyz", ""), "w");
        for (int i = 0; f && i < NP; i++)
            fprintf(f, "%.17g %.17g %.17g\n", vals[3 * i], vals[3 * i + 1], vals[3 * i + 2]);
        if (f)
            fclose(f);
        const char *files[2] = {"rand.ply", "rand.xyz"};
        for (int k = 0; k < 2; k++) {
            snprintf(cloud, sizeof cloud, "%s/%s", tmpdir, files[k]);
            snprintf(vox, sizeof vox, "%s/rand%d.vox", tmpdir, k);
            snprintf(cmd, sizeof cmd, "%s voxels %s -o %s --cell 0.125 --class obstacle", prox_bin, cloud, vox);
            CHECK(check_run_cmd(cmd, out, 64, &n, err) == 0 && n == 9, "prox voxels %s: %d lines, %s", files[k], n, err);
            prox_voxmap *got = NULL, *ref = NULL;
            char lerr[512] = "";
            CHECK(prox_voxmap_load(vox, &got, lerr, sizeof lerr) == 0, "load %s: %s", vox, lerr);
            CHECK(prox_voxmap_from_cloud(cloud, 0.125, PROX_VOXEL_OBSTACLE, &ref, lerr, sizeof lerr) == 0, "%s: %s", cloud, lerr);
            if (got && ref) {
                expect_same_map(files[k], got, ref);
                char want[64];
                snprintf(want, sizeof want, "%u (obstacle)", prox_voxmap_count(ref, PROX_CLASS_ALL));
                const char *v = info_value(out, n, "voxels");
                CHECK(v && !strncmp(v, want, strlen(want)), "%s: voxels line '%s', want '%s'", files[k], v ? v : "", want);
                /* 1500 points in 20^3 cells: most cells distinct */
                CHECK(prox_voxmap_count(ref, PROX_CLASS_ALL) > 1000, "%s: %u voxels", files[k],
                      prox_voxmap_count(ref, PROX_CLASS_ALL));
            }
            prox_voxmap_free(got);
            prox_voxmap_free(ref);
        }
    }
    /* prox voxels' refusals: exit 2 with the usage or the option named,
     * exit 1 naming a file it cannot read or write; no map written. In
     * the arguments, C stands for the cloud and V for the map. */
    snprintf(vox, sizeof vox, "%s/refused.vox", tmpdir);
    static const struct {
        const char *args, *needle, *first; /* first: the first stderr line's, where it names the option or input */
    } bad[] = {{"C --cell 0.1", "usage: prox voxels CLOUD", "prox voxels: no output file given (-o MAP.vox)"},
               {"C -o V", "usage: prox voxels CLOUD", "prox voxels: no cell size given (--cell S)"},
               {"-o V --cell 0.1", "usage: prox voxels CLOUD", "prox voxels: no cloud given"},
               {"C -o V --cell 0", "--cell needs a positive number (metres), got '0'", NULL},
               {"C -o V --cell -1", "--cell needs a positive number (metres), got '-1'", NULL},
               {"C -o V --cell abc", "--cell needs a positive number (metres), got 'abc'", NULL},
               {"C -o V --cell inf", "--cell needs a positive number (metres), got 'inf'", NULL},
               {"C -o V --cell 0.1x", "--cell needs a positive number (metres), got '0.1x'", NULL},
               {"C -o V --cell 0.1 --class wall", "--class is obstacle or unknown, got 'wall'", NULL},
               {"C -o V --cell 0.1 --frob", "usage: prox voxels CLOUD", "prox voxels: unknown option '--frob'"},
               {"--frob -o V --cell 0.1", "usage: prox voxels CLOUD", NULL},
               {"C -o V --cell", "usage: prox voxels CLOUD", "prox voxels: --cell needs a value"},
               {"C C -o V --cell 0.1", "usage: prox voxels CLOUD", "prox voxels: a second input"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char args[1024] = "";
        for (const char *a = bad[k].args; *a; a++) {
            size_t len = strlen(args);
            if (*a == 'C' || *a == 'V')
                snprintf(args + len, sizeof args - len, "%s", *a == 'C' ? hand : vox);
            else
                snprintf(args + len, sizeof args - len, "%c", *a);
        }
        snprintf(cmd, sizeof cmd, "%s voxels %s", prox_bin, args);
        char first[256];
        int rc = check_run_cmd2(cmd, out, 64, &n, first, err);
        CHECK(!bad[k].first || strstr(first, bad[k].first), "voxels %s: first line '%s' lacks '%s'", bad[k].args, first,
              bad[k].first ? bad[k].first : "");
        CHECK(rc == 2 && n == 0 && strstr(err, bad[k].needle), "voxels %s: exit %d, '%s' lacks '%s'", bad[k].args, rc, err,
              bad[k].needle);
        CHECK(access(vox, F_OK) != 0, "voxels %s wrote %s", bad[k].args, vox);
    }
    snprintf(cmd, sizeof cmd, "%s voxels %s/missing.xyz -o %s --cell 0.1", prox_bin, tmpdir, vox);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 1 && n == 0 && strstr(err, "prox: ") && strstr(err, "missing.xyz: "),
          "missing cloud: %s", err);
    CHECK(access(vox, F_OK) != 0, "a missing cloud wrote %s", vox);
    const char *badply = write_tmp("few.ply", "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
                                              "property float z\nend_header\n0 0 0\n1 1\n");
    snprintf(cmd, sizeof cmd, "%s voxels %s -o %s --cell 0.1", prox_bin, badply, vox);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 1 && n == 0 && strstr(err, "few.ply: vertex 1 has 2 values, want 3"),
          "bad cloud: %s", err);
    snprintf(cmd, sizeof cmd, "%s voxels %s -o %s/nodir/x.vox --cell 0.1", prox_bin, hand, tmpdir);
    CHECK(check_run_cmd(cmd, out, 64, &n, err) == 1 && n == 0 && strstr(err, "nodir/x.vox: "), "unwritable map: %s", err);

    prox_mesh_free(box);
    prox_mesh_free(open);
    prox_mesh_free(sph);
    prox_mesh_free(tor);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    CHECK(system(cmd) == 0, "cleanup");
}

/* ---------------- cross-type against brute force ---------------- */

typedef struct cell {
    int32_t x, y, z;
    uint32_t cls;
} cell;

typedef struct cells {
    cell c[4096];
    int n;
} cells;

static void collect(int32_t x, int32_t y, int32_t z, uint32_t cls, void *u)
{
    cells *cs = u;
    if (cs->n < 4096)
        cs->c[cs->n++] = (cell){x, y, z, cls};
}

static void cell_box(const prox_voxmap *m, const cell *c, prox_vec3 *lo, prox_vec3 *hi)
{
    prox_voxmap_def d;
    prox_voxmap_def_get(m, &d);
    *lo = prox_v3_add(d.origin, prox_v3(c->x * d.cell, c->y * d.cell, c->z * d.cell));
    *hi = prox_v3_add(*lo, prox_v3(d.cell, d.cell, d.cell));
}

static const int faces[12][3] = {{0, 1, 3}, {0, 3, 2}, {4, 6, 7}, {4, 7, 5}, {0, 4, 5}, {0, 5, 1},
                                 {2, 3, 7}, {2, 7, 6}, {0, 2, 6}, {0, 6, 4}, {1, 5, 7}, {1, 7, 3}};

static int inside(prox_vec3 lo, prox_vec3 hi, prox_vec3 p)
{
    return p.x >= lo.x && p.x <= hi.x && p.y >= lo.y && p.y <= hi.y && p.z >= lo.z && p.z <= hi.z;
}

/* reference: a world-frame box as 8 corners, distance to a triangle by its
 * 12 face triangles, overlap by face-triangle intersection or containment */
static double ref_tri_box(const prox_vec3 C[8], prox_vec3 lo_local, prox_vec3 hi_local, const prox_xform *to_local,
                          const prox_vec3 T[3], int *overlap)
{
    double best = INFINITY;
    *overlap = 0;
    for (int k = 0; k < 3; k++)
        if (inside(lo_local, hi_local, prox_xform_point(to_local, T[k])))
            *overlap = 1;
    for (int f = 0; f < 12; f++) {
        prox_vec3 F[3] = {C[faces[f][0]], C[faces[f][1]], C[faces[f][2]]}, a, b;
        if (prox_triangle_intersect(F, T))
            *overlap = 1;
        double d = prox_triangle_distance(F, T, &a, &b);
        best = fmin(best, d);
    }
    return *overlap ? 0.0 : best;
}

static void box_corners(prox_vec3 lo, prox_vec3 hi, const prox_xform *X, prox_vec3 C[8])
{
    for (int i = 0; i < 8; i++)
        C[i] = prox_xform_point(X, prox_v3(i & 1 ? hi.x : lo.x, i & 2 ? hi.y : lo.y, i & 4 ? hi.z : lo.z));
}

static void fill_random(prox_voxmap *m, int n, uint32_t nx, uint32_t ny, uint32_t nz)
{
    for (int i = 0; i < n; i++)
        set_random(m, nx, ny, nz);
}

static void test_mesh_voxel_brute(void)
{
    prox_voxmap *m = make_map(12, 10, 8, 0.08, prox_v3(-0.5, -0.4, -0.3), 0);
    fill_random(m, 160, 12, 10, 8);
    static cells cs;
    cs.n = 0;
    prox_voxmap_foreach(m, collect, &cs);
    prox_mesh *mesh = prox_mesh_make_torus(0.25, 0.07, 16, 8);
    prox_bvh *b = prox_bvh_build(mesh);
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine *e = prox_engine_create(NULL, bank);
    int hits = 0, misses = 0;
    for (int it = 0; it < 16; it++) {
        prox_xform pm = random_pose(0.4), pb = random_pose(1.2);
        uint32_t mask = it % 3 == 0 ? PROX_CLASS_ALL : (1u << (1 + it % 2));
        prox_xform map_inv = prox_xform_inverse(&pm);
        /* brute force */
        double dmin = INFINITY;
        int any = 0;
        uint32_t pairs = 0;
        for (uint32_t t = 0; t < mesh->triangle_count; t++) {
            prox_vec3 T[3];
            for (int k = 0; k < 3; k++)
                T[k] = prox_xform_point(&pb, mesh->vertices[mesh->triangles[t][k]]);
            for (int i = 0; i < cs.n; i++) {
                if (!((mask >> cs.c[i].cls) & 1))
                    continue;
                prox_vec3 lo, hi, C[8];
                cell_box(m, &cs.c[i], &lo, &hi);
                box_corners(lo, hi, &pm, C);
                int ov;
                double d = ref_tri_box(C, lo, hi, &map_inv, T, &ov);
                dmin = fmin(dmin, d);
                any |= ov;
                pairs += ov;
            }
        }
        hits += any, misses += !any;
        for (int order = 0; order < 2; order++) {
            const prox_tree *ta = order ? prox_bvh_tree(b) : prox_voxmap_tree(m), *tb = order ? prox_voxmap_tree(m) : prox_bvh_tree(b);
            prox_xform xa = order ? pb : pm, xb = order ? pm : pb;
            prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
            q.voxel_classes = mask;
            q.use_cache = 0;
            prox_result r;
            double d = run1(e, &q, ta, xa, tb, xb, &r);
            CHECK(fabs(d - dmin) <= 1e-9, "it %d order %d: distance %.12g vs brute force %.12g", it, order, d, dmin);
            CHECK(fabs(prox_v3_dist(r.point_a, r.point_b) - fmax(d, 0)) <= 1e-9, "witnesses %.12g apart, distance %.12g",
                  prox_v3_dist(r.point_a, r.point_b), d);
            q.kind = PROX_QUERY_COLLIDE;
            run1(e, &q, ta, xa, tb, xb, &r);
            CHECK((r.value > 0.5) == any, "it %d order %d: collide %g vs brute force %d", it, order, r.value, any);
            static prox_contact ct[20000];
            q.kind = PROX_QUERY_CONTACTS;
            q.contacts = ct, q.max_contacts = 20000;
            run1(e, &q, ta, xa, tb, xb, &r);
            CHECK(r.contact_count == pairs, "it %d order %d: %u contacts vs %u overlapping pairs", it, order, r.contact_count,
                  pairs);
            for (uint32_t k = 0; k < r.contact_count; k++) {
                uint32_t vl = order ? ct[k].leaf_b : ct[k].leaf_a;
                int32_t x, y, z;
                CHECK(prox_voxmap_leaf_cell(m, vl, &x, &y, &z) == 0 && ((mask >> prox_voxmap_get(m, x, y, z)) & 1),
                      "contact voxel is a leaf of the asked classes");
            }
        }
    }
    CHECK(hits >= 3 && misses >= 3, "poses cover both cases (%d hits, %d misses)", hits, misses);
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_bvh_free(b);
    prox_mesh_free(mesh);
    prox_voxmap_free(m);
}

static prox_ist *small_ist(prox_mesh **mesh_out)
{
    prox_mesh *mesh = prox_mesh_make_sphere(0.2, 2);
    prox_ist_def d = prox_ist_def_default();
    d.target_spheres = 200;
    prox_ist *t = NULL;
    char err[256];
    CHECK(prox_ist_build(mesh, &d, &t, err, sizeof err) == 0, "%s", err);
    *mesh_out = mesh;
    return t;
}

static void test_ist_voxel_brute(void)
{
    prox_mesh *mesh;
    prox_ist *t = small_ist(&mesh);
    if (!t)
        return;
    prox_voxmap *m = make_map(10, 10, 10, 0.06, prox_v3(-0.3, -0.3, -0.3), 0);
    fill_random(m, 250, 10, 10, 10);
    static cells cs;
    cs.n = 0;
    prox_voxmap_foreach(m, collect, &cs);
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine *e = prox_engine_create(NULL, bank);
    double rv = 0.06 * cbrt(3.0 / (4.0 * M_PI));
    int hits = 0;
    for (int it = 0; it < 24; it++) {
        prox_xform pm = random_pose(0.3), pi = random_pose(1.0);
        uint32_t mask = it % 3 == 0 ? PROX_CLASS_ALL : (1u << (1 + it % 2));
        prox_xform to_map = prox_xform_relative(&pm, &pi); /* IST local -> map local */
        double dmin = INFINITY, vol = 0;
        int any = 0;
        for (uint32_t s = 0; s < t->sphere_count; s++) {
            const ist_sphere *sp = &t->spheres[s];
            prox_vec3 c = prox_xform_point(&to_map, prox_v3(sp->x, sp->y, sp->z));
            for (int i = 0; i < cs.n; i++) {
                if (!((mask >> cs.c[i].cls) & 1))
                    continue;
                prox_vec3 lo, hi;
                cell_box(m, &cs.c[i], &lo, &hi);
                double dx = fmax(0, fmax(lo.x - c.x, c.x - hi.x)), dy = fmax(0, fmax(lo.y - c.y, c.y - hi.y)),
                       dz = fmax(0, fmax(lo.z - c.z, c.z - hi.z));
                double d = sqrt(dx * dx + dy * dy + dz * dz) - sp->r;
                dmin = fmin(dmin, d);
                any |= d <= 0;
                /* the secondary sphere at its own centre */
                prox_vec3 c2 = prox_xform_point(&to_map, prox_v3(t->sec[s][0], t->sec[s][1], t->sec[s][2]));
                vol += prox_lens_volume(rv, sp->r2, prox_v3_dist(c2, prox_v3_scale(prox_v3_add(lo, hi), 0.5)));
            }
        }
        hits += any;
        for (int order = 0; order < 2; order++) {
            const prox_tree *ta = order ? prox_ist_tree(t) : prox_voxmap_tree(m), *tb = order ? prox_voxmap_tree(m) : prox_ist_tree(t);
            prox_xform xa = order ? pi : pm, xb = order ? pm : pi;
            prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
            q.voxel_classes = mask;
            q.use_cache = 0;
            prox_result r;
            double d = run1(e, &q, ta, xa, tb, xb, &r);
            if (dmin > 0)
                CHECK(fabs(d - dmin) <= 1e-5, "it %d order %d: distance %.9g vs brute force %.9g", it, order, d, dmin);
            else
                CHECK(d <= 0, "it %d: overlap expected, got %g", it, d);
            CHECK(r.lower <= fmax(dmin, 0) + 1e-9, "certified lower bound %g above the model distance %g", r.lower, dmin);
            q.kind = PROX_QUERY_COLLIDE;
            run1(e, &q, ta, xa, tb, xb, &r);
            CHECK((r.value > 0.5) == any, "it %d order %d: collide %g vs brute force %d", it, order, r.value, any);
            q.kind = PROX_QUERY_PENVOL;
            run1(e, &q, ta, xa, tb, xb, &r);
            CHECK(fabs(r.value - vol) <= 1e-6 * (1 + vol) + 1e-12, "it %d order %d: penetration volume %.9g vs brute force %.9g",
                  it, order, r.value, vol);
            CHECK(r.lower <= vol * (1 + 1e-9) + 1e-15 && r.upper >= vol * (1 - 1e-9), "bounds [%g, %g] hold %g", r.lower,
                  r.upper, vol);
        }
    }
    CHECK(hits >= 3 && hits <= 21, "poses cover both cases (%d hits)", hits);
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_voxmap_free(m);
    prox_ist_free(t);
    prox_mesh_free(mesh);
}

/* The voxel volume model (equal-volume ball at the cell centre) against
 * the exact volume of a ball inside a block of voxels (midpoint
 * integration on a fine grid). */
static void test_penvol_model_error(void)
{
    double h = 1.0, worst = 0, sum_err = 0;
    int n = 0;
    double rv = h * cbrt(3.0 / (4.0 * M_PI));
    for (int rr = 0; rr < 3; rr++) {
        double R = (double[]){0.75, 1.5, 3.0}[rr];
        for (int it = 0; it < 6; it++) {
            /* block of cells [-6, 6)^3 filled on z < 0 (a floor); ball centre near the floor */
            double cz = (urand() - 0.5) * R, cy = urand() - 0.5, cx = urand() - 0.5;
            prox_vec3 c = prox_v3(cx, cy, cz);
            double model = 0;
            for (int z = -6; z < 0; z++)
                for (int y = -6; y < 6; y++)
                    for (int x = -6; x < 6; x++)
                        model += prox_lens_volume(rv, R, prox_v3_dist(c, prox_v3(x + 0.5, y + 0.5, z + 0.5)));
            /* exact: ball below z = 0 (cap), inside the block */
            double k = c.z; /* plane at distance k below... cap below z = 0: height R - c.z if c.z > -R */
            double hcap = k >= R ? 0 : (k <= -R ? 2 * R : R - k);
            double exact = M_PI * hcap * hcap * (3 * R - hcap) / 3.0;
            double err = fabs(model - exact) / exact;
            worst = fmax(worst, err);
            sum_err += err;
            n++;
            if (R >= 1.5)
                CHECK(err < 0.08, "R = %g cells: model %.4g vs exact %.4g (%.1f%%)", R, model, exact, 100 * err);
            else
                CHECK(err < 0.5, "R = %g cells: model %.4g vs exact %.4g (%.1f%%)", R, model, exact, 100 * err);
        }
    }
    fprintf(stderr, "    voxel-as-ball volume model vs exact ball/half-space overlap: mean %.1f%%, worst %.1f%%\n",
            100 * sum_err / n, 100 * worst);
}

static void test_voxel_voxel_brute(void)
{
    prox_voxmap *a = make_map(8, 8, 8, 0.1, prox_v3(-0.4, -0.4, -0.4), 0);
    prox_voxmap *b = make_map(6, 6, 6, 0.07, prox_v3(-0.2, -0.2, -0.2), 0);
    fill_random(a, 60, 8, 8, 8);
    fill_random(b, 40, 6, 6, 6);
    static cells ca, cb;
    ca.n = cb.n = 0;
    prox_voxmap_foreach(a, collect, &ca);
    prox_voxmap_foreach(b, collect, &cb);
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine *e = prox_engine_create(NULL, bank);
    int hits = 0;
    for (int it = 0; it < 15; it++) {
        prox_xform pa = random_pose(0.3), pb = random_pose(1.5);
        prox_xform ia = prox_xform_inverse(&pa);
        double dmin = INFINITY;
        int any = 0;
        for (int j = 0; j < cb.n; j++) {
            prox_vec3 blo, bhi, B[8];
            cell_box(b, &cb.c[j], &blo, &bhi);
            box_corners(blo, bhi, &pb, B);
            for (int i = 0; i < ca.n; i++) {
                prox_vec3 lo, hi, A[8];
                cell_box(a, &ca.c[i], &lo, &hi);
                box_corners(lo, hi, &pa, A);
                int ov = 0;
                double d = INFINITY;
                for (int k = 0; k < 8; k++)
                    if (inside(lo, hi, prox_xform_point(&ia, B[k])))
                        ov = 1;
                for (int f = 0; f < 12 && !ov; f++) {
                    prox_vec3 T[3] = {B[faces[f][0]], B[faces[f][1]], B[faces[f][2]]};
                    int o2;
                    double d2 = ref_tri_box(A, lo, hi, &ia, T, &o2);
                    ov |= o2;
                    d = fmin(d, d2);
                }
                if (ov)
                    d = 0;
                dmin = fmin(dmin, d);
                any |= ov;
            }
        }
        hits += any;
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        q.use_cache = 0;
        prox_result r;
        double d = run1(e, &q, prox_voxmap_tree(a), pa, prox_voxmap_tree(b), pb, &r);
        CHECK(fabs(d - dmin) <= 1e-9, "it %d: distance %.12g vs brute force %.12g", it, d, dmin);
        q.kind = PROX_QUERY_COLLIDE;
        run1(e, &q, prox_voxmap_tree(a), pa, prox_voxmap_tree(b), pb, &r);
        CHECK((r.value > 0.5) == any, "it %d: collide %g vs %d", it, r.value, any);
    }
    CHECK(hits >= 2 && hits <= 13, "poses cover both cases (%d hits)", hits);
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_voxmap_free(a);
    prox_voxmap_free(b);
}

/* ---------------- dynamic: queries see updates at once ---------------- */

static void test_updates_visible(void)
{
    prox_voxmap *m = make_map(50, 50, 10, 0.1, prox_v3(-2.5, -2.5, 0), 0);
    prox_mesh *mesh = prox_mesh_make_box(prox_v3(0.2, 0.2, 0.2));
    prox_bvh *b = prox_bvh_build(mesh);
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine *e = prox_engine_create(NULL, bank);
    prox_xform pose = prox_xform_from_pose(prox_v3(0, 0, 0.5), prox_quat_identity());
    prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
    q.use_cache = 0;
    prox_result r;
    double d0 = run1(e, &q, prox_bvh_tree(b), pose, prox_voxmap_tree(m), prox_xform_identity(), &r);
    CHECK(isinf(d0) || r.value > 1e30 || r.contact_count == 0, "empty map: nothing near (%g)", d0);
    /* a floor cell right below: box bottom at z = 0.3, cell top at 0.1 */
    prox_voxmap_set(m, 25, 25, 0, PROX_VOXEL_OBSTACLE);
    double d1 = run1(e, &q, prox_bvh_tree(b), pose, prox_voxmap_tree(m), prox_xform_identity(), &r);
    CHECK_NEAR(d1, 0.2, 1e-12, "distance to the new cell");
    prox_voxmap_set(m, 26, 25, 2, PROX_VOXEL_UNKNOWN); /* z in [0.2, 0.3]: touching the box bottom */
    double d2 = run1(e, &q, prox_bvh_tree(b), pose, prox_voxmap_tree(m), prox_xform_identity(), &r);
    CHECK_NEAR(d2, 0.0, 1e-12, "touching unknown cell");
    q.voxel_classes = 1u << PROX_VOXEL_OBSTACLE;
    double d3 = run1(e, &q, prox_bvh_tree(b), pose, prox_voxmap_tree(m), prox_xform_identity(), &r);
    CHECK_NEAR(d3, 0.2, 1e-12, "unknown cells ignored when planning against obstacles");
    q.voxel_classes = PROX_CLASS_ALL;
    prox_voxmap_set(m, 26, 25, 2, PROX_VOXEL_FREE);
    double d4 = run1(e, &q, prox_bvh_tree(b), pose, prox_voxmap_tree(m), prox_xform_identity(), &r);
    CHECK_NEAR(d4, 0.2, 1e-12, "cleared cell gone");
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_bvh_free(b);
    prox_mesh_free(mesh);
    prox_voxmap_free(m);
}

/* ---------------- the run-time bank ---------------- */

/* an alternative (VOXEL, MESH) collide handler: brute force over every
 * leaf voxel and every triangle in one expansion (exact, no pruning) */
static void brute_collide_root(prox_ctx *c, const prox_pairstate *p)
{
    if (p->a->root != VX_NONE)
        prox_ctx_push(c, p, p->a->root, p->b->root, 0.0);
}

static void brute_collide_expand(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    (void)na, (void)nb;
    const prox_voxmap *m = p->a->impl;
    const prox_bvh *b = p->b->impl;
    const vx_level *L = &m->lv[0];
    for (uint32_t s = 0; s < L->cap; s++) {
        if (!L->e[s].key)
            continue;
        uint32_t cc[3];
        vx_coords(L->e[s].key, cc);
        prox_vec3 lo = prox_v3_add(m->def.origin, prox_v3(cc[0] * m->def.cell, cc[1] * m->def.cell, cc[2] * m->def.cell));
        prox_vec3 hi = prox_v3_add(lo, prox_v3(m->def.cell, m->def.cell, m->def.cell)), C[8];
        box_corners(lo, hi, &(prox_xform){prox_m3_identity(), prox_v3(0, 0, 0)}, C);
        for (uint32_t t = 0; t < b->tri_count; t++) {
            prox_vec3 T[3];
            for (int k = 0; k < 3; k++)
                T[k] = prox_xform_point(&p->b_in_a, b->tri[t][k]);
            int ov;
            prox_xform id = prox_xform_identity();
            ref_tri_box(C, lo, hi, &id, T, &ov);
            prox_ctx_count(c, 0, 1);
            if (ov) {
                prox_ctx_report_overlap(c, p, VX_ID(0, s), t, T[0]);
                return;
            }
        }
    }
}

static void test_bank_switch(void)
{
    prox_voxmap *m = make_map(16, 16, 16, 0.05, prox_v3(-0.4, -0.4, -0.4), 0);
    fill_random(m, 120, 16, 16, 16);
    prox_mesh *mesh = prox_mesh_make_sphere(0.15, 1);
    prox_bvh *b = prox_bvh_build(mesh);
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine *e = prox_engine_create(NULL, bank);
    prox_handler def = *prox_bank_get(bank, PROX_TREE_VOXEL, PROX_TREE_MESH, PROX_QUERY_COLLIDE);
    prox_handler brute;
    memset(&brute, 0, sizeof brute);
    brute.name = "voxel-mesh collide, brute force";
    brute.root = brute_collide_root;
    brute.expand = brute_collide_expand;
    int agree = 0, total = 0;
    for (int it = 0; it < 30; it++) {
        prox_xform pose = random_pose(0.8);
        prox_query q = prox_query_default(PROX_QUERY_COLLIDE);
        q.use_cache = 0;
        prox_result r0, r1, r2;
        run1(e, &q, prox_voxmap_tree(m), prox_xform_identity(), prox_bvh_tree(b), pose, &r0);
        prox_bank_set(bank, PROX_TREE_VOXEL, PROX_TREE_MESH, PROX_QUERY_COLLIDE, &brute);
        CHECK(strcmp(prox_bank_get(bank, PROX_TREE_VOXEL, PROX_TREE_MESH, PROX_QUERY_COLLIDE)->name, brute.name) == 0, "switched");
        /* (MESH, VOXEL) order is served by the new handler too */
        run1(e, &q, prox_bvh_tree(b), pose, prox_voxmap_tree(m), prox_xform_identity(), &r1);
        prox_bank_set(bank, PROX_TREE_VOXEL, PROX_TREE_MESH, PROX_QUERY_COLLIDE, &def);
        run1(e, &q, prox_voxmap_tree(m), prox_xform_identity(), prox_bvh_tree(b), pose, &r2);
        CHECK(r0.value == r1.value && r1.value == r2.value, "it %d: answers %g %g %g", it, r0.value, r1.value, r2.value);
        /* the brute handler tests every leaf pair until a hit: its count shows which ran */
        if (r1.value < 0.5)
            CHECK(r1.leaf_tests == (uint64_t)prox_voxmap_count(m, PROX_CLASS_ALL) * mesh->triangle_count,
                  "brute handler ran (%llu leaf tests)", (unsigned long long)r1.leaf_tests);
        CHECK(r2.leaf_tests == r0.leaf_tests, "default handler back (%llu vs %llu)", (unsigned long long)r2.leaf_tests,
              (unsigned long long)r0.leaf_tests);
        agree += r0.value == r1.value;
        total++;
    }
    CHECK(agree == total, "%d of %d agree", agree, total);
    /* removing the handler: the pair has none */
    prox_bank_set(bank, PROX_TREE_VOXEL, PROX_TREE_MESH, PROX_QUERY_COLLIDE, NULL);
    prox_query q = prox_query_default(PROX_QUERY_COLLIDE);
    prox_result r;
    prox_object_pair op = {prox_voxmap_tree(m), prox_bvh_tree(b), prox_xform_identity(), prox_xform_identity(), NULL};
    prox_query_run(e, &q, &op, 1, &r);
    CHECK(r.flags & PROX_RESULT_NO_HANDLER, "no handler flagged");
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_bvh_free(b);
    prox_mesh_free(mesh);
    prox_voxmap_free(m);
}

/* Updates and queries allocate nothing: no allocator call over a million
 * updates and a thousand queries (counted in plain builds; sanitizer builds
 * keep their own allocator and only check the outcome). */
static void test_no_allocation(void)
{
    prox_voxmap *m = make_map(60, 60, 10, 0.1, prox_v3(-3, -3, 0), 0);
    prox_mesh *mesh = prox_mesh_make_torus(0.3, 0.1, 24, 12);
    prox_bvh *b = prox_bvh_build(mesh);
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine *e = prox_engine_create(NULL, bank);
    static prox_voxel_record rec[4096];
    prox_result r;
    prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
    q.use_cache = 0;
    prox_object_pair op = {prox_bvh_tree(b), prox_voxmap_tree(m), prox_xform_identity(), prox_xform_identity(), NULL};
    for (int i = 0; i < 4096; i++)
        rec[i] = random_record();
    prox_voxmap_apply(m, rec, 4096, NULL); /* warm up */
    prox_query_run(e, &q, &op, 1, &r);
#ifdef CHECK_ALLOC_ON
    atomic_store(&check_alloc_calls, 0);
    check_alloc_counting = 1;
#endif
    uint64_t applied = 0;
    for (int k = 0; k < 256; k++) {
        for (int i = 0; i < 4096; i++)
            rec[i] = random_record();
        applied += prox_voxmap_apply(m, rec, 4096, NULL);
        for (int j = 0; j < 4; j++) {
            op.pose_a = random_pose(4.0);
            q.kind = j % 2 ? PROX_QUERY_COLLIDE : PROX_QUERY_DISTANCE;
            prox_query_run(e, &q, &op, 1, &r);
        }
    }
#ifdef CHECK_ALLOC_ON
    check_alloc_counting = 0;
    long calls = atomic_load(&check_alloc_calls);
    CHECK(calls == 0, "%ld allocator calls during updates and queries", calls);
#endif
    CHECK(applied == 256u * 4096u, "all records applied (%llu)", (unsigned long long)applied);
    char err[256];
    CHECK(prox_voxmap_validate(m, err, sizeof err) == 0, "%s", err);
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    prox_bvh_free(b);
    prox_mesh_free(mesh);
    prox_voxmap_free(m);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_find_prox(argv[0], prox_bin, sizeof prox_bin);
    RUN_TEST(test_random_updates);
    RUN_TEST(test_capacity_and_records);
    RUN_TEST(test_files);
    RUN_TEST(test_cloud_reader);
    RUN_TEST(test_cli_info_voxels);
    RUN_TEST(test_updates_visible);
    RUN_TEST(test_mesh_voxel_brute);
    RUN_TEST(test_ist_voxel_brute);
    RUN_TEST(test_penvol_model_error);
    RUN_TEST(test_voxel_voxel_brute);
    RUN_TEST(test_bank_switch);
    RUN_TEST(test_no_allocation);
    return check_summary(argv[0]);
}
