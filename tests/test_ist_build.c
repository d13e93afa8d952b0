/* test_ist_build.c - the inner sphere tree build against brute force:
 * the greedy packing replayed on the voxel centres (every sphere has the
 * largest free radius left), fine targets reached with every sphere inside
 * and disjoint, hierarchy bounds, determinism, and .ist files whose checksum
 * is right but whose indices are not. (test_ist.c covers the coarse
 * invariants on sphere, box and torus, and the queries.) */
#include <unistd.h>

#include "check.h"
#include "../core/ist_internal.h"
#include "prox.h"
#include "prox_ist.h"
#include "check_ist.h"
#include "check_prox.h"

static prox_ist *build(const prox_mesh *m, uint32_t spheres, double min_radius) { return check_ist_build(m, spheres, 0, min_radius, 0); }

/* an irregular convex octahedron: no symmetric ties in the distance field */
static prox_mesh *make_octahedron(void)
{
    prox_vec3 v[6] = {prox_v3(0.47, 0.03, 0.02),  prox_v3(-0.39, 0.01, -0.03), prox_v3(0.02, 0.41, 0.05),
                      prox_v3(-0.01, -0.33, 0.01), prox_v3(0.04, -0.02, 0.29), prox_v3(0.03, 0.05, -0.44)};
    uint32_t tris[8][3];
    int n = 0;
    for (int sx = 0; sx < 2; sx++)
        for (int sy = 0; sy < 2; sy++)
            for (int sz = 0; sz < 2; sz++) {
                uint32_t a = (uint32_t)sx, b = 2u + (uint32_t)sy, c = 4u + (uint32_t)sz;
                if ((sx + sy + sz) & 1) { /* an odd number of negative axes flips the orientation */
                    uint32_t tmp = b;
                    b = c, c = tmp;
                }
                tris[n][0] = a, tris[n][1] = b, tris[n][2] = c;
                n++;
            }
    return prox_mesh_from_arrays(v, 6, (const uint32_t(*)[3])tris, 8);
}

/* Replay the greedy packing on the voxel centres (cells of size h starting
 * one cell below the mesh's box): before sphere i, the free radius of an
 * uncovered inside centre is min(surface distance, distance to each earlier
 * sphere); sphere i must sit on a centre and take the largest free radius. */
static void test_greedy_replay(void)
{
    prox_mesh *m = make_octahedron();
    CHECK(m && m->closed && m->volume > 0, "octahedron closed and outward (volume %g)", m ? m->volume : 0);
    if (!m)
        return;
    prox_ist *t = check_ist_build(m, 300, 0, 0, -1); /* the greedy packing alone: no thin-part pass after it */
    if (!t) {
        prox_mesh_free(m);
        return;
    }
    double h = t->voxel_size;
    prox_vec3 ext = prox_v3_sub(m->bbox_max, m->bbox_min), o = prox_v3_sub(m->bbox_min, prox_v3(h, h, h));
    int nx = (int)ceil(ext.x / h) + 2, ny = (int)ceil(ext.y / h) + 2, nz = (int)ceil(ext.z / h) + 2;
    size_t cap = (size_t)nx * ny * nz, n = 0;
    prox_vec3 *c = malloc(sizeof *c * cap);
    double *fr = malloc(sizeof *fr * cap);
    for (int i = 0; i < nx; i++)
        for (int j = 0; j < ny; j++)
            for (int k = 0; k < nz; k++) {
                prox_vec3 p = prox_v3(o.x + (i + 0.5) * h, o.y + (j + 0.5) * h, o.z + (k + 0.5) * h);
                if (!prox_mesh_contains_point(m, p))
                    continue;
                c[n] = p;
                fr[n++] = check_mesh_surface_dist(m, p);
            }
    CHECK(labs((long)n - (long)t->voxels_inside) <= 2, "inside voxel centres: %zu vs the build's %u", n, t->voxels_inside);
    CHECK(t->sphere_count == 300, "target reached: %u", t->sphere_count);
    int wrong_r = 0, off_centre = 0, increasing = 0;
    double worst = 0;
    for (uint32_t s = 0; s < t->sphere_count; s++) {
        const ist_sphere *sp = &t->spheres[s];
        prox_vec3 sc = prox_v3(sp->x, sp->y, sp->z);
        double best = -INFINITY, at_centre = -INFINITY;
        for (size_t v = 0; v < n; v++) {
            if (fr[v] > best)
                best = fr[v];
            if (prox_v3_dist(c[v], sc) < 1e-3 * h)
                at_centre = fr[v];
        }
        double tol = 2e-5 * best + 1e-9;
        worst = fmax(worst, fabs(sp->r - best) / best);
        wrong_r += fabs(sp->r - best) > tol;
        if (!(fabs(at_centre - sp->r) <= tol) && off_centre++ < 3)
            printf("    sphere %u: r %.9g, free radius at its centre %.9g, largest %.9g\n", s, sp->r, at_centre, best);
        increasing += s > 0 && sp->r > t->spheres[s - 1].r * (1 + 1e-6) + 1e-9; /* less the float-centre shift */
        for (size_t v = 0; v < n; v++) {
            double d = prox_v3_dist(c[v], sc) - sp->r;
            fr[v] = d <= 0 ? -INFINITY : fmin(fr[v], d);
        }
    }
    CHECK(wrong_r == 0, "%d spheres do not take the largest free radius (worst relative gap %.3g)", wrong_r, worst);
    CHECK(off_centre == 0, "%d spheres are not on an uncovered voxel centre with that free radius", off_centre);
    CHECK(increasing == 0, "%d radii grow along the packing order", increasing);
    CHECK(t->spheres[t->sphere_count - 1].r >= 0.5 * h * (1 - 1e-5), "default: no sphere below half a voxel (%g, h %g)",
          t->spheres[t->sphere_count - 1].r, h);
    printf("    greedy replay: %u spheres, %zu voxel centres, worst relative radius gap %.2g\n", t->sphere_count, n, worst);
    free(c);
    free(fr);
    prox_ist_free(t);
    prox_mesh_free(m);
}

