/* prox_mesh.h - triangle meshes: loading (assimp), cleaning, validation,
 * procedural shapes, and exact triangle primitives.
 *
 * Part of libprox (core/). Loading and building allocate and must run off
 * the real-time thread. The primitive tests at the bottom are pure and
 * real-time safe; any thread may call them.
 */
#ifndef PROX_MESH_H
#define PROX_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "prox_math.h"

/* A triangle mesh in its local frame (metres by convention, any unit works).
 * Owned by whoever created it; free with prox_mesh_free. */
typedef struct prox_mesh {
    uint32_t vertex_count;
    uint32_t triangle_count;
    prox_vec3 *vertices;      /* vertex_count */
    uint32_t (*triangles)[3]; /* triangle_count, indices into vertices, CCW seen from outside */

    /* Filled by prox_mesh_analyze (called by the loaders and builders). */
    uint32_t boundary_edges;    /* edges used by exactly one triangle */
    uint32_t nonmanifold_edges; /* edges used by more than two triangles */
    uint32_t misoriented_edges; /* interior edges whose two triangles traverse them the same way */
    int closed;                 /* no boundary and no non-manifold edge */
    int oriented;               /* consistently oriented (and outward if closed: volume > 0) */
    double volume;              /* signed volume (divergence theorem); meaningful when closed */
    double area;
    prox_vec3 bbox_min, bbox_max;
    prox_vec3 centroid; /* volume centroid when closed, else area centroid */
    uint32_t welded_vertices;        /* duplicates merged on load */
    uint32_t dropped_degenerate;     /* zero-area / repeated-index triangles dropped on load */
} prox_mesh;

/* Load a mesh with assimp (OBJ, OFF, STL, PLY, glTF, DAE, ...), merge all of
 * the file's meshes into one, weld duplicate vertices (exact position match
 * only; assimp's tolerance-based join is not used), drop vertices no
 * triangle uses and degenerate triangles, then analyze. OFF and PLY headers
 * are checked against the file first: counts it cannot hold, a text body
 * shorter than declared, or fewer elements read than declared are refused.
 * Returns 0 and *out on success. On failure returns -1 and writes a one-line
 * message naming the file and the problem into err (missing, unreadable,
 * empty, not a mesh, header counts, truncated, no triangles, a format
 * refused by name: Collada, FBX, SMD, NFF, Quick3D, LightWave scenes,
 * RAW, MilkShape 3D, ASE, whose assimp readers hung, crashed or took gigabytes
 * on small malformed files; a .gltf or .glb that is not glTF 2 JSON, or a
 * .glb whose chunk lengths the file does not hold). Non-RT. */
int prox_mesh_load(const char *path, prox_mesh **out, char *err, size_t errlen);
/* The OFF/PLY header checks of prox_mesh_load alone, for other readers
 * that hand a file to assimp (point clouds): 0, or -1 with err. Non-RT. */
int prox_mesh_check_header(const char *path, char *err, size_t errlen);

/* m as a triangle OFF file at path, every coordinate with 17 significant
 * digits (each double as it is; prox_mesh_load, through assimp, rounds
 * them to floats). 0, or -1 with a
 * one-line message naming the file and the problem (cannot create, write
 * failed) in err; an unwritable mesh (prox_mesh_check_arrays) is refused
 * before the file is touched. Non-RT. */
int prox_mesh_write_off(const prox_mesh *m, const char *path, char *err, size_t errlen);

/* Make a mesh from arrays (copied), weld, drop degenerates and analyze.
 * Returns NULL when prox_mesh_arrays_ok refuses the arrays, or out of
 * memory. Non-RT. */
prox_mesh *prox_mesh_from_arrays(const prox_vec3 *vertices, uint32_t vertex_count, const uint32_t (*triangles)[3],
                                 uint32_t triangle_count);

/* 0 when every triangle index is below vertex_count and every vertex is
 * finite (what prox_mesh_from_arrays takes), else -1. Any thread. */
int prox_mesh_arrays_ok(const prox_vec3 *vertices, uint32_t vertex_count, const uint32_t (*triangles)[3], uint32_t triangle_count);

