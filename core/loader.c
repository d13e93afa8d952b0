/* loader.c - prox_mesh_load in a child process (prox_loader.h). Non-RT.
 *
 * The parent starts the loader with posix_spawn (glibc spawns with
 * CLONE_VFORK: no copy of a large or locked address space, and safe from a
 * process with real-time threads), the reply coming back on a pipe that
 * is the child's standard output. The child is given an empty signal mask
 * and default dispositions (the calling thread may block or ignore some),
 * standard input from /dev/null and no other descriptor of ours (the
 * device's, the OSC socket). The parent reads under a deadline, kills the
 * child past it, reaps it, and only then trusts a reply: from a child that
 * exited with status 0. The reply is checked again as arrays
 * (prox_mesh_from_arrays), since the child has just parsed hostile data.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prox_loader.h"

extern char **environ;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LOADER_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define LOADER_SANITIZED 1
#endif
#endif
#ifndef LOADER_SANITIZED
#define LOADER_SANITIZED 0
#endif

#define REPLY_MAGIC 0x4c585250u /* "PRXL" read as little-endian bytes */
#define REPLY_VERSION 1u
#define REPLY_MSG_MAX 1024u

/* What the child writes: this head, then msg_len bytes of message
 * (status -1), or the vertices (3 doubles each) and the triangles (3
 * uint32 each) (status 0). Parent and child are one program: native byte
 * order and layout. */
typedef struct reply_head {
    uint32_t magic, version;
    int32_t status;
    uint32_t msg_len;
    uint32_t vertex_count, triangle_count;
    uint32_t welded, dropped;
} reply_head;

_Static_assert(sizeof(prox_vec3) == 3 * sizeof(double), "prox_vec3 is three doubles");

prox_loader prox_loader_default(void)
{
    prox_loader l = {NULL, 60.0, 4096};
    return l;
}

/* ---- child ---- */

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int prox_loader_main(int argc, char **argv)
{
    char *end = NULL;
    unsigned long long mib = 0;
    if (argc == 5) {
        errno = 0;
        mib = strtoull(argv[4], &end, 10);
    }
    if (argc != 5 || strcmp(argv[1], PROX_LOADER_FLAG) || strcmp(argv[2], "mesh") || !end || end == argv[4] || *end ||
        errno || mib > (1ull << 30)) {
        fprintf(stderr, "%s: usage: %s %s mesh PATH MEMORY_MIB (started by prox_mesh_load_apart)\n",
                argc > 0 ? argv[0] : "prox", argc > 0 ? argv[0] : "prox", PROX_LOADER_FLAG);
        return 2;
    }
    /* the reply goes to the descriptor standard output was; whatever a
     * library prints goes to standard error (or nowhere, where the caller
     * had closed its standard error) */
    const int out = dup(1);
    if (out < 0)
        return 3;
    /* a parent that stopped reading (no memory for the mesh, a reply it
     * found damaged) closes the pipe: a write then fails (exit 3), it does
     * not kill this process as if the reader had crashed */
    signal(SIGPIPE, SIG_IGN);
    if (dup2(2, 1) < 0) {
        const int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (nul < 0 || dup2(nul, 1) < 0)
            return 3;
        close(nul);
    }
    reply_head h = {REPLY_MAGIC, REPLY_VERSION, -1, 0, 0, 0, 0, 0};
    char err[REPLY_MSG_MAX] = "";
    prox_mesh *m = NULL;
    struct rlimit r = {(rlim_t)mib << 20, (rlim_t)mib << 20};
    if (mib && !LOADER_SANITIZED && setrlimit(RLIMIT_AS, &r) != 0)
        snprintf(err, sizeof err, "%s: the mesh loader cannot set its memory limit of %llu MiB (%s)", argv[3], mib,
                 strerror(errno));
    else if (prox_mesh_load(argv[3], &m, err, sizeof err) == 0) {
        h.status = 0;
        h.vertex_count = m->vertex_count, h.triangle_count = m->triangle_count;
        h.welded = m->welded_vertices, h.dropped = m->dropped_degenerate;
    }
    int rc;
    if (h.status == 0)
        rc = write_all(out, &h, sizeof h) || write_all(out, m->vertices, sizeof *m->vertices * m->vertex_count) ||
             write_all(out, m->triangles, sizeof *m->triangles * m->triangle_count);
    else {
        if (!err[0]) /* (every refusal says why; the reply needs a message) */
            snprintf(err, sizeof err, "%s: not loaded", argv[3]);
        h.msg_len = (uint32_t)strnlen(err, sizeof err - 1);
        rc = write_all(out, &h, sizeof h) || write_all(out, err, h.msg_len);
    }
    prox_mesh_free(m);
    close(out);
    return rc ? 3 : 0;
}

