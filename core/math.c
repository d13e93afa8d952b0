/* math.c - out-of-line math: symmetric eigen decomposition, motion
 * bounds, pose parsing. */
#include "prox_math.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void prox_sym3_eigen(const prox_mat3 *A, double evals[3], prox_mat3 *evecs)
{
    double a[3][3];
    double v[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            a[i][j] = 0.5 * (A->m[i][j] + A->m[j][i]);

    for (int sweep = 0; sweep < 50; sweep++) {
        double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
        double scale = fabs(a[0][0]) + fabs(a[1][1]) + fabs(a[2][2]);
        if (off == 0.0 || off <= 1e-300 || off < 1e-15 * scale)
            break;
        for (int p = 0; p < 2; p++) {
            for (int q = p + 1; q < 3; q++) {
                if (a[p][q] == 0.0)
                    continue;
                double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < 3; k++) { /* columns p, q of a */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) { /* rows p, q */
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; k++) {
                    double vkp = v[k][p], vkq = v[k][q];
                    v[k][p] = c * vkp - s * vkq;
                    v[k][q] = s * vkp + c * vkq;
                }
            }
        }
    }
    int order[3] = {0, 1, 2};
    double d[3] = {a[0][0], a[1][1], a[2][2]};
    for (int i = 0; i < 2; i++)
        for (int j = i + 1; j < 3; j++)
            if (d[order[j]] > d[order[i]]) {
                int tmp = order[i];
                order[i] = order[j];
                order[j] = tmp;
            }
    for (int i = 0; i < 3; i++) {
        evals[i] = d[order[i]];
        for (int k = 0; k < 3; k++)
            evecs->m[k][i] = v[k][order[i]];
    }
    /* make it a proper rotation */
    prox_vec3 c0 = prox_m3_col(evecs, 0), c1 = prox_m3_col(evecs, 1);
    prox_vec3 c2 = prox_v3_cross(c0, c1);
    evecs->m[0][2] = c2.x;
    evecs->m[1][2] = c2.y;
    evecs->m[2][2] = c2.z;
}

/* ||R^T R - I||_F: how far R is from orthonormal (rounding, for poses
 * made from unit quaternions) */
static double orth_defect(const prox_mat3 *R)
{
    double f2 = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double g = R->m[0][i] * R->m[0][j] + R->m[1][i] * R->m[1][j] + R->m[2][i] * R->m[2][j] - (i == j);
            f2 += g * g;
        }
    return sqrt(f2);
}

/* det R: the triple product of its rows */
static double det3(const prox_mat3 *R)
{
    const double(*m)[3] = R->m;
    return prox_v3_dot(prox_v3(m[0][0], m[0][1], m[0][2]), prox_v3_cross(prox_v3(m[1][0], m[1][1], m[1][2]), prox_v3(m[2][0], m[2][1], m[2][2])));
}

int prox_m3_is_rotation(const prox_mat3 *R) { return orth_defect(R) < 1e-6 && det3(R) > 0; }

/* The sphere's centre moves by |(R1 - R0) c + t1 - t0| and every point by
 * at most that plus ||R1 - R0|| r (spectral norm). For two rotations ||R1 - R0|| is
 * ||R1 - R0||_F / sqrt 2 exactly (R1 - R0 = R0 (Q - I), Q a rotation by some
 * angle a: singular values 2 sin(a/2) twice and 0); poses that are
 * rotations up to rounding (defect d = ||R^T R - I||_F) have polar factors
 * within d of them, which the 4 (d0 + d1) term covers; anything else (a
 * reflection, a sloppy matrix) gets the Frobenius norm, always an upper
 * bound. The whole-sphere Frobenius bound (|R1 - R0|_F (|c| + r) + |t1 - t0|)
 * was 1.21-1.24x larger on the steps of the bench paths. */
double prox_xform_motion_bound(const prox_xform *X0, const prox_xform *X1, prox_vec3 c, double radius)
{
    double f2 = 0, dc[3];
    for (int i = 0; i < 3; i++) {
        dc[i] = prox_v3_get(X1->t, i) - prox_v3_get(X0->t, i);
        for (int j = 0; j < 3; j++) {
            double d = X1->R.m[i][j] - X0->R.m[i][j];
            f2 += d * d;
            dc[i] += d * prox_v3_get(c, j);
        }
    }
    double f = sqrt(f2), norm = f;
    double d0 = orth_defect(&X0->R), d1 = orth_defect(&X1->R);
    if (d0 < 1e-6 && d1 < 1e-6 && det3(&X0->R) > 0 && det3(&X1->R) > 0)
        norm = f * M_SQRT1_2 + 4 * (d0 + d1);
    norm = norm < f ? norm : f;
    return (sqrt(dc[0] * dc[0] + dc[1] * dc[1] + dc[2] * dc[2]) + norm * radius) * (1 + 1e-12) + 1e-300;
}

int prox_read_line(FILE *f, char *buf, size_t size)
{
    /* byte by byte (getc_unlocked, the stream locked once): fgets gives no
     * count, so a NUL byte would end the line where it stands, silently */
    if (size < 2) {
        if (size)
            buf[0] = '\0';
        return -1;
    }
    size_t n = 0;
    int c = EOF, nul = 0;
    flockfile(f);
    while (n + 1 < size && (c = getc_unlocked(f)) != EOF) {
        buf[n++] = (char)c;
        nul |= c == '\0';
        if (c == '\n')
            break;
    }
    buf[n] = '\0';
    int got = n ? 1 : 0;
    if (n + 1 >= size && buf[n - 1] != '\n') {
        /* full and no newline: the end of the file, a CR LF line end split
         * at the buffer's end (the line fits), or a longer line (the rest
         * skipped, a NUL in it included) */
        c = getc_unlocked(f);
        if (c != EOF && !(c == '\n' && buf[n - 1] == '\r')) {
            got = -1;
            while (c != EOF && c != '\n') {
                nul |= c == '\0';
                c = getc_unlocked(f);
            }
        }
    }
    funlockfile(f);
    return nul ? -2 : got;
}

const char *prox_read_line_why(int got, size_t size, char *out, size_t outlen)
{
    if (got == -2)
        snprintf(out, outlen, "a NUL byte in the line (binary data in a text file?)");
    else
        snprintf(out, outlen, "line longer than %zu characters", size - 2);
    return out;
}

int prox_parse_pose(const char *line, prox_xform *out)
{
    double v[7];
    int n = 0;
    const char *p = line;
    for (;;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (*p == '\0' || *p == '#')
            break;
        if (n == 7)
            return -1;
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        /* ERANGE: overflow (refused) or underflow to a tiny number (kept) */
        if (end == p || (errno == ERANGE && fabs(x) >= 1.0) || !isfinite(x))
            return -1;
        if (*end && !isspace((unsigned char)*end) && *end != '#')
            return -1;
        v[n++] = x;
        p = end;
    }
    if (n == 0)
        return 0;
    if (n != 7)
        return -1;
    prox_quat q = {v[3], v[4], v[5], v[6]};
    /* a quaternion this close to zero is no rotation anyone meant */
    if (!(prox_quat_norm(q) > 1e-12))
        return -1;
    *out = prox_xform_from_pose(prox_v3(v[0], v[1], v[2]), q);
    return 1;
}

uint64_t prox_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
