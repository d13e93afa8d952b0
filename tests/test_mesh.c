/* test_mesh.c - mesh analysis, procedural shapes, containment, loading. */
#include <unistd.h>

#include "check.h"
#include "prox_mesh.h"

static void test_box(void)
{
    prox_mesh *m = prox_mesh_make_box(prox_v3(1, 2, 3));
    CHECK(m != NULL, "box built");
    CHECK(m->triangle_count == 12 && m->vertex_count == 8, "counts %u %u", m->triangle_count, m->vertex_count);
    CHECK(m->closed && m->oriented, "closed %d oriented %d", m->closed, m->oriented);
    CHECK_NEAR(m->volume, 48.0, 1e-12, "volume");
    CHECK_NEAR(m->area, 2 * (2 * 4 + 2 * 6 + 4 * 6), 1e-12, "area");
    CHECK_NEAR(prox_v3_len(m->centroid), 0.0, 1e-12, "centroid");
    prox_mesh_transform(m, 2.0, prox_v3(1, 0, 0));
    CHECK_NEAR(m->volume, 48.0 * 8, 1e-9, "scaled volume");
    CHECK_NEAR(m->centroid.x, 1.0, 1e-12, "moved centroid");
    prox_mesh_free(m);
}

static void test_sphere_torus(void)
{
    for (int s = 0; s <= 4; s++) {
        prox_mesh *m = prox_mesh_make_sphere(1.0, s);
        CHECK(m && m->closed && m->oriented, "sphere %d closed/oriented", s);
        CHECK(m->triangle_count == 20u << (2 * s), "sphere %d triangles %u", s, m->triangle_count);
        CHECK(m->vertex_count == 10u * (1u << (2 * s)) + 2, "Euler: V = 10*4^s + 2 (%u)", m->vertex_count);
        /* inscribed polyhedron: volume below the ball's, converging as 1/4^s */
        double ball = 4.0 / 3.0 * M_PI;
        CHECK(m->volume < ball && m->volume > ball * (1 - 0.7 / (1 << (2 * s))), "sphere %d volume %.6f", s, m->volume);
        prox_mesh_free(m);
    }
    prox_mesh *t = prox_mesh_make_torus(1.0, 0.25, 64, 32);
    CHECK(t && t->closed && t->oriented, "torus closed/oriented");
    double exact = 2 * M_PI * M_PI * 1.0 * 0.25 * 0.25;
    CHECK(fabs(t->volume - exact) / exact < 0.01, "torus volume %.6f vs %.6f", t->volume, exact);
    prox_mesh_free(t);
}

static void test_defects(void)
{
    prox_mesh *b = prox_mesh_make_box(prox_v3(1, 1, 1));
    /* drop one triangle: 3 boundary edges */
    prox_mesh *open = prox_mesh_from_arrays(b->vertices, b->vertex_count, (const uint32_t(*)[3])b->triangles, 11);
    CHECK(open && !open->closed && open->boundary_edges == 3, "boundary edges %u", open ? open->boundary_edges : 0);
    prox_mesh_free(open);
    /* flip one triangle */
    uint32_t t[12][3];
    memcpy(t, b->triangles, sizeof t);
    uint32_t tmp = t[3][1];
    t[3][1] = t[3][2];
    t[3][2] = tmp;
    prox_mesh *flip = prox_mesh_from_arrays(b->vertices, 8, (const uint32_t(*)[3])t, 12);
    CHECK(flip && flip->closed && !flip->oriented && flip->misoriented_edges == 3, "misoriented %u",
          flip ? flip->misoriented_edges : 0);
    prox_mesh_free(flip);
    /* duplicated vertices (unwelded triangle soup of the box) and degenerates */
    prox_vec3 v[36 + 3];
    uint32_t tt[13][3];
    for (int i = 0; i < 12; i++)
        for (int k = 0; k < 3; k++) {
            v[3 * i + k] = b->vertices[b->triangles[i][k]];
            tt[i][k] = (uint32_t)(3 * i + k);
        }
    v[36] = prox_v3(0, 0, 0), v[37] = prox_v3(1, 1, 1), v[38] = prox_v3(2, 2, 2); /* collinear: zero area */
    tt[12][0] = 36, tt[12][1] = 37, tt[12][2] = 38;
    prox_mesh *w = prox_mesh_from_arrays(v, 39, (const uint32_t(*)[3])tt, 13);
    CHECK(w && w->triangle_count == 12 && w->dropped_degenerate == 1, "degenerate dropped (%u)", w ? w->dropped_degenerate : 0);
    /* 36 box corners -> 8, and (1,1,1) of the dropped sliver is a box corner too */
    CHECK(w && w->welded_vertices == 29, "welded %u", w ? w->welded_vertices : 0);
    CHECK(w && w->boundary_edges == 0 && w->nonmanifold_edges == 0, "welded box edges");
    prox_mesh_free(w);
    /* bad index */
    uint32_t bad[1][3] = {{0, 1, 99}};
    CHECK(prox_mesh_from_arrays(b->vertices, 8, (const uint32_t(*)[3])bad, 1) == NULL, "bad index refused");
    prox_mesh_free(b);
}