/* 0 when the arrays are there, every triangle index is below vertex_count
 * and every vertex a triangle uses is finite; -1 otherwise. The loaders and
 * prox_mesh_from_arrays never make such a mesh; one filled or changed by
 * hand can (the analysis fields do not say so), and the tree builders call
 * this first. Any thread, RT safe. */
int prox_mesh_check_arrays(const prox_mesh *m);

/* Recompute the analysis fields. 0, or -1 (nothing changed) when a
 * triangle index is not below vertex_count or out of memory. Non-RT
 * (allocates temporary edge tables). */
int prox_mesh_analyze(prox_mesh *m);

/* Apply a uniform scale and translation in place: p -> s * p + t; re-analyze. */
void prox_mesh_transform(prox_mesh *m, double scale, prox_vec3 t);

void prox_mesh_free(prox_mesh *m);

/* Procedural, closed, outward-oriented shapes centred at the origin. */
prox_mesh *prox_mesh_make_box(prox_vec3 half_extents);
/* The same box with every face cut into n x n squares of two triangles
 * each (12 n^2 triangles, welded): a flat, finely tessellated surface.
 * n from 1 to 1024, else NULL. */
prox_mesh *prox_mesh_make_tiled_box(prox_vec3 half_extents, int n);
prox_mesh *prox_mesh_make_sphere(double radius, int subdivisions); /* icosphere, 20*4^s triangles */
prox_mesh *prox_mesh_make_torus(double major_r, double minor_r, int major_segments, int minor_segments);
/* A random triangle soup (not closed) inside a cube of half-size `extent`. */
prox_mesh *prox_mesh_make_soup(uint32_t triangle_count, double extent, double tri_size, uint64_t seed);

/* ---- exact triangle primitives (RT safe) ---- */

/* Closest point on triangle (a, b, c) to p; returns the squared distance. */
double prox_point_triangle_dist2(prox_vec3 p, prox_vec3 a, prox_vec3 b, prox_vec3 c, prox_vec3 *closest);

/* Exact distance between triangles P and Q (0 when they intersect), with
 * witness points on each (points realizing the distance; when they
 * intersect, a common point). Robust for parallel, coplanar, touching and
 * degenerate (sliver) triangles. */
double prox_triangle_distance(const prox_vec3 P[3], const prox_vec3 Q[3], prox_vec3 *p_on_P, prox_vec3 *q_on_Q);

/* The same for a caller that only wants the distance if it is below
 * `below` (a search's best so far): when a separating axis (a normal, or an
 * edge-edge cross product) already shows the triangles at least `below`
 * apart, returns that separation (a lower bound on the distance, >= below)
 * with *exact = 0 and *axis (if not NULL) that axis, unit, from P towards
 * Q; the witness points are then not set. Otherwise returns exactly what
 * prox_triangle_distance returns, with *exact = 1 (exact may be NULL). A
 * pair whose distance is below `below` is never cut short: the axis
 * separation is lowered by far more than its rounding. */
double prox_triangle_distance_below(const prox_vec3 P[3], const prox_vec3 Q[3], double below, prox_vec3 *p_on_P,
                                    prox_vec3 *q_on_Q, prox_vec3 *axis, int *exact);

/* Do triangles P and Q intersect (touching counts)? Moller's interval test
 * with a coplanar fallback. */
int prox_triangle_intersect(const prox_vec3 P[3], const prox_vec3 Q[3]);

/* The generalized winding number of the n triangles (indices into verts)
 * about p: 1 inside a closed mesh oriented outward, 0 outside (-1 inside
 * one oriented inward), fractions near its surface. O(n); allocates
 * nothing: RT safe (the small-mesh IST distance calls it). */
double prox_winding_number(const prox_vec3 *verts, const uint32_t (*tris)[3], uint32_t n, prox_vec3 p);

/* Is point p inside the closed mesh m (generalized winding number > 0.5)?
 * O(triangles); the BVH offers a faster version. */
int prox_mesh_contains_point(const prox_mesh *m, prox_vec3 p);

#endif
