/* boxes_build.c - building inner/outer box hierarchies of convex polyhedra
 * (Arcila, Dinas, Banon), and the maximum inscribed box (their section 4).
 * Non-RT except the accessors at the bottom.
 *
 * A piece is kept as both representations of a convex polytope: its
 * vertices and its planes. After every change its faces are rebuilt from
 * the two (a plane's face is the strict convex hull of the vertices on it),
 * which drops planes that no longer touch the piece, vertices that are not
 * corners, and gives every edge its two faces without a half-edge
 * structure to keep consistent while clipping. Splitting clips the vertex
 * set (the vertices on each side plus the points where edges cross the
 * plane, each computed once from its inner end so both halves share it
 * bit for bit) and adds the cut plane to each half's planes. No hull
 * library is needed: the input is convex and clipping keeps it so.
 *
 * Deviations from the paper, on purpose:
 * - The principal axes come from the inertia tensor of the solid piece (as
 *   the issue asks), not from the covariance of the triangles' vertices
 *   (the paper's section 5 formula), which depends on how the faces were
 *   triangulated. Where the inertia is isotropic in a plane or in space
 *   (cube, octahedron, dodecahedron) every frame in that eigenspace is a
 *   principal frame; the one chosen is the one whose outer box is smallest
 *   among frames built from the piece's face normals and edge directions
 *   (deterministic, and for a cube the cube itself).
 * - The inner box is found by our own log-barrier Newton method instead of
 *   KNITRO.
 * - Leaves keep whole convex pieces and the exact test is a separating-axis
 *   test of the solids, not the paper's triangle-triangle test of surface
 *   faces, so one piece inside another is seen too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boxes_internal.h"

/* ---- the maximum inscribed box (section 4) ---- */

/* x = -H^-1 g for a symmetric positive definite 6x6 H: Cholesky of H with
 * its diagonal scaled to 1 (near the optimum the barrier's terms differ by
 * many orders of magnitude), a tiny ridge added if rounding still breaks
 * positive definiteness; -1 if that fails too or a diagonal entry is not
 * positive */
static int chol6_newton(double H[6][6], const double g[6], double x[6])
{
    double sc[6];
    for (int i = 0; i < 6; i++) {
        if (!(H[i][i] > 0))
            return -1;
        sc[i] = 1.0 / sqrt(H[i][i]);
    }
    for (double ridge = 0; ridge < 1e-3; ridge = ridge ? ridge * 100 : 1e-14) {
        double L[6][6] = {{0}};
        int ok = 1;
        for (int j = 0; j < 6 && ok; j++) {
            double s = H[j][j] * sc[j] * sc[j] + ridge;
            for (int k = 0; k < j; k++)
                s -= L[j][k] * L[j][k];
            if (!(s > 0)) {
                ok = 0;
                break;
            }
            L[j][j] = sqrt(s);
            for (int i = j + 1; i < 6; i++) {
                double r = H[i][j] * sc[i] * sc[j];
                for (int k = 0; k < j; k++)
                    r -= L[i][k] * L[j][k];
                L[i][j] = r / L[j][j];
            }
        }
        if (!ok)
            continue;
        double y[6];
        for (int i = 0; i < 6; i++) {
            double r = -g[i] * sc[i];
            for (int k = 0; k < i; k++)
                r -= L[i][k] * y[k];
            y[i] = r / L[i][i];
        }
        for (int i = 5; i >= 0; i--) {
            double r = y[i];
            for (int k = i + 1; k < 6; k++)
                r -= L[k][i] * x[k];
            x[i] = r / L[i][i];
        }
        for (int i = 0; i < 6; i++)
            x[i] *= sc[i];
        return 0;
    }
    return -1;
}

/* The scaled problem: unknowns z = (y, h) (centre offset in box axes, half
 * extents, in units of `scale`), rows a_k = R^T n_k / |n_k|, right-hand
 * sides b_k = (d_k - n_k . p) / (|n_k| scale) > 0 at z = 0. */
typedef struct ibox_problem {
    const prox_vec3 *n;
    const double *d;
    uint32_t m;
    const prox_mat3 *R;
    prox_vec3 p;
    double scale;
} ibox_problem;

static inline void ibox_row(const ibox_problem *P, uint32_t k, double a[3], double *b)
{
    prox_vec3 n = P->n[k];
    double len = prox_v3_len(n);
    prox_vec3 r = prox_m3_tmul_v(P->R, n);
    a[0] = r.x / len, a[1] = r.y / len, a[2] = r.z / len;
    *b = (P->d[k] - prox_v3_dot(n, P->p)) / (len * P->scale);
}

/* the barrier objective -t sum log h - sum log slack; +inf outside */
static double ibox_value(const ibox_problem *P, const double z[6], double t)
{
    if (!(z[3] > 0 && z[4] > 0 && z[5] > 0))
        return INFINITY;
    double f = -t * (log(z[3]) + log(z[4]) + log(z[5]));
    for (uint32_t k = 0; k < P->m; k++) {
        double a[3], b;
        ibox_row(P, k, a, &b);
        double s = b - (a[0] * z[0] + a[1] * z[1] + a[2] * z[2]) - (fabs(a[0]) * z[3] + fabs(a[1]) * z[4] + fabs(a[2]) * z[5]);
        if (!(s > 0))
            return INFINITY;
        f -= log(s);
    }
    return f;
}

