/* test_math.c - transforms, quaternions, eigen decomposition, pose parsing. */
#include <string.h>

#include "check.h"
#include "prox.h"
#include "check_prox.h"

static void test_xform_roundtrip(void)
{
    unsigned long long s = 1;
    for (int i = 0; i < 200; i++) {
        prox_quat q = check_rng_quat(&s);
        prox_xform X = prox_xform_from_pose(prox_v3(check_rng_uniform(&s, -5, 5), 1, 2), q);
        double py = check_rng_uniform(&s, -3, 3), px = check_rng_uniform(&s, -3, 3); /* y first: check_prox.h */
        prox_vec3 p = prox_v3(px, py, 0.5);
        prox_vec3 r = prox_xform_inv_point(&X, prox_xform_point(&X, p));
        CHECK_NEAR(prox_v3_dist(p, r), 0.0, 1e-12, "inverse point");
        prox_xform inv = prox_xform_inverse(&X);
        prox_xform id = prox_xform_mul(&X, &inv);
        CHECK_NEAR(prox_v3_len(id.t), 0.0, 1e-12, "X X^-1 translation");
        prox_quat q2 = prox_m3_to_quat(&X.R);
        prox_mat3 R2 = prox_quat_to_m3(q2);
        double err = 0;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                err += fabs(R2.m[a][b] - X.R.m[a][b]);
        CHECK_NEAR(err, 0.0, 1e-12, "quat <-> matrix");
    }
}

static void test_quat_rotation(void)
{
    /* 90 degrees about z maps x to y */
    prox_quat q = prox_quat_axis_angle(prox_v3(0, 0, 1), M_PI / 2);
    prox_mat3 R = prox_quat_to_m3(q);
    prox_vec3 v = prox_m3_mul_v(&R, prox_v3(1, 0, 0));
    CHECK_NEAR(v.x, 0.0, 1e-15, "x");
    CHECK_NEAR(v.y, 1.0, 1e-15, "y");
}

static void test_eigen(void)
{
    unsigned long long s = 7;
    for (int it = 0; it < 100; it++) {
        prox_mat3 A;
        for (int i = 0; i < 3; i++)
            for (int j = i; j < 3; j++)
                A.m[i][j] = A.m[j][i] = check_rng_uniform(&s, -2, 2);
        double ev[3];
        prox_mat3 V;
        prox_sym3_eigen(&A, ev, &V);
        CHECK(ev[0] >= ev[1] && ev[1] >= ev[2], "sorted %g %g %g", ev[0], ev[1], ev[2]);
        for (int k = 0; k < 3; k++) {
            prox_vec3 v = prox_m3_col(&V, k);
            prox_vec3 Av = prox_m3_mul_v(&A, v);
            CHECK_NEAR(prox_v3_dist(Av, prox_v3_scale(v, ev[k])), 0.0, 1e-10, "A v = l v");
            CHECK_NEAR(prox_v3_len(v), 1.0, 1e-12, "unit");
        }
        prox_vec3 c = prox_v3_cross(prox_m3_col(&V, 0), prox_m3_col(&V, 1));
        CHECK_NEAR(prox_v3_dot(c, prox_m3_col(&V, 2)), 1.0, 1e-12, "right handed");
    }
    /* repeated eigenvalues */
    prox_mat3 I = prox_m3_identity();
    double ev[3];
    prox_mat3 V;
    prox_sym3_eigen(&I, ev, &V);
    CHECK_NEAR(ev[0] + ev[1] + ev[2], 3.0, 1e-15, "trace");
}

/* prox_quat_normalize at the ends of the double range: the same unit
 * quaternion as for the same direction at unit scale, not the identity
 * (components near 1e308, whose scaled norm overflowed) nor a rounded one
 * (subnormal components, divided by a norm that had lost bits) */