/* ---- parent ---- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum { READ_OK, READ_EOF, READ_LATE, READ_ERROR };

/* n bytes from fd before `deadline` (CLOCK_MONOTONIC seconds) */
static int read_full(int fd, void *buf, size_t n, double deadline)
{
    char *c = buf;
    while (n) {
        const double left = deadline - now_s();
        if (left <= 0)
            return READ_LATE;
        struct pollfd p = {fd, POLLIN, 0};
        const int pr = poll(&p, 1, (int)ceil(fmin(left, 1e6) * 1e3));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return READ_ERROR;
        if (pr == 0)
            continue; /* the deadline is checked at the top */
        const ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return READ_ERROR;
        if (r == 0)
            return READ_EOF;
        c += r;
        n -= (size_t)r;
    }
    return READ_OK;
}

/* reap pid by the deadline, else kill it; 1 when it had to be killed */
static int reap(pid_t pid, int *status, double deadline)
{
    for (;;) {
        const pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR) { /* not ours to reap (SIGCHLD ignored with SA_NOCLDWAIT): count it a success */
            *status = 0;
            return 0;
        }
        if (now_s() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
            }
            return 1;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

static int spawn_loader(const prox_loader *ld, const char *path, pid_t *pid, int *rfd, char *err, size_t errlen)
{
    char mib[24];
    snprintf(mib, sizeof mib, "%u", ld->memory_mib);
    char *const argv[] = {(char *)ld->exe, PROX_LOADER_FLAG, "mesh", (char *)path, mib, NULL};
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "%s: cannot start the mesh loader (pipe: %s)", path, strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0 && (rc = posix_spawnattr_init(&at)) != 0)
        posix_spawn_file_actions_destroy(&fa);
    if (rc == 0) {
        sigset_t none, dfl;
        sigemptyset(&none);
        sigemptyset(&dfl);
        const int reset[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGALRM, SIGXCPU, SIGXFSZ, SIGUSR1, SIGUSR2};
        for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
            sigaddset(&dfl, reset[i]);
        if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        if (!rc) rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        if (!rc) rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        if (!rc) rc = posix_spawnattr_setsigmask(&at, &none);
        if (!rc) rc = posix_spawnattr_setsigdefault(&at, &dfl);
        if (!rc) rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        if (!rc) rc = posix_spawn(pid, ld->exe, &fa, &at, argv, environ);
        posix_spawnattr_destroy(&at);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        snprintf(err, errlen, "%s: cannot start the mesh loader %s (%s)", path, ld->exe, strerror(rc));
        return -1;
    }
    *rfd = p[0];
    return 0;
}

/* read_body's word for a mesh this process has no memory for (not damage) */
static const char no_memory[] = "no memory";

/* the reply's body into *m (status 0) or msg (status -1); a short string
 * saying what is wrong with it (no_memory: nothing), or NULL */