int prox_boxes_inner_box(const prox_vec3 *n, const double *d, uint32_t m, const prox_mat3 *R, prox_vec3 interior,
                         prox_vec3 *centre, double half[3])
{
    if (!n || !d || !R || !centre || !half || m == 0 || !prox_v3_isfinite(interior))
        return -1;
    ibox_problem P = {n, d, m, R, interior, 1.0};
    double scale = 0, bmin = INFINITY;
    for (uint32_t k = 0; k < m; k++) {
        double len = prox_v3_len(n[k]), s = d[k] - prox_v3_dot(n[k], interior);
        if (!(len > 0) || !(s > 0) || !isfinite(s))
            return -1; /* not strictly inside (or a zero normal) */
        scale = s / len > scale ? s / len : scale;
    }
    P.scale = scale;
    /* a strictly feasible start: the centre at `interior`, a small cube */
    double z[6] = {0, 0, 0, 0, 0, 0};
    for (uint32_t k = 0; k < m; k++) {
        double a[3], b;
        ibox_row(&P, k, a, &b);
        double q = b / (fabs(a[0]) + fabs(a[1]) + fabs(a[2]));
        bmin = q < bmin ? q : bmin;
    }
    z[3] = z[4] = z[5] = 0.5 * bmin;
    /* The polytope's lineality space: directions every plane is parallel to
     * (a prism's axis, a slab's plane). Along them the largest box slides
     * without end and the barrier is flat, so Newton's step there is noise
     * (it drifted to 5e8 on a slanted prism); the centre is kept at
     * `interior` along them: of the largest boxes, the one nearest it. In
     * box coordinates y (the directions R^T l), as up to two unit vectors. */
    prox_mat3 NN = {{{0}}}, V;
    for (uint32_t k = 0; k < m; k++) {
        prox_vec3 u = prox_v3_normalize(n[k]);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                NN.m[i][j] += prox_v3_get(u, i) * prox_v3_get(u, j);
    }
    double ev[3], lin[2][3];
    int nlin = 0;
    prox_sym3_eigen(&NN, ev, &V);
    for (int i = 1; i < 3; i++)
        if (ev[i] <= 1e-24 * ev[0]) { /* rounding of exactly parallel planes: ~1e-32 */
            prox_vec3 l = prox_m3_tmul_v(R, prox_m3_col(&V, i));
            lin[nlin][0] = l.x, lin[nlin][1] = l.y, lin[nlin][2] = l.z;
            nlin++;
        }
    /* barrier weight t on the objective: the central point at t is within
     * m / t of the optimum (convex objective, m linear constraints) */
    double t = (double)m;
    int steps = 0;
    for (int round = 0; round < 40; round++) {
        for (int it = 0; it < 200; it++) {
            double g[6] = {0, 0, 0, -t / z[3], -t / z[4], -t / z[5]}, H[6][6] = {{0}};
            for (int i = 0; i < 3; i++)
                H[3 + i][3 + i] = t / (z[3 + i] * z[3 + i]);
            for (uint32_t k = 0; k < m; k++) {
                double a[3], b;
                ibox_row(&P, k, a, &b);
                double row[6] = {a[0], a[1], a[2], fabs(a[0]), fabs(a[1]), fabs(a[2])};
                double s = b;
                for (int i = 0; i < 6; i++)
                    s -= row[i] * z[i];
                double is = 1.0 / s;
                for (int i = 0; i < 6; i++) {
                    g[i] += row[i] * is;
                    for (int j = 0; j <= i; j++)
                        H[i][j] += row[i] * row[j] * is * is;
                }
            }
            for (int i = 0; i < 6; i++)
                for (int j = i + 1; j < 6; j++)
                    H[i][j] = H[j][i];
            double hmax = 0;
            for (int i = 0; i < 3; i++) {
                if (!(H[i][i] > 0))
                    return -1; /* no plane bounds the box along an axis: unbounded */
                hmax = fmax(hmax, H[i][i]);
            }
            for (int q = 0; q < nlin; q++) { /* no step along the lineality space */
                double gl = lin[q][0] * g[0] + lin[q][1] * g[1] + lin[q][2] * g[2];
                for (int i = 0; i < 3; i++) {
                    g[i] -= gl * lin[q][i];
                    for (int j = 0; j < 3; j++)
                        H[i][j] += hmax * lin[q][i] * lin[q][j];
                }
            }
            double dz[6];
            if (chol6_newton(H, g, dz) != 0)
                goto done; /* rounding: z is feasible and as good as this precision allows */
            double dec = 0; /* the Newton decrement squared */
            for (int i = 0; i < 6; i++)
                dec -= g[i] * dz[i];
            if (!(dec > 2e-15))
                break;
            double f0 = ibox_value(&P, z, t), tau = 1.0, zn[6];
            int ok = 0;
            for (int ls = 0; ls < 80; ls++, tau *= 0.5) {
                for (int i = 0; i < 6; i++)
                    zn[i] = z[i] + tau * dz[i];
                if (ibox_value(&P, zn, t) <= f0 - 0.25 * tau * dec) {
                    ok = 1;
                    break;
                }
            }
            if (!ok)
                break; /* no decrease left at this precision */
            memcpy(z, zn, sizeof z);
            steps++;
            if (z[3] > 1e6 || z[4] > 1e6 || z[5] > 1e6)
                return -1; /* unbounded along a box axis */
            if (fabs(z[0]) > 1e6 || fabs(z[1]) > 1e6 || fabs(z[2]) > 1e6)
                return -1; /* open one way only: the barrier pushes the box off without end */
        }
        if ((double)m / t < 1e-11)
            break;
        t *= 10;
    }
done:;
    prox_vec3 off = prox_m3_mul_v(R, prox_v3(z[0], z[1], z[2]));
    *centre = prox_v3_madd(interior, off, scale);
    for (int i = 0; i < 3; i++)
        half[i] = z[3 + i] * scale;
    return steps;
}

/* ---- working pieces ---- */

typedef struct wpiece {
    prox_vec3 *v;
    uint32_t nv;
    prox_vec3 *n;
    double *d;
    double *flat;        /* how far below its plane a vertex still lies on the face */
    unsigned char *orig; /* plane lies on the polyhedron's surface */
    uint32_t nf;
    uint32_t *loop, *loop_start; /* face f: loop[loop_start[f] .. loop_start[f + 1]) */
    boxes_edge *e;
    uint32_t ne;
    int adjacency;
    double volume;
    prox_vec3 centroid;
    prox_mat3 cov; /* second moments about the centroid per unit volume */
} wpiece;

static void wp_free(wpiece *p)
{
    free(p->v);
    free(p->n);
    free(p->d);
    free(p->flat);
    free(p->orig);
    free(p->loop);
    free(p->loop_start);
    free(p->e);
    memset(p, 0, sizeof *p);
}

typedef struct hull_pt {
    double x, y;
    uint32_t i;
} hull_pt;