static void test_quat_normalize_range(void)
{
    const prox_quat dir = {0.5, -0.25, 0.125, 1.0};
    const prox_quat ref = prox_quat_normalize(dir);
    const double scales[] = {1.0, 1.7e308, 1e308, 0x1p1020, 1e150, 1e-150, 1e-300, 0x1p-1060, 4.9406564584124654e-324 * 8};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
        double s = scales[i];
        prox_quat q = prox_quat_normalize((prox_quat){dir.w * s, dir.x * s, dir.y * s, dir.z * s});
        /* the smallest scale leaves 0.125 * s and -0.25 * s exact
         * multiples of the least subnormal: exact inputs */
        double err = fmax(fmax(fabs(q.w - ref.w), fabs(q.x - ref.x)), fmax(fabs(q.y - ref.y), fabs(q.z - ref.z)));
        CHECK(err <= 4e-16, "scale %g: off by %.3g", s, err);
    }
    prox_quat one = prox_quat_normalize((prox_quat){0, 0, -0x1p-1074, 0});
    CHECK(one.y == -1.0 && one.w == 0.0, "the least subnormal alone is a unit axis");
    prox_quat id = prox_quat_normalize((prox_quat){0, INFINITY, 0, 0});
    CHECK(id.w == 1.0 && id.x == 0.0, "an infinite component gives the identity");
    id = prox_quat_normalize((prox_quat){0, 0, 0, 0});
    CHECK(id.w == 1.0, "zero gives the identity");
}

static void test_parse_pose(void)
{
    prox_xform X;
    CHECK(prox_parse_pose("1 2 3 1 0 0 0", &X) == 1, "plain");
    CHECK_NEAR(X.t.y, 2.0, 0, "ty");
    CHECK(prox_parse_pose("  # comment", &X) == 0, "comment");
    CHECK(prox_parse_pose("", &X) == 0, "blank");
    CHECK(prox_parse_pose("1 2 3 2 0 0 0 # trailing", &X) == 1, "trailing comment");
    CHECK_NEAR(X.R.m[0][0], 1.0, 1e-15, "normalized");
    CHECK(prox_parse_pose("1 2 3 1 0 0", &X) == -1, "six numbers");
    CHECK(prox_parse_pose("1 2 3 1 0 0 0 5", &X) == -1, "eight numbers");
    CHECK(prox_parse_pose("1 2 x 1 0 0 0", &X) == -1, "not a number");
    CHECK(prox_parse_pose("1 2 nan 1 0 0 0", &X) == -1, "nan");
    CHECK(prox_parse_pose("1 2 3 0 0 0 0", &X) == -1, "zero quaternion");
    CHECK(prox_parse_pose("1 2 3e999 1 0 0 0", &X) == -1, "overflow");
    /* components whose squares overflow: the rotation they mean (180
     * degrees about x), not the identity the overflowed norm made */
    CHECK(prox_parse_pose("0 0 0 1 1e300 0 0", &X) == 1, "huge quaternion");
    CHECK_NEAR(X.R.m[1][1], -1.0, 1e-12, "huge quaternion: 180 degrees about x");
    CHECK(prox_parse_pose("0 0 0 1e-200 1e-200 0 0", &X) == -1, "a quaternion of norm 1.4e-200 is near zero");
    CHECK(prox_parse_pose("1e-320 0 0 1 0 0 0", &X) == 1 && X.t.x > 0, "a subnormal translation is a number");
}

/* prox_read_line: a line longer than the buffer is reported, not split
 * (its tail read as the next line), and the next line still follows */
static void test_read_line(void)
{
    FILE *f = tmpfile();
    fputs("short\n", f);
    for (int i = 0; i < 100; i++)
        fputc('x', f);
    fputs("\nlast", f);
    rewind(f);
    char buf[16];
    CHECK(prox_read_line(f, buf, sizeof buf) == 1 && !strcmp(buf, "short\n"), "a line");
    CHECK(prox_read_line(f, buf, sizeof buf) == -1, "a 100-character line in 16 bytes is too long");
    CHECK(prox_read_line(f, buf, sizeof buf) == 1 && !strcmp(buf, "last"), "the line after it (no newline at the end)");
    CHECK(prox_read_line(f, buf, sizeof buf) == 0, "end of file");
    rewind(f);
    char exact[7];
    CHECK(prox_read_line(f, exact, sizeof exact) == 1 && !strcmp(exact, "short\n"), "a line that fills the buffer exactly");
    fclose(f);
}