static void check_subtree(const prox_ist *t, uint32_t id, double *vol, uint32_t *leaves, uint32_t *out, uint32_t cap, int *bad)
{
    if (id & IST_LEAF) {
        const ist_sphere *sp = &t->spheres[id & ~IST_LEAF];
        *vol += 4.0 / 3.0 * M_PI * (double)sp->r2 * sp->r2 * sp->r2;
        if (*leaves < cap)
            out[*leaves] = id & ~IST_LEAF;
        (*leaves)++;
        return;
    }
    const ist_node *nd = &t->nodes[id];
    int kids = 0;
    for (int j = 0; j < 4; j++) {
        if (nd->child[j] == IST_EMPTY)
            continue;
        kids++;
        uint32_t first = *leaves;
        double v = 0;
        check_subtree(t, nd->child[j], &v, leaves, out, cap, bad);
        /* both spheres of every leaf below child j inside child j's sphere */
        for (uint32_t l = first; l < *leaves && l < cap; l++) {
            const ist_sphere *sp = &t->spheres[out[l]];
            const float *c2 = t->sec[out[l]];
            prox_vec3 cj = prox_v3(nd->cx[j], nd->cy[j], nd->cz[j]);
            double d = prox_v3_dist(prox_v3(sp->x, sp->y, sp->z), cj), d2 = prox_v3_dist(prox_v3(c2[0], c2[1], c2[2]), cj);
            if (d + sp->r > nd->cr[j] * (1 + 1e-6) + 1e-7 || d2 + sp->r2 > nd->cr[j] * (1 + 1e-6) + 1e-7)
                (*bad)++;
        }
        if (fabs(v - nd->cvol[j]) > 1e-5 * v + 1e-12 || *leaves - first != nd->cleaves[j])
            (*bad)++;
        *vol += v;
    }
    if (kids < 1)
        (*bad)++;
}

/* a fine target on the torus: reached, spheres inside and disjoint, volumes
 * add up, hierarchy bounds all its leaves; two builds are identical */
