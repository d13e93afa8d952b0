/* test_loader.c - meshes read in a child process (prox_mesh_load_apart).
 *
 * This program is its own loader: started again with PROX_LOADER_FLAG it
 * answers as prox_loader_main does, or, for a file whose name starts with
 * "fake-", misbehaves as the name says (crashes, hangs, exits, sends a
 * damaged reply), so that the parent's side is tested against each way a
 * reader can fail. The memory limit and the time limit are also tested
 * against the real loader on a real (large) mesh.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "prox.h"
#include "check_prox.h"

static char dir[64] = "/tmp/hapticd-loader-XXXXXX";

static prox_loader self_loader(double seconds, uint32_t memory_mib)
{
    prox_loader l = {"/proc/self/exe", seconds, memory_mib};
    return l;
}

static const char *in_dir(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
    return buf;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "write %s", path);
}

/* ---- the fake loader's side (in the child) ---- */

/* the head prox_loader_main writes (loader.c's reply_head) */
typedef struct fake_head {
    uint32_t magic, version;
    int32_t status;
    uint32_t msg_len, vertex_count, triangle_count, welded, dropped;
} fake_head;

static int put(const void *p, size_t n) { return write(1, p, n) == (ssize_t)n ? 0 : 3; }

static int fake_loader(int argc, char **argv)
{
    const char *base = strrchr(argv[3], '/');
    base = base ? base + 1 : argv[3];
    if (strncmp(base, "fake-", 5) != 0)
        return prox_loader_main(argc, argv);
    const char *how = base + 5;
    fake_head h = {0x4c585250u, 1, 0, 0, 3, 1, 0, 0};
    const double v[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    const uint32_t t[3] = {0, 1, 2}, bad_t[3] = {0, 1, 7};
    if (!strcmp(how, "crash")) {
        signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn the signal into an exit status */
        raise(SIGSEGV);
        return 0;
    }
    if (!strcmp(how, "hang")) {
        for (;;)
            pause();
    }
    if (!strcmp(how, "exit7"))
        return 7;
    if (!strcmp(how, "garbage"))
        return put("this is not a reply from a loader", 33);
    if (!strcmp(how, "short"))
        return put(&h, sizeof h) || put(v, sizeof v / 2);
    if (!strcmp(how, "badindex"))
        return put(&h, sizeof h) || put(v, sizeof v) || put(bad_t, sizeof bad_t);
    if (!strcmp(how, "counts")) {
        h.vertex_count = 4000000000u;
        return put(&h, sizeof h);
    }
    if (!strcmp(how, "good")) /* a reply written by hand: the parent takes it as the loader's */
        return put(&h, sizeof h) || put(v, sizeof v) || put(t, sizeof t);
    if (!strcmp(how, "message")) {
        const char msg[] = "fake-message: refused for a reason of its own";
        h.status = -1, h.msg_len = sizeof msg - 1;
        return put(&h, sizeof h) || put(msg, sizeof msg - 1);
    }
    if (!strcmp(how, "stall")) { /* a good head, then nothing and no end */
        put(&h, sizeof h);
        for (;;)
            pause();
    }
    if (!strcmp(how, "env")) {
        /* what the child was given: no descriptor of the parent's but 0, 1 and 2,
         * standard input from /dev/null, no blocked signal, SIGPIPE not ignored */
        for (int fd = 3; fd < 256; fd++)
            if (fcntl(fd, F_GETFD) != -1)
                return 20;
        struct stat in, null;
        if (fstat(0, &in) != 0 || stat("/dev/null", &null) != 0 || in.st_rdev != null.st_rdev || !S_ISCHR(in.st_mode))
            return 21;
        sigset_t mask;
        if (sigprocmask(SIG_BLOCK, NULL, &mask) != 0 || sigismember(&mask, SIGTERM) || sigismember(&mask, SIGUSR1))
            return 22;
        struct sigaction sa;
        if (sigaction(SIGPIPE, NULL, &sa) != 0 || sa.sa_handler == SIG_IGN)
            return 23;
        return put(&h, sizeof h) || put(v, sizeof v) || put(t, sizeof t);
    }
    return 2;
}

/* ---- tests ---- */

/* A mesh read apart is the mesh read in this process, bit for bit, with the
 * loader's counts (welded vertices, dropped triangles) */
static void test_same_mesh(void)
{
    char path[128], err[512];
    prox_mesh *tor = prox_mesh_make_torus(1.0, 0.3, 24, 12);
    CHECK(prox_mesh_write_off(tor, in_dir(path, sizeof path, "torus.off"), err, sizeof err) == 0, "%s", err);
    prox_mesh_free(tor);
    /* a square of two triangles given as four corners each once and one
     * twice (a weld), and a triangle repeating a corner (dropped) */
    char obj[128];
    write_text(in_dir(obj, sizeof obj, "quad.obj"),
               "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 0\nf 1 2 3\nf 5 3 4\nf 1 1 2\n");
    const char *files[2] = {path, obj};
    const prox_loader ld = self_loader(30, 0);
    for (int i = 0; i < 2; i++) {
        prox_mesh *a = NULL, *b = NULL;
        char e1[512] = "", e2[512] = "";
        CHECK(prox_mesh_load(files[i], &a, e1, sizeof e1) == 0, "%s", e1);
        CHECK(prox_mesh_load_apart(&ld, files[i], &b, e2, sizeof e2) == 0, "%s", e2);
        if (!a || !b) {
            prox_mesh_free(a);
            prox_mesh_free(b);
            continue;
        }
        CHECK(a->vertex_count == b->vertex_count && a->triangle_count == b->triangle_count, "%s: counts %u/%u vs %u/%u",
              files[i], a->vertex_count, a->triangle_count, b->vertex_count, b->triangle_count);
        if (a->vertex_count == b->vertex_count && a->triangle_count == b->triangle_count) {
            CHECK(!memcmp(a->vertices, b->vertices, sizeof *a->vertices * a->vertex_count), "%s: vertices differ", files[i]);
            CHECK(!memcmp(a->triangles, b->triangles, sizeof *a->triangles * a->triangle_count), "%s: triangles differ",
                  files[i]);
        }
        CHECK(a->welded_vertices == b->welded_vertices && a->dropped_degenerate == b->dropped_degenerate,
              "%s: welded %u vs %u, dropped %u vs %u", files[i], a->welded_vertices, b->welded_vertices,
              a->dropped_degenerate, b->dropped_degenerate);
        CHECK(a->closed == b->closed && a->volume == b->volume && a->area == b->area, "%s: analysis differs", files[i]);
        if (i == 1)
            /* (assimp's OBJ reader gives each face corner a vertex of its own: 9 made 4) */
            CHECK(b->welded_vertices == 5 && b->dropped_degenerate == 1 && b->triangle_count == 2,
                  "quad: welded %u dropped %u triangles %u", b->welded_vertices, b->dropped_degenerate, b->triangle_count);
        prox_mesh_free(a);
        prox_mesh_free(b);
    }
    /* no loader, or one without a program: read in this process */
    prox_mesh *c = NULL;
    prox_loader none = prox_loader_default();
    CHECK(none.exe == NULL && prox_mesh_load_apart(&none, path, &c, err, sizeof err) == 0 && c && c->triangle_count == 576,
          "in process: %s", err);
    prox_mesh_free(c);
    c = NULL;
    CHECK(prox_mesh_load_apart(NULL, path, &c, err, sizeof err) == 0 && c, "NULL loader: %s", err);
    prox_mesh_free(c);
}

/* the loader's own refusals come back word for word */
static void test_same_refusals(void)
{
    char path[128], bad[128];
    write_text(in_dir(bad, sizeof bad, "declares.off"), "OFF\n8 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n");
    const char *files[3] = {in_dir(path, sizeof path, "missing.off"), bad, "/"};
    const prox_loader ld = self_loader(30, 0);
    for (int i = 0; i < 3; i++) {
        prox_mesh *a = NULL, *b = NULL;
        char e1[512] = "", e2[512] = "";
        CHECK(prox_mesh_load(files[i], &a, e1, sizeof e1) == -1 && !a, "%s loads", files[i]);
        CHECK(prox_mesh_load_apart(&ld, files[i], &b, e2, sizeof e2) == -1 && !b, "%s loads apart", files[i]);
        CHECK(*e1 && !strcmp(e1, e2), "'%s' vs '%s'", e1, e2);
    }
}

static void expect_failure(const prox_loader *ld, const char *name, const char *needle, const char *needle2)
{
    char path[128], err[512] = "";
    in_dir(path, sizeof path, name);
    prox_mesh *m = (prox_mesh *)&err; /* must be cleared */
    const int rc = prox_mesh_load_apart(ld, path, &m, err, sizeof err);
    CHECK(rc == -1 && m == NULL, "%s: rc %d", name, rc);
    CHECK(strstr(err, needle) && (!needle2 || strstr(err, needle2)) && !strncmp(err, path, strlen(path)),
          "%s: '%s' wants '%s' and '%s'", name, err, needle, needle2 ? needle2 : "");
}

/* every way the child can fail is one message, and the caller goes on */
static void test_child_failures(void)
{
    const prox_loader ld = self_loader(20, 0);
    expect_failure(&ld, "fake-crash", "the mesh reader crashed on this file (signal 11, SIGSEGV); nothing was loaded", NULL);
    const prox_loader lim = self_loader(20, 512);
    if (!getenv("HAPTICD_SANITIZED")) /* sanitizer builds set no memory limit */
        expect_failure(&lim, "fake-crash", "(signal 11, SIGSEGV); the mesh loader may use at most 512 MiB of address space",
                       NULL);
    expect_failure(&ld, "fake-exit7", "failed (exit status 7); nothing was loaded", "/proc/self/exe");
    expect_failure(&ld, "fake-garbage", "reply is damaged (not a reply from this version of the loader)", NULL);
    expect_failure(&ld, "fake-short", "reply is damaged (the mesh is cut short)", NULL);
    expect_failure(&ld, "fake-badindex", "reply is damaged (indices out of range or coordinates not finite)", NULL);
    expect_failure(&ld, "fake-counts", "reply is damaged (counts a loaded mesh cannot have)", NULL);
    expect_failure(&ld, "fake-nothing", "failed (exit status 2)", NULL); /* an unknown fake: usage */
    /* a message of the child's own is passed on as it is */
    char path[128], err[512];
    prox_mesh *m = NULL;
    CHECK(prox_mesh_load_apart(&ld, in_dir(path, sizeof path, "fake-message"), &m, err, sizeof err) == -1 &&
              !strcmp(err, "fake-message: refused for a reason of its own"),
          "'%s'", err);
    /* a well-formed reply is taken (so the failures above are the reply's fault) */
    CHECK(prox_mesh_load_apart(&ld, in_dir(path, sizeof path, "fake-good"), &m, err, sizeof err) == 0 && m &&
              m->triangle_count == 1 && m->vertex_count == 3 && m->vertices[1].x == 1.0,
          "fake-good: %s", err);
    prox_mesh_free(m);
    /* a program that cannot start */
    prox_loader gone = {"/nonexistent/hapticd-loader", 5, 0};
    m = NULL;
    CHECK(prox_mesh_load_apart(&gone, path, &m, err, sizeof err) == -1 && !m &&
              strstr(err, "cannot start the mesh loader /nonexistent/hapticd-loader (No such file or directory)"),
          "'%s'", err);
    /* time limits that are not above 0 */
    const double bad_s[3] = {0, -1, NAN};
    for (int i = 0; i < 3; i++) {
        prox_loader b = self_loader(bad_s[i], 0);
        CHECK(prox_mesh_load_apart(&b, path, &m, err, sizeof err) == -1 && strstr(err, "time limit must be above 0 s"),
              "%g: '%s'", bad_s[i], err);
    }
}

/* a child that hangs, or stalls half way through its reply, is stopped at
 * the time limit (the bound on the wait is loose: machines are shared).
 * The limit is well above a child's start (a few ms, tens under a
 * sanitizer on a loaded machine), so that fake-stall's head has come when
 * it is reached: a limit its start outlasted would test the hang twice */
static void test_child_stopped(void)
{
    const double limit_s = getenv("HAPTICD_SANITIZED") ? 1.0 : 0.3;
    const prox_loader ld = self_loader(limit_s, 0);
    char want[128];
    snprintf(want, sizeof want, "the mesh loader took longer than %g s and was stopped; nothing was loaded", limit_s);
    const char *names[2] = {"fake-hang", "fake-stall"};
    for (int i = 0; i < 2; i++) {
        const double t0 = check_now_s();
        expect_failure(&ld, names[i], want, NULL);
        const double took = check_now_s() - t0;
        CHECK(took >= limit_s && took < limit_s + 10, "%s: the wait took %.3f s (limit %g s)", names[i], took, limit_s);
    }
}

/* the child holds none of the caller's descriptors, reads nothing from its
 * standard input, and blocks or ignores no signal the caller did */
static void test_child_environment(void)
{
    const int fd = open("/dev/null", O_RDONLY); /* no O_CLOEXEC: inherited unless closed */
    CHECK(fd >= 3, "open");
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    void (*pipe_was)(int) = signal(SIGPIPE, SIG_IGN);
    const prox_loader ld = self_loader(20, 0);
    char path[128], err[512] = "";
    prox_mesh *m = NULL;
    CHECK(prox_mesh_load_apart(&ld, in_dir(path, sizeof path, "fake-env"), &m, err, sizeof err) == 0 && m,
          "the child's environment: '%s' (exit 20: a descriptor, 21: standard input, 22: blocked signals, 23: SIGPIPE "
          "ignored)",
          err);
    prox_mesh_free(m);
    signal(SIGPIPE, pipe_was);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(fd);
}

/* the memory limit holds the real loader on a large mesh (172,800
 * triangles, a 7 MB OFF file), and the same file loads without it */
static void test_memory_limit(void)
{
    if (getenv("HAPTICD_SANITIZED")) {
        fprintf(stderr, "    (skipped: sanitizer builds set no memory limit)\n");
        return;
    }
    char path[128], err[512] = "";
    prox_mesh *big = prox_mesh_make_tiled_box(prox_v3(1, 1, 1), 120);
    CHECK(big && prox_mesh_write_off(big, in_dir(path, sizeof path, "big.off"), err, sizeof err) == 0, "%s", err);
    const uint32_t triangles = big ? big->triangle_count : 0;
    prox_mesh_free(big);
    prox_loader tight = self_loader(60, 32);
    prox_mesh *m = NULL;
    CHECK(prox_mesh_load_apart(&tight, path, &m, err, sizeof err) == -1 && !m, "loaded in 32 MiB");
    prox_mesh_free(m); /* (one loaded despite the limit) */
    m = NULL;
    CHECK(strstr(err, "the mesh loader may use at most 32 MiB of address space") &&
              (strstr(err, "bad_alloc") || strstr(err, "out of memory") || strstr(err, "crashed")),
          "'%s'", err);
    prox_loader free_ld = self_loader(60, 0);
    CHECK(prox_mesh_load_apart(&free_ld, path, &m, err, sizeof err) == 0 && m && m->triangle_count == triangles, "%s", err);
    prox_mesh_free(m);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], PROX_LOADER_FLAG))
        return fake_loader(argc, argv);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN_TEST(test_same_mesh);
    RUN_TEST(test_same_refusals);
    RUN_TEST(test_child_failures);
    RUN_TEST(test_child_stopped);
    RUN_TEST(test_child_environment);
    RUN_TEST(test_memory_limit);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleanup");
    return check_summary(argv[0]);
}