static int hull_pt_cmp(const void *pa, const void *pb)
{
    const hull_pt *a = pa, *b = pb;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    if (a->y != b->y)
        return a->y < b->y ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* o -> a -> b turns counter-clockwise by more than eps: a lies farther
 * than eps from the line o-b (a chain keeps a only then, so collinear and
 * reflex points drop out) */
static int hull_keep(const hull_pt *o, const hull_pt *a, const hull_pt *b, double eps)
{
    double cr = (a->x - o->x) * (b->y - o->y) - (a->y - o->y) * (b->x - o->x);
    return cr > eps * hypot(b->x - o->x, b->y - o->y);
}

/* The face of plane (n, d): the vertices within eps of the plane, as a
 * strictly convex loop, counter-clockwise seen from outside (Andrew's
 * monotone chain in a basis (u, w) with u x w = n). pts: nv scratch,
 * stack: 2 nv + 1 scratch. Returns the loop length (0: no face). */
static uint32_t face_loop(const prox_vec3 *v, uint32_t nv, prox_vec3 n, double d, double eps, hull_pt *pts,
                          uint32_t *stack, uint32_t *out)
{
    prox_vec3 u = prox_v3_normalize(prox_v3_cross(n, fabs(n.x) < 0.6 ? prox_v3(1, 0, 0) : prox_v3(0, 1, 0)));
    prox_vec3 w = prox_v3_cross(n, u);
    uint32_t k = 0;
    for (uint32_t i = 0; i < nv; i++)
        if (fabs(prox_v3_dot(n, v[i]) - d) <= eps)
            pts[k++] = (hull_pt){prox_v3_dot(u, v[i]), prox_v3_dot(w, v[i]), i};
    if (k < 3)
        return 0;
    qsort(pts, k, sizeof *pts, hull_pt_cmp);
    uint32_t h = 0;
    for (uint32_t i = 0; i < k; i++) {
        while (h >= 2 && !hull_keep(&pts[stack[h - 2]], &pts[stack[h - 1]], &pts[i], eps))
            h--;
        stack[h++] = i;
    }
    for (uint32_t i = k - 1, lower = h + 1; i-- > 0;) {
        while (h >= lower && !hull_keep(&pts[stack[h - 2]], &pts[stack[h - 1]], &pts[i], eps))
            h--;
        stack[h++] = i;
    }
    h--; /* the last point repeats the first */
    if (h < 3)
        return 0;
    for (uint32_t i = 0; i < h; i++)
        out[i] = pts[stack[i]].i;
    return h;
}

typedef struct half_edge {
    uint32_t lo, hi, from, face;
} half_edge;

static int half_edge_cmp(const void *pa, const void *pb)
{
    const half_edge *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    return (a->from > b->from) - (a->from < b->from);
}

/* Volume, centroid and second moments from the face loops: a fan of
 * tetrahedra from the vertex mean (exact for a closed, outward loop set). */
static void wp_mass(wpiece *p)
{
    prox_vec3 r = prox_v3(0, 0, 0);
    for (uint32_t i = 0; i < p->nv; i++)
        r = prox_v3_add(r, p->v[i]);
    r = prox_v3_scale(r, 1.0 / p->nv);
    double vol = 0, S[3][3] = {{0}};
    prox_vec3 first = prox_v3(0, 0, 0);
    for (uint32_t f = 0; f < p->nf; f++) {
        const uint32_t *l = p->loop + p->loop_start[f];
        uint32_t k = p->loop_start[f + 1] - p->loop_start[f];
        prox_vec3 a = prox_v3_sub(p->v[l[0]], r);
        for (uint32_t j = 1; j + 1 < k; j++) {
            prox_vec3 b = prox_v3_sub(p->v[l[j]], r), c = prox_v3_sub(p->v[l[j + 1]], r);
            double V = prox_v3_dot(a, prox_v3_cross(b, c)) / 6.0;
            prox_vec3 s = prox_v3_add(prox_v3_add(a, b), c);
            vol += V;
            first = prox_v3_madd(first, s, V / 4.0);
            const prox_vec3 q[4] = {a, b, c, s};
            for (int i = 0; i < 3; i++)
                for (int jj = 0; jj < 3; jj++) {
                    double acc = 0;
                    for (int t = 0; t < 4; t++)
                        acc += prox_v3_get(q[t], i) * prox_v3_get(q[t], jj);
                    S[i][jj] += V / 20.0 * acc;
                }
        }
    }
    p->volume = vol;
    prox_vec3 cr = vol > 0 ? prox_v3_scale(first, 1.0 / vol) : prox_v3(0, 0, 0);
    p->centroid = prox_v3_add(r, cr);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            p->cov.m[i][j] = vol > 0 ? S[i][j] / vol - prox_v3_get(cr, i) * prox_v3_get(cr, j) : 0.0;
}

/* Make a piece from vertices and planes (both copied): merge vertices
 * closer than eps, raise each plane to its farthest vertex (so that the
 * planes hold every vertex in double), build the faces (a vertex is on
 * plane f when within flat[f] of it), drop planes with no face and
 * vertices on no face, pair the edges with their faces, and measure. 0;
 * -1 degenerate (fewer than 4 faces or no volume); -2 out of memory.
 * The faces of the input polyhedron keep the flatness measured on the
 * mesh (float files: ~1e-7 of the size), every other test uses eps (1e-12
 * of the size): a loose test everywhere would put cut points that lie
 * near a corner on that corner's other faces. */
static int wp_make(wpiece *p, const prox_vec3 *v, uint32_t nv, const prox_vec3 *n, const double *d, const double *flat,
                   const unsigned char *orig, uint32_t nf, double eps)
{
    memset(p, 0, sizeof *p);
    if (nv < 4 || nf < 4 || nv > BOXES_MAX_VERTICES || nf > BOXES_MAX_FACES + 64)
        return -1; /* the build checks both limits first: a split's piece is far below them */
    p->v = malloc(sizeof *p->v * nv);
    p->n = malloc(sizeof *p->n * nf);
    p->d = malloc(sizeof *p->d * nf);
    p->flat = malloc(sizeof *p->flat * nf);
    p->orig = malloc(nf);
    p->loop_start = malloc(sizeof *p->loop_start * (nf + 1));
    hull_pt *pts = malloc(sizeof *pts * nv);
    uint32_t *stack = malloc(sizeof *stack * (2 * nv + 1)), *map = malloc(sizeof *map * nv);
    size_t loop_cap = 6 * (size_t)nv + 3 * (size_t)nf; /* 2 E <= 6 V for a convex solid; grown if tolerance makes more */
    p->loop = malloc(sizeof *p->loop * loop_cap);
    int rc = -2;
    if (!p->v || !p->n || !p->d || !p->flat || !p->orig || !p->loop_start || !pts || !stack || !map || !p->loop)
        goto done;
    /* merge near-duplicate vertices (a cut through a short edge) */
    for (uint32_t i = 0; i < nv; i++) {
        uint32_t j = 0;
        while (j < p->nv && prox_v3_dist(p->v[j], v[i]) > eps)
            j++;
        if (j == p->nv)
            p->v[p->nv++] = v[i];
    }
    /* faces */
    uint32_t used = 0;
    for (uint32_t f = 0; f < nf; f++) {
        double len = prox_v3_len(n[f]);
        if (!(len > 0))
            continue;
        prox_vec3 nn = prox_v3_scale(n[f], 1.0 / len);
        double dd = d[f] / len;
        for (uint32_t i = 0; i < p->nv; i++) {
            double s = prox_v3_dot(nn, p->v[i]);
            dd = s > dd ? s : dd;
        }
        if (used + p->nv > loop_cap) {
            uint32_t *nl = realloc(p->loop, sizeof *p->loop * (2 * loop_cap + p->nv));
            if (!nl)
                goto done;
            p->loop = nl;
            loop_cap = 2 * loop_cap + p->nv;
        }
        double fl = flat ? fmax(flat[f], eps) : eps;
        uint32_t k = face_loop(p->v, p->nv, nn, dd, fl, pts, stack, p->loop + used);
        if (k < 3)
            continue;
        p->n[p->nf] = nn;
        p->d[p->nf] = dd;
        p->flat[p->nf] = fl;
        p->orig[p->nf] = orig ? orig[f] : 1;
        p->loop_start[p->nf++] = used;
        used += k;
    }
    p->loop_start[p->nf] = used;
    rc = -1;
    if (p->nf < 4)
        goto done;
    /* keep the corners only */
    for (uint32_t i = 0; i < p->nv; i++)
        map[i] = UINT32_MAX;
    for (uint32_t i = 0; i < used; i++)
        map[p->loop[i]] = 0;
    uint32_t w = 0;
    for (uint32_t i = 0; i < p->nv; i++)
        if (map[i] == 0) {
            map[i] = w;
            p->v[w++] = p->v[i];
        }
    p->nv = w;
    for (uint32_t i = 0; i < used; i++)
        p->loop[i] = map[p->loop[i]];
    if (p->nv < 4 || p->nv > BOXES_MAX_LOCAL || p->nf > BOXES_MAX_LOCAL)
        goto done;
    /* edges: each loop step is a half edge; a convex surface pairs each
     * with exactly one reversed twin in another face */
    half_edge *he = malloc(sizeof *he * (used ? used : 1));
    p->e = malloc(sizeof *p->e * (used ? used : 1));
    if (!he || !p->e) {
        free(he);
        rc = -2;
        goto done;
    }
    for (uint32_t f = 0; f < p->nf; f++)
        for (uint32_t j = p->loop_start[f]; j < p->loop_start[f + 1]; j++) {
            uint32_t a = p->loop[j], b = p->loop[j + 1 < p->loop_start[f + 1] ? j + 1 : p->loop_start[f]];
            he[j] = (half_edge){a < b ? a : b, a < b ? b : a, a, f};
        }
    qsort(he, used, sizeof *he, half_edge_cmp);
    p->adjacency = 1;
    for (uint32_t j = 0; j < used;) {
        uint32_t k = j + 1;
        while (k < used && he[k].lo == he[j].lo && he[k].hi == he[j].hi)
            k++;
        int paired = k - j == 2 && he[j].from != he[j + 1].from;
        if (!paired)
            p->adjacency = 0;
        p->e[p->ne++] = (boxes_edge){(uint16_t)he[j].lo, (uint16_t)he[j].hi, (uint16_t)he[j].face,
                                     (uint16_t)(paired ? he[j + 1].face : he[j].face)};
        j = k;
    }
    free(he);
    wp_mass(p);
    rc = p->volume > 0 ? 0 : -1;
    if ((long)p->nv - (long)p->ne + (long)p->nf != 2) /* not a sphere's surface: trust no pairing */
        p->adjacency = 0;
done:
    free(pts);
    free(stack);
    free(map);
    if (rc != 0)
        wp_free(p);
    return rc;
}

/* Split p by the plane a . x = a . c into lo (a . x <= ..) and hi. 0, -1
 * when the plane does not cut p into two solids, -2 out of memory. */
static int wp_split(const wpiece *p, prox_vec3 a, prox_vec3 c, double eps, wpiece *lo, wpiece *hi)
{
    double off = prox_v3_dot(a, c);
    uint32_t nv = p->nv, nf = p->nf;
    double *s = malloc(sizeof *s * nv);
    prox_vec3 *vl = malloc(sizeof *vl * (nv + p->ne)), *vh = malloc(sizeof *vh * (nv + p->ne));
    prox_vec3 *n = malloc(sizeof *n * (nf + 1));
    double *d = malloc(sizeof *d * (nf + 1)), *fl = malloc(sizeof *fl * (nf + 1));
    unsigned char *o = malloc(nf + 1);
    int rc = -2;
    memset(lo, 0, sizeof *lo);
    memset(hi, 0, sizeof *hi);
    if (!s || !vl || !vh || !n || !d || !fl || !o)
        goto done;
    uint32_t nl = 0, nh = 0;
    for (uint32_t i = 0; i < nv; i++) {
        s[i] = prox_v3_dot(a, p->v[i]) - off;
        if (s[i] <= eps)
            vl[nl++] = p->v[i];
        if (s[i] >= -eps)
            vh[nh++] = p->v[i];
    }
    for (uint32_t k = 0; k < p->ne; k++) {
        uint32_t i = p->e[k].a, j = p->e[k].b;
        if (!((s[i] < -eps && s[j] > eps) || (s[j] < -eps && s[i] > eps)))
            continue;
        if (s[i] > 0) { /* from the inner end: both halves get the same bits */
            uint32_t t = i;
            i = j;
            j = t;
        }
        prox_vec3 x = prox_v3_madd(p->v[i], prox_v3_sub(p->v[j], p->v[i]), s[i] / (s[i] - s[j]));
        vl[nl++] = x;
        vh[nh++] = x;
    }
    memcpy(n, p->n, sizeof *n * nf);
    memcpy(d, p->d, sizeof *d * nf);
    memcpy(fl, p->flat, sizeof *fl * nf);
    memcpy(o, p->orig, nf);
    n[nf] = a, d[nf] = off, fl[nf] = eps, o[nf] = 0;
    rc = wp_make(lo, vl, nl, n, d, fl, o, nf + 1, eps);
    if (rc == 0) {
        n[nf] = prox_v3_scale(a, -1.0), d[nf] = -off;
        rc = wp_make(hi, vh, nh, n, d, fl, o, nf + 1, eps);
    }
    if (rc == 0 && (lo->volume < 1e-9 * p->volume || hi->volume < 1e-9 * p->volume))
        rc = -1;
done:
    if (rc != 0) {
        wp_free(lo);
        wp_free(hi);
    }
    free(s);
    free(vl);
    free(vh);
    free(n);
    free(d);
    free(fl);
    free(o);
    return rc;
}

/* ---- frames and boxes ---- */

/* the piece's vertices projected on u: [*lo, *hi] */
static void piece_span(const wpiece *p, prox_vec3 u, double *lo, double *hi)
{
    *lo = INFINITY, *hi = -INFINITY;
    for (uint32_t k = 0; k < p->nv; k++) {
        double q = prox_v3_dot(u, p->v[k]);
        *lo = fmin(*lo, q), *hi = fmax(*hi, q);
    }
}

static double frame_extent_volume(const wpiece *p, const prox_vec3 ax[3])
{
    double vol = 1, lo, hi;
    for (int i = 0; i < 3; i++) {
        piece_span(p, ax[i], &lo, &hi);
        vol *= hi - lo;
    }
    return vol;
}

/* The piece's principal frame (columns of the inertia tensor's
 * eigenvectors); where eigenvalues coincide (within 1e-6), the principal
 * frame within that eigenspace with the smallest outer box among those
 * spanned by face normals and edge directions. Also the split direction:
 * the axis of largest variance (ties: the longest extent). */
static void choose_frame(const wpiece *p, prox_vec3 ax[3], prox_vec3 *split)
{
    double ev[3];
    prox_mat3 V;
    prox_sym3_eigen(&p->cov, ev, &V);
    for (int i = 0; i < 3; i++)
        ax[i] = prox_m3_col(&V, i);
    double tol = 1e-6 * (ev[0] > 0 ? ev[0] : 1.0);
    int eq01 = ev[0] - ev[1] <= tol, eq12 = ev[1] - ev[2] <= tol;
    if (eq01 || eq12) {
        enum { MAXDIR = 64 };
        prox_vec3 dir[MAXDIR];
        uint32_t nd = 0;
        for (uint32_t f = 0; f < p->nf && nd < MAXDIR; f++)
            dir[nd++] = p->n[f];
        for (uint32_t k = 0; k < p->ne && nd < MAXDIR; k++)
            dir[nd++] = prox_v3_normalize(prox_v3_sub(p->v[p->e[k].b], p->v[p->e[k].a]));
        double best = frame_extent_volume(p, ax) * (1 - 1e-9);
        prox_vec3 cand[3];
        for (uint32_t i = 0; i < nd; i++)
            for (uint32_t j = 0; j < (eq01 && eq12 ? nd : 1); j++) {
                prox_vec3 fixed = eq01 && eq12 ? dir[i] : (eq01 ? ax[2] : ax[0]);
                prox_vec3 other = eq01 && eq12 ? dir[j] : dir[i];
                prox_vec3 w = prox_v3_madd(other, fixed, -prox_v3_dot(other, fixed));
                if (prox_v3_len(w) < 0.1)
                    continue;
                w = prox_v3_normalize(w);
                cand[0] = fixed, cand[1] = w, cand[2] = prox_v3_cross(fixed, w);
                double vol = frame_extent_volume(p, cand);
                if (vol < best) {
                    best = vol * (1 - 1e-9);
                    memcpy(ax, cand, sizeof cand);
                }
            }
    }
    double var[3], ext[3];
    for (int i = 0; i < 3; i++) {
        var[i] = prox_v3_dot(ax[i], prox_m3_mul_v(&p->cov, ax[i]));
        double lo, hi;
        piece_span(p, ax[i], &lo, &hi);
        ext[i] = hi - lo;
    }
    int s = 0;
    for (int i = 1; i < 3; i++)
        if (var[i] > var[s] + tol || (var[i] >= var[s] - tol && ext[i] > ext[s]))
            s = i;
    *split = ax[s];
}

static float float_up(double x)
{
    float f = (float)x;
    return (double)f < x ? nextafterf(f, INFINITY) : f;
}

static float float_down(double x)
{
    float f = (float)x;
    return (double)f > x ? nextafterf(f, -INFINITY) : f;
}

static prox_mat3 node_axes(const bvh_node *b)
{
    prox_mat3 R;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            R.m[i][j] = b->R[i][j];
    return R;
}

/* The outer box in frame ax, axes ordered by extent (largest first, right
 * handed), rounded to float and measured again in the rounded frame, then
 * padded as the BVH pads (BVH_FLOAT_PAD), so that it holds every vertex. */
static void fit_outer(const wpiece *p, const prox_vec3 ax[3], bvh_node *out)
{
    double lo[3], hi[3];
    for (int i = 0; i < 3; i++)
        piece_span(p, ax[i], &lo[i], &hi[i]);
    int o[3] = {0, 1, 2};
    for (int i = 0; i < 2; i++)
        for (int j = i + 1; j < 3; j++)
            if (hi[o[j]] - lo[o[j]] > hi[o[i]] - lo[o[i]]) {
                int t = o[i];
                o[i] = o[j];
                o[j] = t;
            }
    prox_vec3 col[3] = {ax[o[0]], ax[o[1]], prox_v3_cross(ax[o[0]], ax[o[1]])};
    prox_vec3 mid = prox_v3(0, 0, 0);
    for (int i = 0; i < 3; i++)
        mid = prox_v3_madd(mid, ax[o[i]], 0.5 * (lo[o[i]] + hi[o[i]]));
    for (int i = 0; i < 3; i++) {
        out->R[0][i] = (float)col[i].x, out->R[1][i] = (float)col[i].y, out->R[2][i] = (float)col[i].z;
    }
    out->c[0] = (float)mid.x, out->c[1] = (float)mid.y, out->c[2] = (float)mid.z;
    prox_mat3 R = node_axes(out);
    prox_vec3 c = prox_v3(out->c[0], out->c[1], out->c[2]);
    double e[3] = {0, 0, 0};
    for (uint32_t k = 0; k < p->nv; k++) {
        prox_vec3 q = prox_m3_tmul_v(&R, prox_v3_sub(p->v[k], c));
        for (int i = 0; i < 3; i++)
            e[i] = fmax(e[i], fabs(prox_v3_get(q, i)));
    }
    double pad = BVH_FLOAT_PAD * sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]) + 1e-7 * (fabs(c.x) + fabs(c.y) + fabs(c.z)) + 1e-30;
    for (int i = 0; i < 3; i++)
        out->e[i] = float_up(e[i] + pad);
    out->radius = float_up(sqrt((double)out->e[0] * out->e[0] + (double)out->e[1] * out->e[1] + (double)out->e[2] * out->e[2]));
}