static void test_fine_torus(void)
{
    prox_mesh *m = prox_mesh_make_torus(0.4, 0.12, 48, 24);
    prox_ist *t = build(m, 3000, 0.25), *u = build(m, 3000, 0.25);
    if (!t || !u)
        goto out;
    prox_ist_stats st;
    prox_ist_get_stats(t, &st);
    CHECK(st.spheres == 3000 && t->sphere_count == 3000, "target reached: %u", st.spheres);
    int outside = 0, overlaps = 0;
    double inner = 0;
    for (uint32_t i = 0; i < t->sphere_count; i++) {
        const ist_sphere *a = &t->spheres[i];
        prox_vec3 ca = prox_v3(a->x, a->y, a->z);
        inner += 4.0 / 3.0 * M_PI * (double)a->r * a->r * a->r;
        double sd = check_mesh_surface_dist(m, ca);
        if (!(a->r > 0) || !prox_mesh_contains_point(m, ca) || sd < a->r) {
            if (outside++ < 3)
                printf("    sphere %u: r %.9g, surface distance %.9g\n", i, a->r, sd);
        }
        for (uint32_t j = i + 1; j < t->sphere_count; j++) {
            const ist_sphere *b = &t->spheres[j];
            if (prox_v3_dist(ca, prox_v3(b->x, b->y, b->z)) < (double)a->r + b->r)
                overlaps++;
        }
    }
    CHECK(outside == 0, "%d spheres reach outside the torus", outside);
    CHECK(overlaps == 0, "%d overlapping sphere pairs", overlaps);
    CHECK(fabs(inner - st.inner_volume) <= 1e-6 * inner, "inner volume %g vs stats %g", inner, st.inner_volume);
    /* min_radius 0.25: the smallest spheres go below half a voxel to reach the target */
    CHECK(t->spheres[t->sphere_count - 1].r >= 0.25 * st.voxel_size * (1 - 1e-5), "smallest radius %g, voxel %g",
          t->spheres[t->sphere_count - 1].r, st.voxel_size);
    /* the largest sphere: the tube's inscribed radius, within a voxel
     * (polygonal tube: between r cos(pi/24) cos(pi/48) and r) */
    double r0 = t->spheres[0].r, lo = 0.12 * cos(M_PI / 24) * cos(M_PI / 48) - st.voxel_size;
    CHECK(r0 <= 0.12 && r0 >= lo, "largest sphere %g in [%g, 0.12]", r0, lo);
    CHECK(fabs(st.secondary_volume - st.mesh_volume) <= 1e-5 * st.mesh_volume, "secondary %g vs mesh volume %g",
          st.secondary_volume, st.mesh_volume);
    CHECK(fabs(st.voxel_volume - st.mesh_volume) <= 0.05 * st.mesh_volume, "voxel volume %g vs mesh %g", st.voxel_volume,
          st.mesh_volume);
    CHECK(st.inner_volume > 0.6 * st.mesh_volume, "inner spheres fill %.3f of the torus", st.inner_volume / st.mesh_volume);
    uint32_t *leaf = malloc(sizeof(uint32_t) * t->sphere_count), nleaves = 0;
    double vol = 0;
    int bad = 0;
    check_subtree(t, t->tree.root, &vol, &nleaves, leaf, t->sphere_count, &bad);
    CHECK(bad == 0, "hierarchy: %d nodes fail to bound their leaves or sum their volumes", bad);
    CHECK(nleaves == t->sphere_count, "every sphere once below the root: %u of %u", nleaves, t->sphere_count);
    char *seen = calloc(t->sphere_count, 1);
    int dup = 0;
    for (uint32_t l = 0; l < nleaves && l < t->sphere_count; l++)
        dup += seen[leaf[l]]++ != 0;
    CHECK(dup == 0, "%d spheres appear twice in the hierarchy", dup);
    for (uint32_t l = 0; l < t->sphere_count; l++) { /* the root sphere bounds everything */
        const ist_sphere *sp = &t->spheres[l];
        const float *c2 = t->sec[l];
        prox_vec3 root = prox_v3(t->root[0], t->root[1], t->root[2]);
        double d = prox_v3_dist(prox_v3(sp->x, sp->y, sp->z), root), d2 = prox_v3_dist(prox_v3(c2[0], c2[1], c2[2]), root);
        bad += d + sp->r > t->root[3] * (1 + 1e-6) + 1e-7 || d2 + sp->r2 > t->root[3] * (1 + 1e-6) + 1e-7;
    }
    CHECK(bad == 0, "the root sphere misses %d leaves", bad);
    CHECK(fabs(vol - st.secondary_volume) <= 1e-6 * vol, "root volume %g vs secondary %g", vol, st.secondary_volume);
    free(seen);
    free(leaf);
    CHECK(u->sphere_count == t->sphere_count && u->node_count == t->node_count &&
              !memcmp(u->spheres, t->spheres, sizeof(ist_sphere) * t->sphere_count) &&
              !memcmp(u->nodes, t->nodes, sizeof(ist_node) * t->node_count) &&
              !memcmp(u->sec, t->sec, sizeof(float[4]) * t->sphere_count),
          "two builds of one mesh are identical");
out:
    prox_ist_free(t);
    prox_ist_free(u);
    prox_mesh_free(m);
}

/* patch a saved file at `off` with `len` bytes and fix its CRC */
static void write_patched(const char *src, const char *dst, size_t off, const void *bytes, size_t len)
{
    size_t size;
    unsigned char *b = check_read_file(src, &size);
    CHECK(b != NULL && size >= 12, "read back");
    if (!b)
        return;
    memcpy(b + off, bytes, len);
    CHECK(check_ist_write(dst, b, size), "write patched");
    free(b);
}

/* files with a valid checksum but bad contents are refused with the path */
/* A box's tree (200 spheres) saved to good; bad is a second path for the
 * tests' patched copies (tag keeps the tests' files apart). NULL (and *m
 * freed) if the build failed. */
