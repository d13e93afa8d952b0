/* test_ist.c - inner sphere trees: packing invariants, hierarchy, files,
 * and queries against closed forms and brute force. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "../core/ist_internal.h"
#include "../core/sphere.h"
#include "prox.h"
#include "prox_bvh.h"
#include "prox_ist.h"
#include "check_ist.h"
#include "check_prox.h"

static prox_bank *bank;
static prox_engine *engine;

static prox_ist *build_grid(prox_mesh *m, uint32_t spheres, uint32_t voxels) { return check_ist_build(m, spheres, voxels, 0, 0); }
static prox_ist *build(prox_mesh *m, uint32_t spheres) { return check_ist_build(m, spheres, 0, 0, 0); }

/* every leaf below id, with its bounding-sphere check */
static void check_node(const prox_ist *t, uint32_t id, const float s[4], double *vol, uint32_t *leaves, int *bad)
{
    if (id & IST_LEAF) {
        /* both spheres of the leaf inside the sphere its parent holds for it */
        const ist_sphere *sp = &t->spheres[id & ~IST_LEAF];
        const float *c2 = t->sec[id & ~IST_LEAF];
        double d = sqrt((sp->x - s[0]) * (sp->x - s[0]) + (sp->y - s[1]) * (sp->y - s[1]) + (sp->z - s[2]) * (sp->z - s[2]));
        double d2 = sqrt((c2[0] - s[0]) * (c2[0] - s[0]) + (c2[1] - s[1]) * (c2[1] - s[1]) + (c2[2] - s[2]) * (c2[2] - s[2]));
        if (d + sp->r > s[3] * (1 + 1e-5) + 1e-7 || d2 + sp->r2 > s[3] * (1 + 1e-5) + 1e-7 || c2[3] != sp->r2)
            (*bad)++;
        *vol += 4.0 / 3.0 * M_PI * (double)sp->r2 * sp->r2 * sp->r2;
        (*leaves)++;
        return;
    }
    const ist_node *n = &t->nodes[id];
    for (int j = 0; j < 4; j++) {
        if (n->child[j] == IST_EMPTY)
            continue;
        float cs[4] = {n->cx[j], n->cy[j], n->cz[j], n->cr[j]};
        double v = 0;
        uint32_t l = 0;
        check_node(t, n->child[j], cs, &v, &l, bad);
        if (fabs(v - n->cvol[j]) > 1e-4 * v + 1e-12 || l != n->cleaves[j])
            (*bad)++;
        /* the derived volume ball: radius of a ball of the leaf volume */
        if (!(n->child[j] & IST_LEAF) && fabs(4.0 / 3.0 * M_PI * pow(t->ncen[n->child[j]][3], 3) - v) > 1e-4 * v + 1e-12)
            (*bad)++;
        *vol += v;
        *leaves += l;
    }
}

/* volume and first moment of the leaves below id (secondary spheres) */
static void leaf_moment(const prox_ist *t, uint32_t id, double m[4])
{
    if (id & IST_LEAF) {
        const float *c = t->sec[id & ~IST_LEAF];
        double v = (double)c[3] * c[3] * c[3];
        m[0] += v, m[1] += v * c[0], m[2] += v * c[1], m[3] += v * c[2];
        return;
    }
    for (int j = 0; j < 4; j++)
        if (t->nodes[id].child[j] != IST_EMPTY)
            leaf_moment(t, t->nodes[id].child[j], m);
}

/* The packing's invariants on tree t of mesh m: no two spheres overlap,
 * every sphere inside the mesh, the secondary volumes add up to the mesh
 * volume, the voxels' to within voxel_tol of it, the inner spheres fill
 * more than min_inner of it, every node encloses its leaves and sits at
 * their volume centroid, and the surface-gap bound holds at sampled
 * surface points. */
static void check_packing(const prox_mesh *m, const prox_ist *t, const char *name, double voxel_tol, double min_inner)
{
    prox_ist_stats st;
    prox_ist_get_stats(t, &st);
    int overlaps = 0, outside = 0;
    for (uint32_t i = 0; i < t->sphere_count; i++) {
        const ist_sphere *a = &t->spheres[i];
        prox_vec3 c = prox_v3(a->x, a->y, a->z);
        if (!prox_mesh_contains_point(m, c) || check_mesh_surface_dist(m, c) < a->r - 1e-6)
            outside++;
        for (uint32_t j = i + 1; j < t->sphere_count; j++) {
            const ist_sphere *b = &t->spheres[j];
            double d = sqrt((a->x - b->x) * (a->x - b->x) + (a->y - b->y) * (a->y - b->y) + (a->z - b->z) * (a->z - b->z));
            if (d < a->r + b->r - 1e-6)
                overlaps++;
        }
    }
    CHECK(overlaps == 0, "%s: %d overlapping sphere pairs", name, overlaps);
    CHECK(outside == 0, "%s: %d spheres leave the mesh", name, outside);
    CHECK(fabs(st.secondary_volume - st.mesh_volume) <= 1e-5 * st.mesh_volume, "%s: secondary %g vs mesh %g", name,
          st.secondary_volume, st.mesh_volume);
    /* each voxel weighs the part of it inside the mesh: the box's faces
     * parallel to the grid are not whole voxel layers in or out */
    CHECK(fabs(st.voxel_volume - st.mesh_volume) < voxel_tol * st.mesh_volume, "%s: voxel volume %g vs mesh %g", name,
          st.voxel_volume, st.mesh_volume);
    printf("    %s: voxel volume / mesh volume %.5f\n", name, st.voxel_volume / st.mesh_volume);
    CHECK(st.inner_volume < st.mesh_volume && st.inner_volume > min_inner * st.mesh_volume, "%s: inner volume %g of %g", name,
          st.inner_volume, st.mesh_volume);
    double v = 0;
    uint32_t l = 0;
    int bad = 0;
    check_node(t, t->tree.root, t->root, &v, &l, &bad);
    CHECK(bad == 0 && l == t->sphere_count, "%s: hierarchy: %d violations, %u of %u leaves", name, bad, l, t->sphere_count);
    /* the derived volume balls sit at the centroids of their leaves' volume */
    int off = 0;
    for (uint32_t i = 0; i < t->node_count; i++) {
        double m[4] = {0, 0, 0, 0};
        leaf_moment(t, i, m);
        for (int k = 0; k < 3; k++)
            off += fabs(t->ncen[i][k] - m[k + 1] / m[0]) > 1e-5 * (1 + fabs(t->root[k]) + t->root[3]);
    }
    CHECK(off == 0, "%s: %d node volume centroids off", name, off);
    CHECK(fabs(v - t->root_vol) <= 1e-6 * v, "%s: root volume", name);
    /* the surface-gap bound holds at sampled surface points */
    int gap_bad = 0;
    for (uint32_t tri = 0; tri < m->triangle_count; tri += 7) {
        prox_vec3 p = prox_v3_scale(prox_v3_add(prox_v3_add(m->vertices[m->triangles[tri][0]],
                                                            m->vertices[m->triangles[tri][1]]),
                                                m->vertices[m->triangles[tri][2]]),
                                    1.0 / 3.0);
        double dmin = INFINITY;
        for (uint32_t i = 0; i < t->sphere_count; i++) {
            const ist_sphere *a = &t->spheres[i];
            double d = sqrt((a->x - p.x) * (a->x - p.x) + (a->y - p.y) * (a->y - p.y) + (a->z - p.z) * (a->z - p.z)) - a->r;
            dmin = fmin(dmin, d);
        }
        gap_bad += dmin > t->surface_gap;
    }
    CHECK(gap_bad == 0, "%s: surface gap bound %g violated %d times", name, t->surface_gap, gap_bad);
}

static void test_packing_invariants(void)
{
    prox_mesh *shapes[3] = {prox_mesh_make_sphere(0.5, 3), prox_mesh_make_box(prox_v3(0.4, 0.25, 0.15)),
                            prox_mesh_make_torus(0.4, 0.12, 48, 24)};
    const char *names[3] = {"sphere", "box", "torus"};
    for (int s = 0; s < 3; s++) {
        prox_ist *t = build(shapes[s], 400);
        if (!t)
            continue;
        /* a ball is filled by one central sphere; box and torus need many */
        CHECK(t->sphere_count >= (s == 0 ? 1u : 50u), "%s: %u spheres", names[s], t->sphere_count);
        printf("    %s: %u spheres, %u of them from the thin-part pass\n", names[s], t->sphere_count, t->thin_spheres);
        /* each voxel weighs the part of it inside the mesh: the box's faces
         * parallel to the grid are not whole voxel layers in or out */
        check_packing(shapes[s], t, names[s], 0.005, 0.3);
        prox_ist_free(t);
    }
    for (int s = 0; s < 3; s++)
        prox_mesh_free(shapes[s]);
}

static void test_refuses_open_mesh(void)
{
    prox_mesh *b = prox_mesh_make_box(prox_v3(1, 1, 1));
    prox_mesh *open = prox_mesh_from_arrays(b->vertices, b->vertex_count, (const uint32_t(*)[3])b->triangles, 11);
    prox_ist *t = NULL;
    char err[256] = "";
    CHECK(prox_ist_build(open, NULL, &t, err, sizeof err) == -1 && t == NULL, "open mesh refused");
    CHECK(strstr(err, "not closed") && strstr(err, "3 boundary"), "message: %s", err);
    prox_mesh_free(open);
    prox_mesh_free(b);
}

static prox_result run(const prox_tree *a, const prox_tree *b, prox_xform xb, prox_query q, prox_cache *cache);
static double brute_penvol_at(const prox_ist *A, const prox_ist *B, const prox_xform *xb, int concentric);

/* Write the first `keep` bytes of .ist file src as a file of an older
 * version (header patched, checksum redone) to a new temporary path in
 * tmpl (mkstemp's template). 0, or -1. */
static int write_as_version(const char *src, uint32_t version, size_t keep, char *tmpl)
{
    size_t full;
    unsigned char *b = check_read_file(src, &full);
    if (!b || keep + 4 > full) {
        free(b);
        return -1;
    }
    memcpy(b + IST_FILE_U32_AT(0), &version, 4);
    check_ist_set_crc(b, keep + 4);
    int fd = mkstemp(tmpl), ok = fd >= 0 && write(fd, b, keep + 4) == (ssize_t)(keep + 4);
    if (fd >= 0)
        close(fd);
    free(b);
    return ok ? 0 : -1;
}

/* The .ist image c of `full` bytes, its checksum redone, written to a
 * temporary file and loaded: the load must refuse it with `want` in its
 * message (and the file's path); `what` names the case. */
static void expect_image_refused(unsigned char *c, size_t full, const char *want, const char *what)
{
    char p[] = "/tmp/hapticd-istbad-XXXXXX";
    int fd = mkstemp(p);
    if (fd >= 0)
        close(fd);
    CHECK(fd >= 0 && check_ist_write(p, c, full), "write %s", what);
    prox_ist *w = NULL;
    char err[512] = "";
    CHECK(prox_ist_load(p, &w, err, sizeof err) == -1 && w == NULL && strstr(err, want) && strstr(err, p), "%s refused: '%s'", what, err);
    prox_ist_free(w);
    unlink(p);
}

/* The first `full` bytes of file image b (checksum last) as a file of
 * `version` with the float at `at` set to v: loading refuses it as
 * inconsistent. */
static void expect_inconsistent(const unsigned char *b, size_t full, uint32_t version, size_t at, float v, const char *what)
{
    unsigned char *c = malloc(full);
    CHECK(c != NULL, "memory");
    if (!c)
        return;
    memcpy(c, b, full);
    memcpy(c + IST_FILE_U32_AT(0), &version, 4);
    memcpy(c + at, &v, 4);
    expect_image_refused(c, full, "inconsistent", what);
    free(c);
}

/* The radius about c enclosing both spheres of every leaf below id as
 * versions 1 and 2 modelled them: about the inner sphere's centre */
static double concentric_reach(const prox_ist *t, uint32_t id, const float c[3])
{
    if (id & IST_LEAF) {
        const ist_sphere *s = &t->spheres[id & ~IST_LEAF];
        double dx = (double)s->x - c[0], dy = (double)s->y - c[1], dz = (double)s->z - c[2];
        return sqrt(dx * dx + dy * dy + dz * dz) + fmax(s->r, s->r2);
    }
    double R = 0;
    for (int j = 0; j < 4; j++)
        if (t->nodes[id].child[j] != IST_EMPTY)
            R = fmax(R, concentric_reach(t, t->nodes[id].child[j], c));
    return R;
}

/* Tree t saved at src, as the builds of versions 1 and 2 wrote it, to dst
 * (checksum redone): every record's sphere and the root sphere grown to
 * enclose the secondary spheres about the inner spheres' centres too.
 * Cut short to an older version as it is, a newer file keeps records that
 * enclose the secondary spheres at their own centres only, and loading
 * refuses it (a record's sphere not enclosing a leaf below it). 0, or -1. */
static int write_concentric(const prox_ist *t, const char *src, const char *dst)
{
    size_t full;
    unsigned char *b = check_read_file(src, &full);
    if (!b || full < 12)
        return -1;
    const size_t nodes_at = IST_FILE_NODES_AT, root_r_at = IST_FILE_ROOT_R_AT;
    for (uint32_t i = 0; i < t->node_count; i++)
        for (int j = 0; j < 4; j++) {
            const ist_node *nd = &t->nodes[i];
            const float c[3] = {nd->cx[j], nd->cy[j], nd->cz[j]};
            float r = nd->child[j] == IST_EMPTY ? 0.0f : (float)(concentric_reach(t, nd->child[j], c) * (1 + 1e-6));
            if (r > nd->cr[j])
                memcpy(b + nodes_at + sizeof(ist_node) * i + offsetof(ist_node, cr) + sizeof(float) * j, &r, sizeof r);
        }
    float rr = (float)(concentric_reach(t, t->tree.root, t->root) * (1 + 1e-6));
    if (rr > t->root[3])
        memcpy(b + root_r_at, &rr, sizeof rr);
    int ok = check_ist_write(dst, b, full);
    free(b);
    return ok ? 0 : -1;
}