/* the most a corner of box (c, R, e) rises above plane (n, d): <= 0 inside */
static double box_plane_excess(prox_vec3 c, const prox_mat3 *R, const double e[3], prox_vec3 n, double d)
{
    prox_vec3 a = prox_m3_tmul_v(R, n);
    return prox_v3_dot(n, c) + e[0] * fabs(a.x) + e[1] * fabs(a.y) + e[2] * fabs(a.z) - d;
}

/* The inner box in the outer box's rounded frame: solved in double, the
 * centre rounded to float, the extents shrunk until the corners hold every
 * plane, rounded down; checked corner by corner. No box (radius 0) if the
 * solver fails. -1 when out of memory (the build fails: a tree built with
 * boxes missing would answer right but slower, unsaid), else 0. */
static int fit_inner(const wpiece *p, const bvh_node *outer, bvh_node *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->R, outer->R, sizeof out->R);
    prox_mat3 R = node_axes(outer);
    prox_vec3 c;
    double h[3];
    /* each plane lowered by its face's flatness: a face of a float mesh
     * bends by that much, and the box must stay inside the bent surface */
    double *dl = malloc(sizeof *dl * p->nf);
    if (!dl)
        return -1;
    for (uint32_t k = 0; k < p->nf; k++)
        dl[k] = p->d[k] - p->flat[k];
    int rc = prox_boxes_inner_box(p->n, dl, p->nf, &R, p->centroid, &c, h);
    free(dl);
    if (rc < 0)
        return 0;
    out->c[0] = (float)c.x, out->c[1] = (float)c.y, out->c[2] = (float)c.z;
    prox_vec3 cf = prox_v3(out->c[0], out->c[1], out->c[2]);
    double lam = 1.0;
    for (uint32_t k = 0; k < p->nf; k++) {
        prox_vec3 a = prox_m3_tmul_v(&R, p->n[k]);
        double room = p->d[k] - p->flat[k] - prox_v3_dot(p->n[k], cf), need = h[0] * fabs(a.x) + h[1] * fabs(a.y) + h[2] * fabs(a.z);
        if (!(room > 0))
            return 0;
        if (need > room)
            lam = fmin(lam, room / need);
    }
    double e[3];
    for (int i = 0; i < 3; i++)
        out->e[i] = float_down(h[i] * lam * (1 - 1e-12)), e[i] = out->e[i];
    for (int tries = 0; tries < 8; tries++) {
        double worst = -INFINITY;
        for (uint32_t k = 0; k < p->nf; k++)
            worst = fmax(worst, box_plane_excess(cf, &R, e, p->n[k], p->d[k] - p->flat[k]));
        if (worst <= 0)
            break;
        for (int i = 0; i < 3; i++)
            out->e[i] = float_down(e[i] * (1 - 1e-6)), e[i] = out->e[i];
        if (tries == 7) {
            memset(out->e, 0, sizeof out->e);
            return 0;
        }
    }
    if (!(e[0] > 0 && e[1] > 0 && e[2] > 0)) {
        memset(out->e, 0, sizeof out->e);
        return 0;
    }
    out->radius = float_down(sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]));
    return 0;
}