static prox_ist *saved_box(prox_mesh **m, const char *tag, char good[64], char bad[64])
{
    *m = prox_mesh_make_box(prox_v3(0.3, 0.2, 0.1));
    prox_ist *t = build(*m, 200, 0);
    if (!t) {
        prox_mesh_free(*m);
        return NULL;
    }
    char err[320];
    snprintf(good, 64, "/tmp/test_ist_build_%d%s.ist", (int)getpid(), tag);
    snprintf(bad, 64, "/tmp/test_ist_build_%d%s_bad.ist", (int)getpid(), tag);
    CHECK(prox_ist_save(t, good, err, sizeof err) == 0, "save: %s", err);
    return t;
}

static void test_file_indices(void)
{
    prox_mesh *m;
    char good[64], bad[64], err[256];
    prox_ist *t = saved_box(&m, "", good, bad);
    if (!t)
        return;
    prox_ist *u = NULL;
    CHECK(prox_ist_load(good, &u, err, sizeof err) == 0 && u, "load: %s", err);
    prox_ist_free(u);
    const size_t nodes_at = IST_FILE_NODES_AT, child_at = offsetof(ist_node, child);
    const size_t spheres_at = nodes_at + sizeof(ist_node) * t->node_count;
    const size_t tris_at = spheres_at + sizeof(ist_sphere) * t->sphere_count + sizeof(prox_vec3) * t->vert_count;
    const size_t adj_at = tris_at + sizeof(uint32_t[3]) * t->tri_count + 4;
    const size_t boxes_at = adj_at + sizeof(uint32_t[3]) * t->tri_count;
    const size_t order_at = boxes_at + sizeof(ist_box) * t->tritree.node_count;
    const size_t ltri_at = order_at + sizeof(uint32_t) * t->tri_count;
    const size_t sec_at = ltri_at + sizeof(float[9]) * t->tri_count;
    const size_t obb_at = sec_at + (sizeof(float[3]) + sizeof(float)) * t->sphere_count;
    /* a secondary centre moved off the sphere its parent's record holds */
    const float far = t->sec[0][0] + 2 * t->lbr[0] + 0.1f;
    /* a leaf box that claims more triangles than a wide leaf holds (its
     * range still within the triangles) */
    uint32_t big_leaf = 0;
    while (big_leaf + 1 < t->tritree.node_count && !((t->tritree.nodes[big_leaf].a & IST_BOX_LEAF) &&
                                                     (t->tritree.nodes[big_leaf].a & ~IST_BOX_LEAF) + IST_LEAF_TRIS + 1 <= t->tri_count))
        big_leaf++;
    struct {
        const char *what;
        size_t off;
        uint32_t u;
        float f;
        int is_float;
    } cases[] = {
        {"child past the nodes", nodes_at + child_at, t->node_count + 3, 0, 0},
        {"child past the spheres", nodes_at + child_at + 4, IST_LEAF | (t->sphere_count + 1), 0, 0},
        {"a cycle (root is its own child)", nodes_at + child_at, 0, 0, 0},
        {"closest triangle out of range", spheres_at + offsetof(ist_sphere, tri), t->tri_count, 0, 0},
        {"triangle vertex out of range", tris_at + 4, t->vert_count, 0, 0},
        {"NaN radius", spheres_at + offsetof(ist_sphere, r), 0, NAN, 1},
        {"negative secondary radius", spheres_at + sizeof(ist_sphere) + offsetof(ist_sphere, r2), 0, -1.0f, 1},
        {"NaN child sphere", nodes_at + offsetof(ist_node, cr) + 8, 0, NAN, 1},
        /* version 2's derived block: adjacency, triangle box tree, leaf order, float triangles */
        {"neighbour triangle out of range", adj_at + 8, t->tri_count, 0, 0},
        {"box child before its parent (a cycle)", boxes_at + offsetof(ist_box, a), 0, 0, 0},
        {"box leaf range past the triangles", boxes_at + (t->tritree.node_count - 1) * sizeof(ist_box) + offsetof(ist_box, b),
         t->tri_count + 1, 0, 0},
        {"box leaf of more triangles than a wide leaf holds", boxes_at + big_leaf * sizeof(ist_box) + offsetof(ist_box, b),
         IST_LEAF_TRIS + 1, 0, 0},
        {"leaf order out of range", order_at + 4, t->tri_count, 0, 0},
        {"NaN leaf triangle", ltri_at + 16, 0, NAN, 1},
        {"inverted box", boxes_at + offsetof(ist_box, lo), 0, 1e30f, 1},
        /* version 3's secondary centres */
        {"NaN secondary centre", sec_at + 12 + 4, 0, NAN, 1},
        {"secondary centre outside its record sphere", sec_at, 0, far, 1},
        /* the box tree's shape: a node below two parents (the root's
         * children the same node) */
        {"box below two parents", boxes_at + offsetof(ist_box, b), t->tritree.nodes[0].a, 0, 0},
        /* version 5's oriented boxes */
        {"NaN oriented box axis", obb_at + 4, 0, NAN, 1},
        {"oriented box turned inside out", obb_at + 9 * 4, 0, 1e30f, 1},
        {"oriented box axis not of unit length", obb_at, 0, 2.0f, 1},
    };
    CHECK(!(t->tritree.nodes[0].a & IST_BOX_LEAF), "the box tree has an inner root");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (cases[k].is_float)
            write_patched(good, bad, cases[k].off, &cases[k].f, 4);
        else
            write_patched(good, bad, cases[k].off, &cases[k].u, 4);
        u = NULL;
        err[0] = 0;
        int rc = prox_ist_load(bad, &u, err, sizeof err);
        CHECK(rc == -1 && u == NULL && strstr(err, bad) && strstr(err, "inconsistent"), "%s refused: %s", cases[k].what, err);
        if (rc == 0)
            prox_ist_free(u);
    }
    unlink(good);
    unlink(bad);
    prox_ist_free(t);
    prox_mesh_free(m);
}

