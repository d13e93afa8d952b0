/* test_voxel_cross.c - hierarchical voxel maps: update invariants, rebuild
 * equivalence, batch records, files and point clouds, and the cross-type
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

static const char *write_tmp(const char *name, const char *text)
{
    static char path[160];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void expect_load_error(const char *name, const char *text, const char *needle)
{
    const char *p = write_tmp(name, text);
    prox_voxmap *m = (prox_voxmap *)1;
    char err[512] = "";
    int rc = prox_voxmap_load(p, &m, err, sizeof err);
    CHECK(rc != 0 && m == NULL, "%s should be refused", name);
    CHECK(strstr(err, needle) != NULL && strstr(err, name) != NULL && !strchr(err, '\n'), "%s: message '%s' lacks '%s'", name,
          err, needle);
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
        prox_voxmap_def a, b;
        prox_voxmap_def_get(m, &a);
        prox_voxmap_def_get(l, &b);
        CHECK(a.cell == b.cell && a.origin.x == b.origin.x && a.origin.z == b.origin.z && a.dims[0] == b.dims[0] &&
                  a.dims[2] == b.dims[2],
              "header round trip");
        int diff = 0;
        for (int z = 0; z < 5; z++)
            for (int y = 0; y < 10; y++)
                for (int x = 0; x < 20; x++)
                    diff += prox_voxmap_get(m, x, y, z) != prox_voxmap_get(l, x, y, z);
        CHECK(diff == 0, "%d cells differ after the round trip", diff);
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
    RUN_TEST(test_random_updates);
    RUN_TEST(test_capacity_and_records);
    RUN_TEST(test_files);
    RUN_TEST(test_updates_visible);
    RUN_TEST(test_mesh_voxel_brute);
    RUN_TEST(test_ist_voxel_brute);
    RUN_TEST(test_penvol_model_error);
    RUN_TEST(test_voxel_voxel_brute);
    RUN_TEST(test_bank_switch);
    RUN_TEST(test_no_allocation);
    return check_summary(argv[0]);
}