/* ---- the build ---- */

typedef struct build_ctx {
    prox_boxes *b;
    uint32_t depth, cap_v, cap_f, cap_e;
    double eps;
    int oom;
} build_ctx;

static int grow(void **p, uint32_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint64_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    if (nc > UINT32_MAX)
        return -1;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = (uint32_t)nc;
    return 0;
}

/* store piece p as node i's piece */
static int store_piece(build_ctx *bc, uint32_t i, const wpiece *p, uint32_t level)
{
    prox_boxes *b = bc->b;
    uint32_t cf = bc->cap_f;
    if (grow((void **)&b->vertices, &bc->cap_v, (uint64_t)b->vertex_count + p->nv, sizeof *b->vertices) ||
        grow((void **)&b->plane_n, &cf, (uint64_t)b->plane_count + p->nf, sizeof *b->plane_n) ||
        grow((void **)&b->plane_d, &bc->cap_f, (uint64_t)b->plane_count + p->nf, sizeof *b->plane_d) ||
        grow((void **)&b->edges, &bc->cap_e, (uint64_t)b->edge_count + p->ne, sizeof *b->edges))
        return -1;
    boxes_piece *pc = &b->pieces[i];
    pc->v0 = b->vertex_count, pc->nv = p->nv;
    pc->f0 = b->plane_count, pc->nf = p->nf;
    pc->e0 = b->edge_count, pc->ne = p->ne;
    pc->flags = p->adjacency ? BOXES_ADJACENCY : 0;
    for (uint32_t f = 0; f < p->nf; f++)
        if (p->orig[f])
            pc->flags |= BOXES_EXTERIOR;
    pc->level = level;
    pc->centroid = p->centroid;
    pc->volume = p->volume;
    memcpy(b->vertices + b->vertex_count, p->v, sizeof *p->v * p->nv);
    memcpy(b->plane_n + b->plane_count, p->n, sizeof *p->n * p->nf);
    memcpy(b->plane_d + b->plane_count, p->d, sizeof *p->d * p->nf);
    memcpy(b->edges + b->edge_count, p->e, sizeof *p->e * p->ne);
    b->vertex_count += p->nv, b->plane_count += p->nf, b->edge_count += p->ne;
    return 0;
}