static void test_contains(void)
{
    prox_mesh *s = prox_mesh_make_sphere(1.0, 3);
    prox_mesh *b = prox_mesh_make_box(prox_v3(0.5, 1, 2));
    unsigned long long r = 3;
    for (int i = 0; i < 400; i++) {
        prox_vec3 p = prox_v3(check_rng_uniform(&r, -2, 2), check_rng_uniform(&r, -2, 2), check_rng_uniform(&r, -2, 2));
        double len = prox_v3_len(p);
        if (fabs(len - 1.0) > 0.02) /* the polyhedron deviates from the ball by < 1.3% at s=3 */
            CHECK(prox_mesh_contains_point(s, p) == (len < 1.0), "sphere contains %g", len);
        int inbox = fabs(p.x) < 0.5 && fabs(p.y) < 1 && fabs(p.z) < 2;
        double margin = fmin(fabs(fabs(p.x) - 0.5), fmin(fabs(fabs(p.y) - 1), fabs(fabs(p.z) - 2)));
        if (margin > 1e-9)
            CHECK(prox_mesh_contains_point(b, p) == inbox, "box contains");
    }
    prox_mesh_free(s);
    prox_mesh_free(b);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fputs(text, f);
    fclose(f);
    return 0;
}

static void test_load_formats(void)
{
    char dir[] = "/tmp/hapticd-mesh-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "tmp dir");
    prox_mesh *b = prox_mesh_make_box(prox_v3(1, 2, 3));
    char path[256], err[512];
    /* OBJ */
    snprintf(path, sizeof path, "%s/box.obj", dir);
    FILE *f = fopen(path, "w");
    for (uint32_t i = 0; i < b->vertex_count; i++)
        fprintf(f, "v %.17g %.17g %.17g\n", b->vertices[i].x, b->vertices[i].y, b->vertices[i].z);
    for (uint32_t i = 0; i < b->triangle_count; i++)
        fprintf(f, "f %u %u %u\n", b->triangles[i][0] + 1, b->triangles[i][1] + 1, b->triangles[i][2] + 1);
    fclose(f);
    const char *exts[] = {"obj", "off", "stl", "ply"};
    for (int e = 1; e < 4; e++) {
        char p2[256];
        snprintf(p2, sizeof p2, "%s/box.%s", dir, exts[e]);
        f = fopen(p2, "w");
        if (e == 1) {
            fprintf(f, "OFF\n%u %u 0\n", b->vertex_count, b->triangle_count);
            for (uint32_t i = 0; i < b->vertex_count; i++)
                fprintf(f, "%.17g %.17g %.17g\n", b->vertices[i].x, b->vertices[i].y, b->vertices[i].z);
            for (uint32_t i = 0; i < b->triangle_count; i++)
                fprintf(f, "3 %u %u %u\n", b->triangles[i][0], b->triangles[i][1], b->triangles[i][2]);
        } else if (e == 2) {
            fprintf(f, "solid box\n");
            for (uint32_t i = 0; i < b->triangle_count; i++) {
                fprintf(f, "facet normal 0 0 0\nouter loop\n");
                for (int k = 0; k < 3; k++) {
                    prox_vec3 v = b->vertices[b->triangles[i][k]];
                    fprintf(f, "vertex %.17g %.17g %.17g\n", v.x, v.y, v.z);
                }
                fprintf(f, "endloop\nendfacet\n");
            }
            fprintf(f, "endsolid box\n");
        } else {
            fprintf(f, "ply\nformat ascii 1.0\nelement vertex %u\nproperty float x\nproperty float y\nproperty float z\n"
                       "element face %u\nproperty list uchar int vertex_indices\nend_header\n",
                    b->vertex_count, b->triangle_count);
            for (uint32_t i = 0; i < b->vertex_count; i++)
                fprintf(f, "%g %g %g\n", b->vertices[i].x, b->vertices[i].y, b->vertices[i].z);
            for (uint32_t i = 0; i < b->triangle_count; i++)
                fprintf(f, "3 %u %u %u\n", b->triangles[i][0], b->triangles[i][1], b->triangles[i][2]);
        }
        fclose(f);
    }
    for (int e = 0; e < 4; e++) {
        snprintf(path, sizeof path, "%s/box.%s", dir, exts[e]);
        prox_mesh *m = NULL;
        int rc = prox_mesh_load(path, &m, err, sizeof err);
        CHECK(rc == 0, "load %s: %s", exts[e], err);
        if (rc == 0) {
            CHECK_NEAR(m->volume, 48.0, 1e-6, exts[e]);
            CHECK(m->closed && m->oriented && m->triangle_count == 12, "%s closed", exts[e]);
            prox_mesh_free(m);
        }
    }
    /* errors */
    struct {
        const char *name, *text, *want;
    } bad[] = {
        {"missing.obj", NULL, "No such file"},
        {"empty.obj", "", "empty"},
        {"garbage.stl", "\x01\x02garbage\xff\xfe not a mesh at all", "garbage.stl"},
        {"points.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\n", "points.obj"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, bad[i].name);
        if (bad[i].text)
            write_file(path, bad[i].text);
        prox_mesh *m = NULL;
        err[0] = 0;
        int rc = prox_mesh_load(path, &m, err, sizeof err);
        CHECK(rc == -1 && m == NULL, "%s refused", bad[i].name);
        CHECK(strstr(err, bad[i].name) && strstr(err, bad[i].want), "message for %s: %s", bad[i].name, err);
    }
    prox_mesh *m = NULL;
    CHECK(prox_mesh_load(dir, &m, err, sizeof err) == -1 && strstr(err, "directory"), "directory: %s", err);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleanup");
    prox_mesh_free(b);
}

int main(int argc, char **argv)
{
    (void)argc;
    RUN_TEST(test_box);
    RUN_TEST(test_sphere_torus);
    RUN_TEST(test_defects);
    RUN_TEST(test_contains);
    RUN_TEST(test_load_formats);
    return check_summary(argv[0]);
}
