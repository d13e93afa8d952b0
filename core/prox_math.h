/* prox_math.h - vectors, quaternions, rigid transforms and small matrices.
 *
 * Part of libprox (core/). Double precision at the API. Every function here is
 * pure, allocation free and real-time safe; any thread may call it.
 *
 * Conventions: a rigid transform X = (R, t) maps local coordinates p to
 * parent coordinates R p + t. Quaternions are (w, x, y, z), unit length,
 * Hamilton convention (the rotation of q is q v q*).
 */
#ifndef PROX_MATH_H
#define PROX_MATH_H

#include <math.h>
#include <stdio.h>
#include <stdint.h>

typedef struct prox_vec3 {
    double x, y, z;
} prox_vec3;

typedef struct prox_quat {
    double w, x, y, z;
} prox_quat;

/* Row-major 3x3 matrix: m[row][col]. */
typedef struct prox_mat3 {
    double m[3][3];
} prox_mat3;

typedef struct prox_xform {
    prox_mat3 R;
    prox_vec3 t;
} prox_xform;

static inline prox_vec3 prox_v3(double x, double y, double z)
{
    prox_vec3 v = {x, y, z};
    return v;
}
static inline prox_vec3 prox_v3_add(prox_vec3 a, prox_vec3 b) { return prox_v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static inline prox_vec3 prox_v3_sub(prox_vec3 a, prox_vec3 b) { return prox_v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static inline prox_vec3 prox_v3_scale(prox_vec3 a, double s) { return prox_v3(a.x * s, a.y * s, a.z * s); }
static inline prox_vec3 prox_v3_madd(prox_vec3 a, prox_vec3 b, double s) { return prox_v3(a.x + b.x * s, a.y + b.y * s, a.z + b.z * s); }
static inline double prox_v3_dot(prox_vec3 a, prox_vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline prox_vec3 prox_v3_cross(prox_vec3 a, prox_vec3 b)
{
    return prox_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static inline double prox_v3_len2(prox_vec3 a) { return prox_v3_dot(a, a); }
static inline double prox_v3_len(prox_vec3 a) { return sqrt(prox_v3_dot(a, a)); }
static inline double prox_v3_dist(prox_vec3 a, prox_vec3 b) { return prox_v3_len(prox_v3_sub(a, b)); }
static inline prox_vec3 prox_v3_min(prox_vec3 a, prox_vec3 b)
{
    return prox_v3(a.x < b.x ? a.x : b.x, a.y < b.y ? a.y : b.y, a.z < b.z ? a.z : b.z);
}
static inline prox_vec3 prox_v3_max(prox_vec3 a, prox_vec3 b)
{
    return prox_v3(a.x > b.x ? a.x : b.x, a.y > b.y ? a.y : b.y, a.z > b.z ? a.z : b.z);
}
static inline prox_vec3 prox_v3_normalize(prox_vec3 a)
{
    double l = prox_v3_len(a);
    return l > 0.0 ? prox_v3_scale(a, 1.0 / l) : prox_v3(0.0, 0.0, 0.0);
}
static inline double prox_v3_get(prox_vec3 a, int i) { return i == 0 ? a.x : (i == 1 ? a.y : a.z); }
static inline int prox_v3_isfinite(prox_vec3 a) { return isfinite(a.x) && isfinite(a.y) && isfinite(a.z); }

/* ---- 3x3 matrices ---- */
static inline prox_mat3 prox_m3_identity(void)
{
    prox_mat3 r = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};
    return r;
}
static inline prox_vec3 prox_m3_mul_v(const prox_mat3 *M, prox_vec3 v)
{
    return prox_v3(M->m[0][0] * v.x + M->m[0][1] * v.y + M->m[0][2] * v.z,
                   M->m[1][0] * v.x + M->m[1][1] * v.y + M->m[1][2] * v.z,
                   M->m[2][0] * v.x + M->m[2][1] * v.y + M->m[2][2] * v.z);
}
/* M^T v */
static inline prox_vec3 prox_m3_tmul_v(const prox_mat3 *M, prox_vec3 v)
{
    return prox_v3(M->m[0][0] * v.x + M->m[1][0] * v.y + M->m[2][0] * v.z,
                   M->m[0][1] * v.x + M->m[1][1] * v.y + M->m[2][1] * v.z,
                   M->m[0][2] * v.x + M->m[1][2] * v.y + M->m[2][2] * v.z);
}
static inline prox_mat3 prox_m3_mul(const prox_mat3 *A, const prox_mat3 *B)
{
    prox_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[i][j] = A->m[i][0] * B->m[0][j] + A->m[i][1] * B->m[1][j] + A->m[i][2] * B->m[2][j];
    return r;
}
static inline prox_mat3 prox_m3_transpose(const prox_mat3 *A)
{
    prox_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[i][j] = A->m[j][i];
    return r;
}
/* Column j of M. */
static inline prox_vec3 prox_m3_col(const prox_mat3 *M, int j) { return prox_v3(M->m[0][j], M->m[1][j], M->m[2][j]); }

/* ---- quaternions ---- */
static inline prox_quat prox_quat_identity(void)
{
    prox_quat q = {1, 0, 0, 0};
    return q;
}
/* the norm of q; where the plain sum of squares would overflow or lose
 * precision to underflow (components beyond about 1e150 or below 1e-150),
 * scaled by the largest component first */
static inline double prox_quat_norm(prox_quat q)
{
    double n = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    if (n > 1e-150 && n < 1e150)
        return n;
    double m = fmax(fmax(fabs(q.w), fabs(q.x)), fmax(fabs(q.y), fabs(q.z)));
    if (!(m > 0.0) || !isfinite(m))
        return m > 0.0 ? m : 0.0;
    double w = q.w / m, x = q.x / m, y = q.y / m, z = q.z / m;
    return m * sqrt(w * w + x * x + y * y + z * z);
}
/* q / |q|; the identity for a zero or non-finite q. Components near the
 * double range's ends (whose squares overflow or lose bits as subnormals)
 * are first scaled by the power of two that brings the largest near 1, an
 * exact step: the direction comes out as accurate as for unit inputs. */
static inline prox_quat prox_quat_normalize(prox_quat q)
{
    double n = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    if (!(n > 1e-150 && n < 1e150)) {
        double m = fmax(fmax(fabs(q.w), fabs(q.x)), fmax(fabs(q.y), fabs(q.z)));
        if (!(m > 0.0) || !isfinite(m))
            return prox_quat_identity();
        int e;
        (void)frexp(m, &e);
        q.w = ldexp(q.w, -e), q.x = ldexp(q.x, -e), q.y = ldexp(q.y, -e), q.z = ldexp(q.z, -e);
        n = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    }
    prox_quat r = {q.w / n, q.x / n, q.y / n, q.z / n};
    return r;
}
static inline prox_quat prox_quat_mul(prox_quat a, prox_quat b)
{
    prox_quat r = {a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z, a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                   a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x, a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
    return r;
}
static inline prox_quat prox_quat_conj(prox_quat q)
{
    prox_quat r = {q.w, -q.x, -q.y, -q.z};
    return r;
}
/* Rotation of `angle` radians about `axis` (need not be unit). */
static inline prox_quat prox_quat_axis_angle(prox_vec3 axis, double angle)
{
    prox_vec3 a = prox_v3_normalize(axis);
    double s = sin(0.5 * angle);
    prox_quat q = {cos(0.5 * angle), a.x * s, a.y * s, a.z * s};
    return q;
}
/* Rotation matrix of a unit quaternion (normalized here for safety). */
static inline prox_mat3 prox_quat_to_m3(prox_quat q)
{
    q = prox_quat_normalize(q);
    double w = q.w, x = q.x, y = q.y, z = q.z;
    prox_mat3 r = {{{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                    {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                    {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}}};
    return r;
}
/* Unit quaternion of a rotation matrix (Shepperd's method). */
static inline prox_quat prox_m3_to_quat(const prox_mat3 *R)
{
    const double(*m)[3] = R->m;
    double tr = m[0][0] + m[1][1] + m[2][2];
    prox_quat q;
    if (tr > 0) {
        double s = sqrt(tr + 1.0) * 2;
        q.w = 0.25 * s;
        q.x = (m[2][1] - m[1][2]) / s;
        q.y = (m[0][2] - m[2][0]) / s;
        q.z = (m[1][0] - m[0][1]) / s;
    } else if (m[0][0] > m[1][1] && m[0][0] > m[2][2]) {
        double s = sqrt(1.0 + m[0][0] - m[1][1] - m[2][2]) * 2;
        q.w = (m[2][1] - m[1][2]) / s;
        q.x = 0.25 * s;
        q.y = (m[0][1] + m[1][0]) / s;
        q.z = (m[0][2] + m[2][0]) / s;
    } else if (m[1][1] > m[2][2]) {
        double s = sqrt(1.0 + m[1][1] - m[0][0] - m[2][2]) * 2;
        q.w = (m[0][2] - m[2][0]) / s;
        q.x = (m[0][1] + m[1][0]) / s;
        q.y = 0.25 * s;
        q.z = (m[1][2] + m[2][1]) / s;
    } else {
        double s = sqrt(1.0 + m[2][2] - m[0][0] - m[1][1]) * 2;
        q.w = (m[1][0] - m[0][1]) / s;
        q.x = (m[0][2] + m[2][0]) / s;
        q.y = (m[1][2] + m[2][1]) / s;
        q.z = 0.25 * s;
    }
    return prox_quat_normalize(q);
}

/* ---- rigid transforms ---- */
static inline prox_xform prox_xform_identity(void)
{
    prox_xform x;
    x.R = prox_m3_identity();
    x.t = prox_v3(0, 0, 0);
    return x;
}
static inline prox_xform prox_xform_from_pose(prox_vec3 t, prox_quat q)
{
    prox_xform x;
    x.R = prox_quat_to_m3(q);
    x.t = t;
    return x;
}
static inline prox_vec3 prox_xform_point(const prox_xform *X, prox_vec3 p) { return prox_v3_add(prox_m3_mul_v(&X->R, p), X->t); }

/* How far any point within `radius` of c can move between the two
 * transforms (an upper bound; spectral norm for rotations). Real-time
 * safe. Defined in core/math.c. */
double prox_xform_motion_bound(const prox_xform *X0, const prox_xform *X1, prox_vec3 c, double radius);
static inline prox_vec3 prox_xform_vector(const prox_xform *X, prox_vec3 v) { return prox_m3_mul_v(&X->R, v); }
/* X^-1 p */
static inline prox_vec3 prox_xform_inv_point(const prox_xform *X, prox_vec3 p) { return prox_m3_tmul_v(&X->R, prox_v3_sub(p, X->t)); }
static inline prox_xform prox_xform_inverse(const prox_xform *X)
{
    prox_xform r;
    r.R = prox_m3_transpose(&X->R);
    r.t = prox_v3_scale(prox_m3_mul_v(&r.R, X->t), -1.0);
    return r;
}
/* A * B: first B, then A. */
static inline prox_xform prox_xform_mul(const prox_xform *A, const prox_xform *B)
{
    prox_xform r;
    r.R = prox_m3_mul(&A->R, &B->R);
    r.t = prox_v3_add(prox_m3_mul_v(&A->R, B->t), A->t);
    return r;
}
/* A^-1 * B: the pose of B expressed in A's frame. */
static inline prox_xform prox_xform_relative(const prox_xform *A, const prox_xform *B)
{
    prox_xform inv = prox_xform_inverse(A);
    return prox_xform_mul(&inv, B);
}

/* Eigen decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations.
 * On return evals[i] is the eigenvalue of the unit eigenvector in column i
 * of *evecs, sorted in decreasing order; evecs is a proper rotation
 * (determinant +1). Real-time safe. Defined in core/math.c. */
void prox_sym3_eigen(const prox_mat3 *A, double evals[3], prox_mat3 *evecs);

/* Parse a pose line `tx ty tz qw qx qy qz` (whitespace separated; `#` starts
 * a comment). Returns 1 on a pose, 0 on a blank or comment line, -1 on a
 * malformed line (wrong count, non-number, non-finite, zero quaternion).
 * The quaternion is normalized. Defined in core/math.c. */
int prox_parse_pose(const char *line, prox_xform *out);
/* R is a rotation up to rounding: ||R^T R - I|| (Frobenius) below 1e-6 and
 * det R > 0 */
int prox_m3_is_rotation(const prox_mat3 *R);
/* One line of a text file into buf (size bytes, newline kept): 1, 0 at
 * the end of the file, -1 for a line that does not fit (more than size - 2
 * characters before its LF or CR LF), or -2 for a line holding a NUL byte.
 * A refused line's rest is skipped, so a caller that goes on stays in step
 * with the line numbers. fgets alone splits a long line silently (the tail
 * of a long comment would be read as data) and ends one at a NUL (the rest
 * of it lost). Not RT: file I/O. */
int prox_read_line(FILE *f, char *buf, size_t size);
/* why prox_read_line refused a line (got -1 or -2, buffer of `size`), as
 * "line longer than N characters" or a NUL byte's, written to out */
const char *prox_read_line_why(int got, size_t size, char *out, size_t outlen);
/* qsort comparator for doubles, ascending */
static inline int prox_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* CLOCK_MONOTONIC in ns: the one clock libprox reads (deadlines), and the
 * service's and the drivers' clock */
uint64_t prox_now_ns(void);

#endif