/* Node i holds piece p (consumed): its boxes, then its children. */
static void build_node(build_ctx *bc, uint32_t i, wpiece *p, uint32_t level)
{
    prox_boxes *b = bc->b;
    prox_vec3 ax[3], split;
    choose_frame(p, ax, &split);
    fit_outer(p, ax, &b->nodes[i].outer);
    b->child[i] = 0;
    if (fit_inner(p, &b->nodes[i].outer, &b->nodes[i].inner) != 0 || store_piece(bc, i, p, level) != 0) {
        bc->oom = 1;
        wp_free(p);
        return;
    }
    int exterior = (b->pieces[i].flags & BOXES_EXTERIOR) != 0;
    wpiece lo, hi;
    int rc = level < bc->depth && exterior ? wp_split(p, split, p->centroid, bc->eps, &lo, &hi) : -1;
    wp_free(p);
    if (rc == -2)
        bc->oom = 1;
    if (rc != 0)
        return;
    uint32_t k = b->node_count;
    b->node_count += 2;
    b->child[i] = k;
    build_node(bc, k, &lo, level + 1);
    build_node(bc, k + 1, &hi, level + 1);
}

prox_boxes_def prox_boxes_def_default(void)
{
    prox_boxes_def d = {4, 1e-6};
    return d;
}

/* whether triangle (p0, p1, p2) lies on the plane n . x = d, within tol */
static int on_plane(prox_vec3 n, double d, prox_vec3 p0, prox_vec3 p1, prox_vec3 p2, double tol)
{
    return fabs(prox_v3_dot(n, p0) - d) <= tol && fabs(prox_v3_dot(n, p1) - d) <= tol && fabs(prox_v3_dot(n, p2) - d) <= tol;
}

/* Merge coplanar triangles into face planes and check convexity against
 * each face's first triangle. uv: the nu vertices the triangles use, uv[i]
 * being the mesh's vertex ui[i]. Fills n, d and flat (how far the face's
 * vertices lie below its plane; capacity BOXES_MAX_FACES); returns the
 * face count, or -1 with err. */