static void test_files(void)
{
    prox_mesh *m = prox_mesh_make_torus(0.4, 0.12, 32, 16);
    prox_ist *t = build(m, 300);
    const size_t obb_bytes = sizeof(float[15]) * t->tritree.node_count; /* version 5's block */
    const size_t slab_bytes = sizeof(float[5]) * t->sphere_count;       /* version 6's, the last */
    char path[] = "/tmp/hapticd-ist-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    char err[512];
    CHECK(prox_ist_save(t, path, err, sizeof err) == 0, "save: %s", err);
    prox_ist *u = NULL;
    CHECK(prox_ist_load(path, &u, err, sizeof err) == 0, "load: %s", err);
    if (u) {
        CHECK(u->sphere_count == t->sphere_count && u->node_count == t->node_count, "counts");
        CHECK(!memcmp(u->spheres, t->spheres, sizeof(ist_sphere) * t->sphere_count), "spheres equal");
        CHECK(!memcmp(u->nodes, t->nodes, sizeof(ist_node) * t->node_count), "nodes equal");
        CHECK(!memcmp(u->sec, t->sec, sizeof(float[4]) * t->sphere_count), "secondary spheres equal");
        CHECK(!memcmp(u->orad_leaf, t->orad_leaf, sizeof(float) * t->sphere_count), "outer radii equal");
        CHECK(!memcmp(u->tritree.obb, t->tritree.obb, obb_bytes), "oriented boxes equal");
        CHECK(!memcmp(u->slab, t->slab, slab_bytes), "slabs equal");
        CHECK(!memcmp(u->sflat, t->sflat, t->sphere_count), "flat marks equal");
        prox_ist_free(u);
    }
    /* a version 5 file (no slabs) computes them at load, the same; a slab
     * whose offsets are not a number or out of order, or whose normal is
     * not unit, is refused */
    {
        size_t full;
        unsigned char *b = check_read_file(path, &full);
        CHECK(b != NULL && full > slab_bytes + 12, "read back");
        char p5[] = "/tmp/hapticd-ist5-XXXXXX";
        CHECK(write_as_version(path, 5, full - 4 - slab_bytes, p5) == 0, "write v5");
        prox_ist *w = NULL;
        CHECK(prox_ist_load(p5, &w, err, sizeof err) == 0 && w, "version 5 loads: %s", err);
        if (w)
            CHECK(!memcmp(w->slab, t->slab, slab_bytes), "version 5: slabs computed alike");
        prox_ist_free(w);
        unlink(p5);
        const size_t last = full - 4 - sizeof(float[5]); /* the last sphere's slab */
        expect_inconsistent(b, full, 6, last + 3 * sizeof(float), NAN, "NaN slab offset");
        expect_inconsistent(b, full, 6, last + 3 * sizeof(float), 1e30f, "slab offsets out of order");
        expect_inconsistent(b, full, 6, last, 2.0f, "slab normal not unit");
        free(b);
    }
    /* a version 4 file (no oriented boxes) derives them at load, the same;
     * an oriented box turned inside out, or not a number, is refused */
    {
        size_t full;
        unsigned char *b = check_read_file(path, &full);
        CHECK(b != NULL && full > slab_bytes + obb_bytes + 12, "read back");
        full -= slab_bytes; /* as a version 5 file: the oriented boxes end it */
        char p4[] = "/tmp/hapticd-ist4-XXXXXX";
        CHECK(write_as_version(path, 4, full - 4 - obb_bytes, p4) == 0, "write v4");
        prox_ist *w = NULL;
        CHECK(prox_ist_load(p4, &w, err, sizeof err) == 0 && w, "version 4 loads: %s", err);
        if (w)
            CHECK(!memcmp(w->tritree.obb, t->tritree.obb, obb_bytes), "version 4: oriented boxes derived alike");
        prox_ist_free(w);
        unlink(p4);
        /* the last box's first lower extent: not a number, or above its upper one */
        const size_t at = full - 4 - sizeof(float[15]) + 9 * sizeof(float);
        expect_inconsistent(b, full, 5, at, NAN, "NaN oriented box extent");
        expect_inconsistent(b, full, 5, at, 1e30f, "oriented box inside out");
        free(b);
    }
    /* a version 3 file (no outer radii) derives them at load, the same */
    {
        size_t full;
        unsigned char *b = check_read_file(path, &full);
        CHECK(b != NULL && full > 4 * t->sphere_count + obb_bytes + 12, "read back");
        full -= slab_bytes + obb_bytes; /* as a version 4 file: the outer radii end it */
        char p3[] = "/tmp/hapticd-ist3-XXXXXX";
        CHECK(write_as_version(path, 3, full - 4 - sizeof(float) * t->sphere_count, p3) == 0, "write v3");
        prox_ist *w = NULL;
        CHECK(prox_ist_load(p3, &w, err, sizeof err) == 0 && w, "version 3 loads: %s", err);
        if (w)
            CHECK(!memcmp(w->orad_leaf, t->orad_leaf, sizeof(float) * t->sphere_count), "version 3: outer radii derived alike");
        prox_ist_free(w);
        unlink(p3);
        /* an outer radius below its inner sphere's radius is refused */
        expect_inconsistent(b, full, 4, full - 4 - sizeof(float) * t->sphere_count, t->spheres[0].r * 0.5f, "small outer radius");
        free(b);
    }
    /* versions 1 and 2, from the tree with its records grown as their
     * builds made them (write_concentric); cut short as it is, it is refused */
    char pc[] = "/tmp/hapticd-istc-XXXXXX";
    fd = mkstemp(pc);
    if (fd >= 0)
        close(fd);
    CHECK(fd >= 0 && write_concentric(t, path, pc) == 0, "write the records grown");
    prox_ist *wc = NULL;
    CHECK(prox_ist_load(pc, &wc, err, sizeof err) == 0 && wc, "records grown load: %s", err);
    {
        size_t v1 = IST_FILE_NODES_AT + sizeof(ist_node) * t->node_count + sizeof(ist_sphere) * t->sphere_count +
                    sizeof(prox_vec3) * t->vert_count + sizeof(uint32_t[3]) * t->tri_count;
        char p1[] = "/tmp/hapticd-ist1-XXXXXX";
        CHECK(write_as_version(path, 1, v1, p1) == 0, "write v1");
        prox_ist *w = NULL;
        CHECK(prox_ist_load(p1, &w, err, sizeof err) == -1 && !w && strstr(err, "not enclosing"), "version 1 cut short refused: %s", err);
        prox_ist_free(w);
        unlink(p1);
    }
    /* a version 2 file (no secondary centres) loads with the model it was
     * built with: secondary spheres about the inner spheres' centres */
    {
        size_t full;
        unsigned char *b = check_read_file(path, &full);
        CHECK(b != NULL && full > 16 * t->sphere_count + obb_bytes + 12, "read back");
        free(b);
        char p2[] = "/tmp/hapticd-ist2-XXXXXX";
        CHECK(write_as_version(pc, 2, full - 4 - slab_bytes - obb_bytes - (sizeof(float[3]) + sizeof(float)) * t->sphere_count, p2) == 0,
              "write v2");
        prox_ist *w = NULL;
        CHECK(prox_ist_load(p2, &w, err, sizeof err) == 0 && w, "version 2 loads: %s", err);
        if (w) {
            int off = 0;
            for (uint32_t i = 0; i < w->sphere_count; i++)
                off += w->sec[i][0] != w->spheres[i].x || w->sec[i][1] != w->spheres[i].y || w->sec[i][2] != w->spheres[i].z ||
                       w->sec[i][3] != w->spheres[i].r2;
            CHECK(off == 0, "version 2: %d secondary spheres not about their inner spheres", off);
            prox_xform xb = prox_xform_from_pose(prox_v3(0.3, 0.1, 0.05), prox_quat_axis_angle(prox_v3(0, 1, 1), 0.7));
            prox_result r = run(prox_ist_tree(w), prox_ist_tree(w), xb, prox_query_default(PROX_QUERY_PENVOL), NULL);
            double want = brute_penvol_at(t, t, &xb, 1);
            CHECK(want > 0 && fabs(r.value - want) <= 1e-5 * want, "version 2 penetration volume %g vs concentric brute force %g", r.value,
                  want);
            prox_ist_free(w);
        }
        unlink(p2);
    }
    /* a version 1 file (no derived block) still loads and answers the same */
    {
        size_t v1 = IST_FILE_NODES_AT + sizeof(ist_node) * t->node_count + sizeof(ist_sphere) * t->sphere_count +
                    sizeof(prox_vec3) * t->vert_count + sizeof(uint32_t[3]) * t->tri_count;
        char p1[] = "/tmp/hapticd-ist1-XXXXXX";
        CHECK(write_as_version(pc, 1, v1, p1) == 0, "write v1");
        prox_ist *w = NULL;
        CHECK(prox_ist_load(p1, &w, err, sizeof err) == 0 && w, "version 1 loads: %s", err);
        if (w && wc) {
            CHECK(w->adj && w->tritree.nodes && !memcmp(w->adj, t->adj, sizeof(uint32_t[3]) * t->tri_count),
                  "version 1: adjacency derived");
            for (int i = 0; i < 8; i++) {
                prox_xform xb = prox_xform_from_pose(prox_v3(0.6 + 0.05 * i, 0.1 * i, 0.05), prox_quat_axis_angle(prox_v3(0, 1, 1), 0.3 * i));
                prox_result r1 = run(prox_ist_tree(w), prox_ist_tree(w), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
                prox_result r2 = run(prox_ist_tree(wc), prox_ist_tree(wc), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
                CHECK(r1.value == r2.value, "version 1 file answers %.17g, the same tree of version 6 %.17g", r1.value, r2.value);
            }
        }
        prox_ist_free(w);
        unlink(p1);
    }
    prox_ist_free(wc);
    unlink(pc);
    /* a header no loader should trust, the checksum redone so the header's
     * own checks answer: the magic, the byte order tag, versions 0 and one
     * past the last, counts out of range; each refused with its message */
    {
        size_t full;
        unsigned char *img = check_read_file(path, &full);
        CHECK(img != NULL && full > IST_FILE_NODES_AT + 4, "read back");
        struct {
            int u32; /* the header word patched (-1: the magic's first byte) */
            uint32_t v;
            const char *want;
        } bad[] = {
            {-1, 'X', "not an .ist file (bad magic)"},
            {1, 0x04030201u, ".ist file from a machine of other byte order"},
            {0, 0, ".ist version 0, this prox reads versions 1 to"},
            {0, 0, NULL}, /* one past the saved file's version: filled in below */
            {3, 0, "corrupt .ist header (counts out of range)"},              /* no spheres */
            {2, (1u << 28) + 1, "corrupt .ist header (counts out of range)"}, /* nodes, one past the limit */
            {5, 0xffffffffu, "corrupt .ist header (counts out of range)"}, /* triangles */
        };
        uint32_t saved = 0;
        char next[96];
        if (img)
            memcpy(&saved, img + IST_FILE_U32_AT(0), 4);
        snprintf(next, sizeof next, ".ist version %u, this prox reads versions 1 to %u;", saved + 1, saved);
        bad[3].v = saved + 1, bad[3].want = next;
        for (size_t k = 0; img && k < sizeof bad / sizeof bad[0]; k++) {
            unsigned char *c = malloc(full);
            if (!c)
                break;
            memcpy(c, img, full);
            if (bad[k].u32 < 0)
                c[0] = (unsigned char)bad[k].v;
            else
                memcpy(c + IST_FILE_U32_AT(bad[k].u32), &bad[k].v, 4);
            char what[32];
            snprintf(what, sizeof what, "header case %zu", k);
            expect_image_refused(c, full, bad[k].want, what);
            free(c);
        }
        free(img);
    }
    /* truncated, corrupted, not an ist */
    FILE *f = fopen(path, "r+b");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 200, SEEK_SET);
    fputc(0x5a, f);
    fclose(f);
    u = NULL;
    CHECK(prox_ist_load(path, &u, err, sizeof err) == -1 && u == NULL && strstr(err, "checksum"), "corrupt: %s", err);
    CHECK(truncate(path, size / 2) == 0, "truncate");
    CHECK(prox_ist_load(path, &u, err, sizeof err) == -1 && strstr(err, "truncated"), "truncated: %s", err);
    f = fopen(path, "wb");
    fputs("hello, not a tree", f);
    fclose(f);
    CHECK(prox_ist_load(path, &u, err, sizeof err) == -1 && strstr(err, path), "garbage: %s", err);
    CHECK(prox_ist_load("/nonexistent/x.ist", &u, err, sizeof err) == -1 && strstr(err, "x.ist"), "missing: %s", err);
    unlink(path);
    prox_ist_free(t);
    prox_mesh_free(m);
}

static void test_lens_volume(void)
{
    /* closed forms: disjoint, contained, equal spheres half overlapping */
    CHECK_NEAR(prox_lens_volume(1, 1, 2.5), 0.0, 0, "disjoint");
    CHECK_NEAR(prox_lens_volume(1, 0.3, 0.5), 4.0 / 3.0 * M_PI * 0.027, 1e-15, "contained");
    /* two unit spheres at d=1: 5 pi / 12 */
    CHECK_NEAR(prox_lens_volume(1, 1, 1), 5.0 * M_PI / 12.0, 1e-12, "equal spheres d=1");
    /* Monte Carlo for unequal radii */
    unsigned long long s = 17;
    double r1 = 0.7, r2 = 0.4, d = 0.8;
    long in = 0, n = 400000;
    for (long i = 0; i < n; i++) {
        double x = check_rng_uniform(&s, -r2, r2), y = check_rng_uniform(&s, -r2, r2), z = check_rng_uniform(&s, -r2, r2);
        if (x * x + y * y + z * z > r2 * r2)
            continue;
        double X = x + d;
        if (X * X + y * y + z * z <= r1 * r1)
            in++;
    }
    double mc = (double)in / n * 8 * r2 * r2 * r2;
    CHECK(fabs(mc - prox_lens_volume(r1, r2, d)) < 0.01 * 8 * r2 * r2 * r2, "Monte Carlo %g vs %g", mc, prox_lens_volume(r1, r2, d));
}

static prox_result run(const prox_tree *a, const prox_tree *b, prox_xform xb, prox_query q, prox_cache *cache)
{
    prox_object_pair p = {a, b, prox_xform_identity(), xb, cache};
    prox_result r;
    CHECK(prox_query_run(engine, &q, &p, 1, &r) == 0, "query");
    return r;
}

/* brute force over all leaf pairs: the lenses of the secondary spheres, at
 * their own centres (concentric: at the inner spheres' centres instead) */
static double brute_penvol_at(const prox_ist *A, const prox_ist *B, const prox_xform *xb, int concentric)
{
    double v = 0;
    for (uint32_t i = 0; i < A->sphere_count; i++)
        for (uint32_t j = 0; j < B->sphere_count; j++) {
            const ist_sphere *a = &A->spheres[i], *b = &B->spheres[j];
            const float *ca = A->sec[i], *cb = B->sec[j];
            prox_vec3 pa = concentric ? prox_v3(a->x, a->y, a->z) : prox_v3(ca[0], ca[1], ca[2]);
            prox_vec3 pb = prox_xform_point(xb, concentric ? prox_v3(b->x, b->y, b->z) : prox_v3(cb[0], cb[1], cb[2]));
            v += prox_lens_volume(a->r2, b->r2, prox_v3_dist(pa, pb));
        }
    return v;
}
static double brute_penvol(const prox_ist *A, const prox_ist *B, const prox_xform *xb) { return brute_penvol_at(A, B, xb, 0); }

/* how far the secondary spheres sit from the inner spheres' centres: the
 * largest offset relative to the secondary radius */
static double max_sec_offset(const prox_ist *t)
{
    double w = 0;
    for (uint32_t i = 0; i < t->sphere_count; i++) {
        const ist_sphere *a = &t->spheres[i];
        const float *c = t->sec[i];
        w = fmax(w, prox_v3_dist(prox_v3(a->x, a->y, a->z), prox_v3(c[0], c[1], c[2])) / c[3]);
    }
    return w;
}

/* Collide, contacts and tolerance between two inner sphere trees: the
 * inner spheres themselves (a conservative model: what they say overlaps
 * or comes within a distance, the meshes do too), against brute force over
 * every sphere pair. Poses within 1e-6 of a tie (a pair just touching, the
 * closest pair at the tolerance) are not judged: the traversal ranks in
 * floats. */
static prox_mesh *make_bumpy(int sub, double R, double amp, double f, double phase);
static void test_sphere_queries(void)
{
    prox_mesh *ma = make_bumpy(2, 0.4, 0.15, 5, 0.3), *mb = prox_mesh_make_torus(0.3, 0.1, 32, 16);
    prox_ist *A = build(ma, 300), *B = build(mb, 200);
    enum { CAP = 4096 };
    prox_contact *ct = malloc(sizeof *ct * CAP);
    if (!A || !B || !ct) {
        CHECK(0, "build");
        free(ct), prox_ist_free(A), prox_ist_free(B), prox_mesh_free(ma), prox_mesh_free(mb);
        return;
    }
    unsigned long long s = 41;
    int overlapping = 0, within = 0, judged = 0, partial = 0;
    for (int i = 0; i < 80; i++) {
        prox_quat q = check_rng_rotation(&s);
        prox_vec3 t = check_rng_v3(&s, -0.9, 0.9);
        prox_xform xb = prox_xform_from_pose(t, q);
        const double tol = check_rng_uniform(&s, 0, 0.2);
        /* brute force: the closest sphere pair's gap, the overlapping pairs */
        double gap = INFINITY, tie = INFINITY;
        uint32_t count = 0;
        for (uint32_t ia = 0; ia < A->sphere_count; ia++)
            for (uint32_t ib = 0; ib < B->sphere_count; ib++) {
                const ist_sphere *a = &A->spheres[ia], *b = &B->spheres[ib];
                const double d = prox_v3_dist(prox_v3(a->x, a->y, a->z), prox_xform_point(&xb, prox_v3(b->x, b->y, b->z)));
                const double g = d - a->r - b->r;
                gap = fmin(gap, g);
                tie = fmin(tie, fabs(g));
                count += g <= 0;
            }
        if (tie < 1e-6 || fabs(gap - tol) < 1e-6)
            continue;
        judged++;
        overlapping += count > 0;
        within += gap < tol;
        prox_result r = run(prox_ist_tree(A), prox_ist_tree(B), xb, prox_query_default(PROX_QUERY_COLLIDE), NULL);
        CHECK(r.complete && r.value == (count > 0), "pose %d: collide %g, %u overlapping sphere pairs", i, r.value, count);
        if (count > 0 && r.value == 1) { /* its witness pair overlaps */
            const ist_sphere *a = &A->spheres[r.leaf_a], *b = &B->spheres[r.leaf_b];
            const double d = prox_v3_dist(prox_v3(a->x, a->y, a->z), prox_xform_point(&xb, prox_v3(b->x, b->y, b->z)));
            CHECK(r.leaf_a < A->sphere_count && r.leaf_b < B->sphere_count && d <= a->r + b->r, "pose %d: collide's pair %u %u apart by %g",
                  i, r.leaf_a, r.leaf_b, d - a->r - b->r);
        }
        prox_query cq = prox_query_default(PROX_QUERY_CONTACTS);
        cq.contacts = ct, cq.max_contacts = CAP;
        r = run(prox_ist_tree(A), prox_ist_tree(B), xb, cq, NULL);
        CHECK(r.complete && r.contact_count == count && r.value == count, "pose %d: %u contacts (value %g), brute force %u", i,
              r.contact_count, r.value, count);
        int bad = 0;
        for (uint32_t k = 0; k < r.contact_count && k < CAP; k++) {
            const uint32_t ia = ct[k].leaf_a, ib = ct[k].leaf_b;
            if (ia >= A->sphere_count || ib >= B->sphere_count) {
                bad++;
                continue;
            }
            const ist_sphere *a = &A->spheres[ia], *b = &B->spheres[ib];
            const prox_vec3 ca = prox_v3(a->x, a->y, a->z), cb = prox_xform_point(&xb, prox_v3(b->x, b->y, b->z));
            /* an overlapping pair, reported once (the lower index first
             * within a row: the brute force's count above), its point in
             * both spheres */
            bad += prox_v3_dist(ca, cb) > a->r + b->r || prox_v3_dist(ct[k].point, ca) > a->r * (1 + 1e-9) + 1e-12 ||
                   prox_v3_dist(ct[k].point, cb) > b->r * (1 + 1e-9) + 1e-12;
            for (uint32_t m = 0; m < k; m++)
                bad += ct[m].leaf_a == ia && ct[m].leaf_b == ib;
        }
        CHECK(bad == 0, "pose %d: %d contacts not an overlapping pair, repeated, or their point outside", i, bad);
        /* a capacity below the count: full, flagged, the rest dropped */
        if (count > 2) {
            cq.max_contacts = 2;
            r = run(prox_ist_tree(A), prox_ist_tree(B), xb, cq, NULL);
            partial++;
            CHECK(!r.complete && (r.flags & PROX_RESULT_CONTACTS_FULL) && r.contact_count <= 2 && r.upper == INFINITY,
                  "pose %d: capacity 2 of %u: %u kept, flags %x, complete %d", i, count, r.contact_count, r.flags, r.complete);
        }
        prox_query tq = prox_query_default(PROX_QUERY_TOLERANCE);
        tq.tolerance = tol;
        r = run(prox_ist_tree(A), prox_ist_tree(B), xb, tq, NULL);
        CHECK(r.complete && r.value == (gap < tol), "pose %d: tolerance %g: %g, the closest sphere pair %g apart", i, tol, r.value, gap);
    }
    /* the draw covers both answers of every query */
    CHECK(judged >= 70 && overlapping >= 10 && overlapping <= judged - 10 && within > overlapping && within <= judged - 5 && partial >= 5,
          "%d poses judged: %d overlapping, %d within the tolerance, %d with more than 2 contacts", judged, overlapping, within, partial);
    fprintf(stderr, "    sphere queries: %d poses, %d overlapping, %d within the tolerance\n", judged, overlapping, within);
    free(ct);
    prox_ist_free(A), prox_ist_free(B);
    prox_mesh_free(ma), prox_mesh_free(mb);
}

static void test_penvol_vs_brute(void)
{
    prox_mesh *ma = prox_mesh_make_sphere(0.5, 3), *mb = prox_mesh_make_torus(0.3, 0.1, 32, 16);
    prox_ist *A = build(ma, 300), *B = build(mb, 300);
    /* the torus's secondary spheres sit off the inner spheres' centres
     * (the ball's hardly: one central sphere holds most of it), so a query
     * that used those centres would miss the brute force below */
    CHECK(max_sec_offset(B) > 0.2, "torus: secondary centres offset up to %.3f of r2", max_sec_offset(B));
    unsigned long long s = 3;
    int differ = 0;
    for (int i = 0; i < 25; i++) {
        prox_quat q = check_rng_quat(&s);
        double ty = check_rng_uniform(&s, -0.3, 0.3), tx = check_rng_uniform(&s, -0.8, 0.8); /* y first: check_prox.h */
        prox_xform xb = prox_xform_from_pose(prox_v3(tx, ty, 0.1), q);
        double want = brute_penvol(A, B, &xb), concentric = brute_penvol_at(A, B, &xb, 1);
        differ += fabs(concentric - want) > 1e-3 * want;
        prox_result r = run(prox_ist_tree(A), prox_ist_tree(B), xb, prox_query_default(PROX_QUERY_PENVOL), NULL);
        CHECK(fabs(r.value - want) <= 1e-5 * want + 1e-12, "penvol %g vs brute %g", r.value, want);
        CHECK(r.complete && r.lower <= want * (1 + 1e-5) + 1e-12 && r.upper >= want * (1 - 1e-5), "bounds [%g %g]", r.lower, r.upper);
        /* budgeted: brackets the full value */
        prox_query bq = prox_query_default(PROX_QUERY_PENVOL);
        bq.deadline_ns = prox_now_ns();
        bq.check_every = 1;
        prox_result rb = run(prox_ist_tree(A), prox_ist_tree(B), xb, bq, NULL);
        CHECK(rb.lower <= r.value * (1 + 1e-5) + 1e-12 && rb.upper >= r.value * (1 - 1e-5) - 1e-12, "budgeted [%g, %g] brackets %g",
              rb.lower, rb.upper, r.value);
        /* force and torque on B against the sum over all leaf pairs (the
         * containment shortcut included) */
        prox_vec3 F = prox_v3(0, 0, 0), T = prox_v3(0, 0, 0), com = prox_xform_point(&xb, B->com);
        for (uint32_t ia = 0; ia < A->sphere_count; ia++)
            for (uint32_t ib = 0; ib < B->sphere_count; ib++) {
                /* along the line between the secondary spheres' centres */
                const float *a = A->sec[ia], *b = B->sec[ib];
                prox_vec3 ca = prox_v3(a[0], a[1], a[2]), cb = prox_xform_point(&xb, prox_v3(b[0], b[1], b[2]));
                double d = prox_v3_dist(ca, cb), v = prox_lens_volume(a[3], b[3], d);
                if (!(v > 0) || !(d > 0))
                    continue;
                prox_vec3 n = prox_v3_scale(prox_v3_sub(cb, ca), 1.0 / d), f = prox_v3_scale(n, v);
                prox_vec3 at = prox_v3_madd(ca, n, prox_lens_plane(a[3], b[3], d));
                F = prox_v3_add(F, f);
                T = prox_v3_add(T, prox_v3_cross(prox_v3_sub(at, com), f));
            }
        CHECK(prox_v3_len(prox_v3_sub(r.force, F)) <= 1e-6 * want + 1e-12, "force (%g %g %g) vs brute (%g %g %g), volume %g", r.force.x, r.force.y,
              r.force.z, F.x, F.y, F.z, want);
        CHECK(prox_v3_len(prox_v3_sub(r.torque, T)) <= 1e-6 * want + 1e-12, "torque (%g %g %g) vs brute (%g %g %g)", r.torque.x,
              r.torque.y, r.torque.z, T.x, T.y, T.z);
        /* a deadline far away: the time-critical path (large pairs through
         * the queue, small ones depth first) completes with the same value */
        bq.deadline_ns = prox_now_ns() + 10000000000ull;
        prox_result rf = run(prox_ist_tree(A), prox_ist_tree(B), xb, bq, NULL);
        CHECK(rf.complete && fabs(rf.value - want) <= 1e-5 * want + 1e-12, "far deadline %g (complete %d) vs brute %g", rf.value,
              rf.complete, want);
        CHECK(prox_v3_len(prox_v3_sub(rf.force, r.force)) <= 1e-6 * want + 1e-15, "far-deadline force differs");
        /* short budgets (the depth-first part may be cut and handed back
         * to the queue): the bounds still bracket the value */
        for (int us = 2; us <= 64; us *= 4) {
            bq.deadline_ns = prox_now_ns() + (uint64_t)us * 1000u;
            prox_result rp = run(prox_ist_tree(A), prox_ist_tree(B), xb, bq, NULL);
            CHECK(rp.lower <= want * (1 + 1e-5) + 1e-12 && rp.upper >= want * (1 - 1e-5) - 1e-12 && rp.value >= rp.lower &&
                      rp.value <= rp.upper,
                  "%d us: %g in [%g, %g], full %g", us, rp.value, rp.lower, rp.upper, want);
        }
        /* swapped order gives the same volume and the opposite force */
        prox_xform xa_in_b = prox_xform_inverse(&xb);
        prox_result rs = run(prox_ist_tree(B), prox_ist_tree(A), xa_in_b, prox_query_default(PROX_QUERY_PENVOL), NULL);
        CHECK(fabs(rs.value - r.value) <= 1e-5 * r.value + 1e-12, "swapped %g vs %g", rs.value, r.value);
    }
    CHECK(differ >= 20, "the concentric model differs by more than 0.1%% at only %d of 25 poses", differ);
    /* the upper bound holds without a tolerance: a tree against itself at
     * the identity overlaps by exactly its volume, which the float-stored
     * node volumes had put 5.5e-8 (relative) above the root pair's bound */
    {
        prox_result r = run(prox_ist_tree(A), prox_ist_tree(A), prox_xform_identity(), prox_query_default(PROX_QUERY_PENVOL), NULL);
        prox_query bq = prox_query_default(PROX_QUERY_PENVOL);
        bq.deadline_ns = prox_now_ns();
        prox_result rb = run(prox_ist_tree(A), prox_ist_tree(A), prox_xform_identity(), bq, NULL);
        CHECK(r.complete && rb.upper >= r.value && rb.lower <= r.value, "self at identity: [%.12g, %.12g] brackets %.12g", rb.lower,
              rb.upper, r.value);
    }
    prox_ist_free(A);
    prox_ist_free(B);
    prox_mesh_free(ma);
    prox_mesh_free(mb);
}

/* the two meshes of a distance test with their inner sphere trees and BVHs */
static void free_scene(prox_ist *A, prox_ist *B, prox_bvh *ba, prox_bvh *bb, prox_mesh *ma, prox_mesh *mb)
{
    prox_bvh_free(ba);
    prox_bvh_free(bb);
    prox_ist_free(A);
    prox_ist_free(B);
    prox_mesh_free(ma);
    prox_mesh_free(mb);
}

static void test_distance_vs_mesh(void)
{
    prox_mesh *ma = prox_mesh_make_box(prox_v3(0.45, 0.3, 0.25)), *mb = prox_mesh_make_torus(0.3, 0.1, 32, 16);
    prox_ist *A = build(ma, 1500), *B = build(mb, 1500);
    prox_bvh *ba = prox_bvh_build(ma), *bb = prox_bvh_build(mb);
    unsigned long long s = 8;
    double worst_rel = 0, worst_dived = 0;
    for (int i = 0; i < 40; i++) {
        prox_quat q = check_rng_quat(&s);
        prox_vec3 dir = prox_v3_normalize(check_rng_v3(&s, -1, 1));
        prox_xform xb = prox_xform_from_pose(prox_v3_scale(dir, check_rng_uniform(&s, 1.0, 1.3)), q);
        prox_result exact = run(prox_bvh_tree(ba), prox_bvh_tree(bb), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        prox_result r = run(prox_ist_tree(A), prox_ist_tree(B), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        CHECK(r.value >= exact.value - 1e-9, "IST distance %g below the exact %g", r.value, exact.value);
        CHECK(r.lower <= exact.value + 1e-9 && r.upper >= exact.value - 1e-9, "[%g, %g] brackets exact %g", r.lower, r.upper, exact.value);
        if (exact.value > 0.05)
            worst_rel = fmax(worst_rel, (r.value - exact.value) / exact.value);
        /* a range (max_distance) above the answer: the same answer; below
         * the exact distance: nothing found, the lower bound certified, and
         * fewer leaf pairs tested */
        prox_query mq = prox_query_default(PROX_QUERY_DISTANCE);
        mq.max_distance = r.value * 1.01;
        prox_result rm = run(prox_ist_tree(A), prox_ist_tree(B), xb, mq, NULL);
        /* (to rounding: 1 ulp apart at 4 of 400 poses drawn in other
         * orders, exact at these 40; the pruned traversal reaches the
         * answer by another path) */
        CHECK(rm.complete && fabs(rm.value - r.value) <= 1e-12 * r.value, "range above: %.17g vs %.17g", rm.value, r.value);
        mq.max_distance = exact.value * 0.9;
        rm = run(prox_ist_tree(A), prox_ist_tree(B), xb, mq, NULL);
        CHECK(rm.complete && rm.value == INFINITY && rm.upper == INFINITY && rm.lower <= exact.value + 1e-9 &&
                  rm.leaf_tests < r.leaf_tests,
              "range below: value %g [%g, %g] vs exact %g, %llu leaf tests (%llu without)", rm.value, rm.lower, rm.upper, exact.value,
              (unsigned long long)rm.leaf_tests, (unsigned long long)r.leaf_tests);
        /* budgeted results bracket the unbudgeted value too */
        prox_query bq = prox_query_default(PROX_QUERY_DISTANCE);
        bq.deadline_ns = prox_now_ns();
        bq.check_every = 1;
        prox_result rb = run(prox_ist_tree(A), prox_ist_tree(B), xb, bq, NULL);
        CHECK(rb.lower <= exact.value + 1e-9 && rb.upper >= r.value - 1e-9, "budgeted [%g, %g] vs %g", rb.lower, rb.upper, r.value);
        /* a budget the query stays within: it dives first (the inner
         * spheres' distance and that pair's chains, offered before the
         * descent); still never below exact, bracketing it, and close */
        bq.deadline_ns = prox_now_ns() + 10000000000ull;
        prox_result rd = run(prox_ist_tree(A), prox_ist_tree(B), xb, bq, NULL);
        CHECK(rd.complete && rd.value >= exact.value - 1e-9 && rd.lower <= exact.value + 1e-9 && rd.upper >= exact.value - 1e-9,
              "dived [%g, %g] value %g vs exact %g", rd.lower, rd.upper, rd.value, exact.value);
        CHECK(fabs(prox_v3_dist(rd.point_a, rd.point_b) - rd.value) <= 1e-9 + 1e-9 * rd.value,
              "the dived answer's witness points are %g apart", prox_v3_dist(rd.point_a, rd.point_b));
        if (exact.value > 0.05)
            worst_dived = fmax(worst_dived, (rd.value - exact.value) / exact.value);
    }
    CHECK(worst_rel < 0.005, "IST distance within 0.5%% of exact at gaps > 0.05 (worst %.3g)", worst_rel);
    CHECK(worst_dived < 0.005, "budgeted (dived) IST distance within 0.5%% of exact at gaps > 0.05 (worst %.3g)", worst_dived);
    /* a coherent path with the cache (last sphere pair, last triangle pair,
     * including a hint left by another pair): never below exact, close */
    prox_cache cache = {0};
    cache.hint_a = 3, cache.hint_b = 5;
    double path_worst = 0, jump_worst = 0;
    prox_cache stale = {0};
    for (int i = 0; i < 60; i++) {
        double t = 0.03 * i;
        prox_xform xb = prox_xform_from_pose(prox_v3(0.95 * cos(t), 0.95 * sin(t), 0.1 * sin(2 * t)),
                                             prox_quat_axis_angle(prox_v3(1, 0.5, 0), 0.04 * i));
        prox_result exact = run(prox_bvh_tree(ba), prox_bvh_tree(bb), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        q.use_cache = 1;
        prox_result r = run(prox_ist_tree(A), prox_ist_tree(B), xb, q, &cache);
        CHECK(r.value >= exact.value - 1e-9, "coherent IST distance %g below the exact %g", r.value, exact.value);
        CHECK(cache.hint_a < A->tri_count && cache.hint_b < B->tri_count, "triangle hint kept");
        if (exact.value > 0.05)
            path_worst = fmax(path_worst, (r.value - exact.value) / exact.value);
        /* budgeted, seeded from the path's first pose (a jump): the dive
         * after the stale seed; never below exact, brackets it, close */
        if (i == 0)
            stale = cache;
        prox_cache jump = stale;
        q.deadline_ns = prox_now_ns() + 10000000000ull;
        prox_result rj = run(prox_ist_tree(A), prox_ist_tree(B), xb, q, &jump);
        CHECK(rj.complete && rj.value >= exact.value - 1e-9 && rj.lower <= exact.value + 1e-9, "after a jump [%g, %g] value %g vs exact %g",
              rj.lower, rj.upper, rj.value, exact.value);
        if (exact.value > 0.05)
            jump_worst = fmax(jump_worst, (rj.value - exact.value) / exact.value);
    }
    CHECK(path_worst < 0.005, "coherent IST distance within 0.5%% (worst %.3g)", path_worst);
    CHECK(jump_worst < 0.005, "budgeted IST distance after a jump within 0.5%% (worst %.3g)", jump_worst);
    /* a budgeted forest of four far pairs and one near pair, in either
     * order: the roots are visited nearest first, and the far pairs cannot
     * beat the near pair's distance, so they do not dive: the forest tests
     * as many triangles as the near pair alone, and answers the same */
    for (int last = 0; last < 2; last++) {
        const int near_at = last ? 4 : 0;
        prox_object_pair f[5];
        for (int k = 0, far = 1; k < 5; k++) {
            if (k == near_at) {
                f[k] = (prox_object_pair){prox_ist_tree(A), prox_ist_tree(B), prox_xform_identity(),
                                          prox_xform_from_pose(prox_v3(0.9, 0.2, 0.1), prox_quat_axis_angle(prox_v3(0, 1, 0), 0.3)), NULL};
                continue;
            }
            prox_xform xa = prox_xform_from_pose(prox_v3(10.0 * far, 3.0, 0), prox_quat_identity());
            f[k] = (prox_object_pair){prox_ist_tree(A), prox_ist_tree(B), xa, prox_xform_from_pose(prox_v3(10.0 * far - 3, 0, 0), prox_quat_identity()),
                                      NULL};
            far++;
        }
        prox_query bq = prox_query_default(PROX_QUERY_DISTANCE);
        bq.deadline_ns = prox_now_ns() + 10000000000ull;
        prox_result rf, r1;
        CHECK(prox_query_run(engine, &bq, f, 5, &rf) == 0 && prox_query_run(engine, &bq, f + near_at, 1, &r1) == 0, "forest queries");
        CHECK(rf.complete && rf.pair == (uint32_t)near_at && rf.value == r1.value, "the forest's distance %g (pair %u) is the near pair's %g",
              rf.value, rf.pair, r1.value);
        CHECK(rf.leaf_tests == r1.leaf_tests, "near pair %s: far pairs did not dive: %llu triangle tests, the near pair alone %llu",
              last ? "last" : "first", (unsigned long long)rf.leaf_tests, (unsigned long long)r1.leaf_tests);
    }
    fprintf(stderr, "    worst relative distance error at 1500 spheres: %.4f\n", worst_rel);
    free_scene(A, B, ba, bb, ma, mb);
}

/* Meshes with few triangles (exact_pair in ist_distance.c: one at most 64,
 * the two at most 1,024 pairs) are measured on all their triangle pairs:
 * a 3 cm box and an 80-triangle icosphere over a 0.6 m table (12
 * triangles each), 40 poses each 0-2 cm over it, tilted: the exact
 * distance (the BVHs'), certified (lower = upper), complete, in the roots'
 * one expansion, witness points that far apart, a leaf pair reported;
 * with a range below it nothing found, its lower bound certified; with a
 * budget already spent, bracketing it; from the cache alike. One box
 * inside another (surfaces apart) is at distance 0, in both orders. A
 * 320-triangle icosphere over the table (3,840 pairs) takes the sphere
 * trees. */
static void test_distance_small_meshes(void)
{
    prox_mesh *mt = prox_mesh_make_box(prox_v3(0.3, 0.3, 0.02)), *mk[2] = {prox_mesh_make_box(prox_v3(0.015, 0.015, 0.015)),
                                                                          prox_mesh_make_sphere(0.015, 1)};
    prox_ist *T = build(mt, 500), *K[2] = {build(mk[0], 500), build(mk[1], 500)};
    prox_bvh *bt = prox_bvh_build(mt), *bk[2] = {prox_bvh_build(mk[0]), prox_bvh_build(mk[1])};
    CHECK(T && K[0] && K[1] && bt && bk[0] && bk[1], "builds");
    if (!(T && K[0] && K[1] && bt && bk[0] && bk[1]))
        goto out;
    CHECK(T->tri_count == 12 && K[0]->tri_count == 12 && K[1]->tri_count == 80, "%u, %u and %u triangles", T->tri_count, K[0]->tri_count,
          K[1]->tri_count);
    unsigned long long s = 21;
    double worst = 0;
    for (int k = 0; k < 2; k++) {
        prox_cache cache = {0};
        for (int i = 0; i < 40; i++) {
            /* the angle before the axis, z before y before x: the order gcc
             * drew them in as arguments (check_prox.h) */
            double angle = check_rng_uniform(&s, 0, 0.5), ay = check_rng_uniform(&s, -1, 1), ax = check_rng_uniform(&s, -1, 1);
            prox_quat q = prox_quat_axis_angle(prox_v3_normalize(prox_v3(ax, ay, 0.2)), angle);
            double tz = 0.02 + 0.026 + check_rng_uniform(&s, 0, 0.02), ty = check_rng_uniform(&s, -0.25, 0.25),
                   tx = check_rng_uniform(&s, -0.25, 0.25);
            prox_xform xb = prox_xform_from_pose(prox_v3(tx, ty, tz), q);
            prox_result ex = run(prox_bvh_tree(bt), prox_bvh_tree(bk[k]), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
            prox_result r = run(prox_ist_tree(T), prox_ist_tree(K[k]), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
            worst = fmax(worst, fabs(r.value - ex.value));
            CHECK(ex.value > 0 && fabs(r.value - ex.value) <= 1e-12 && r.lower == r.value && r.upper == r.value && r.complete,
                  "%s pose %d: %.17g [%g, %g] vs exact %.17g", k ? "icosphere" : "box", i, r.value, r.lower, r.upper, ex.value);
            CHECK(r.expansions == 1 && fabs(prox_v3_dist(r.point_a, r.point_b) - r.value) <= 1e-12 && r.leaf_a < T->sphere_count &&
                      r.leaf_b < K[k]->sphere_count,
                  "pose %d: %llu expansions, witnesses %g apart, leaves %u %u", i, (unsigned long long)r.expansions,
                  prox_v3_dist(r.point_a, r.point_b), r.leaf_a, r.leaf_b);
            prox_query mq = prox_query_default(PROX_QUERY_DISTANCE);
            mq.max_distance = ex.value * 0.9;
            prox_result rm = run(prox_ist_tree(T), prox_ist_tree(K[k]), xb, mq, NULL);
            CHECK(rm.complete && rm.value == INFINITY && rm.lower >= mq.max_distance * (1 - 1e-9) && rm.lower <= ex.value,
                  "range below: %g [%g, %g]", rm.value, rm.lower, rm.upper);
            prox_query bq = prox_query_default(PROX_QUERY_DISTANCE);
            bq.deadline_ns = prox_now_ns();
            bq.check_every = 1;
            prox_result rb = run(prox_ist_tree(T), prox_ist_tree(K[k]), xb, bq, NULL);
            CHECK(rb.lower <= ex.value + 1e-12 && rb.upper >= ex.value - 1e-12, "budgeted [%g, %g] vs %g", rb.lower, rb.upper, ex.value);
            prox_query cq = prox_query_default(PROX_QUERY_DISTANCE);
            cq.use_cache = 1;
            prox_result rc = run(prox_ist_tree(T), prox_ist_tree(K[k]), xb, cq, &cache);
            CHECK(rc.value == r.value && rc.complete, "from the cache: %g vs %g", rc.value, r.value);
        }
    }
    /* nested: surfaces apart, one solid inside the other */
    prox_mesh *mbig = prox_mesh_make_box(prox_v3(0.1, 0.1, 0.1));
    prox_ist *G = build(mbig, 500);
    CHECK(G != NULL, "build");
    if (G) {
        prox_xform in = prox_xform_from_pose(prox_v3(0.02, -0.03, 0.01), prox_quat_axis_angle(prox_v3(0, 0, 1), 0.3));
        prox_result r1 = run(prox_ist_tree(G), prox_ist_tree(K[0]), in, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        prox_result r2 = run(prox_ist_tree(K[0]), prox_ist_tree(G), prox_xform_inverse(&in), prox_query_default(PROX_QUERY_DISTANCE), NULL);
        CHECK(r1.value == 0 && r2.value == 0 && r1.complete && r2.complete && r1.expansions == 1, "the small box inside the big one: %g, %g",
              r1.value, r2.value);
        /* just outside it: apart */
        prox_xform out = prox_xform_from_pose(prox_v3(0.13, 0, 0), prox_quat_identity());
        prox_result r3 = run(prox_ist_tree(G), prox_ist_tree(K[0]), out, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        CHECK(fabs(r3.value - 0.015) < 1e-12, "beside it: %.17g (0.015)", r3.value);
    }
    prox_ist_free(G);
    prox_mesh_free(mbig);
    /* 320 triangles over the table: the sphere trees */
    prox_mesh *m2 = prox_mesh_make_sphere(0.015, 2);
    prox_ist *S2 = build(m2, 500);
    if (S2) {
        prox_result r = run(prox_ist_tree(T), prox_ist_tree(S2), prox_xform_from_pose(prox_v3(0, 0, 0.04), prox_quat_identity()),
                            prox_query_default(PROX_QUERY_DISTANCE), NULL);
        CHECK(S2->tri_count == 320 && r.expansions > 1 && fabs(r.value - 0.005) < 0.005 * 0.005, "320 triangles: %llu expansions, %g",
              (unsigned long long)r.expansions, r.value);
    }
    prox_ist_free(S2);
    prox_mesh_free(m2);
    fprintf(stderr, "    small meshes: worst difference from the exact distance %.3g\n", worst);
out:
    for (int k = 0; k < 2; k++) {
        prox_bvh_free(bk[k]);
        prox_ist_free(K[k]);
        prox_mesh_free(mk[k]);
    }
    free_scene(T, NULL, bt, NULL, mt, NULL);
}

/* One mesh of n separate axis-aligned boxes, box k from lo[k] to hi[k]
 * (the corners and triangles of prox_mesh_make_box). */
static prox_mesh *make_boxes(uint32_t n, const prox_vec3 *lo, const prox_vec3 *hi)
{
    prox_mesh *box = prox_mesh_make_box(prox_v3(1, 1, 1));
    uint32_t nv = box->vertex_count, nt = box->triangle_count;
    CHECK(nv == 8 && nt == 12, "a box of 8 corners and 12 triangles");
    prox_vec3 *v = malloc(sizeof *v * nv * n);
    uint32_t (*t)[3] = malloc(sizeof *t * nt * n);
    CHECK(v && t, "memory");
    for (uint32_t k = 0; v && t && k < n; k++) {
        for (uint32_t q = 0; q < nv; q++) {
            prox_vec3 p = box->vertices[q];
            v[k * nv + q] = prox_v3(p.x > 0 ? hi[k].x : lo[k].x, p.y > 0 ? hi[k].y : lo[k].y, p.z > 0 ? hi[k].z : lo[k].z);
        }
        for (uint32_t q = 0; q < nt; q++)
            for (int c = 0; c < 3; c++)
                t[k * nt + q][c] = k * nv + box->triangles[q][c];
    }
    prox_mesh *m = v && t ? prox_mesh_from_arrays(v, nv * n, (const uint32_t(*)[3])t, nt * n) : NULL;
    free(v);
    free(t);
    prox_mesh_free(box);
    return m;
}

/* One mesh of n x n separate boxes ("nails", 0.06 wide, 0.12 apart, bottoms
 * at z = 0) with tops at 0.1 plus up to 0.002, and the one at (5, 2) tallest
 * at 0.1031. */
static prox_mesh *make_nails(int n, unsigned long long seed)
{
    prox_vec3 lo[64], hi[64];
    CHECK(n * n <= 64, "at most 64 nails");
    for (int i = 0; i < n && n * n <= 64; i++)
        for (int j = 0; j < n; j++) {
            double h = (i == 5 && j == 2) ? 0.1031 : 0.1 + check_rng_uniform(&seed, 0, 0.002);
            double x = (i - (n - 1) / 2.0) * 0.12, y = (j - (n - 1) / 2.0) * 0.12;
            lo[i * n + j] = prox_v3(x - 0.03, y - 0.03, 0);
            hi[i * n + j] = prox_v3(x + 0.03, y + 0.03, h);
        }
    return make_boxes((uint32_t)(n * n), lo, hi);
}

/* A plate just above a bed of 49 nails of nearly equal height: thousands
 * of leaf pairs come within their outer balls of each other, far more
 * separate places than the query's table of settled places holds. The
 * tallest nail must still be found (when the table was full the remaining
 * leaf pairs stayed unsettled: 4-13% too far). */
static void test_distance_many_places(void)
{
    prox_mesh *ma = make_nails(7, 3), *mb = prox_mesh_make_box(prox_v3(0.5, 0.5, 0.025));
    CHECK(ma && ma->closed, "the nails make one closed mesh");
    prox_ist *A = build(ma, 2000), *B = build(mb, 2000);
    prox_bvh *ba = prox_bvh_build(ma), *bb = prox_bvh_build(mb);
    unsigned long long s = 11;
    double worst = 0;
    for (int i = 0; i < 10; i++) {
        double gap = 0.01 + 0.002 * i;
        /* the angle, then y, then x: the order gcc drew them in as arguments (check_prox.h) */
        double angle = check_rng_uniform(&s, -0.05, 0.05), ty = check_rng_uniform(&s, -0.01, 0.01), tx = check_rng_uniform(&s, -0.01, 0.01);
        prox_xform xb = prox_xform_from_pose(prox_v3(tx, ty, 0.1031 + 0.025 + gap), prox_quat_axis_angle(prox_v3(0, 0, 1), angle));
        prox_result exact = run(prox_bvh_tree(ba), prox_bvh_tree(bb), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        prox_result r = run(prox_ist_tree(A), prox_ist_tree(B), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        CHECK(fabs(exact.value - gap) < 1e-6, "exact distance %g is the tallest nail's gap %g", exact.value, gap);
        CHECK(r.value >= exact.value - 1e-9 && r.lower <= exact.value + 1e-9, "IST %g [%g, ...] against exact %g", r.value, r.lower, exact.value);
        worst = fmax(worst, (r.value - exact.value) / exact.value);
    }
    CHECK(worst < 0.005, "IST distance over many near places within 0.5%% of exact (worst %.3g)", worst);
    free_scene(A, B, ba, bb, ma, mb);
}

/* Two tiled plates nearly parallel, one above the other (a tool face on a
 * table): the outer balls of every facing leaf pair come far closer than
 * the pieces in them, so without more than the balls every facing pair is
 * settled (README, known limitations). Flat pieces' slabs (IST_SLAB_FLAT)
 * prune them where they show the pieces no closer than the best found.
 * The answers against the exact mesh distance, and against the same
 * queries with the flat marks cleared (the slabs unused): the same
 * distances at under half the triangle tests and a fraction of the
 * settled pairs. */
static void test_distance_flat_plates(void)
{
    prox_mesh *m = prox_mesh_make_tiled_box(prox_v3(0.3, 0.3, 0.025), 12);
    CHECK(m && m->closed && m->oriented, "the tiled plate is one closed, oriented mesh");
    prox_ist *A = build(m, 1000);
    prox_bvh *ba = prox_bvh_build(m);
    if (!A || !ba) {
        prox_ist_free(A), prox_bvh_free(ba), prox_mesh_free(m);
        return;
    }
    int flat = 0;
    for (uint32_t i = 0; i < A->sphere_count; i++)
        flat += A->sflat[i];
    CHECK(flat > (int)A->sphere_count / 2, "most of a plate's spheres stand for flat pieces (%d of %u)", flat, A->sphere_count);
    uint8_t *sflat = malloc(A->sphere_count);
    CHECK(sflat != NULL, "memory");
    unsigned long long s = 21;
    unsigned long long tests_on = 0, tests_off = 0;
    double worst = 0;
    for (int i = 0; i < 8 && sflat; i++) {
        double gap = check_rng_uniform(&s, 0.002, 0.02);
        /* the angle before the axis, y before x: the order gcc drew them in as arguments (check_prox.h) */
        double angle = check_rng_uniform(&s, 0, 0.02), ay = check_rng_uniform(&s, -1, 1), ax = check_rng_uniform(&s, -1, 1);
        prox_quat q = prox_quat_axis_angle(prox_v3(ax, ay, 0), angle);
        double ty = check_rng_uniform(&s, -0.05, 0.05), tx = check_rng_uniform(&s, -0.05, 0.05);
        prox_xform xb = prox_xform_from_pose(prox_v3(tx, ty, 0.05 + gap), q);
        prox_result exact = run(prox_bvh_tree(ba), prox_bvh_tree(ba), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        prox_result on = run(prox_ist_tree(A), prox_ist_tree(A), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        memcpy(sflat, A->sflat, A->sphere_count);
        memset(A->sflat, 0, A->sphere_count);
        prox_result off = run(prox_ist_tree(A), prox_ist_tree(A), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        memcpy(A->sflat, sflat, A->sphere_count);
        CHECK(on.complete && on.value >= exact.value - 1e-9 && on.lower <= exact.value + 1e-9, "plates: IST %g [%g, ...] against exact %g",
              on.value, on.lower, exact.value);
        CHECK(on.value <= off.value * (1 + 1e-9), "plates: with slabs %.9g, without %.9g", on.value, off.value);
        worst = fmax(worst, (on.value - exact.value) / exact.value);
        tests_on += on.leaf_tests, tests_off += off.leaf_tests;
    }
    CHECK(worst < 0.005, "plates: IST distance within 0.5%% of exact (worst %.3g)", worst);
    CHECK(2 * tests_on < tests_off, "plates: %llu triangle and sphere tests with slabs, %llu without", tests_on, tests_off);
    fprintf(stderr, "    flat plates: worst error %.2g; tests with slabs %llu, without %llu\n", worst, tests_on, tests_off);
    free(sflat);
    prox_ist_free(A), prox_bvh_free(ba), prox_mesh_free(m);
}

/* One mesh of eight separate fins (0.012 thick, 0.5 long, 0.25 tall,
 * 0.07 apart along x), parallel to the yz plane. */
static prox_mesh *make_comb(void)
{
    prox_vec3 lo[8], hi[8];
    for (int k = 0; k < 8; k++) {
        double x = (k - 3.5) * 0.07;
        lo[k] = prox_v3(x - 0.006, -0.25, -0.125);
        hi[k] = prox_v3(x + 0.006, 0.25, 0.125);
    }
    return make_boxes(8, lo, hi);
}

/* Two combs crossing at right angles: the fins' surfaces cut each other,
 * the distance is 0, and the query ends soon after it finds that. The
 * fins are too thin for inner spheres of their own at this resolution, so
 * their surfaces lie in the outer balls of spheres in other fins, whose
 * keys (below 0 where the balls overlap) the engine's pruning against a
 * best of 0 kept: 1.6 million expansions a query before the distance
 * query stopped at a best of 0. */
static void test_distance_crossing_fins(void)
{
    prox_mesh *ma = make_comb(), *mb = make_comb();
    CHECK(ma && ma->closed, "the comb is one closed mesh");
    /* without the thin-part spheres (test_thin_parts): the scene of the
     * fault */
    prox_ist *A = check_ist_build(ma, 2000, 0, 0, -1), *B = check_ist_build(mb, 2000, 0, 0, -1);
    prox_bvh *ba = prox_bvh_build(ma), *bb = prox_bvh_build(mb);
    /* the scene's premise, and what prox build warns of (above 8) */
    CHECK(A->surface_gap > 8 * A->voxel_size, "fins without spheres of their own: surface gap %.1f voxel sizes",
          A->surface_gap / A->voxel_size);
    for (int i = 0; i < 3; i++) {
        prox_xform xb = prox_xform_from_pose(prox_v3(0.01 * i, 0.02 * i, 0.05),
                                             prox_quat_axis_angle(prox_v3(0, 0, 1), M_PI / 2 + 0.1 * i));
        prox_result exact = run(prox_bvh_tree(ba), prox_bvh_tree(bb), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        prox_result r = run(prox_ist_tree(A), prox_ist_tree(B), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        CHECK(exact.value == 0 && r.value == 0, "crossing fins: distance %g (exact %g)", r.value, exact.value);
        CHECK(r.complete && r.lower == 0 && r.upper == 0, "a certified 0 [%g, %g]", r.lower, r.upper);
        CHECK(r.expansions < 2000, "crossing fins: %llu expansions to answer 0", (unsigned long long)r.expansions);
    }
    free_scene(A, B, ba, bb, ma, mb);
}

/* An icosphere of radius R (20 * 4^sub triangles) with its radius
 * modulated by a product of sines of frequency f: bumps, dents and
 * saddles, so that two surfaces facing each other have several local
 * minima of their distance near each other. */
static prox_mesh *make_bumpy(int sub, double R, double amp, double f, double phase)
{
    prox_mesh *s = prox_mesh_make_sphere(R, sub);
    prox_vec3 *v = s ? malloc(sizeof *v * s->vertex_count) : NULL;
    CHECK(v != NULL, "memory");
    if (!v) {
        prox_mesh_free(s);
        return NULL;
    }
    for (uint32_t i = 0; i < s->vertex_count; i++) {
        prox_vec3 u = prox_v3_normalize(s->vertices[i]);
        double k = 1 + amp * sin(f * u.x + phase) * sin(f * u.y + 2 * phase) * sin(f * u.z + 3 * phase);
        v[i] = prox_v3_scale(u, R * k);
    }
    prox_mesh *m = prox_mesh_from_arrays(v, s->vertex_count, (const uint32_t(*)[3])s->triangles, s->triangle_count);
    free(v);
    prox_mesh_free(s);
    return m;
}

/* the distance of mesh a and mesh b moved by xb, from every triangle pair
 * (a pair whose bounding balls are no closer than the best so far is
 * skipped: it cannot be closer) */
static double brute_mesh_distance(const prox_mesh *a, const prox_mesh *b, prox_xform xb)
{
    const prox_mesh *m[2] = {a, b};
    double(*ball[2])[4] = {malloc(sizeof(double[4]) * a->triangle_count), malloc(sizeof(double[4]) * b->triangle_count)};
    prox_vec3 *bv = malloc(sizeof *bv * b->vertex_count);
    CHECK(ball[0] && ball[1] && bv, "memory");
    double best = ball[0] && ball[1] && bv ? INFINITY : NAN;
    for (uint32_t i = 0; bv && i < b->vertex_count; i++)
        bv[i] = prox_xform_point(&xb, b->vertices[i]);
    for (int s = 0; s < 2 && best == INFINITY; s++) {
        const prox_vec3 *v = s ? bv : a->vertices;
        for (uint32_t i = 0; i < m[s]->triangle_count; i++) {
            const uint32_t *t = m[s]->triangles[i];
            prox_vec3 c = prox_v3_scale(prox_v3_add(prox_v3_add(v[t[0]], v[t[1]]), v[t[2]]), 1.0 / 3);
            double r = fmax(prox_v3_dist(c, v[t[0]]), fmax(prox_v3_dist(c, v[t[1]]), prox_v3_dist(c, v[t[2]])));
            ball[s][i][0] = c.x, ball[s][i][1] = c.y, ball[s][i][2] = c.z, ball[s][i][3] = r * (1 + 1e-9) + 1e-12;
        }
    }
    for (uint32_t i = 0; !isnan(best) && i < a->triangle_count; i++) {
        const prox_vec3 P[3] = {a->vertices[a->triangles[i][0]], a->vertices[a->triangles[i][1]], a->vertices[a->triangles[i][2]]};
        for (uint32_t j = 0; j < b->triangle_count; j++) {
            const double *p = ball[0][i], *q = ball[1][j];
            if (sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2])) - p[3] - q[3] >= best)
                continue;
            const prox_vec3 Q[3] = {bv[b->triangles[j][0]], bv[b->triangles[j][1]], bv[b->triangles[j][2]]};
            prox_vec3 x, y;
            best = fmin(best, prox_triangle_distance(P, Q, &x, &y));
        }
    }
    free(ball[0]), free(ball[1]), free(bv);
    return best;
}

/* prox_query.precise (the search for another local minimum near the
 * answer, ist_distance.c near_minima; on by default, off with prox
 * --fast, which these checks call "the fast mode" and the history below
 * "the default", as it was until precise became it) on two bumpy spheres of 1,280
 * triangles each, 500 inner spheres, 30 random poses near contact: the
 * answer is never below the exact distance (every triangle pair) and not
 * above the fast mode's (the same, empty, cache; nor at three poses
 * where it was while precise cut the refinement); where the
 * fast mode stops at a local minimum more than 5% over the exact distance
 * (the 126th pose of seed 203's sequence: 20.9%), the precise answer is
 * the exact one (here at all 30 poses, checked within 1%; a local
 * search near the answer cannot find every minimum, see below). (Seed 5's 30
 * poses held such a pose until the places that reached nothing were
 * searched further (ist_distance.c, leaf_chains and IST_NOEND_LOWER),
 * which made the default exact there; over 600 poses of each seed 1-12
 * but 5, the poses more than 0.5% over exact went 213 -> 180 by default,
 * 190 -> 157 precise. Seed 10's 120th pose, 12.2% over, was found exact
 * only while precise cut its refinement, which moved where the search
 * began; without the cuts, of those 6,600 poses 156 precise answers are
 * more than 0.5% over exact, 154 with them. Seed 48's 108th, 13.8%,
 * became exact by default once pairs beside places that reached nothing
 * were settled below 0.7 of the best (IST_NOEND_AWAY). Of the 30 poses
 * this draws with each seed 1-300, nine have the default more than 5%
 * above precise, precise exact at all nine: seeds 2, 69, 89, 175, 203,
 * 212, 227, 258, 271.) Budgets from a
 * deadline already passed to 1.3 times the precise query's time (some
 * cut inside the search) still bracket the exact distance; along a
 * coherent path (each mode its own cache) never below exact, and not
 * above the fast mode run on a copy of precise's cache. */
/* the next pose of test_distance_precise's draw, B near contact: its
 * translation and rotation (bumpy_tq) or the transform (bumpy_pose) */
static void bumpy_tq(unsigned long long *s, prox_vec3 *t, prox_quat *q)
{
    *q = check_rng_rotation(s);
    prox_vec3 dir = prox_v3_normalize(check_rng_v3(s, -1, 1));
    *t = prox_v3_scale(dir, check_rng_uniform(s, 0.62, 0.75));
}

static prox_xform bumpy_pose(unsigned long long *s)
{
    prox_vec3 t;
    prox_quat q;
    bumpy_tq(s, &t, &q);
    return prox_xform_from_pose(t, q);
}

/* the fast mode's (precise off) and precise's (the default) answers at
 * xb, no cache */
static void run_both(const prox_ist *A, const prox_ist *B, prox_xform xb, prox_result *rd, prox_result *rp)
{
    prox_query qp = prox_query_default(PROX_QUERY_DISTANCE), qd = qp;
    CHECK(qp.precise == 1, "precise is the default");
    qd.precise = 0;
    *rd = run(prox_ist_tree(A), prox_ist_tree(B), xb, qd, NULL);
    *rp = run(prox_ist_tree(A), prox_ist_tree(B), xb, qp, NULL);
}

static void test_distance_precise(void)
{
    prox_mesh *ma = make_bumpy(3, 0.3, 0.2, 12, 0.3), *mb = make_bumpy(3, 0.25, 0.2, 12 * 1.3, 1.1);
    CHECK(ma && mb && ma->closed && mb->closed, "bumpy spheres: closed meshes");
    if (!ma || !mb) {
        prox_mesh_free(ma), prox_mesh_free(mb);
        return;
    }
    prox_ist *A = build(ma, 500), *B = build(mb, 500);
    unsigned long long s = 203;
    int better = 0, found = 0, poses = 0, cuts = 0;
    double worst_fast = 0, worst_precise = 0;
    prox_xform pose_found = prox_xform_identity(); /* the first pose the search gains at */
    for (int i = 0; i < 180 && A && B; i++) {
        prox_xform xb = bumpy_pose(&s);
        if (i % 6 != 5) /* 30 poses, the 180th among them: every triangle pair is slow */
            continue;
        poses++;
        prox_query qp = prox_query_default(PROX_QUERY_DISTANCE);
        prox_result rd, rp;
        run_both(A, B, xb, &rd, &rp);
        const double exact = brute_mesh_distance(ma, mb, xb);
        CHECK(exact > 0, "pose %d: apart (%g)", i, exact);
        CHECK(rp.complete && rp.value >= exact * (1 - 1e-9) && rp.lower <= exact * (1 + 1e-9),
              "pose %d: precise %.9g [%.9g, ...] against exact %.9g", i, rp.value, rp.lower, exact);
        CHECK(rd.complete && rd.value >= exact * (1 - 1e-9) && rd.lower <= exact * (1 + 1e-9),
              "pose %d: fast %.9g [%.9g, ...] against exact %.9g", i, rd.value, rd.lower, exact);
        /* precise refines as the fast mode does and the search only moves
         * to a closer pair (ist_distance.c, the note on prox_query.precise
         * after IST_CHAIN_SLACK) */
        CHECK(rp.value <= rd.value * (1 + 1e-12), "pose %d: precise %.17g above the fast mode %.17g", i, rp.value, rd.value);
        CHECK(fabs(prox_v3_dist(rp.point_a, rp.point_b) - rp.value) <= 1e-9 * (1 + rp.value), "pose %d: witness points %g apart, value %g",
              i, prox_v3_dist(rp.point_a, rp.point_b), rp.value);
        better += rp.value < rd.value;
        if (rd.value > exact * 1.05 && rp.value <= exact * (1 + 1e-9) && found++ == 0)
            pose_found = xb;
        worst_fast = fmax(worst_fast, (rd.value - exact) / exact);
        worst_precise = fmax(worst_precise, (rp.value - exact) / exact);
        /* budgets from the deadline passed at once to beyond the precise
         * query's time (cut before, in and after the search): the bounds
         * still bracket the exact distance, the value never below it */
        const double t_hi = 1.3 * rp.elapsed_us;
        for (int k = 0; k <= 6; k++) {
            qp.deadline_ns = prox_now_ns() + (uint64_t)(k ? 1000.0 * t_hi * (0.3 + 0.7 * k / 6.0) : 0.0);
            qp.check_every = 1;
            prox_result rc = run(prox_ist_tree(A), prox_ist_tree(B), xb, qp, NULL);
            CHECK(rc.lower <= exact * (1 + 1e-9) && rc.upper >= exact * (1 - 1e-9) && rc.value >= exact * (1 - 1e-9),
                  "pose %d, budget %d: precise %g in [%g, %g] vs exact %g", i, k, rc.value, rc.lower, rc.upper, exact);
            cuts += !rc.complete && k > 0;
        }
    }
    CHECK(poses == 30 && found >= 1, "the fast mode more than 5%% over exact and precise exact at %d of %d poses", found, poses);
    CHECK(worst_precise <= 0.01, "precise within 1%% of exact at every pose (measured 0): worst %.4f", worst_precise);
    /* poses of the same draw (seed, index) where precise, when it also cut
     * the refinement to pay for the search, ended above the fast mode: 8.2%,
     * 1.9%, 0.12% (the three largest of seeds 1-12, 600 poses each) */
    const int above_seed[3] = {9, 10, 2}, above_pose[3] = {431, 100, 185};
    for (int k = 0; k < 3 && A && B; k++) {
        unsigned long long sk = (unsigned long long)above_seed[k];
        prox_xform xb = prox_xform_identity();
        for (int i = 0; i <= above_pose[k]; i++)
            xb = bumpy_pose(&sk);
        prox_result rd, rp;
        run_both(A, B, xb, &rd, &rp);
        CHECK(rp.value <= rd.value * (1 + 1e-12), "seed %d pose %d: precise %.17g above the fast mode %.17g", above_seed[k], above_pose[k],
              rp.value, rd.value);
    }
    /* That check rests on one pose, seed 203's 126th (seed 48's 108th
     * before IST_NOEND_AWAY, seed 10's 120th while precise cut its
     * refinement; with seed 5, before the default
     * searched further, the 180th: of all 180 drawn the only one, and none
     * of 150 drawn for five other bump frequencies, amplitudes and tree
     * sizes either). 20 poses near it (moved up to 0.004 along each axis,
     * turned up to 0.016 rad) show that precise's gain there is not a
     * knife edge: measured 13 of 20 (14 near seed 48's, 7 near seed 10's
     * with the cuts, 11 near seed 5's). */
    unsigned long long s_near = 99;
    int near_found = 0;
    for (int j = 0; j < 20 && A && B; j++) {
        double angle = check_rng_uniform(&s_near, 0, 0.016);
        prox_vec3 axis = prox_v3_normalize(check_rng_v3(&s_near, -1, 1));
        prox_xform step = prox_xform_from_pose(check_rng_v3(&s_near, -0.004, 0.004), prox_quat_axis_angle(axis, angle));
        prox_xform xb = prox_xform_mul(&step, &pose_found);
        prox_result rd, rp;
        run_both(A, B, xb, &rd, &rp);
        const double exact = brute_mesh_distance(ma, mb, xb);
        CHECK(rp.complete && rp.value >= exact * (1 - 1e-9) && rp.lower <= exact * (1 + 1e-9),
              "near the found pose, %d: precise %.9g [%.9g, ...] against exact %.9g", j, rp.value, rp.lower, exact);
        CHECK(rp.value <= rd.value * (1 + 1e-12), "near the found pose, %d: precise %.17g above the fast mode %.17g", j, rp.value,
              rd.value);
        near_found += rd.value > exact * 1.05 && rp.value <= exact * (1 + 1e-9);
    }
    CHECK(near_found >= 5, "near the found pose: the fast mode more than 5%% over exact and precise exact at %d of 20 poses", near_found);
    CHECK(cuts > 0, "no budgeted precise query was cut");
    /* a coherent path past the bumps, the cache kept (its own for each mode) */
    prox_cache cd = {0}, cp = {0};
    int path_better = 0;
    for (int i = 0; i < 40 && A && B; i++) {
        double t = 0.05 * i;
        prox_xform xb = prox_xform_from_pose(prox_v3(0.66 * cos(t), 0.66 * sin(t), 0.05 * sin(3 * t)),
                                             prox_quat_axis_angle(prox_v3(1, 0.5, 0.2), 0.07 * i));
        prox_query qp = prox_query_default(PROX_QUERY_DISTANCE), qd = qp;
        qd.precise = 0;
        prox_cache cs = cp; /* precise's cache state, for the fast mode */
        prox_result rd = run(prox_ist_tree(A), prox_ist_tree(B), xb, qd, &cd);
        prox_result rp = run(prox_ist_tree(A), prox_ist_tree(B), xb, qp, &cp);
        prox_result rs = run(prox_ist_tree(A), prox_ist_tree(B), xb, qd, &cs);
        CHECK(rp.value <= rs.value * (1 + 1e-12), "path %d: precise %.17g above the fast mode on the same cache state %.17g", i, rp.value,
              rs.value);
        const double exact = brute_mesh_distance(ma, mb, xb);
        CHECK(rp.value >= exact * (1 - 1e-9), "path %d: precise %.9g below exact %.9g", i, rp.value, exact);
        path_better += rp.value < rd.value;
    }
    fprintf(stderr,
            "    precise: better than the fast mode at %d of %d random poses (worst error %.4f -> %.4f; fast over 5%% and precise"
            " exact at %d; at %d of 20 near the first), %d of 40 path poses; %d budgeted queries cut\n",
            better, poses, worst_fast, worst_precise, found, near_found, path_better, cuts);
    prox_ist_free(A), prox_ist_free(B), prox_mesh_free(ma), prox_mesh_free(mb);
}

/* The prox tool on inner sphere trees, end to end: `prox build` from OFF
 * files of test_distance_precise's bumpy spheres, then `prox distance` on
 * the .ist files at eight poses of its draw with seed 2 (the 84th and the
 * 133rd among them, where --fast ends 5.0% and 6.0% above the default: two
 * of the three such poses over 1% in the first 600 of that draw): the
 * default (precise) and --fast never below the exact distance (every
 * triangle pair of the meshes as read back), the default never above
 * --fast and the same as --precise, bit for bit; and the options' errors.
 * (The trees of the files are not test_distance_precise's: the meshes come
 * back rounded to float. Both modes stop above exact at other poses of
 * these draws: 0.76% at seed 203's 137th; see the README on the inner
 * sphere tree distance's accuracy.) */
static char prox_bin[1024];

static void test_ist_cli(void)
{
    char dir[] = "/tmp/prox-ist-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    prox_mesh *ma = make_bumpy(3, 0.3, 0.2, 12, 0.3), *mb = make_bumpy(3, 0.25, 0.2, 12 * 1.3, 1.1);
    char pa[256], pb[256], ia[256], ib[256], pp[256], cmd[4096], out[16][256], err[256];
    snprintf(pa, sizeof pa, "%s/a.off", dir);
    snprintf(pb, sizeof pb, "%s/b.off", dir);
    snprintf(ia, sizeof ia, "%s/a.ist", dir);
    snprintf(ib, sizeof ib, "%s/b.ist", dir);
    snprintf(pp, sizeof pp, "%s/poses.txt", dir);
    check_write_off(pa, ma);
    check_write_off(pb, mb);
    int n;
    snprintf(cmd, sizeof cmd, "%s build %s -o %s --spheres 500", prox_bin, pa, ia);
    CHECK(check_run_cmd(cmd, out, 16, &n, err) == 0, "prox build a: %s", err);
    /* what it prints (the issue: sphere count, covered volume fraction,
     * build time and memory) against the file it wrote */
    {
        unsigned spheres = 0, nodes = 0;
        double covered = -1, seconds = -1, bytes = -1;
        int written = 0;
        for (int i = 0; i < n; i++) {
            sscanf(out[i], "spheres: %u", &spheres);
            sscanf(out[i], "nodes: %u", &nodes);
            sscanf(out[i], "covered_volume_fraction: %lf", &covered);
            sscanf(out[i], "build_seconds: %lf", &seconds);
            sscanf(out[i], "tree_bytes: %lf", &bytes);
            written += strncmp(out[i], "written: ", 9) == 0 && strstr(out[i], ia) != NULL;
        }
        prox_ist *t = NULL;
        CHECK(prox_ist_load(ia, &t, err, sizeof err) == 0, "load %s: %s", ia, err);
        prox_ist_stats st = {0};
        if (t)
            prox_ist_get_stats(t, &st);
        CHECK(spheres > 0 && spheres == st.spheres && nodes == st.nodes, "prox build printed %u spheres, %u nodes; the file holds %u, %u",
              spheres, nodes, st.spheres, st.nodes);
        CHECK(covered > 0.5 && covered < 1 && seconds >= 0 && bytes > 0 && written == 1,
              "prox build: covered %g, %g s, %g bytes, written line %d", covered, seconds, bytes, written);
        CHECK(t && fabs(covered - st.inner_volume / st.mesh_volume) < 1e-4, "covered fraction %g, the file's %g", covered,
              t ? st.inner_volume / st.mesh_volume : -1);
        prox_ist_free(t);
    }
    snprintf(cmd, sizeof cmd, "%s build %s -o %s --spheres 500", prox_bin, pb, ib);
    CHECK(check_run_cmd(cmd, out, 16, &n, err) == 0, "prox build b: %s", err);
    /* its refusals: bad options 2, what it cannot build 1, named */
    {
        char open_off[300];
        snprintf(open_off, sizeof open_off, "%s/open.off", dir);
        const prox_vec3 tv[3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
        const uint32_t tt[1][3] = {{0, 1, 2}};
        prox_mesh *tri = prox_mesh_from_arrays(tv, 3, tt, 1);
        if (tri)
            check_write_off(open_off, tri);
        prox_mesh_free(tri);
        struct {
            const char *args;
            int rc;
            const char *want;
        } bad[] = {
            {"%s -o %s/x.ist --spheres 0", 2, "--spheres needs a positive integer, got '0'"},
            {"%s -o %s/x.ist --voxels abc", 2, "--voxels needs a positive integer, got 'abc'"},
            {"%s -o %s/x.ist --min-radius 5", 2, "--min-radius needs a number of voxel sizes in [0.1, 4], got '5'"},
            {"%s -o %s/x.ist --thin-gap 0.5", 2, "--thin-gap needs a number of voxel sizes in [1, 64], or -1 for none, got '0.5'"},
            {"%s -o %s/x.ist --sphere 10", 2, "usage: prox build MESH -o OUT.ist"},
            {"%s %s", 2, "usage: prox build MESH -o OUT.ist"}, /* no -o (a second input instead) */
            {"%s/missing.off -o %s/x.ist", 1, "missing.off"},
            {"OPEN -o %s/x.ist", 1, "mesh is not closed (3 boundary edges"},
            {"%s -o", 2, "usage: prox build MESH -o OUT.ist"}, /* -o with no path */
            {"%s -o /nonexistent-dir/x.ist", 1, "/nonexistent-dir/x.ist"}, /* built, not written: named */
        };
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            char args[700];
            if (!strncmp(bad[k].args, "OPEN", 4))
                snprintf(args, sizeof args, "%s -o %s/x.ist", open_off, dir);
            else if (!strncmp(bad[k].args, "%s/", 3))
                snprintf(args, sizeof args, bad[k].args, dir, dir);
            else
                snprintf(args, sizeof args, bad[k].args, pa, dir);
            snprintf(cmd, sizeof cmd, "%s build %s", prox_bin, args);
            const int rc = check_run_cmd(cmd, out, 16, &n, err);
            CHECK(rc == bad[k].rc && strstr(err, bad[k].want) && n == 0, "prox build %s: exit %d (want %d), '%s'", args, rc, bad[k].rc, err);
        }
        snprintf(cmd, sizeof cmd, "%s/x.ist", dir);
        CHECK(access(cmd, F_OK) != 0, "no file written by a refused build");
        remove(open_off);
    }
    enum { N = 8 };
    prox_xform X[N];
    unsigned long long s = 2;
    FILE *f = fopen(pp, "w");
    CHECK(f != NULL, "cannot write %s", pp);
    for (int i = 0, k = 0; i < 180 && f; i++) {
        prox_vec3 t;
        prox_quat q;
        bumpy_tq(&s, &t, &q);
        if (i % 30 && i != 83 && i != 132) /* 0, 30, 60, 83, 90, 120, 132, 150 */
            continue;
        fprintf(f, "%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", t.x, t.y, t.z, q.w, q.x, q.y, q.z);
        X[k++] = prox_xform_from_pose(t, q);
    }
    if (f)
        fclose(f);
    /* the three modes' answers: default, --fast, --precise */
    double v[3][N];
    const char *mode[3] = {"", " --fast", " --precise"};
    char first[N][256];
    for (int m = 0; m < 3; m++) {
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s%s", prox_bin, ia, ib, pp, mode[m]);
        CHECK(check_run_cmd(cmd, out, 16, &n, err) == 0 && n == N && strstr(err, "queries=8"), "prox distance%s: %d lines, %s", mode[m],
              n, err);
        for (int i = 0; i < N; i++) {
            double lo = NAN, up = NAN;
            int complete = 0;
            v[m][i] = NAN;
            CHECK(i < n && sscanf(out[i], "%lf %lf %lf %d", &v[m][i], &lo, &up, &complete) == 4 && complete == 1 && lo <= v[m][i],
                  "prox distance%s pose %d: '%s'", mode[m], i, i < n ? out[i] : "");
            if (m == 0)
                memcpy(first[i], i < n ? out[i] : "", i < n ? sizeof first[i] : 1);
            else if (m == 2)
                CHECK(i < n && !strcmp(out[i], first[i]), "pose %d: --precise '%s', the default '%s'", i, i < n ? out[i] : "", first[i]);
        }
    }
    /* the reference reads the files with the same loader (assimp keeps
     * float coordinates, so the written doubles come back rounded) */
    prox_mesh *la = NULL, *lb = NULL;
    char lerr[256];
    CHECK(!prox_mesh_load(pa, &la, lerr, sizeof lerr) && !prox_mesh_load(pb, &lb, lerr, sizeof lerr), "reload: %s", lerr);
    double worst[2] = {0, 0};
    int fast_above = 0;
    for (int i = 0; i < N && la && lb; i++) {
        const double exact = brute_mesh_distance(la, lb, X[i]);
        CHECK(v[0][i] >= exact * (1 - 1e-9) && v[1][i] >= exact * (1 - 1e-9), "pose %d: default %.9g, fast %.9g, exact %.9g", i, v[0][i],
              v[1][i], exact);
        CHECK(v[0][i] <= v[1][i] * (1 + 1e-12), "pose %d: the default %.17g above --fast %.17g", i, v[0][i], v[1][i]);
        fast_above += v[1][i] > v[0][i] * 1.01;
        worst[0] = fmax(worst[0], v[0][i] / exact - 1);
        worst[1] = fmax(worst[1], v[1][i] / exact - 1);
    }
    CHECK(fast_above >= 1, "--fast more than 1%% above the default at %d of %d poses (measured 2)", fast_above, N);
    fprintf(stderr, "    prox distance on .ist files: worst error over exact %.4f%% (default), %.4f%% (--fast), %d poses\n", 100 * worst[0],
            100 * worst[1], N);
    /* errors: exit 2, named */
    /* (both orders: the first stderr line says why, the last is the usage) */
    char why[256];
    snprintf(cmd, sizeof cmd, "%s distance %s %s %s --precise --fast", prox_bin, ia, ib, pp);
    CHECK(check_run_cmd(cmd, out, 16, &n, err) == 2 && n == 0, "--precise --fast: exit 2");
    snprintf(cmd, sizeof cmd, "%s distance %s %s %s --fast --precise", prox_bin, ia, ib, pp);
    check_run_cmd2(cmd, out, 16, &n, why, err);
    CHECK(strstr(why, "--precise and --fast exclude each other"), "--precise --fast: '%s'", why);
    snprintf(cmd, sizeof cmd, "%s distance %s %s %s --fast", prox_bin, pa, pb, pp);
    CHECK(check_run_cmd2(cmd, out, 16, &n, why, err) == 2 && n == 0, "--fast on meshes: exit 2");
    CHECK(strstr(why, "--fast needs inner sphere trees on both sides"), "--fast on meshes: '%s'", why);
    snprintf(cmd, sizeof cmd, "%s penvol %s %s %s --fast", prox_bin, ia, ib, pp);
    CHECK(check_run_cmd2(cmd, out, 16, &n, why, err) == 2 && n == 0, "penvol --fast: exit 2");
    CHECK(strstr(why, "prox penvol: --fast is not an option of penvol"), "penvol --fast: '%s'", why);
    /* a tree file that does not load, on either side: exit 1, the file
     * named with what is wrong, no answer printed (and, under ASan, the
     * side loaded first freed) */
    char trunc[300], junk[300], missing[300], want[400];
    snprintf(trunc, sizeof trunc, "%s/trunc.ist", dir);
    snprintf(junk, sizeof junk, "%s/junk.vox", dir);
    snprintf(missing, sizeof missing, "%s/missing.ist", dir);
    {
        size_t size = 0;
        unsigned char *bytes = check_read_file(ia, &size);
        FILE *tf = fopen(trunc, "wb");
        CHECK(bytes && size > 100 && tf, "copy of %s", ia);
        if (bytes && tf)
            fwrite(bytes, 1, 100, tf);
        if (tf)
            fclose(tf);
        free(bytes);
        FILE *jf = fopen(junk, "w");
        if (jf) {
            fputs("not a map\n", jf);
            fclose(jf);
        }
    }
    const struct {
        const char *a, *b, *why; /* why: the message, %s the side that does not load */
    } unloadable[] = {
        {ia, trunc, "%s: not an .ist file (too short: 100 bytes)"},
        {junk, ib, "%s:1: not a voxel map (want 'hapticd-voxmap 1' first)"},
        {missing, ib, "%s: No such file or directory"},
    };
    for (size_t k = 0; k < sizeof unloadable / sizeof unloadable[0]; k++) {
        const char *bad = unloadable[k].a == ia ? unloadable[k].b : unloadable[k].a;
        snprintf(cmd, sizeof cmd, "%s distance %s %s %s", prox_bin, unloadable[k].a, unloadable[k].b, pp);
        const int rc = check_run_cmd(cmd, out, 16, &n, err);
        char line[300];
        snprintf(line, sizeof line, unloadable[k].why, bad);
        snprintf(want, sizeof want, "prox: %s\n", line);
        CHECK(rc == 1 && n == 0 && !strcmp(err, want), "an unloadable %s: exit %d, %d lines, '%s' (want '%s')", bad, rc, n, err, want);
    }
    remove(trunc), remove(junk);
    remove(pa), remove(pb), remove(ia), remove(ib), remove(pp), rmdir(dir);
    prox_mesh_free(ma), prox_mesh_free(mb), prox_mesh_free(la), prox_mesh_free(lb);
}

/* Objects far apart for their size (IST_FAR): a bumpy sphere and a torus
 * (0.6 across) at the same rotations and offsets 2, 1e4 and 1e6 along x.
 * The float prefilter's margin and the triangle box tree's grow with the
 * coordinates (1e-5 and 4e-6 of them), so at 1e4 and beyond they outgrew
 * the objects and nothing was pruned: here 1,013 expansions and 1,537
 * leaf tests summed over the four poses at 2, 27,104 and 26,574 at 1e4,
 * 1.2 million and 1.1 million at 1e6, and two answers at 1e6 3.4e-9 over
 * the exact distance. Far apart the query works in doubles: at 1e4 and
 * at 1e6 the sums stay within 4x of those at 2 (2,186 and 2,842), and
 * every answer is the exact distance (every triangle pair) within 1e-9,
 * never below it. */
static void test_distance_far_apart(void)
{
    prox_mesh *ma = make_bumpy(3, 0.3, 0.2, 12, 0.3), *mb = prox_mesh_make_torus(0.3, 0.1, 32, 16);
    CHECK(ma && mb && ma->closed && mb->closed, "bumpy sphere and torus: closed meshes");
    if (!ma || !mb) {
        prox_mesh_free(ma), prox_mesh_free(mb);
        return;
    }
    prox_ist *A = build(ma, 500), *B = build(mb, 500);
    const double K[3] = {2, 1e4, 1e6};
    uint64_t expansions[3] = {0, 0, 0}, tests[3] = {0, 0, 0};
    unsigned long long s = 5;
    for (int i = 0; i < 4; i++) {
        prox_quat q = check_rng_quat(&s);
        prox_vec3 off = check_rng_v3(&s, 0, 1);
        for (int k = 0; k < 3; k++) {
            prox_xform xb = prox_xform_from_pose(prox_v3(K[k] + off.x, off.y, off.z), q);
            prox_result r = run(prox_ist_tree(A), prox_ist_tree(B), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
            double exact = brute_mesh_distance(ma, mb, xb);
            /* absolute, at the pose's scale: 1e-9 relative of a distance of
             * 1e6 would allow 1e-3, a fifth of the objects */
            CHECK(r.complete && r.value >= exact - 1e-12 * (1 + K[k]) && r.value <= exact + 1e-12 * (1 + K[k]) &&
                      r.lower <= exact + 1e-12 * (1 + K[k]),
                  "pose %d at %g: IST %.17g [%.17g, ...] against exact %.17g (complete %d)", i, K[k], r.value, r.lower, exact, r.complete);
            expansions[k] += r.expansions, tests[k] += r.leaf_tests;
        }
    }
    for (int k = 1; k < 3; k++)
        CHECK(expansions[k] <= 4 * expansions[0] && tests[k] <= 4 * tests[0], "at %g: %llu expansions, %llu leaf tests; at %g: %llu, %llu",
              K[k], (unsigned long long)expansions[k], (unsigned long long)tests[k], K[0], (unsigned long long)expansions[0],
              (unsigned long long)tests[0]);
    prox_ist_free(A), prox_ist_free(B);
    prox_mesh_free(ma), prox_mesh_free(mb);
}

/* Parts thinner than about two voxels hold no voxel centre and so got no
 * inner sphere from the greedy packing; the build's thin-part pass gives
 * them spheres of their own (ist_build.c, thin_spheres). The comb at 2,000
 * spheres: without the pass the fins that hold no voxel centre get no
 * sphere, their surfaces lie up to 33 voxel sizes from every sphere, their
 * volume is no voxel's (37% of the mesh is assigned; the secondary radii
 * are scaled up 1.39x to make the total), and a distance query near them
 * settled thousands of leaf pairs (prox distance,
 * 40 random poses: 4.1 ms median, 0.97% worst error; with the pass 63 us,
 * 0.09%). Checked here: the packing invariants with the added spheres, the
 * surface gap, the penetration volume of a box pushed into one fin against
 * the exact box-box volume, and distance near contact against the exact
 * mesh distance, with the expansions it took. */
static void test_thin_parts(void)
{
    prox_mesh *m = make_comb(), *tool = prox_mesh_make_box(prox_v3(0.02, 0.05, 0.05));
    prox_ist *bare = check_ist_build(m, 2000, 0, 0, -1), *t = build(m, 2000), *tt = build(tool, 400);
    if (!bare || !t || !tt) {
        prox_ist_free(bare), prox_ist_free(t), prox_ist_free(tt);
        prox_mesh_free(m), prox_mesh_free(tool);
        return;
    }
    CHECK(bare->thin_spheres == 0 && bare->surface_gap > 8 * bare->voxel_size, "without the pass: gap %.1f voxel sizes",
          bare->surface_gap / bare->voxel_size);
    CHECK(t->thin_spheres > 100 && t->sphere_count == 2000 + t->thin_spheres, "thin spheres: %u of %u", t->thin_spheres,
          t->sphere_count);
    CHECK(t->surface_gap < 6 * t->voxel_size, "with the pass: gap %.1f voxel sizes", t->surface_gap / t->voxel_size);
    /* the fins' volume is counted at the fins: the voxels holding it are
     * all assigned (without the pass 37%; the vertical lines through the
     * voxels weigh 0.012-thick fins in steps of a quarter voxel: 2%) */
    check_packing(m, t, "comb", 0.02, 0.1);
    prox_ist_stats sb;
    prox_ist_get_stats(bare, &sb);
    printf("    comb: %u thin spheres, gap %.1f -> %.1f voxel sizes, assigned voxel volume %.3f -> %.3f of the mesh\n",
           t->thin_spheres, bare->surface_gap / bare->voxel_size, t->surface_gap / t->voxel_size, sb.voxel_volume / sb.mesh_volume,
           t->voxel_volume / t->mesh_volume);
    /* a box (0.04 x 0.1 x 0.1) pushed into fin 4 (x 0.029 to 0.041) from
     * the side: the exact overlap is a box. Without the pass the fin holds
     * no sphere and the box meets nothing: a haptic tool would pass
     * through it. With it the volume grows with the depth; the sphere
     * model of a fin 1.8 voxels thick is coarse: 2x the exact volume at a
     * depth of a third of a voxel (0.002), within 25% from 0.004 on
     * (measured: +24%, -2%, -14%, -22%). */
    double worst_t = 0, last = 0;
    int empty = 0, shrinks = 0;
    for (int i = 1; i <= 5; i++) {
        double depth = 0.002 * i; /* of the fin's 0.012 */
        prox_xform xb = prox_xform_from_pose(prox_v3(0.029 - 0.02 + depth, 0.03, 0.02), prox_quat_identity());
        double exact = depth * 0.1 * 0.1;
        prox_result rt = run(prox_ist_tree(t), prox_ist_tree(tt), xb, prox_query_default(PROX_QUERY_PENVOL), NULL);
        prox_result rb = run(prox_ist_tree(bare), prox_ist_tree(tt), xb, prox_query_default(PROX_QUERY_PENVOL), NULL);
        if (i >= 2)
            worst_t = fmax(worst_t, fabs(rt.value - exact) / exact);
        empty += rb.value == 0;
        shrinks += !(rt.value > last);
        last = rt.value;
        printf("    depth %.3f: exact %.3g, with thin spheres %.3g, without %.3g\n", depth, exact, rt.value, rb.value);
    }
    CHECK(empty == 5, "without the pass the fin is empty (%d of 5 depths)", empty);
    CHECK(shrinks == 0, "box into a fin: the volume grows with the depth from the first (%d not)", shrinks);
    CHECK(worst_t < 0.25, "box into a fin: penetration volume within 25%% of exact from a depth of 0.004 (worst %.3g)", worst_t);
    /* distance near contact: another comb turned about z, placed so the
     * exact distance is a small gap */
    prox_bvh *bm = prox_bvh_build(m);
    unsigned long long s = 21;
    double worst = 0;
    unsigned long long exp_t = 0, exp_b = 0;
    for (int i = 0; i < 8; i++) {
        double angle = check_rng_uniform(&s, 0, M_PI); /* before the axis: check_prox.h */
        prox_quat q = prox_quat_axis_angle(prox_v3_normalize(check_rng_v3(&s, -1, 1)), angle);
        prox_vec3 dir = prox_v3_normalize(check_rng_v3(&s, -1, 1));
        double want = check_rng_uniform(&s, 0.002, 0.03), lo = 0, hi = 2;
        prox_xform xb = prox_xform_identity();
        for (int it = 0; it < 30; it++) { /* bisect the offset along dir to the wanted gap */
            double mid = 0.5 * (lo + hi);
            xb = prox_xform_from_pose(prox_v3_scale(dir, mid), q);
            if (run(prox_bvh_tree(bm), prox_bvh_tree(bm), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL).value < want)
                lo = mid;
            else
                hi = mid;
        }
        xb = prox_xform_from_pose(prox_v3_scale(dir, hi), q);
        prox_result ex = run(prox_bvh_tree(bm), prox_bvh_tree(bm), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        prox_result r = run(prox_ist_tree(t), prox_ist_tree(t), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        prox_result rb = run(prox_ist_tree(bare), prox_ist_tree(bare), xb, prox_query_default(PROX_QUERY_DISTANCE), NULL);
        CHECK(r.value >= ex.value - 1e-9 && r.complete, "pose %d: IST %g below the exact %g", i, r.value, ex.value);
        worst = fmax(worst, (r.value - ex.value) / ex.value);
        exp_t += r.expansions, exp_b += rb.expansions;
    }
    printf("    comb near contact: worst error %.3g; expansions a query %llu (without thin spheres %llu)\n", worst, exp_t / 8,
           exp_b / 8);
    CHECK(worst < 0.005, "comb near contact: IST distance within 0.5%% of exact (worst %.3g)", worst);
    CHECK(exp_t * 4 < exp_b, "thin spheres make the queries near fins cheaper: %llu vs %llu expansions", exp_t, exp_b);
    prox_bvh_free(bm);
    prox_ist_free(bare), prox_ist_free(t), prox_ist_free(tt);
    prox_mesh_free(m), prox_mesh_free(tool);
}

/* A hollow ball whose wall (0.006) is thinner than the smallest sphere the
 * packing places (half a voxel, 0.0085 here): the packing places none, and
 * before the thin-part pass the build failed ("no inner sphere fits").
 * Now the wall is filled with thin spheres and the packing invariants
 * hold. Its sphere model is as coarse as its voxels (0.017, three wall
 * thicknesses): a ball pushed into the wall meets secondary spheres some
 * 0.07 apart, so one pose's volume is off by up to several times, but the
 * secondary volumes add up to the wall's, so over many poses the mean
 * volume is right: a ball of radius 0.05 centred in the wall, in 200
 * directions, against the exact volume of the ball inside the wall (two
 * lens volumes, a closed form). */
static void test_thin_shell(void)
{
    const double R = 0.5, r_in = 0.494;
    prox_mesh *outer = prox_mesh_make_sphere(R, 4), *inner = prox_mesh_make_sphere(r_in, 4);
    uint32_t nv = outer->vertex_count + inner->vertex_count, nt = outer->triangle_count + inner->triangle_count;
    prox_vec3 *v = malloc(sizeof *v * nv);
    uint32_t(*tr)[3] = malloc(sizeof *tr * nt);
    for (uint32_t i = 0; i < outer->vertex_count; i++)
        v[i] = outer->vertices[i];
    for (uint32_t i = 0; i < inner->vertex_count; i++)
        v[outer->vertex_count + i] = inner->vertices[i];
    for (uint32_t i = 0; i < outer->triangle_count; i++)
        for (int k = 0; k < 3; k++)
            tr[i][k] = outer->triangles[i][k];
    for (uint32_t i = 0; i < inner->triangle_count; i++) { /* the cavity's faces point inward: reversed */
        uint32_t *o = tr[outer->triangle_count + i], base = outer->vertex_count;
        o[0] = base + inner->triangles[i][0], o[1] = base + inner->triangles[i][2], o[2] = base + inner->triangles[i][1];
    }
    prox_mesh *m = prox_mesh_from_arrays(v, nv, (const uint32_t(*)[3])tr, nt);
    free(v), free(tr);
    prox_mesh_free(outer), prox_mesh_free(inner);
    CHECK(m && m->closed && m->oriented && m->volume > 0, "the hollow ball is closed and oriented (volume %g)", m ? m->volume : 0);
    prox_ist_def d = prox_ist_def_default();
    d.target_spheres = 2000, d.thin_gap = -1, d.progress = 0;
    prox_ist *t = NULL;
    char err[256];
    CHECK(prox_ist_build(m, &d, &t, err, sizeof err) != 0 && strstr(err, "no inner sphere fits"), "without the pass: refused (%s)",
          err);
    prox_ist_free(t);
    t = build(m, 2000);
    prox_mesh *bm = prox_mesh_make_sphere(0.05, 3);
    prox_ist *ball = build(bm, 50);
    if (t && ball) {
        CHECK(t->thin_spheres == t->sphere_count && t->sphere_count > 100, "a wall of thin spheres: %u", t->sphere_count);
        check_packing(m, t, "hollow ball", 0.05, 0.001);
        printf("    hollow ball: %u thin spheres, voxel %.4f, gap %.1f voxel sizes\n", t->sphere_count, t->voxel_size,
               t->surface_gap / t->voxel_size);
        const double mid = 0.5 * (R + r_in), exact = prox_lens_volume(R, 0.05, mid) - prox_lens_volume(r_in, 0.05, mid);
        unsigned long long s = 5;
        double sum = 0, lo = INFINITY, hi = 0;
        for (int i = 0; i < 200; i++) {
            prox_vec3 dir = prox_v3_normalize(check_rng_v3(&s, -1, 1));
            prox_xform xb = prox_xform_from_pose(prox_v3_scale(dir, mid), prox_quat_identity());
            prox_result r = run(prox_ist_tree(t), prox_ist_tree(ball), xb, prox_query_default(PROX_QUERY_PENVOL), NULL);
            sum += r.value, lo = fmin(lo, r.value), hi = fmax(hi, r.value);
        }
        printf("    ball in the wall: exact %.3g, IST mean %.3g (min %.3g, max %.3g) over 200 directions\n", exact, sum / 200, lo, hi);
        CHECK(lo > 0, "the ball meets the wall in every direction (min %g)", lo);
        CHECK(fabs(sum / 200 - exact) < 0.15 * exact, "mean penetration volume %g within 15%% of the exact %g", sum / 200, exact);
    }
    prox_ist_free(t), prox_ist_free(ball);
    prox_mesh_free(m), prox_mesh_free(bm);
}

/* The outer balls cover the surface: every point of every triangle lies in
 * the outer ball of some sphere (checked at the corners, edge midpoints and
 * random interior points of all triangles, against all spheres), no outer
 * ball is smaller than its inner sphere, and every node record's outer
 * lane encloses the outer balls below it. */
/* whether slab sl (normal, offsets; none: -inf to inf) holds point q, to
 * its float rounding */
static int slab_holds(const float *sl, prox_vec3 q)
{
    double o = sl[0] * q.x + sl[1] * q.y + sl[2] * q.z, tol = 1e-6 * (fabs(q.x) + fabs(q.y) + fabs(q.z) + 1);
    return o >= sl[3] - tol && o <= sl[4] + tol;
}

static void check_outer_cover(const prox_mesh *m, const prox_ist *t, const char *what)
{
    unsigned long long s = 5;
    int uncovered = 0, smaller = 0, loose = 0, outside_slabs = 0;
    for (uint32_t i = 0; i < t->sphere_count; i++)
        smaller += t->orad_leaf[i] < t->spheres[i].r;
    for (uint32_t f = 0; f < m->triangle_count; f++) {
        prox_vec3 P[3] = {m->vertices[m->triangles[f][0]], m->vertices[m->triangles[f][1]], m->vertices[m->triangles[f][2]]};
        for (int k = 0; k < 10; k++) {
            double u, v;
            if (k < 3)
                u = k == 1, v = k == 2;
            else if (k < 6)
                u = k == 4 ? 0.5 : k == 3 ? 0.5 : 0, v = k == 5 ? 0.5 : k == 4 ? 0.5 : 0;
            else {
                u = check_rng_uniform(&s, 0, 1), v = check_rng_uniform(&s, 0, 1);
                if (u + v > 1)
                    u = 1 - u, v = 1 - v;
            }
            prox_vec3 q = prox_v3_add(P[0], prox_v3_add(prox_v3_scale(prox_v3_sub(P[1], P[0]), u), prox_v3_scale(prox_v3_sub(P[2], P[0]), v)));
            int in = 0;
            for (uint32_t i = 0; i < t->sphere_count && !in; i++)
                in = prox_v3_dist(q, prox_v3(t->spheres[i].x, t->spheres[i].y, t->spheres[i].z)) <= t->orad_leaf[i];
            uncovered += !in;
            /* and in the slab of such a sphere (the distance query bounds
             * flat pieces by slab and ball together) */
            int in_slab = 0;
            for (uint32_t i = 0; i < t->sphere_count && !in_slab; i++)
                in_slab = prox_v3_dist(q, prox_v3(t->spheres[i].x, t->spheres[i].y, t->spheres[i].z)) <= t->orad_leaf[i] &&
                          slab_holds(t->slab[i], q);
            outside_slabs += !in_slab;
        }
    }
    /* node lanes: children's outer balls about the record centres enclose
     * the leaves' outer balls below */
    for (uint32_t n = 0; n < t->node_count; n++)
        for (int j = 0; j < 4; j++) {
            uint32_t c = t->nodes[n].child[j];
            if (c == IST_EMPTY)
                continue;
            prox_vec3 cc = prox_v3(t->nodes[n].cx[j], t->nodes[n].cy[j], t->nodes[n].cz[j]);
            uint32_t stack[64], k = 0;
            stack[k++] = c;
            while (k) {
                uint32_t id = stack[--k];
                if (id & IST_LEAF) {
                    const ist_sphere *q = &t->spheres[id & ~IST_LEAF];
                    loose += prox_v3_dist(cc, prox_v3(q->x, q->y, q->z)) + t->orad_leaf[id & ~IST_LEAF] > t->orad[n][j] * (1 + 1e-6);
                    continue;
                }
                for (int i = 0; i < 4; i++)
                    if (t->nodes[id].child[i] != IST_EMPTY && k < 64)
                        stack[k++] = t->nodes[id].child[i];
            }
        }
    CHECK(uncovered == 0, "%s: %d surface points outside every outer ball", what, uncovered);
    CHECK(smaller == 0, "%s: %d outer balls smaller than their inner spheres", what, smaller);
    CHECK(loose == 0, "%s: %d leaves outside their ancestors' outer lanes", what, loose);
    CHECK(outside_slabs == 0, "%s: %d surface points in no sphere's outer ball and slab", what, outside_slabs);
}

/* on a torus (the square grid of pieces; slivers, covered in strips:
 * test_slivers) */
static void test_outer_balls_cover(void)
{
    prox_mesh *m = prox_mesh_make_torus(0.3, 0.1, 40, 20);
    prox_ist *t = build(m, 600);
    check_outer_cover(m, t, "torus");
    prox_ist_free(t);
    prox_mesh_free(m);
}

/* A voxel size far below the mesh's. Versions 1 to 3 have their outer
 * radii derived at load (versions 1 to 5 their slabs), the triangles cut
 * into cells of half a voxel: at
 * 1e-7 on this box (0.6 long) the counts overflowed int and the cut ran
 * some 6e13 pieces (the loader hung). Loading refuses such a file at once, and the cut
 * itself stays within 256 x 256 pieces a triangle whatever the voxel size,
 * its balls still covering the surface. */
static void test_tiny_voxel_size(void)
{
    prox_mesh *m = prox_mesh_make_box(prox_v3(0.3, 0.2, 0.1));
    prox_ist *t = build(m, 100);
    if (!t) {
        prox_mesh_free(m);
        return;
    }
    char path[] = "/tmp/hapticd-istv-XXXXXX", p3[] = "/tmp/hapticd-istv3-XXXXXX", err[512] = "";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    CHECK(fd >= 0 && prox_ist_save(t, path, err, sizeof err) == 0, "save: %s", err);
    size_t full;
    unsigned char *b = check_read_file(path, &full);
    const size_t tail = sizeof(float[15]) * t->tritree.node_count + sizeof(float) * t->sphere_count +
                        sizeof(float[5]) * t->sphere_count; /* versions 4 to 6's blocks */
    CHECK(b != NULL && full > tail + 200, "read back");
    if (b) {
        const double tiny = 1e-7;
        memcpy(b + IST_FILE_DOUBLE_AT(2), &tiny, sizeof tiny); /* the voxel size */
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(b, 1, full, f) == full, "write");
        if (f)
            fclose(f);
        CHECK(write_as_version(path, 3, full - 4 - tail, p3) == 0, "write v3");
        double t0 = check_now_s();
        prox_ist *w = NULL;
        CHECK(prox_ist_load(p3, &w, err, sizeof err) == -1 && !w && strstr(err, "voxel size"), "version 3, voxel size 1e-7: %s", err);
        printf("    version 3 file, voxel size 1e-7: refused in %.3f ms\n", 1e3 * (check_now_s() - t0));
        prox_ist_free(w);
        unlink(p3);
        free(b);
    }
    unlink(path);
    /* the cut at such voxel sizes: bounded, and covering */
    const double sizes[3] = {1e-7, 1e-30, 0.0};
    for (int k = 0; k < 3; k++) {
        t->voxel_size = sizes[k];
        free(t->orad_leaf); /* computed again, not kept */
        t->orad_leaf = NULL;
        double t0 = check_now_s();
        CHECK(ist_outer_build(t) == 0 && ist_outer_lanes(t) == 0, "outer balls");
        printf("    outer balls at voxel size %g: %.3f s\n", sizes[k], check_now_s() - t0);
        check_outer_cover(m, t, "box, tiny voxels");
    }
    prox_ist_free(t);
    prox_mesh_free(m);
}

/* Every node of t's triangle box tree: its oriented box's axes orthonormal
 * and every triangle corner below the node within its extents (NaN counts
 * as outside); 1 when all hold, a failed check naming `what` otherwise. */
static int check_tritree_obb(const prox_ist *t, const char *what)
{
    const ist_tritree *g = &t->tritree;
    int outside = 0, bad_axes = 0;
    for (uint32_t b = 0; b < g->node_count; b++) {
        uint32_t l = b, r = b;
        while (!(g->nodes[l].a & IST_BOX_LEAF))
            l = g->nodes[l].a;
        while (!(g->nodes[r].a & IST_BOX_LEAF))
            r = g->nodes[r].b;
        const float *o = g->obb[b];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double d = (double)o[3 * i] * o[3 * j] + (double)o[3 * i + 1] * o[3 * j + 1] + (double)o[3 * i + 2] * o[3 * j + 2];
                bad_axes += !(fabs(d - (i == j)) < 1e-6);
            }
        for (uint32_t e = g->nodes[l].a & ~IST_BOX_LEAF; e < (g->nodes[r].a & ~IST_BOX_LEAF) + g->nodes[r].b; e++)
            for (int v = 0; v < 3; v++) {
                prox_vec3 c = t->verts[t->tris[g->order[e]][v]];
                for (int i = 0; i < 3; i++) {
                    double d = o[3 * i] * c.x + o[3 * i + 1] * c.y + o[3 * i + 2] * c.z;
                    outside += !(d >= o[9 + i] && d <= o[12 + i]);
                }
            }
    }
    CHECK(g->obb && outside == 0 && bad_axes == 0, "%s: oriented boxes hold their triangles (%d corners outside, %d axis products off)",
          what, outside, bad_axes);
    return g->obb && outside == 0 && bad_axes == 0;
}

/* the triangle box tree behind the distance refinement: closest surface
 * point of random points near and far, against all triangles; a bound
 * below the distance finds nothing */
static void test_closest_point_tree(void)
{
    prox_mesh *m = prox_mesh_make_torus(0.3, 0.1, 48, 24);
    prox_ist *t = build(m, 300);
    check_tritree_obb(t, "torus");
    unsigned long long s = 21;
    int cuts = 0;
    for (int i = 0; i < 400; i++) {
        double r = i < 200 ? 0.5 : 3.0;
        prox_vec3 p = check_rng_v3(&s, -r, r);
        double want = check_mesh_surface_dist(m, p);
        uint32_t tri, tests = 0;
        prox_vec3 q;
        double got = ist_tritree_closest(t, p, INFINITY, &tri, &q, &tests, 0, NULL);
        CHECK(fabs(got - want) <= 1e-12 * (1 + want), "closest %.17g vs brute force %.17g", got, want);
        CHECK(tri < t->tri_count && fabs(prox_v3_dist(p, q) - got) <= 1e-12, "witness on triangle %u", tri);
        CHECK(tests < m->triangle_count / 4, "pruned: %u of %u triangles tested", tests, m->triangle_count);
        CHECK(ist_tritree_closest(t, p, want * 0.999, &tri, &q, NULL, 0, NULL) == INFINITY && tri == UINT32_MAX,
              "nothing closer than the bound");
        /* past its deadline the search answers with a real triangle found
         * so far, and says it was cut; one it finished is exact */
        int cut = 0;
        double late = ist_tritree_closest(t, p, INFINITY, &tri, &q, NULL, 1, &cut);
        const prox_vec3 *v = m->vertices;
        const uint32_t *tv = tri < m->triangle_count ? m->triangles[tri] : NULL;
        CHECK(tv && late >= want - 1e-12 && fabs(sqrt(prox_point_triangle_dist2(p, v[tv[0]], v[tv[1]], v[tv[2]], NULL)) - late) <= 1e-12,
              "late answer %g (exact %g) is triangle %u's distance", late, want, tri);
        CHECK(cut || fabs(late - want) <= 1e-12 * (1 + want), "a late search not cut answers exactly: %.17g vs %.17g", late, want);
        cuts += cut;
    }
    CHECK(cuts > 100, "%d of 400 late searches cut", cuts);
    prox_ist_free(t);
    prox_mesh_free(m);
}

/* Slivers: a tetrahedron about 1 across whose bottom edge is cut into
 * 2000 pieces, so its two faces at that edge are fans of 2000 triangles
 * 5e-4 wide and about 1 long (|n|^2 / (|ab|^2 |ac|^2) near 2.5e-7, below
 * the 1e-6 where the float ranking takes a triangle's edges only). Used for
 * the closest point (the closest triangle must still be found exactly,
 * near the edge where the slivers meet and above their faces) and the
 * outer balls (the build covers slivers in strips). */
static prox_mesh *make_slivers(void)
{
    enum { N = 2000 };
    prox_vec3 v[N + 3];
    uint32_t tris[2 * N + 2][3];
    for (int k = 0; k <= N; k++)
        v[k] = prox_v3((double)k / N, 0, 0);
    const uint32_t apex = N + 1, top = N + 2;
    v[apex] = prox_v3(0.5, 1, 0);
    v[top] = prox_v3(0.5, 0.3, 0.5);
    uint32_t nt = 0;
    for (uint32_t k = 0; k < N; k++) {
        tris[nt][0] = apex, tris[nt][1] = k + 1, tris[nt][2] = k, nt++; /* bottom, facing -z */
        tris[nt][0] = top, tris[nt][1] = k, tris[nt][2] = k + 1, nt++;
    }
    tris[nt][0] = top, tris[nt][1] = apex, tris[nt][2] = 0, nt++;
    tris[nt][0] = top, tris[nt][1] = N, tris[nt][2] = apex, nt++;
    prox_mesh *m = prox_mesh_from_arrays(v, N + 3, (const uint32_t(*)[3])tris, nt);
    CHECK(m && m->closed && m->volume > 0, "the sliver tetrahedron is closed and outward");
    return m;
}

/* the distance from p to t's surface over every triangle
 * (prox_point_triangle_dist2, not the tree's own test) */
static double brute_tri_dist(const prox_ist *t, prox_vec3 p) { return check_tris_surface_dist(t->verts, t->tris, t->tri_count, p); }

/* ist_tritree_closest (far: ist_tritree_closest_far) at p against every
 * triangle: the distance, a witness on the triangle it names, and nothing
 * found below that distance (nor at it: the bound is exclusive) while just
 * above it the same triangle is */
static void check_closest_at(const prox_ist *t, prox_vec3 p, int far, const char *what)
{
    double want = brute_tri_dist(t, p);
    uint32_t tri = 0, tri2 = 0;
    prox_vec3 q = p, q2;
    double got = far ? ist_tritree_closest_far(t, p, INFINITY, &tri, &q, NULL, 0, NULL)
                     : ist_tritree_closest(t, p, INFINITY, &tri, &q, NULL, 0, NULL);
    const double tol = 1e-12 * (1 + want);
    CHECK(fabs(got - want) <= tol, "%s: closest %.17g vs brute force %.17g at (%g, %g, %g)", what, got, want, p.x, p.y, p.z);
    CHECK(tri < t->tri_count && fabs(prox_v3_dist(p, q) - got) <= tol && fabs(check_tri_dist(t->verts, t->tris[tri], p) - got) <= tol,
          "%s: witness on triangle %u", what, tri);
    if (!far)
        return;
    /* the far search answers exactly: bound = the answer finds nothing,
     * the next double up finds it; half the answer prunes at the root */
    CHECK(ist_tritree_closest_far(t, p, got, &tri2, &q2, NULL, 0, NULL) == INFINITY && tri2 == UINT32_MAX, "%s: nothing below %.17g", what,
          got);
    CHECK(ist_tritree_closest_far(t, p, 0.5 * got, &tri2, &q2, NULL, 0, NULL) == INFINITY && tri2 == UINT32_MAX,
          "%s: nothing below half of it", what);
    CHECK(ist_tritree_closest_far(t, p, nextafter(got, INFINITY), &tri2, &q2, NULL, 0, NULL) == got && tri2 == tri,
          "%s: the bound just above finds triangle %u (%u)", what, tri, tri2);
}

/* ist_tritree_reach against every triangle. With tol the float margins
 * (twice the search's own), the triangles "in" (strictly within radius -
 * tol of p, reaching past above + tol) and "maybe" (within radius + tol,
 * past above - tol): every kept one is a maybe, kept once, its distance
 * within tol; as many as cap allows of the "in" ones are kept, and the
 * ones left out lie no nearer than those kept; *most bounds every "in"
 * reach from above and no maybe's by more than tol. Returns 1 when more
 * were "in" than cap kept (cap > 0). */
static int check_reach(const prox_ist *t, prox_vec3 p, double radius, prox_vec3 u, double level, double above, uint32_t cap,
                       const char *what)
{
    enum { CAP = 64 };
    uint32_t tri[CAP];
    float dist[CAP];
    double most = NAN;
    uint32_t n = ist_tritree_reach(t, p, radius, u, level, above, cap, tri, dist, &most, 0, NULL);
    const double tol = 2 * 4e-6 * ist_coord_scale(&t->tritree, p, fabs(level)) + 1e-9;
    uint8_t *kept = calloc(t->tri_count, 1);
    int bad_kept = 0, dup = 0, nearer_left = 0;
    uint32_t n_in = 0;
    double far_kept = -INFINITY, in_reach = -INFINITY, maybe_reach = -INFINITY;
    for (uint32_t k = 0; k < n && k < CAP; k++)
        far_kept = fmax(far_kept, dist[k]);
    for (uint32_t k = 0; k < n && k < CAP && kept; k++) {
        if (tri[k] >= t->tri_count) {
            bad_kept++;
            continue;
        }
        dup += kept[tri[k]]++ != 0;
    }
    for (uint32_t i = 0; i < t->tri_count && kept; i++) {
        const prox_vec3 *v = t->verts;
        const prox_vec3 a = v[t->tris[i][0]], b = v[t->tris[i][1]], c = v[t->tris[i][2]];
        double d = check_tri_dist(v, t->tris[i], p);
        double r = fmax(fmax(prox_v3_dot(u, a), prox_v3_dot(u, b)), prox_v3_dot(u, c)) - level;
        int in = d < radius - tol && r > above + tol, maybe = d <= radius + tol && r > above - tol;
        n_in += in;
        if (in)
            in_reach = fmax(in_reach, r);
        if (maybe)
            maybe_reach = fmax(maybe_reach, r);
        if (kept[i]) {
            uint32_t k = 0;
            while (tri[k] != i)
                k++;
            bad_kept += !maybe || !(fabs(dist[k] - d) <= tol);
        } else if (in && d < far_kept - tol)
            nearer_left++;
    }
    uint32_t want_n = n_in < cap ? n_in : cap;
    CHECK(kept && n <= cap && n >= want_n && bad_kept == 0 && dup == 0 && nearer_left == 0,
          "%s: %u kept (cap %u, %u in range): %d not in range or off in distance, %d twice, %d nearer ones left out", what, n, cap, n_in,
          bad_kept, dup, nearer_left);
    CHECK(most >= above && most >= in_reach && most <= fmax(above, maybe_reach) + tol, "%s: most %.9g, largest reach %.9g (above %.9g)",
          what, most, in_reach, above);
    free(kept);
    return cap > 0 && n_in > cap;
}

/* The triangle box tree's range query (the precise distance's search,
 * ist_tritree_reach): the triangles near a point that reach past a plane,
 * against every triangle, with caps below and above what is in range (a
 * full list keeps the nearest: the scalar and the four-lane search for
 * its farthest); inputs it cannot rank answer nothing; past its deadline
 * it stops, says so and keeps only triangles in range. */
static void test_tritree_reach(void)
{
    prox_mesh *m = prox_mesh_make_torus(0.3, 0.1, 48, 24);
    prox_ist *t = build(m, 300);
    static const uint32_t caps[] = {0, 1, 3, 7, 8, 13, 40};
    int full_small = 0, full_wide = 0;
    unsigned long long s = 31;
    for (int i = 0; i < 280; i++) {
        prox_vec3 p = check_rng_v3(&s, -0.45, 0.45);
        double radius = check_rng_uniform(&s, 0.05, 0.35);
        prox_vec3 u = prox_v3_normalize(check_rng_v3(&s, -1, 1));
        double level = prox_v3_dot(u, p) + check_rng_uniform(&s, -0.1, 0.1), above = check_rng_uniform(&s, -0.05, 0.1);
        uint32_t cap = caps[i % 7];
        char what[64];
        snprintf(what, sizeof what, "query %d", i);
        int full = check_reach(t, p, radius, u, level, above, cap, what);
        full_small += full && cap < 8, full_wide += full && cap >= 8;
    }
    CHECK(full_small > 20 && full_wide > 20, "full lists: %d with caps below 8, %d from 8 on", full_small, full_wide);
    /* nothing to rank: no radius, coordinates beyond floats */
    uint32_t tri[8];
    float dist[8];
    const prox_vec3 u = prox_v3(0, 0, 1), o = prox_v3(0.4, 0, 0); /* a corner of the torus */
    const struct {
        prox_vec3 p;
        double radius, level, above;
    } none[] = {{o, 0, 0, -1}, {o, NAN, 0, -1}, {o, 1e31, 0, -1}, {prox_v3(1e31, 0, 0), 1, 0, -1}, {o, 1, 1e31, -1}, {o, 1, 0, -1e31}};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        double most = 0;
        CHECK(ist_tritree_reach(t, none[i].p, none[i].radius, u, none[i].level, none[i].above, 8, tri, dist, &most, 0, NULL) == 0 &&
                  most == none[i].above,
              "case %zu: nothing kept, most %g is `above`", i, most);
    }
    /* past the deadline: cut, with triangles in range only */
    int cut = 0;
    double most;
    uint32_t n = ist_tritree_reach(t, o, 1.0, u, -1.0, 0.0, 8, tri, dist, &most, 1, &cut);
    int in_range = n <= 8;
    for (uint32_t k = 0; k < n && k < 8; k++)
        in_range &= tri[k] < t->tri_count;
    CHECK(cut == 1 && in_range, "a late range query stops (cut %d) with %u real triangles", cut, n);
    prox_ist_free(t);
    prox_mesh_free(m);
}

/* A prox_ist holding only triangles and their box tree (what the
 * closest-point and range queries read: vertices, triangles, flat marks
 * as ist_derive sets them, the tree), for triangle sets no closed mesh
 * has. Free with soup_free. */
static int soup_init(prox_ist *t, prox_vec3 *v, uint32_t nv, uint32_t (*tris)[3], uint32_t nt)
{
    memset(t, 0, sizeof *t);
    t->verts = v, t->vert_count = nv, t->tris = tris, t->tri_count = nt;
    t->tri_flat = calloc(IST_TRI_FLAT_BYTES(nt), 1);
    for (uint32_t i = 0; i < nt && t->tri_flat; i++)
        t->tri_flat[i >> 3] |= (uint8_t)(point_triangle_flat(v[tris[i][0]], v[tris[i][1]], v[tris[i][2]]) << (i & 7));
    int ok = t->tri_flat && ist_tritree_build(t) == 0 && ist_tritree_widen(&t->tritree) == 0;
    CHECK(ok, "the box tree of %u triangles", nt);
    return ok;
}

static void soup_free(prox_ist *t)
{
    ist_tritree_free(&t->tritree);
    free(t->tri_flat);
}

/* 1 when t's tree orders every triangle once */
static int order_is_permutation(const prox_ist *t)
{
    uint8_t *seen = calloc(t->tri_count ? t->tri_count : 1, 1);
    int ok = seen != NULL;
    for (uint32_t i = 0; i < t->tri_count && ok; i++)
        ok = t->tritree.order[i] < t->tri_count && !seen[t->tritree.order[i]]++;
    free(seen);
    return ok;
}

/* a point whose coordinates are multiples of 1/64 in [-0.5, 0.5], drawn
 * x, y, z in turn (exact in floats, and so are their sums) */
static prox_vec3 dyadic_v3(unsigned long long *s)
{
    double c[3];
    for (int k = 0; k < 3; k++)
        c[k] = (double)((int)(check_rng_next(s) % 65) - 32) / 64;
    return prox_v3(c[0], c[1], c[2]);
}

/* Box trees of unusual triangle sets, against every triangle: a
 * tetrahedron (a tree of one leaf, one wide node); triangles sharing one
 * centroid (no split separates them: the median split); a leaf of a
 * triangle and its reverse (normals cancel, the longest edge along the
 * fallback axis: the leaf's box axes from a coordinate axis); no
 * triangles (every query answers nothing). */
static void test_tritree_small_and_degenerate(void)
{
    unsigned long long s = 77;
    /* the tetrahedron, through the real build */
    const prox_vec3 tv[4] = {prox_v3(0, 0, 0), prox_v3(1, 0, 0), prox_v3(0, 1, 0), prox_v3(0, 0, 1)};
    const uint32_t tt[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};
    prox_mesh *m = prox_mesh_from_arrays(tv, 4, tt, 4);
    prox_ist *t = m ? build(m, 20) : NULL;
    CHECK(t && t->tritree.node_count == 1 && t->tritree.wide_count == 1 && t->tritree.wleaf_count == 1,
          "a tetrahedron's box tree: one leaf, one wide node");
    if (t) {
        check_tritree_obb(t, "tetrahedron");
        for (int i = 0; i < 100; i++)
            check_closest_at(t, check_rng_v3(&s, -1, 2), i & 1, "tetrahedron");
        for (int i = 0; i < 40; i++) {
            prox_vec3 p = check_rng_v3(&s, -0.5, 1.5), u = prox_v3_normalize(check_rng_v3(&s, -1, 1));
            check_reach(t, p, 1.5, u, prox_v3_dot(u, p) - 0.5, check_rng_uniform(&s, -0.5, 0.5), (uint32_t)(i % 4), "tetrahedron reach");
        }
    }
    prox_ist_free(t);
    prox_mesh_free(m);
    /* 24 triangles whose corners sum to the same point exactly (dyadic
     * coordinates: the same centroid in doubles and floats), among 40
     * random ones */
    enum { NSHARED = 24, NRANDOM = 40, NT = NSHARED + NRANDOM };
    prox_vec3 v[3 * NT];
    uint32_t tris[NT][3];
    const prox_vec3 c0 = prox_v3(0.25, -0.5, 0.125);
    for (uint32_t i = 0; i < NT; i++) {
        prox_vec3 a, b, c;
        if (i < NSHARED) {
            a = dyadic_v3(&s), b = dyadic_v3(&s);
            c = prox_v3_add(c0, prox_v3_scale(prox_v3_add(a, b), -1));
            a = prox_v3_add(c0, a), b = prox_v3_add(c0, b);
        } else {
            a = check_rng_v3(&s, -1, 1);
            b = prox_v3_add(a, check_rng_v3(&s, -0.2, 0.2)), c = prox_v3_add(a, check_rng_v3(&s, -0.2, 0.2));
        }
        v[3 * i] = a, v[3 * i + 1] = b, v[3 * i + 2] = c;
        tris[i][0] = 3 * i, tris[i][1] = 3 * i + 1, tris[i][2] = 3 * i + 2;
    }
    prox_ist soup;
    if (soup_init(&soup, v, 3 * NT, tris, NT)) {
        CHECK(order_is_permutation(&soup), "shared centroids: every triangle in the tree once");
        check_tritree_obb(&soup, "shared centroids");
        for (int i = 0; i < 200; i++)
            check_closest_at(&soup, i < 100 ? prox_v3_add(c0, check_rng_v3(&s, -0.6, 0.6)) : check_rng_v3(&s, -1.5, 1.5), i & 1,
                             "shared centroids");
    }
    soup_free(&soup);
    /* a triangle and its reverse, longest edge along x: their normals
     * cancel, so the leaf's first axis is x, the edge's direction */
    prox_vec3 w[3] = {prox_v3(0, 0, 0), prox_v3(2, 0, 0), prox_v3(0.5, 0.5, 0)};
    uint32_t pair[2][3] = {{0, 1, 2}, {0, 2, 1}};
    if (soup_init(&soup, w, 3, pair, 2)) {
        CHECK(soup.tritree.node_count == 1 && soup.tritree.wide_count == 1, "two triangles: one leaf, one wide node");
        if (check_tritree_obb(&soup, "a triangle and its reverse")) {
            const float *o = soup.tritree.obb[0];
            CHECK(fabsf(o[0]) == 1 && o[1] == 0 && o[2] == 0, "a triangle and its reverse: the leaf's first axis (%g, %g, %g), want x", o[0],
                  o[1], o[2]);
        }
        for (int i = 0; i < 100; i++)
            check_closest_at(&soup, check_rng_v3(&s, -1, 3), i & 1, "a triangle and its reverse");
    }
    soup_free(&soup);
    /* no triangles */
    if (soup_init(&soup, w, 3, pair, 0)) {
        uint32_t tri = 0;
        prox_vec3 q;
        double most = 0;
        CHECK(soup.tritree.node_count == 0 && !soup.tritree.wide && ist_tritree_obb(&soup.tritree) == 0 && !soup.tritree.obb,
              "no triangles: no tree");
        CHECK(ist_tritree_closest(&soup, prox_v3(0, 0, 0), INFINITY, &tri, &q, NULL, 0, NULL) == INFINITY && tri == UINT32_MAX,
              "no triangles: no closest one");
        tri = 0;
        CHECK(ist_tritree_closest_far(&soup, prox_v3(0, 0, 0), INFINITY, &tri, &q, NULL, 0, NULL) == INFINITY && tri == UINT32_MAX,
              "no triangles: none far either");
        CHECK(ist_tritree_reach(&soup, prox_v3(0, 0, 0), 1, prox_v3(0, 0, 1), 0, -1, 4, &tri, NULL, &most, 0, NULL) == 0 && most == -1,
              "no triangles: none in range");
    }
    soup_free(&soup);
}

/* Far from the mesh (ist_far.c, in doubles): the exact closest triangle
 * at 10, 1e3 and 1e6 against every triangle, the bound exclusive and
 * exact; a point on the torus's axis, equally far from a whole ring of
 * triangles, past its deadline still answers with a real triangle's exact
 * distance and says it was cut; beyond floats, nothing. Near the mesh the
 * far search agrees with the float one. */
static void test_tritree_far(void)
{
    prox_mesh *m = prox_mesh_make_torus(0.3, 0.1, 48, 24);
    prox_ist *t = build(m, 300);
    unsigned long long s = 43;
    const double K[4] = {0.5, 10, 1e3, 1e6};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 25; i++) {
            prox_vec3 dir = prox_v3_normalize(check_rng_v3(&s, -1, 1));
            char what[48];
            snprintf(what, sizeof what, "at %g", K[k]);
            check_closest_at(t, prox_v3_add(prox_v3_scale(dir, K[k]), check_rng_v3(&s, -0.5, 0.5)), 1, what);
        }
    const prox_vec3 axis = prox_v3(0, 0, 1e4);
    const double want = brute_tri_dist(t, axis);
    uint32_t tri = UINT32_MAX;
    prox_vec3 q;
    int cut = 0;
    double late = ist_tritree_closest_far(t, axis, INFINITY, &tri, &q, NULL, 1, &cut);
    CHECK(cut == 1 && tri < t->tri_count && late >= want * (1 - 1e-12) &&
              fabs(late - check_tri_dist(t->verts, t->tris[tri], axis)) <= 1e-12 * late,
          "late: cut %d, triangle %u at %.17g (exact %.17g)", cut, tri, late, want);
    CHECK(ist_tritree_closest_far(t, prox_v3(0, 0, 1e31), INFINITY, &tri, &q, NULL, 0, NULL) == INFINITY && tri == UINT32_MAX,
          "beyond floats: nothing");
    prox_ist_free(t);
    prox_mesh_free(m);
}

/* one tree of the sliver mesh for both checks: outer balls, closest point */
static void test_slivers(void)
{
    prox_mesh *m = make_slivers();
    prox_ist *t = build_grid(m, 200, 20000);
    check_outer_cover(m, t, "slivers");
    unsigned long long s = 5;
    int slivers = 0;
    for (int i = 0; i < 300; i++) {
        /* near the cut edge (y = 0, z = 0), and above and below the fans */
        double x = check_rng_uniform(&s, -0.1, 1.1), h = i < 150 ? 1e-4 : 0.05;
        double z = check_rng_uniform(&s, -h, h), y = check_rng_uniform(&s, -h, h); /* z first: check_prox.h */
        prox_vec3 p = prox_v3(x, y, z);
        double want = check_mesh_surface_dist(m, p);
        uint32_t tri;
        prox_vec3 q;
        double got = ist_tritree_closest(t, p, INFINITY, &tri, &q, NULL, 0, NULL);
        CHECK(fabs(got - want) <= 1e-12 * (1 + want), "closest %.17g vs brute force %.17g at (%g, %g, %g)", got, want, p.x, p.y, p.z);
        CHECK(tri < t->tri_count && fabs(prox_v3_dist(p, q) - got) <= 1e-12, "witness on triangle %u", tri);
        int on_edge = 0;
        for (int c = 0; tri < t->tri_count && c < 3; c++)
            on_edge += t->verts[t->tris[tri][c]].y == 0 && t->verts[t->tris[tri][c]].z == 0;
        slivers += on_edge == 2;
    }
    CHECK(slivers > 100, "most answers are slivers (%d of 300)", slivers);
    prox_ist_free(t);
    prox_mesh_free(m);
}

static void test_force_continuity_and_combined(void)
{
    prox_mesh *ma = prox_mesh_make_box(prox_v3(0.5, 0.5, 0.1)), *mb = prox_mesh_make_sphere(0.1, 2);
    prox_ist *A = build(ma, 800), *B = build(mb, 200);
    prox_vec3 prev = {0, 0, 0};
    double max_jump = 0, max_f = 0;
    int separated = 0, overlapping = 0;
    for (int i = 0; i <= 200; i++) {
        double z = 0.25 - 0.001 * i; /* from 0.05 above the top face to 0.15 into it */
        prox_xform xb = prox_xform_from_pose(prox_v3(0.05, -0.03, z), prox_quat_identity());
        prox_object_pair p = {prox_ist_tree(A), prox_ist_tree(B), prox_xform_identity(), xb, NULL};
        prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
        prox_result r;
        CHECK(prox_query_combined(engine, &q, &p, 1, &r) == 0, "combined");
        if (r.flags & PROX_RESULT_OVERLAP) {
            overlapping++;
            CHECK(r.value <= 0, "overlap reports -volume");
            CHECK(r.force.z > 0, "the force pushes B out (up): %g", r.force.z);
        } else {
            separated++;
            CHECK(r.value > 0, "separated reports the distance");
        }
        double jump = prox_v3_dist(r.force, prev);
        max_jump = fmax(max_jump, jump);
        max_f = fmax(max_f, prox_v3_len(r.force));
        prev = r.force;
    }
    CHECK(separated > 20 && overlapping > 100, "both regimes seen (%d, %d)", separated, overlapping);
    CHECK(max_jump < 0.1 * max_f, "force continuous: largest step %g of max %g", max_jump, max_f);
    prox_ist_free(A);
    prox_ist_free(B);
    prox_mesh_free(ma);
    prox_mesh_free(mb);
}

/* The sphere model against an exact intersection volume: two copies of a
 * box, shifted (the intersection is a box) and turned by quarter turns
 * (faces stay parallel, the spheres do not line up with their copies).
 * Light overlaps are where the model is weakest: the overlap lies along the
 * faces, where the voxels are cut and round spheres meet flat faces. */
static void test_penvol_vs_exact_boxes(void)
{
    const double hx = 0.3, hy = 0.2, hz = 0.15;
    prox_mesh *m = prox_mesh_make_box(prox_v3(hx, hy, hz));
    prox_ist *t = build(m, 1000);
    if (!t) {
        prox_mesh_free(m);
        return;
    }
    unsigned long long seed = 17;
    double worst = 0, sum = 0;
    int n = 0;
    for (int i = 0; i < 40; i++) {
        /* a half turn about x, y or z (or none) keeps the box in place */
        int axis = i % 4;
        prox_quat q = axis == 0 ? prox_quat_axis_angle(prox_v3(1, 0, 0), 0) : prox_quat_axis_angle(prox_v3(axis == 1, axis == 2, axis == 3), M_PI);
        /* a slab: 10-30% overlap along one axis, 4 to 25 voxels deep (thinner
         * slabs, shallower than the spheres along the face are large, come
         * out low: 5% of the thinnest side, -12% at one pose; 3%, -30%) */
        double f[3] = {1, 1, 1};
        f[i % 3] = check_rng_uniform(&seed, 0.1, 0.3);
        double sx = (check_rng_uniform(&seed, 0, 1) < 0.5 ? -1 : 1) * 2 * hx * (1 - f[0]);
        double sy = (check_rng_uniform(&seed, 0, 1) < 0.5 ? -1 : 1) * 2 * hy * (1 - f[1]);
        double sz = (check_rng_uniform(&seed, 0, 1) < 0.5 ? -1 : 1) * 2 * hz * (1 - f[2]);
        double exact = 8 * hx * hy * hz * f[0] * f[1] * f[2];
        prox_xform xb = prox_xform_from_pose(prox_v3(sx, sy, sz), q);
        prox_result r = run(prox_ist_tree(t), prox_ist_tree(t), xb, prox_query_default(PROX_QUERY_PENVOL), NULL);
        double e = fabs(r.value - exact) / exact;
        worst = fmax(worst, e), sum += e, n++;
        CHECK(e < 0.05, "pose %d: penetration volume %g, exact %g (overlap %.3f %.3f %.3f)", i, r.value, exact, f[0], f[1], f[2]);
    }
    printf("    boxes: sphere model vs exact intersection volume: mean error %.2f%%, worst %.2f%%\n", 100 * sum / n, 100 * worst);
    CHECK(sum / n < 0.015, "mean error %.4f", sum / n);
    prox_ist_free(t);
    prox_mesh_free(m);
}

static void test_penvol_front_correct(void)
{
    prox_mesh *ma = prox_mesh_make_torus(0.4, 0.12, 48, 24), *mb = prox_mesh_make_sphere(0.15, 3);
    prox_ist *A = build(ma, 3000), *B = build(mb, 800);
    static prox_front_entry store[1 << 16];
    prox_cache cache;
    memset(&cache, 0, sizeof cache);
    cache.front = store;
    cache.front_capacity = 1 << 16;
    uint64_t cold_ns = 0, warm_ns = 0;
    int replayed = 0;
    for (int i = 0; i < 150; i++) {
        /* the ball slides along the ring, half sunk into it, then jumps
         * (the front must expire: a start from the roots again) */
        double a = 0.0008 * i + (i >= 100 ? 0.5 : 0.0);
        prox_xform xb = prox_xform_from_pose(prox_v3(0.4 * cos(a), 0.4 * sin(a), 0.17 - 0.0001 * i), prox_quat_axis_angle(prox_v3(0, 0, 1), a));
        prox_query q = prox_query_default(PROX_QUERY_PENVOL);
        q.use_cache = 0;
        uint64_t t0 = prox_now_ns();
        prox_result rc = run(prox_ist_tree(A), prox_ist_tree(B), xb, q, NULL);
        uint64_t t1 = prox_now_ns();
        q.use_cache = 1;
        int had_front = cache.front_valid != 0 && cache.front_margin > 0;
        prox_result rw = run(prox_ist_tree(A), prox_ist_tree(B), xb, q, &cache);
        uint64_t t2 = prox_now_ns();
        /* a replay runs no traversal from the roots: no queue pushes */
        replayed += had_front && rw.queue_pushes == 0;
        CHECK(rc.value > 0 && fabs(rw.value - rc.value) <= 1e-9 * rc.value, "front gives the same volume: %g vs %g", rw.value, rc.value);
        CHECK(prox_v3_len(prox_v3_sub(rw.force, rc.force)) <= 1e-9 * rc.value && prox_v3_len(prox_v3_sub(rw.torque, rc.torque)) <= 1e-9 * rc.value,
              "and the same force and torque");
        /* with a deadline (replayed if it fits, else Algorithm 3): bounds hold */
        prox_query bq = prox_query_default(PROX_QUERY_PENVOL);
        bq.deadline_ns = prox_now_ns() + 20000;
        bq.check_every = 1;
        prox_cache other = cache; /* leave the path's cache alone */
        static prox_front_entry store2[1 << 16];
        other.front = store2;
        memcpy(store2, store, sizeof store);
        prox_result rb = run(prox_ist_tree(A), prox_ist_tree(B), xb, bq, &other);
        CHECK(rb.lower <= rc.value * (1 + 1e-9) && rb.upper >= rc.value * (1 - 1e-9), "budgeted [%g, %g] brackets %g", rb.lower, rb.upper,
              rc.value);
        if (i > 0)
            cold_ns += t1 - t0, warm_ns += t2 - t1;
    }
    CHECK(replayed > 60, "the front was replayed (%d of 150)", replayed); /* ~2 of 3 at 1.5 mm margin, ~0.5 mm steps */
    /* measured, not asserted (speed belongs to the benchmarks) */
    fprintf(stderr, "    penvol coherence: %.1f us per query from the roots, %.1f us with the contact front (%d of 150 replayed)\n",
            cold_ns / 149e3, warm_ns / 149e3, replayed);
    prox_ist_free(A);
    prox_ist_free(B);
    prox_mesh_free(ma);
    prox_mesh_free(mb);
}

/* A handler that finds the deadline passed stops the query: the engine
 * reads its own clock only every check_every pops, and before it did, every
 * pair popped in between still ran its depth-first expansions (with
 * check_every at its maximum the budgeted query did the whole traversal,
 * reported complete). */
/* the bank's inner sphere tree penetration-volume handler, wrapped: its
 * expansions, and those that began at or after the query's deadline */
static struct {
    prox_handler inner;
    uint64_t deadline_ns;
    uint32_t calls, late_calls;
} pv_watch;

static void watched_expand(prox_ctx *c, const prox_pairstate *p, uint32_t na, uint32_t nb)
{
    pv_watch.late_calls += prox_now_ns() >= pv_watch.deadline_ns;
    pv_watch.calls++;
    pv_watch.inner.expand(c, p, na, nb);
}

static void test_penvol_cut_stops_query(void)
{
    /* a torus against itself moved a little: many small overlapping pairs
     * (a ball's central sphere would contain most of them at once) */
    prox_mesh *m = prox_mesh_make_torus(0.3, 0.1, 32, 16);
    prox_ist *A = m ? build(m, 600) : NULL;
    CHECK(A != NULL, "torus and its tree");
    if (!A) {
        prox_mesh_free(m);
        return;
    }
    prox_xform xb = prox_xform_from_pose(prox_v3(0.03, 0.02, 0.01), prox_quat_identity());
    /* the full query's least time of three (a stall only lengthens one) */
    prox_result full = run(prox_ist_tree(A), prox_ist_tree(A), xb, prox_query_default(PROX_QUERY_PENVOL), NULL);
    double t_full = full.elapsed_us;
    for (int k = 0; k < 2; k++)
        t_full = fmin(t_full, run(prox_ist_tree(A), prox_ist_tree(A), xb, prox_query_default(PROX_QUERY_PENVOL), NULL).elapsed_us);
    CHECK(full.complete && full.expansions > 200, "full query: %llu expansions", (unsigned long long)full.expansions);
    /* both traversal orders: the default (PROX_ORDER_AUTO) takes a budgeted
     * penetration-volume query best first (Algorithm 3's priority),
     * PROX_ORDER_DEPTH_FIRST the pair pushed last; the handlers' cuts
     * (push_vol's clock read, penvol_dfs's) must stop either */
    const struct {
        uint32_t order;
        const char *name;
    } orders[2] = {{PROX_ORDER_AUTO, "default order (best first)"}, {PROX_ORDER_DEPTH_FIRST, "depth first"}};
    const uint32_t ist = prox_ist_tree(A)->type;
    pv_watch.inner = *prox_bank_get(bank, ist, ist, PROX_QUERY_PENVOL);
    prox_handler watched = pv_watch.inner;
    watched.expand = watched_expand;
    prox_bank_set(bank, ist, ist, PROX_QUERY_PENVOL, &watched);
    for (int o = 0; o < 2; o++) {
        int cut = 0;
        /* budgets of a fifth to a twentieth of the full query: it cannot
         * finish in them, so a complete answer means the deadline went
         * unheeded */
        for (int div = 20; div >= 5; div /= 2) {
            prox_query bq = prox_query_default(PROX_QUERY_PENVOL);
            bq.order = orders[o].order;
            bq.check_every = UINT32_MAX; /* the engine reads the clock once, at its first pop */
            double us = t_full / div;
            bq.deadline_ns = prox_now_ns() + (uint64_t)(us * 1000);
            pv_watch.deadline_ns = bq.deadline_ns;
            pv_watch.calls = pv_watch.late_calls = 0;
            prox_result r = run(prox_ist_tree(A), prox_ist_tree(A), xb, bq, NULL);
            CHECK(r.lower <= full.value * (1 + 1e-5) && r.upper >= full.value * (1 - 1e-5), "%s, %.1f us: [%g, %g] brackets %g",
                  orders[o].name, us, r.lower, r.upper, full.value);
            CHECK(!r.complete && r.expansions < full.expansions, "%s, %.1f us of %.1f: complete %d after %llu of %llu expansions",
                  orders[o].name, us, t_full, r.complete, (unsigned long long)r.expansions, (unsigned long long)full.expansions);
            /* the engine stops after the expansion in which a handler saw
             * the deadline pass (it reads the clock itself only once here),
             * and the handlers read it within a few pushes or depth-first
             * steps: at most one expansion more may begin late, when the
             * deadline passes after an expansion's last read (measured: 0
             * or 1; with either cut removed, 9 to 68) */
            CHECK(pv_watch.late_calls <= 2, "%s, %.1f us: %u of the handler's %u expansions began after the deadline", orders[o].name,
                  us, pv_watch.late_calls, pv_watch.calls);
            printf("    %s, %.1f us of %.1f: %llu of %llu expansions, %llu of %llu leaf tests, %u handler calls, %u after the deadline\n",
                   orders[o].name, us, t_full, (unsigned long long)r.expansions, (unsigned long long)full.expansions,
                   (unsigned long long)r.leaf_tests, (unsigned long long)full.leaf_tests, pv_watch.calls, pv_watch.late_calls);
            cut += r.expansions > 0;
        }
        CHECK(cut > 0, "%s: no budget got past the engine's first clock read (full query %.0f us)", orders[o].name, t_full);
    }
    prox_bank_set(bank, ist, ist, PROX_QUERY_PENVOL, &pv_watch.inner);
    prox_ist_free(A);
    prox_mesh_free(m);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_find_prox(argv[0], prox_bin, sizeof prox_bin);
    bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    engine = prox_engine_create(NULL, bank);
    RUN_TEST(test_lens_volume);
    RUN_TEST(test_packing_invariants);
    RUN_TEST(test_refuses_open_mesh);
    RUN_TEST(test_files);
    RUN_TEST(test_sphere_queries);
    RUN_TEST(test_penvol_vs_brute);
    RUN_TEST(test_penvol_vs_exact_boxes);
    RUN_TEST(test_outer_balls_cover);
    RUN_TEST(test_tiny_voxel_size);
    RUN_TEST(test_closest_point_tree);
    RUN_TEST(test_slivers);
    RUN_TEST(test_tritree_reach);
    RUN_TEST(test_tritree_small_and_degenerate);
    RUN_TEST(test_tritree_far);
    RUN_TEST(test_distance_vs_mesh);
    RUN_TEST(test_distance_small_meshes);
    RUN_TEST(test_distance_many_places);
    RUN_TEST(test_distance_flat_plates);
    RUN_TEST(test_distance_crossing_fins);
    RUN_TEST(test_distance_precise);
    RUN_TEST(test_ist_cli);
    RUN_TEST(test_distance_far_apart);
    RUN_TEST(test_thin_parts);
    RUN_TEST(test_thin_shell);
    RUN_TEST(test_force_continuity_and_combined);
    RUN_TEST(test_penvol_front_correct);
    RUN_TEST(test_penvol_cut_stops_query);
    prox_engine_destroy(engine);
    prox_bank_destroy(bank);
    return check_summary(argv[0]);
}
