/* check.h - the tiny test harness every tests/test_*.c uses.
 *
 * A test file defines `static void test_x(void)` functions and a main that
 * calls RUN_TEST(test_x) for each, then returns check_summary(). A test
 * passes when none of its CHECKs failed. The last line a test program prints
 * is `NAME: N passed, N failed`; tests/run.sh adds the programs up.
 */
#ifndef CHECK_H
#define CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_tests_passed, check_tests_failed, check_current_failed;
static const char *check_current_name = "";

#define CHECK(cond, ...)                                                                                             \
    do {                                                                                                             \
        if (!(cond)) {                                                                                               \
            check_current_failed++;                                                                                  \
            if (check_current_failed <= 10) {                                                                        \
                fprintf(stderr, "%s:%d: %s: FAIL (%s): ", __FILE__, __LINE__, check_current_name, #cond);           \
                fprintf(stderr, __VA_ARGS__);                                                                        \
                fputc('\n', stderr);                                                                                 \
            }                                                                                                        \
        }                                                                                                            \
    } while (0)

/* |a - b| <= tol, with a message showing both values */
#define CHECK_NEAR(a, b, tol, what)                                                                                  \
    do {                                                                                                             \
        double check_a_ = (a), check_b_ = (b);                                                                       \
        CHECK(fabs(check_a_ - check_b_) <= (tol), "%s: %.12g vs %.12g (tol %.3g)", (what), check_a_, check_b_,       \
              (double)(tol));                                                                                        \
    } while (0)

#define RUN_TEST(fn)                                                                                                 \
    do {                                                                                                             \
        check_current_name = #fn;                                                                                    \
        check_current_failed = 0;                                                                                    \
        fn();                                                                                                        \
        if (check_current_failed) {                                                                                  \
            check_tests_failed++;                                                                                    \
            fprintf(stderr, "  FAIL %s (%d checks failed)\n", #fn, check_current_failed);                           \
        } else {                                                                                                     \
            check_tests_passed++;                                                                                    \
            fprintf(stderr, "  ok   %s\n", #fn);                                                                     \
        }                                                                                                            \
    } while (0)

static inline int check_summary(const char *program)
{
    const char *base = strrchr(program, '/');
    printf("%s: %d passed, %d failed\n", base ? base + 1 : program, check_tests_passed, check_tests_failed);
    fflush(stdout);
    return check_tests_failed ? 1 : 0;
}

/* A whole file read into a malloc'd buffer (NULL on failure); *size its length. */
static inline unsigned char *check_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = b ? (size_t)n : 0;
    return b;
}

/* Deterministic PRNG for tests (splitmix64). */
static inline unsigned long long check_rng_next(unsigned long long *s)
{
    unsigned long long z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* uniform in [lo, hi) */
static inline double check_rng_uniform(unsigned long long *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(check_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