static const char *read_body(int fd, const reply_head *h, double deadline, prox_mesh **m, char *msg, size_t msglen,
                             int *late)
{
    int r;
    if (h->status == -1) {
        if (h->msg_len == 0 || h->msg_len >= REPLY_MSG_MAX || h->msg_len >= msglen)
            return "a message of a length it cannot have";
        r = read_full(fd, msg, h->msg_len, deadline);
        msg[r == READ_OK ? h->msg_len : 0] = 0;
        *late = r == READ_LATE;
        return r == READ_OK ? NULL : "the message is cut short";
    }
    if (h->status != 0)
        return "an unknown status";
    /* the loader drops vertices no triangle uses: at most three a triangle */
    if (h->triangle_count == 0 || h->vertex_count == 0 || h->vertex_count / 3 > h->triangle_count)
        return "counts a loaded mesh cannot have";
    prox_vec3 *v = malloc(sizeof *v * h->vertex_count);
    uint32_t(*t)[3] = malloc(sizeof *t * h->triangle_count);
    const char *why = NULL;
    if (!v || !t)
        why = no_memory;
    else if ((r = read_full(fd, v, sizeof *v * h->vertex_count, deadline)) != READ_OK ||
             (r = read_full(fd, t, sizeof *t * h->triangle_count, deadline)) != READ_OK) {
        *late = r == READ_LATE;
        why = "the mesh is cut short";
    } else if (!(*m = prox_mesh_from_arrays(v, h->vertex_count, (const uint32_t(*)[3])t, h->triangle_count)))
        why = prox_mesh_arrays_ok(v, h->vertex_count, (const uint32_t(*)[3])t, h->triangle_count) == 0
                  ? no_memory
                  : "indices out of range or coordinates not finite";
    else if ((*m)->vertex_count != h->vertex_count || (*m)->triangle_count != h->triangle_count) {
        /* the loader's own output is welded and clean: a change means damage */
        why = "a mesh that is not the loader's output";
        prox_mesh_free(*m);
        *m = NULL;
    } else {
        (*m)->welded_vertices = h->welded;
        (*m)->dropped_degenerate = h->dropped;
    }
    free(v);
    free(t);
    return why;
}

int prox_mesh_load_apart(const prox_loader *ld, const char *path, prox_mesh **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!ld || !ld->exe)
        return prox_mesh_load(path, out, err, errlen);
    if (!(ld->seconds > 0) || !isfinite(ld->seconds)) {
        snprintf(err, errlen, "%s: the mesh loader's time limit must be above 0 s", path);
        return -1;
    }
    const double deadline = now_s() + ld->seconds;
    pid_t pid;
    int fd;
    if (spawn_loader(ld, path, &pid, &fd, err, errlen) != 0)
        return -1;
    reply_head h = {0};
    char msg[REPLY_MSG_MAX];
    prox_mesh *m = NULL;
    const char *damaged = NULL;
    int late = 0;
    const int r = read_full(fd, &h, sizeof h, deadline);
    if (r != READ_OK) {
        late = r == READ_LATE;
        damaged = r == READ_EOF ? "no reply" : "the reply is cut short";
    } else if (h.magic != REPLY_MAGIC || h.version != REPLY_VERSION)
        damaged = "not a reply from this version of the loader";
    else
        damaged = read_body(fd, &h, deadline, &m, msg, sizeof msg, &late);
    close(fd); /* a child still writing gets EPIPE and ends */
    int status = 0;
    late |= reap(pid, &status, late ? now_s() : deadline);
    if (!late && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !damaged && h.status == 0) {
        *out = m;
        return 0;
    }
    prox_mesh_free(m);
    char note[80] = ""; /* a crash or a failed allocation may be the memory limit's doing: say what it is */
    if (ld->memory_mib && !LOADER_SANITIZED)
        snprintf(note, sizeof note, "; the mesh loader may use at most %u MiB of address space", ld->memory_mib);
    if (late)
        snprintf(err, errlen, "%s: the mesh loader took longer than %g s and was stopped; nothing was loaded", path,
                 ld->seconds);
    else if (damaged == no_memory) /* (ours: the child then failed to write the rest, whatever its status) */
        snprintf(err, errlen, "%s: out of memory for the mesh the loader read (%u vertices, %u triangles); nothing was loaded",
                 path, h.vertex_count, h.triangle_count);
    else if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        const char *abbrev = sigabbrev_np(sig);
        snprintf(err, errlen, "%s: the mesh reader crashed on this file (signal %d, SIG%s)%s; nothing was loaded", path, sig,
                 abbrev ? abbrev : "?", note);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        snprintf(err, errlen, "%s: the mesh loader %s failed (exit status %d); nothing was loaded", path, ld->exe,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    else if (damaged)
        snprintf(err, errlen, "%s: the mesh loader's reply is damaged (%s); nothing was loaded", path, damaged);
    else
        snprintf(err, errlen, "%s%s", msg, strstr(msg, "bad_alloc") || strstr(msg, "out of memory") ? note : "");
    return -1;
}