/* prox_read_line: a NUL byte anywhere in a line refuses the line (-2),
 * whether in the part read or in a long line's skipped tail, and the next
 * line still follows; fgets ended the line at the NUL, and where the line
 * was longer than the buffer its tail came back as the next line. The
 * length rule at the buffer's end: up to size - 2 characters before LF or
 * CR LF. */
static void test_read_line_nul(void)
{
    static const char text[] = "1 2 3\0 4\n"  /* a NUL in the line */
                               "next\n"
                               "\0\n"           /* a NUL alone */
                               "0123456789abcdefghij\0xyz\n" /* in a long line's tail, past the 16-byte buffer */
                               "ab\0defghijklmnopqrst\n" /* in a long line's part read: -2, not -1 */
                               "after\n"
                               "ab\0c";         /* in the last line, no newline */
    FILE *f = tmpfile();
    CHECK(f && fwrite(text, 1, sizeof text - 1, f) == sizeof text - 1, "tmpfile");
    if (!f)
        return;
    rewind(f);
    char buf[16], why[96];
    CHECK(prox_read_line(f, buf, sizeof buf) == -2, "a NUL inside a line");
    CHECK(prox_read_line(f, buf, sizeof buf) == 1 && !strcmp(buf, "next\n"), "the line after it: '%s'", buf);
    CHECK(prox_read_line(f, buf, sizeof buf) == -2, "a line of a NUL alone");
    CHECK(prox_read_line(f, buf, sizeof buf) == -2, "a NUL in a long line's skipped tail");
    CHECK(prox_read_line(f, buf, sizeof buf) == -2, "a NUL in a long line's part read");
    CHECK(prox_read_line(f, buf, sizeof buf) == 1 && !strcmp(buf, "after\n"), "the line after the long one: '%s'", buf);
    CHECK(prox_read_line(f, buf, sizeof buf) == -2, "a NUL in the last line");
    CHECK(prox_read_line(f, buf, sizeof buf) == 0, "end of file");
    fclose(f);
    CHECK(!strcmp(prox_read_line_why(-2, 16, why, sizeof why), "a NUL byte in the line (binary data in a text file?)"), "%s", why);
    CHECK(!strcmp(prox_read_line_why(-1, 16, why, sizeof why), "line longer than 14 characters"), "%s", why);

    /* the buffer's end, 8 bytes: 6 characters before LF or CR LF fit, 7 do
     * not; 7 at the end of the file do */
    static const char edge[] = "abcdef\r\n" "abcdef\n" "abcdefg\n" "x\n" "abcdefg";
    f = tmpfile();
    CHECK(f && fwrite(edge, 1, sizeof edge - 1, f) == sizeof edge - 1, "tmpfile");
    if (!f)
        return;
    rewind(f);
    char b8[8];
    CHECK(prox_read_line(f, b8, sizeof b8) == 1 && !strcmp(b8, "abcdef\r"), "6 characters and CR LF: '%s'", b8);
    CHECK(prox_read_line(f, b8, sizeof b8) == 1 && !strcmp(b8, "abcdef\n"), "6 characters and LF: '%s'", b8);
    CHECK(prox_read_line(f, b8, sizeof b8) == -1, "7 characters and LF");
    CHECK(prox_read_line(f, b8, sizeof b8) == 1 && !strcmp(b8, "x\n"), "the line after it: '%s'", b8);
    CHECK(prox_read_line(f, b8, sizeof b8) == 1 && !strcmp(b8, "abcdefg"), "7 characters at the end of the file: '%s'", b8);
    CHECK(prox_read_line(f, b8, sizeof b8) == 0, "end of file");
    rewind(f);
    char one[1] = {'z'};
    CHECK(prox_read_line(f, one, sizeof one) == -1 && one[0] == '\0', "a 1-byte buffer holds no line");
    fclose(f);
}

int main(int argc, char **argv)
{
    (void)argc;
    RUN_TEST(test_xform_roundtrip);
    RUN_TEST(test_quat_rotation);
    RUN_TEST(test_eigen);
    RUN_TEST(test_quat_normalize_range);
    RUN_TEST(test_parse_pose);
    RUN_TEST(test_read_line);
    RUN_TEST(test_read_line_nul);
    return check_summary(argv[0]);
}