/* The sphere tree's numbers and shape, checksum right: a negative or too
 * small record or root sphere, a subtree dropped or below two parents, a
 * sphere in two leaf slots, the root moved (the nodes before it below
 * none), leaf counts and volumes not those below, a voxel size not
 * positive or finer than any build's grid; each is refused. (The old
 * loader checked these spheres for finiteness only and took every one.) */
static void test_file_tree_shape(void)
{
    prox_mesh *m;
    char good[64], bad[64], err[320];
    prox_ist *t = saved_box(&m, "_s", good, bad);
    if (!t)
        return;
    const size_t root_at = IST_FILE_U32_AT(6), root_leaves_at = IST_FILE_U32_AT(7), root_r_at = IST_FILE_ROOT_R_AT,
                 voxel_at = IST_FILE_DOUBLE_AT(2);
    const size_t nodes_at = IST_FILE_NODES_AT;
    /* the root's inner children a and b, and two leaf slots (node la,
     * slot ja; node lb, slot jb) */
    const ist_node *r = &t->nodes[t->tree.root];
    int a = -1, b = -1;
    for (int j = 0; j < 4; j++)
        if (r->child[j] != IST_EMPTY && !(r->child[j] & IST_LEAF))
            b = a >= 0 && b < 0 ? j : b, a = a < 0 ? j : a;
    uint32_t la = UINT32_MAX, lb = UINT32_MAX;
    int ja = 0, jb = 0;
    for (uint32_t i = 0; i < t->node_count && lb == UINT32_MAX; i++)
        for (int j = 0; j < 4 && lb == UINT32_MAX; j++)
            if (t->nodes[i].child[j] != IST_EMPTY && (t->nodes[i].child[j] & IST_LEAF)) {
                if (la == UINT32_MAX)
                    la = i, ja = j;
                else
                    lb = i, jb = j;
            }
    CHECK(t->tree.root == 0 && a >= 0 && b >= 0 && lb != UINT32_MAX, "the root has two inner children and there are two leaves");
    if (a < 0 || b < 0 || lb == UINT32_MAX)
        goto out;
    const size_t at_a = nodes_at + (size_t)a * 4, at_b = nodes_at + (size_t)b * 4; /* node 0's slots a and b */
    const uint32_t child_a = r->child[a], leaf_a = t->nodes[la].child[ja];
    const size_t leaf_b_at = nodes_at + sizeof(ist_node) * lb + 4 * (size_t)jb; /* leaf slot b's record fields */
    struct {
        const char *what;
        size_t off;
        uint32_t u;
        float f;
        int is_float;
    } cases[] = {
        {"negative record radius", at_a + offsetof(ist_node, cr), 0, -1.0f, 1},
        {"record sphere too small for the leaves below", at_a + offsetof(ist_node, cr), 0, r->cr[a] * 0.5f, 1},
        {"record sphere moved off its leaves", at_a + offsetof(ist_node, cx), 0, r->cx[a] + r->cr[a], 1},
        {"negative root radius", root_r_at, 0, -1.0f, 1},
        {"root sphere too small", root_r_at, 0, t->root[3] * 0.5f, 1},
        {"root moved: the nodes before it below none", root_at, child_a, 0, 0},
        {"subtree dropped", at_a + offsetof(ist_node, child), IST_EMPTY, 0, 0},
        {"node below two parents", at_b + offsetof(ist_node, child), child_a, 0, 0},
        {"leaf count off", at_a + offsetof(ist_node, cleaves), r->cleaves[a] + 1, 0, 0},
        {"volume off", at_a + offsetof(ist_node, cvol), 0, r->cvol[a] * 2, 1},
        {"header leaf count off", root_leaves_at, t->root_leaves - 1, 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (cases[k].is_float)
            write_patched(good, bad, cases[k].off, &cases[k].f, 4);
        else
            write_patched(good, bad, cases[k].off, &cases[k].u, 4);
        prox_ist *u = NULL;
        err[0] = 0;
        int rc = prox_ist_load(bad, &u, err, sizeof err);
        CHECK(rc == -1 && u == NULL && strstr(err, "inconsistent"), "%s refused: %s", cases[k].what, err);
        prox_ist_free(u);
    }
    /* a sphere in two leaf slots (and the one of slot b in none): slot b
     * holds leaf a with the sphere of leaf a's own slot, so that the check
     * of a leaf slot's sphere alone takes it */
    const ist_node *na = &t->nodes[la];
    const float sa[4] = {na->cx[ja], na->cy[ja], na->cz[ja], na->cr[ja]};
    write_patched(good, bad, leaf_b_at + offsetof(ist_node, child), &leaf_a, 4);
    write_patched(bad, bad, leaf_b_at + offsetof(ist_node, cx), &sa[0], 4);
    write_patched(bad, bad, leaf_b_at + offsetof(ist_node, cy), &sa[1], 4);
    write_patched(bad, bad, leaf_b_at + offsetof(ist_node, cz), &sa[2], 4);
    write_patched(bad, bad, leaf_b_at + offsetof(ist_node, cr), &sa[3], 4);
    prox_ist *u = NULL;
    CHECK(prox_ist_load(bad, &u, err, sizeof err) == -1 && u == NULL && strstr(err, "inconsistent"), "sphere in two leaf slots refused: %s",
          err);
    prox_ist_free(u);
    /* the voxel size: not positive, or finer than any build's grid over
     * this box (versions 1 to 3 cut the triangles into cells of half a
     * voxel at load: see test_ist's test_tiny_voxel_size) */
    const double vs[3] = {0.0, -t->voxel_size, 1e-4};
    for (int k = 0; k < 3; k++) {
        write_patched(good, bad, voxel_at, &vs[k], sizeof vs[k]);
        u = NULL;
        err[0] = 0;
        int rc = prox_ist_load(bad, &u, err, sizeof err);
        CHECK(rc == -1 && u == NULL && strstr(err, "voxel size"), "voxel size %g refused: %s", vs[k], err);
        prox_ist_free(u);
    }
    /* the finest grid a build makes still loads */
    double fine = cbrt(0.6 * 0.4 * 0.2 / 5e7);
    write_patched(good, bad, voxel_at, &fine, sizeof fine);
    u = NULL;
    CHECK(prox_ist_load(bad, &u, err, sizeof err) == 0 && u, "voxel size %g loads: %s", fine, err);
    prox_ist_free(u);
    /* the build time, and the centre of mass (torques are taken about
     * it; the box spans +-0.3, +-0.2, +-0.1): a negative time, a centre
     * outside the mesh's bounding box are refused; a centre inside it
     * near a corner loads */
    const size_t time_at = IST_FILE_DOUBLE_AT(5), com_at = IST_FILE_DOUBLE_AT(6);
    const struct {
        const char *what;
        size_t off;
        double v;
        const char *msg; /* NULL: loads */
    } dcases[] = {
        {"negative build time", time_at, -1.0, "build time"},
        {"centre of mass past +x", com_at, 0.303, "centre of mass"},
        {"centre of mass below -z", com_at + 16, -0.101, "centre of mass"},
        {"centre of mass inside, near +x", com_at, 0.2999, NULL},
    };
    for (size_t k = 0; k < sizeof dcases / sizeof dcases[0]; k++) {
        write_patched(good, bad, dcases[k].off, &dcases[k].v, sizeof dcases[k].v);
        u = NULL;
        err[0] = 0;
        int rc = prox_ist_load(bad, &u, err, sizeof err);
        if (dcases[k].msg)
            CHECK(rc == -1 && u == NULL && strstr(err, dcases[k].msg), "%s refused: %s", dcases[k].what, err);
        else
            CHECK(rc == 0 && u, "%s loads: %s", dcases[k].what, err);
        prox_ist_free(u);
    }
out:
    unlink(good);
    unlink(bad);
    prox_ist_free(t);
    prox_mesh_free(m);
}

/* nodes[0 .. K) as a chain: record i's slot 0 holds record i + 1, its
 * slots 1 to 3 leaves, the last record's four slots leaves; the ns spheres
 * fill the deepest slots first (at most 3 K + 1). Records' spheres, leaf
 * counts and volumes zero. */
static void chain_nodes(ist_node *nd, uint32_t K, uint32_t ns)
{
    memset(nd, 0, sizeof *nd * K);
    for (uint32_t i = 0; i < K; i++)
        for (int j = 0; j < 4; j++)
            nd[i].child[j] = j == 0 && i + 1 < K ? i + 1 : IST_EMPTY;
    uint32_t s = 0;
    for (uint32_t i = K; i-- > 0 && s < ns;)
        for (int j = i + 1 < K ? 1 : 0; j < 4 && s < ns; j++)
            nd[i].child[j] = IST_LEAF | s++;
}

/* The saved box's file (path good, tree t) with its records replaced by a
 * chain of K (chain_nodes), checksum right, to bad. */
static void write_chain(const char *good, const char *bad, const prox_ist *t, uint32_t K)
{
    size_t size;
    unsigned char *b = check_read_file(good, &size);
    const size_t nodes_at = IST_FILE_NODES_AT, was = sizeof(ist_node) * t->node_count, now = sizeof(ist_node) * K;
    CHECK(b != NULL && size > nodes_at + was, "read back");
    if (!b || size <= nodes_at + was) {
        free(b);
        return;
    }
    const size_t n = size - was + now;
    unsigned char *o = malloc(n);
    ist_node *nd = malloc(now);
    chain_nodes(nd, K, t->sphere_count);
    memcpy(o, b, nodes_at);
    memcpy(o + IST_FILE_U32_AT(2), &K, 4); /* the header's node count */
    memcpy(o + nodes_at, nd, now);
    memcpy(o + nodes_at + now, b + nodes_at + was, size - nodes_at - was);
    CHECK(check_ist_write(bad, o, n), "write the chain");
    free(nd);
    free(o);
    free(b);
}

/* The sphere tree's depth is bounded (IST_MAX_MEAN_DEPTH, ist_io.c: 64 on
 * average), since loading checks each leaf against every record above
 * it. The box's spheres under a chain 100 records longer than their
 * count are refused as too deep, loading and saving; under the shortest
 * chain that holds them (every record holds leaves: on average a sixth
 * of their count deep) they pass the depth check and are refused for the
 * records' leaf counts (zero, as their volumes and spheres), checked
 * next: the depth alone decides the first. */
static void test_file_tree_depth(void)
{
    prox_mesh *m;
    char good[64], bad[64], err[320];
    prox_ist *t = saved_box(&m, "_d", good, bad);
    if (!t)
        return;
    /* ns spheres: a chain of ns + 100 records (leaves at least 100 deep),
     * and the shortest that holds them (about ns / 6 deep on average) */
    const uint32_t ns = t->sphere_count, K[2] = {ns + 100, (ns + 1) / 3 + 1};
    CHECK(ns <= 360, "the box: %u spheres (at most 360, so that the short chain is shallow enough)", ns);
    for (int k = 0; k < 2; k++) {
        write_chain(good, bad, t, K[k]);
        prox_ist *u = NULL;
        err[0] = 0;
        int rc = prox_ist_load(bad, &u, err, sizeof err);
        if (k == 0)
            CHECK(rc == -1 && u == NULL && strstr(err, "inconsistent") && strstr(err, "too deep"), "a chain of %u records refused: %s", K[k],
                  err);
        else
            CHECK(rc == -1 && u == NULL && strstr(err, "inconsistent") && !strstr(err, "too deep") && strstr(err, "leaf count"),
                  "a chain of %u records refused, not for its depth: %s", K[k], err);
        prox_ist_free(u);
    }
    /* saving checks the same: the tree in memory with the deep chain */
    ist_node *nodes = t->nodes, *nd = malloc(sizeof *nd * K[0]);
    const uint32_t nn = t->node_count;
    chain_nodes(nd, K[0], ns);
    t->nodes = nd, t->node_count = K[0];
    err[0] = 0;
    CHECK(prox_ist_save(t, bad, err, sizeof err) == -1 && strstr(err, "too deep"), "saving the chain refused: %s", err);
    t->nodes = nodes, t->node_count = nn;
    free(nd);
    unlink(good);
    unlink(bad);
    prox_ist_free(t);
    prox_mesh_free(m);
}

/* bad meshes: clear messages */
static void test_bad_meshes(void)
{
    char err[256];
    prox_ist *t = NULL;
    /* an inside-out box */
    prox_mesh *b = prox_mesh_make_box(prox_v3(0.2, 0.2, 0.2));
    for (uint32_t i = 0; i < b->triangle_count; i++) {
        uint32_t tmp = b->triangles[i][1];
        b->triangles[i][1] = b->triangles[i][2];
        b->triangles[i][2] = tmp;
    }
    prox_mesh_analyze(b);
    CHECK(prox_ist_build(b, NULL, &t, err, sizeof err) == -1 && t == NULL && strstr(err, "inside out"), "inverted: %s", err);
    prox_mesh_free(b);
    /* a box with one face missing (two triangles): open */
    b = prox_mesh_make_box(prox_v3(0.2, 0.2, 0.2));
    b->triangle_count -= 2;
    prox_mesh_analyze(b);
    CHECK(prox_ist_build(b, NULL, &t, err, sizeof err) == -1 && t == NULL && strstr(err, "not closed") &&
              strstr(err, "4 boundary edges") && strstr(err, "watertight"),
          "open: %s", err);
    prox_mesh_free(b);
    /* changed by hand after loading (the analysis still says closed): an
     * index past the vertices, a NaN vertex */
    b = prox_mesh_make_box(prox_v3(0.2, 0.2, 0.2));
    b->triangles[3][2] = b->vertex_count + 7;
    CHECK(prox_ist_build(b, NULL, &t, err, sizeof err) == -1 && t == NULL && strstr(err, "index past its vertices"), "index: %s", err);
    b->triangles[3][2] = 0;
    b->vertices[2].z = NAN;
    CHECK(prox_ist_build(b, NULL, &t, err, sizeof err) == -1 && t == NULL && strstr(err, "not finite"), "NaN vertex: %s", err);
    prox_mesh_free(b);
    CHECK(prox_ist_build(NULL, NULL, &t, err, sizeof err) == -1 && t == NULL && strstr(err, "no mesh"), "NULL mesh: %s", err);
    /* a closed box too large for the tree's floats (side 1e13: volume 1e39,
     * past FLT_MAX; it used to build, with node volumes of inf), and one
     * too far out (coordinates past 2^60) */
    const prox_vec3 huge[2] = {prox_v3(5e12, 5e12, 5e12), prox_v3(1e19, 1, 1)};
    for (int k = 0; k < 2; k++) {
        b = prox_mesh_make_box(huge[k]);
        t = NULL;
        err[0] = 0;
        CHECK(prox_ist_build(b, NULL, &t, err, sizeof err) == -1 && t == NULL && strstr(err, "mesh too large"), "huge box %d: %s", k, err);
        prox_ist_free(t);
        prox_mesh_free(b);
    }
    /* a unit box at x = 1e7: floats there are 1 apart, coarser than its
     * spheres (it used to build, with negative radii) */
    b = prox_mesh_make_box(prox_v3(0.5, 0.5, 0.5));
    for (uint32_t i = 0; i < b->vertex_count; i++)
        b->vertices[i].x += 1e7;
    prox_mesh_analyze(b);
    t = NULL;
    err[0] = 0;
    CHECK(prox_ist_build(b, NULL, &t, err, sizeof err) == -1 && t == NULL && strstr(err, "too far from the origin"), "box at 1e7: %s", err);
    prox_ist_free(t);
    prox_mesh_free(b);
    /* a rod of 1e10 x 1 x 1: 4 voxels across make 4e10 along it, past int
     * (the count shown was garbage, the advice to ask for fewer voxels
     * wrong); and a grid too fine by request */
    b = prox_mesh_make_box(prox_v3(5e9, 0.5, 0.5));
    t = NULL;
    err[0] = 0;
    CHECK(prox_ist_build(b, NULL, &t, err, sizeof err) == -1 && t == NULL && strstr(err, "too thin") && strstr(err, "1.44e+12 cells") &&
              !strstr(err, "fewer voxels"),
          "rod: %s", err);
    prox_mesh_free(b);
    b = prox_mesh_make_box(prox_v3(0.5, 0.5, 0.5));
    prox_ist_def d = prox_ist_def_default();
    d.voxels = 1000000000u;
    d.progress = 0;
    t = NULL;
    err[0] = 0;
    CHECK(prox_ist_build(b, &d, &t, err, sizeof err) == -1 && t == NULL && strstr(err, "cells is too large") && strstr(err, "fewer voxels"),
          "10^9 voxels: %s", err);
    prox_mesh_free(b);
}

/* saving refuses what loading would: a volume of inf (a mesh too large
 * for floats made one, before the build refused such meshes) */
static void test_save_refuses(void)
{
    prox_mesh *m = prox_mesh_make_box(prox_v3(0.3, 0.2, 0.1));
    prox_ist *t = build(m, 50, 0);
    if (!t) {
        prox_mesh_free(m);
        return;
    }
    char path[64], err[320];
    snprintf(path, sizeof path, "/tmp/test_ist_build_%d_inf.ist", (int)getpid());
    unlink(path);
    t->nodes[0].cvol[0] = INFINITY;
    CHECK(prox_ist_save(t, path, err, sizeof err) == -1 && strstr(err, "not written") && strstr(err, "not finite"), "inf volume: %s", err);
    CHECK(access(path, F_OK) != 0, "nothing written");
    unlink(path);
    prox_ist_free(t);
    prox_mesh_free(m);
}

int main(int argc, char **argv)
{
    (void)argc;
    RUN_TEST(test_greedy_replay);
    RUN_TEST(test_fine_torus);
    RUN_TEST(test_file_indices);
    RUN_TEST(test_file_tree_shape);
    RUN_TEST(test_file_tree_depth);
    RUN_TEST(test_bad_meshes);
    RUN_TEST(test_save_refuses);
    return check_summary(argv[0]);
}