static int mesh_faces(const prox_mesh *m, const prox_vec3 *uv, const uint32_t *ui, uint32_t nu, double tol, prox_vec3 *n,
                      double *d, double *flat, char *err, size_t errlen)
{
    uint32_t nf = 0;
    uint32_t *first = malloc(sizeof *first * BOXES_MAX_FACES);
    prox_vec3 *sum = malloc(sizeof *sum * BOXES_MAX_FACES);
    if (!first || !sum) {
        free(first);
        free(sum);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = -1;
    for (uint32_t t = 0; t < m->triangle_count; t++) {
        const uint32_t *tri = m->triangles[t];
        prox_vec3 p0 = m->vertices[tri[0]], p1 = m->vertices[tri[1]], p2 = m->vertices[tri[2]];
        prox_vec3 cr = prox_v3_cross(prox_v3_sub(p1, p0), prox_v3_sub(p2, p0));
        double len = prox_v3_len(cr);
        if (!(len > 0))
            continue;
        prox_vec3 nt = prox_v3_scale(cr, 1.0 / len);
        uint32_t g = 0;
        for (; g < nf; g++) {
            if (prox_v3_dot(nt, n[g]) <= 0)
                continue;
            if (on_plane(n[g], d[g], p0, p1, p2, tol))
                break;
        }
        if (g == nf) {
            if (nf == BOXES_MAX_FACES) {
                snprintf(err, errlen,
                         "more than %u faces after merging coplanar triangles; box hierarchies are for small convex "
                         "polyhedra (use a mesh BVH)",
                         BOXES_MAX_FACES);
                goto done;
            }
            n[nf] = nt, d[nf] = prox_v3_dot(nt, p0), first[nf] = t, sum[nf] = prox_v3(0, 0, 0);
            nf++;
        }
        sum[g] = prox_v3_add(sum[g], cr);
    }
    /* convexity: no vertex above a face's first triangle's plane */
    for (uint32_t g = 0; g < nf; g++) {
        double worst = 0;
        uint32_t wv = 0;
        for (uint32_t i = 0; i < nu; i++) {
            double s = prox_v3_dot(n[g], uv[i]) - d[g];
            if (s > worst)
                worst = s, wv = ui[i];
        }
        if (worst > tol) {
            snprintf(err, errlen,
                     "mesh is not convex: vertex %u lies %.3g outside the plane of triangle %u (tolerance %.3g); box "
                     "hierarchies need a convex polyhedron",
                     wv, worst, first[g], tol);
            goto done;
        }
    }
    /* each face's plane: the area-weighted normal of its triangles,
     * supporting the vertex set */
    for (uint32_t g = 0; g < nf; g++) {
        n[g] = prox_v3_normalize(sum[g]);
        double dm = -INFINITY;
        for (uint32_t i = 0; i < nu; i++)
            dm = fmax(dm, prox_v3_dot(n[g], uv[i]));
        d[g] = dm;
        flat[g] = 0;
    }
    for (uint32_t t = 0; t < m->triangle_count; t++) {
        const uint32_t *tri = m->triangles[t];
        prox_vec3 p0 = m->vertices[tri[0]], p1 = m->vertices[tri[1]], p2 = m->vertices[tri[2]];
        prox_vec3 cr = prox_v3_cross(prox_v3_sub(p1, p0), prox_v3_sub(p2, p0));
        if (!(prox_v3_len(cr) > 0))
            continue;
        for (uint32_t g = 0; g < nf; g++)
            if (on_plane(n[g], d[g], p0, p1, p2, tol) && prox_v3_dot(cr, n[g]) > 0)
                for (int k = 0; k < 3; k++)
                    flat[g] = fmax(flat[g], 2 * (d[g] - prox_v3_dot(n[g], m->vertices[tri[k]])));
    }
    rc = (int)nf;
done:
    free(first);
    free(sum);
    return rc;
}

int prox_boxes_build(const prox_mesh *m, const prox_boxes_def *def, prox_boxes **out, char *err, size_t errlen)
{
    char dummy[8];
    if (!err || !errlen)
        err = dummy, errlen = sizeof dummy;
    err[0] = 0;
    if (!out) {
        snprintf(err, errlen, "no output pointer");
        return -1;
    }
    *out = NULL;
    double t0 = 1e-9 * (double)prox_now_ns();
    const prox_boxes_def dflt = prox_boxes_def_default();
    prox_boxes_def df = def ? *def : dflt;
    if (df.depth == 0)
        df.depth = dflt.depth;
    if (!(df.convex_tol > 0))
        df.convex_tol = dflt.convex_tol;
    if (df.depth > 12) {
        snprintf(err, errlen, "depth %u is more than 12 levels", df.depth);
        return -1;
    }
    if (!m || m->triangle_count < 4) {
        snprintf(err, errlen, "mesh has %u triangles; a closed convex polyhedron needs at least 4", m ? m->triangle_count : 0);
        return -1;
    }
    if (m->triangle_count > BOXES_MAX_TRIANGLES) {
        snprintf(err, errlen,
                 "mesh has %u triangles; box hierarchies are for small convex polyhedra (at most %u; use a mesh BVH)",
                 m->triangle_count, BOXES_MAX_TRIANGLES);
        return -1;
    }
    if (prox_mesh_check_arrays(m) != 0) {
        snprintf(err, errlen, "mesh has a triangle index past its vertices or a vertex that is not finite");
        return -1;
    }
    if (!m->closed) {
        snprintf(err, errlen,
                 "mesh is not closed (%u boundary edges, %u non-manifold edges); box hierarchies need a closed convex "
                 "polyhedron",
                 m->boundary_edges, m->nonmanifold_edges);
        return -1;
    }
    /* the vertices the triangles use: the others are no part of the solid
     * (they must not move its planes, its tolerances or the limits) */
    uint32_t *ui = malloc(sizeof *ui * m->vertex_count), nu = 0;
    prox_vec3 *uv = malloc(sizeof *uv * m->vertex_count), lo = prox_v3(0, 0, 0), hi = lo;
    prox_vec3 *n = NULL;
    double *d = NULL, *flat = NULL;
    prox_boxes *b = NULL;
    if (!ui || !uv) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    memset(ui, 0, sizeof *ui * m->vertex_count);
    for (uint32_t t = 0; t < m->triangle_count; t++)
        for (int k = 0; k < 3; k++)
            ui[m->triangles[t][k]] = 1;
    for (uint32_t i = 0; i < m->vertex_count; i++)
        if (ui[i]) {
            lo = nu ? prox_v3_min(lo, m->vertices[i]) : m->vertices[i];
            hi = nu ? prox_v3_max(hi, m->vertices[i]) : m->vertices[i];
            ui[nu] = i, uv[nu++] = m->vertices[i]; /* nu <= i: ui[i] is read before it is written */
        }
    if (nu > BOXES_MAX_VERTICES) {
        snprintf(err, errlen,
                 "mesh's triangles use %u vertices; box hierarchies take at most %u (one closed convex surface of at most "
                 "%u triangles has no more: more means several surfaces or zero-area triangles, and the build slows "
                 "quadratically with them); make the mesh one convex surface, or use a mesh BVH",
                 nu, BOXES_MAX_VERTICES, BOXES_MAX_TRIANGLES);
        goto fail;
    }
    const double diag = prox_v3_dist(lo, hi);
    if (m->misoriented_edges == 0 && fabs(m->volume) <= 1e-12 * diag * diag * diag) {
        snprintf(err, errlen, "mesh encloses no volume (flat); box hierarchies need a solid convex polyhedron");
        goto fail;
    }
    if (!m->oriented || !(m->volume > 0)) {
        snprintf(err, errlen,
                 "mesh is not oriented outward (%u misoriented edges, volume %.6g); box hierarchies need outward "
                 "counter-clockwise triangles",
                 m->misoriented_edges, m->volume);
        goto fail;
    }
    double tol = df.convex_tol * diag;
    n = malloc(sizeof *n * BOXES_MAX_FACES);
    d = malloc(sizeof *d * BOXES_MAX_FACES), flat = malloc(sizeof *flat * BOXES_MAX_FACES);
    b = calloc(1, sizeof *b);
    uint32_t max_nodes = (2u << df.depth) - 1;
    if (b) {
        b->nodes = calloc(max_nodes, sizeof *b->nodes);
        b->child = calloc(max_nodes, sizeof *b->child);
        b->pieces = calloc(max_nodes, sizeof *b->pieces);
    }
    if (!n || !d || !flat || !b || !b->nodes || !b->child || !b->pieces) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    int nf = mesh_faces(m, uv, ui, nu, tol, n, d, flat, err, errlen);
    if (nf < 0)
        goto fail;
    wpiece root;
    double eps = 1e-12 * diag;
    int rc = wp_make(&root, uv, nu, n, d, flat, NULL, (uint32_t)nf, eps);
    if (rc != 0) {
        snprintf(err, errlen, rc == -2 ? "out of memory" : "mesh is degenerate (no convex solid with 4 or more faces)");
        goto fail;
    }
    if (fabs(root.volume - m->volume) > 1e-6 * m->volume + tol * diag * diag) {
        snprintf(err, errlen, "mesh is not convex: its hull's volume %.9g differs from its volume %.9g", root.volume,
                 m->volume);
        wp_free(&root);
        goto fail;
    }
    b->stats.faces = root.nf, b->stats.vertices = root.nv, b->stats.volume = root.volume;
    build_ctx bc = {b, df.depth, 0, 0, 0, eps, 0};
    b->node_count = 1;
    build_node(&bc, 0, &root, 0);
    if (bc.oom) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    b->size = b->nodes[0].outer.radius;
    b->tree.type = PROX_TREE_BOXES;
    b->tree.root = 0;
    b->tree.impl = b;
    b->tree.volume = b->stats.volume;
    b->tree.com = b->pieces[0].centroid;
    prox_boxes_stats *s = &b->stats;
    s->nodes = b->node_count;
    for (uint32_t i = 0; i < b->node_count; i++) {
        const boxes_piece *pc = &b->pieces[i];
        const bvh_node *in = &b->nodes[i].inner, *ou = &b->nodes[i].outer;
        double vin = 8.0 * in->e[0] * in->e[1] * in->e[2], vout = 8.0 * ou->e[0] * ou->e[1] * ou->e[2];
        if (i == 0)
            s->root_inner_volume = vin;
        s->interior_pieces += !(pc->flags & BOXES_EXTERIOR);
        s->pieces_without_adjacency += !(pc->flags & BOXES_ADJACENCY);
        if (b->child[i])
            continue;
        s->leaves++;
        s->depth = pc->level > s->depth ? pc->level : s->depth;
        s->max_leaf_faces = pc->nf > s->max_leaf_faces ? pc->nf : s->max_leaf_faces;
        s->max_leaf_vertices = pc->nv > s->max_leaf_vertices ? pc->nv : s->max_leaf_vertices;
        s->leaf_inner_volume += vin;
        s->leaf_outer_volume += vout;
    }
    s->memory_bytes = prox_boxes_memory_bytes(b);
    s->build_seconds = 1e-9 * (double)prox_now_ns() - t0;
    free(ui);
    free(uv);
    free(n);
    free(d);
    free(flat);
    *out = b;
    return 0;
fail:
    free(ui);
    free(uv);
    free(n);
    free(d);
    free(flat);
    prox_boxes_free(b);
    return -1;
}

void prox_boxes_free(prox_boxes *b)
{
    if (!b)
        return;
    free(b->nodes);
    free(b->child);
    free(b->pieces);
    free(b->vertices);
    free(b->plane_n);
    free(b->plane_d);
    free(b->edges);
    free(b);
}

/* ---- accessors (RT safe) ---- */

const prox_tree *prox_boxes_tree(const prox_boxes *b) { return b ? &b->tree : NULL; }

size_t prox_boxes_memory_bytes(const prox_boxes *b)
{
    if (!b)
        return 0;
    return sizeof *b + (sizeof *b->nodes + sizeof *b->child + sizeof *b->pieces) * b->node_count +
           sizeof *b->vertices * b->vertex_count + (sizeof *b->plane_n + sizeof *b->plane_d) * b->plane_count +
           sizeof *b->edges * b->edge_count;
}

void prox_boxes_get_stats(const prox_boxes *b, prox_boxes_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (b)
        *out = b->stats;
}

static prox_boxes_box box_of(const bvh_node *n)
{
    prox_boxes_box x;
    x.c = prox_v3(n->c[0], n->c[1], n->c[2]);
    x.R = node_axes(n);
    for (int i = 0; i < 3; i++)
        x.e[i] = n->e[i];
    return x;
}

int prox_boxes_node_get(const prox_boxes *b, uint32_t node, prox_boxes_node *out)
{
    if (!b || !out || node >= b->node_count)
        return -1;
    const boxes_piece *pc = &b->pieces[node];
    out->child[0] = b->child[node] ? b->child[node] : PROX_BOXES_NONE;
    out->child[1] = b->child[node] ? b->child[node] + 1 : PROX_BOXES_NONE;
    out->level = pc->level;
    out->exterior = (pc->flags & BOXES_EXTERIOR) != 0;
    out->outer = box_of(&b->nodes[node].outer);
    out->inner = box_of(&b->nodes[node].inner);
    out->volume = pc->volume;
    out->centroid = pc->centroid;
    out->vertex_count = pc->nv;
    out->plane_count = pc->nf;
    out->vertices = b->vertices + pc->v0;
    out->plane_n = b->plane_n + pc->f0;
    out->plane_d = b->plane_d + pc->f0;
    return 0;
}
