/* osc.c - the OSC control server: own socket, liblo parses and dispatches.
 *
 * Every message is validated before anything changes: type tags (ints and
 * floats are accepted for numbers), argument counts, finite numbers, name
 * lengths, blob sizes. A bad message gets `/fail <address> <reason>` and
 * changes nothing; a good one gets its reply (`/done <address> ...` for
 * commands, `/status.reply`, `/version.reply`).
 *
 * Before liblo sees a datagram, osc_packet_check walks it: addresses must be
 * exact (liblo would expand a pattern such as `/[rt]*` to every method it
 * matches, and run each), and bundles must be due now (liblo queues a
 * future time tag until its own receive loop, which this server never
 * runs: such bundles would pile up unanswered). The elements of a bundle are dispatched one by one,
 * each answered on its own: a bad element changes nothing itself but does
 * not undo the elements before it. The loop commands of the good ones are
 * held back and handed to the loop together (rt_service_bundle_begin), so
 * they take effect in the same cycle.
 *
 * /load builds on a thread of its own (the builder, started with the OSC
 * thread): a build takes from milliseconds to seconds, and the OSC thread
 * must go on reading /device/pose (the OSC device's input, stale after 20
 * ms) and a /forces 0. /tool runs there too: pairing an inner sphere tree
 * with an open mesh builds a BVH of the tree's surface (0.2 s on 75k
 * triangles). While a build runs, the messages that touch neither
 * the scene nor the loop's settings (osc_immediate) are answered at once;
 * every other datagram is held, in arrival order, and dispatched when the
 * build's reply has gone out, so a script's `/load ball ...` then
 * `/tool ball` still runs in that order. A /load inside a bundle builds on
 * the OSC thread, as part of the bundle. A polled server (no threads) builds
 * on the caller's thread.
 */
#include "rt_osc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <lo/lo.h>
#include <lo/lo_lowlevel.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define OSC_VERSION_MAJOR 0
#define OSC_VERSION_MINOR 1
#define OSC_VERSION_PATCH 0

/* datagrams held while a build runs (rt_osc.held): at most this many
 * bytes; past it a datagram is refused with a /fail */
#define OSC_HELD_BYTES (4u << 20)

/* a held datagram: this head, then n bytes */
typedef struct osc_held_head {
    uint32_t n;
    int from_valid;
    struct sockaddr_in from;
} osc_held_head;

/* the /load or /tool the builder runs */
enum { OSC_JOB_LOAD, OSC_JOB_TOOL };
typedef struct osc_load_job {
    int kind;
    char name[RT_NAME_MAX];
    char *path; /* /load: malloc'd by the OSC thread, freed by the builder */
    prox_xform pose;
    uint32_t spheres;
    struct sockaddr_in to;
    int to_valid;
} osc_load_job;

typedef struct osc_subscriber {
    struct sockaddr_in addr;
    double period_s; /* 0 = unused slot */
    double next_s;
} osc_subscriber;

struct rt_osc {
    rt_service *svc;
    int fd;
    int port;
    lo_server lo; /* parses and dispatches; bound to a private unix socket, never read */
    char lo_path[64];
    pthread_t thread;
    atomic_int running;
    int thread_started;
    rt_osc_pose_fn pose_fn;
    void *pose_user;
    /* sender of the datagram being dispatched (OSC thread only) */
    struct sockaddr_in sender;
    int sender_valid;
    pthread_mutex_t sub_lock; /* subscribers (OSC and housekeeping threads), record_dir */
    osc_subscriber subs[RT_OSC_MAX_SUBSCRIBERS];
    int listening;
    char record_dir[256]; /* where /record/start may create files; "" = refused */
    /* the builder (a /load at a time) and the datagrams held meanwhile */
    pthread_t builder;
    int builder_started;
    pthread_mutex_t build_lock; /* job, build_pending, build_quit */
    pthread_cond_t build_cond;
    osc_load_job job;
    int build_pending, build_quit;
    atomic_int building;  /* from a /load's hand-over to the builder until its reply is out */
    int wake[2];          /* the builder writes a byte when a build ends: the OSC thread's poll wakes */
    int in_bundle;        /* the OSC thread is dispatching a bundle's elements */
    char loading[RT_NAME_MAX]; /* the name the last /load handed to the builder, "" after a /tool (OSC thread) */
    unsigned char *held;  /* OSC_HELD_BYTES: osc_held_head + bytes, oldest at held_from (OSC thread only) */
    size_t held_from, held_to;
    uint32_t held_count;
    _Atomic uint64_t received, dispatched, failed, malformed, replies, telemetry_sent, reply_drops;
};

/* ---- replies ---- */

/* Replies echo addresses and paths cut to OSC_ECHO_MAX characters (an
 * address of 60,000 characters still gets its /fail); a reply that cannot
 * be sent is counted in reply_drops. */
#define OSC_ECHO_MAX 200

static void osc_send_to(rt_osc *o, const struct sockaddr_in *to, const char *path, lo_message m)
{
    char buf[8192];
    size_t size = lo_message_length(m, path);
    if (size > sizeof buf || !lo_message_serialise(m, path, buf, &size) ||
        sendto(o->fd, buf, size, MSG_DONTWAIT, (const struct sockaddr *)to, sizeof *to) != (ssize_t)size) {
        atomic_fetch_add(&o->reply_drops, 1);
        return;
    }
    atomic_fetch_add(&o->replies, 1);
}

/* s, or its first OSC_ECHO_MAX characters and "..." */
static const char *osc_echo(const char *s, char out[OSC_ECHO_MAX + 4])
{
    if (strlen(s) <= OSC_ECHO_MAX)
        return s;
    memcpy(out, s, OSC_ECHO_MAX);
    memcpy(out + OSC_ECHO_MAX, "...", 4);
    return out;
}

static void osc_reply(rt_osc *o, const char *path, lo_message m)
{
    if (o->sender_valid)
        osc_send_to(o, &o->sender, path, m);
}

/* /fail cmd reason to `to` (any thread; nothing when !to_valid) */
static void osc_fail_to(rt_osc *o, const struct sockaddr_in *to, int to_valid, const char *cmd, const char *reason)
{
    atomic_fetch_add(&o->failed, 1);
    if (!to_valid)
        return;
    char cut[OSC_ECHO_MAX + 4];
    lo_message m = lo_message_new();
    lo_message_add_string(m, osc_echo(cmd, cut));
    lo_message_add_string(m, reason);
    osc_send_to(o, to, "/fail", m);
    lo_message_free(m);
}

static void osc_fail(rt_osc *o, const char *cmd, const char *fmt, ...)
{
    char reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    osc_fail_to(o, &o->sender, o->sender_valid, cmd, reason);
}

/* /done cmd [detail] to `to` (any thread; nothing when !to_valid) */
static void osc_done_to(rt_osc *o, const struct sockaddr_in *to, int to_valid, const char *cmd, const char *detail)
{
    if (!to_valid)
        return;
    char cut[OSC_ECHO_MAX + 4], cut2[OSC_ECHO_MAX + 4];
    lo_message m = lo_message_new();
    lo_message_add_string(m, osc_echo(cmd, cut));
    if (detail)
        lo_message_add_string(m, osc_echo(detail, cut2));
    osc_send_to(o, to, "/done", m);
    lo_message_free(m);
}

static void osc_done(rt_osc *o, const char *cmd, const char *detail) { osc_done_to(o, &o->sender, o->sender_valid, cmd, detail); }

/* ---- argument checking ---- */

/* Expected types: 'n' number (i, f, d, h), 's' string, 'b' blob, '*' rest
 * optional numbers. Returns 0 or fails the message. */
static int osc_check(rt_osc *o, const char *path, const char *types, int argc, const char *want, int want_min)
{
    int want_n = (int)strlen(want);
    if (argc < want_min || argc > want_n) {
        if (want_min == want_n)
            osc_fail(o, path, "expected %d arguments, got %d", want_n, argc);
        else
            osc_fail(o, path, "expected %d to %d arguments, got %d", want_min, want_n, argc);
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        char t = types[i], w = want[i];
        int ok = (w == 'n' && (t == 'i' || t == 'f' || t == 'd' || t == 'h')) || (w == 's' && (t == 's' || t == 'S')) ||
                 (w == 'b' && t == 'b');
        if (!ok) {
            osc_fail(o, path, "argument %d has type '%c', expected %s", i + 1, t,
                     w == 'n' ? "a number" : (w == 's' ? "a string" : "a blob"));
            return -1;
        }
    }
    return 0;
}

/* liblo's argument pointers are only 4-byte aligned inside the message:
 * read them with memcpy, never through the (8-byte) lo_arg union */
static double osc_num(const char *types, lo_arg **argv, int i)
{
    switch (types[i]) {
    case 'i': {
        int32_t v;
        memcpy(&v, argv[i], sizeof v);
        return v;
    }
    case 'f': {
        float v;
        memcpy(&v, argv[i], sizeof v);
        return v;
    }
    case 'd': {
        double v;
        memcpy(&v, argv[i], sizeof v);
        return v;
    }
    case 'h': {
        int64_t v;
        memcpy(&v, argv[i], sizeof v);
        return (double)v;
    }
    default: return NAN;
    }
}

static const char *osc_str(lo_arg **argv, int i) { return (const char *)argv[i]; }

/* Read n numbers starting at first; all must be finite. */
static int osc_numbers(rt_osc *o, const char *path, const char *types, lo_arg **argv, int first, int n, double *out)
{
    for (int i = 0; i < n; i++) {
        out[i] = osc_num(types, argv, first + i);
        if (!isfinite(out[i])) {
            osc_fail(o, path, "argument %d is not a finite number", first + i + 1);
            return -1;
        }
    }
    return 0;
}

static int osc_name(rt_osc *o, const char *path, lo_arg **argv, int i, const char **out)
{
    const char *s = osc_str(argv, i);
    size_t n = strlen(s);
    if (n == 0 || n >= RT_NAME_MAX) {
        osc_fail(o, path, "name must be 1 to %d characters", RT_NAME_MAX - 1);
        return -1;
    }
    *out = s;
    return 0;
}

static int osc_pose(rt_osc *o, const char *path, const double v[7], prox_xform *out)
{
    double qn = sqrt(v[3] * v[3] + v[4] * v[4] + v[5] * v[5] + v[6] * v[6]);
    if (!(qn > 1e-9)) {
        osc_fail(o, path, "quaternion has zero length");
        return -1;
    }
    prox_quat q = {v[3], v[4], v[5], v[6]};
    *out = prox_xform_from_pose(prox_v3(v[0], v[1], v[2]), q);
    return 0;
}

/* ---- handlers ---- */

typedef struct osc_ctx {
    rt_osc *o;
} osc_ctx;

#define OSC_HANDLER(name) static int name(const char *path, const char *types, lo_arg **argv, int argc, lo_message msg, void *user)
#define OSC_PREAMBLE                                                                                                 \
    (void)msg;                                                                                                       \
    rt_osc *o = (rt_osc *)user;                                                                                      \
    char err[256] = "";                                                                                              \
    (void)err;                                                                                                       \
    atomic_fetch_add(&o->dispatched, 1)

OSC_HANDLER(h_version)
{
    OSC_PREAMBLE;
    (void)types;
    (void)argv;
    if (osc_check(o, path, types, argc, "", 0))
        return 0;
    lo_message m = lo_message_new();
    lo_message_add_string(m, "hapticd");
    lo_message_add_int32(m, OSC_VERSION_MAJOR);
    lo_message_add_int32(m, OSC_VERSION_MINOR);
    lo_message_add_int32(m, OSC_VERSION_PATCH);
    osc_reply(o, "/version.reply", m);
    lo_message_free(m);
    return 0;
}

OSC_HANDLER(h_status)
{
    OSC_PREAMBLE;
    (void)argv;
    if (osc_check(o, path, types, argc, "", 0))
        return 0;
    rt_status st;
    if (rt_service_status(o->svc, &st) != 0) {
        osc_fail(o, path, "status unavailable");
        return 0;
    }
    /* Key/value pairs so clients need not know the order. */
    lo_message m = lo_message_new();
    lo_message_add_string(m, "running"), lo_message_add_int32(m, st.running);
    lo_message_add_string(m, "realtime"), lo_message_add_int32(m, st.realtime);
    lo_message_add_string(m, "memlocked"), lo_message_add_int32(m, st.memlocked);
    lo_message_add_string(m, "cpu_latency"), lo_message_add_int32(m, st.cpu_latency_held);
    lo_message_add_string(m, "rate_hz"), lo_message_add_double(m, st.rate_hz);
    lo_message_add_string(m, "uptime_s"), lo_message_add_double(m, st.uptime_s);
    lo_message_add_string(m, "cycles"), lo_message_add_int64(m, (int64_t)st.cycles);
    lo_message_add_string(m, "overruns"), lo_message_add_int64(m, (int64_t)st.overruns);
    lo_message_add_string(m, "latency_p99_us"), lo_message_add_double(m, st.latency_p99_us);
    lo_message_add_string(m, "latency_max_us"), lo_message_add_double(m, st.latency_max_us);
    lo_message_add_string(m, "query_p99_us"), lo_message_add_double(m, st.query_p99_us);
    lo_message_add_string(m, "budget_us"), lo_message_add_double(m, st.budget_us);
    lo_message_add_string(m, "objects"), lo_message_add_int32(m, (int32_t)st.object_count);
    lo_message_add_string(m, "tool"), lo_message_add_string(m, st.tool);
    lo_message_add_string(m, "forces"), lo_message_add_int32(m, st.forces_enabled);
    lo_message_add_string(m, "fault"), lo_message_add_int32(m, st.fault);
    lo_message_add_string(m, "faults"), lo_message_add_int64(m, (int64_t)st.faults);
    lo_message_add_string(m, "fault_cause"), lo_message_add_string(m, rt_fault_name(st.last_fault_cause));
    lo_message_add_string(m, "distance_m"), lo_message_add_double(m, st.distance_m);
    lo_message_add_string(m, "penvol_m3"), lo_message_add_double(m, st.penvol_m3);
    lo_message_add_string(m, "cmd_drops"), lo_message_add_int64(m, (int64_t)st.cmd_drops);
    lo_message_add_string(m, "voxel_drops"), lo_message_add_int64(m, (int64_t)st.voxel_drops);
    lo_message_add_string(m, "voxel_queued"), lo_message_add_int32(m, (int32_t)st.voxel_queued);
    lo_message_add_string(m, "telemetry_drops"), lo_message_add_int64(m, (int64_t)st.telemetry_drops);
    lo_message_add_string(m, "note"), lo_message_add_string(m, st.rt_note ? st.rt_note : "");
    /* the object a /load is building, "" when none (h_load writes it on this thread) */
    lo_message_add_string(m, "loading"), lo_message_add_string(m, atomic_load(&o->building) ? o->loading : "");
    osc_reply(o, "/status.reply", m);
    lo_message_free(m);
    return 0;
}

/* v is a whole number from lo to hi (NaN is not) */
static int osc_whole(double v, double lo, double hi) { return v >= lo && v <= hi && v == floor(v); }

/* a /load (path: a malloc'd copy, the builder frees it) or /tool for the
 * builder, which answers the sender; what comes after it is held until it
 * has (OSC thread) */
static void osc_hand_over(rt_osc *o, int kind, const char *name, char *path, const prox_xform *pose, uint32_t spheres)
{
    pthread_mutex_lock(&o->build_lock);
    o->job.kind = kind;
    snprintf(o->job.name, sizeof o->job.name, "%s", name);
    snprintf(o->loading, sizeof o->loading, "%s", kind == OSC_JOB_LOAD ? name : "");
    o->job.path = path;
    o->job.pose = pose ? *pose : prox_xform_identity();
    o->job.spheres = spheres;
    o->job.to = o->sender;
    o->job.to_valid = o->sender_valid;
    o->build_pending = 1;
    atomic_store(&o->building, 1); /* the OSC thread holds what comes next */
    pthread_cond_signal(&o->build_cond);
    pthread_mutex_unlock(&o->build_lock);
}

/* /load name path [tx ty tz qw qx qy qz] [spheres]: the sphere count (a
 * whole number, 1 .. RT_IST_SPHERES_MAX) sizes the inner sphere tree of a
 * closed mesh; without it, hapticd --ist-spheres */
OSC_HANDLER(h_load)
{
    OSC_PREAMBLE;
    const char *name;
    double v[8];
    if (osc_check(o, path, types, argc, "ssnnnnnnnn", 2) || osc_name(o, path, argv, 0, &name))
        return 0;
    if (argc != 2 && argc != 3 && argc != 9 && argc != 10) {
        osc_fail(o, path, "expected name, path, optionally a 7-number pose, optionally a sphere count");
        return 0;
    }
    prox_xform pose = prox_xform_identity();
    if (argc >= 9 && (osc_numbers(o, path, types, argv, 2, 7, v) || osc_pose(o, path, v, &pose)))
        return 0;
    uint32_t spheres = 0;
    if (argc == 3 || argc == 10) {
        if (osc_numbers(o, path, types, argv, argc - 1, 1, &v[7]))
            return 0;
        if (!osc_whole(v[7], 1, RT_IST_SPHERES_MAX)) {
            osc_fail(o, path, "argument %d: the sphere count is a whole number from 1 to %u", argc, RT_IST_SPHERES_MAX);
            return 0;
        }
        spheres = (uint32_t)v[7];
    }
    if (o->builder_started && !o->in_bundle) { /* the builder answers it */
        char *copy = strdup(osc_str(argv, 1));
        if (!copy)
            osc_fail(o, path, "out of memory");
        else
            osc_hand_over(o, OSC_JOB_LOAD, name, copy, &pose, spheres);
        return 0;
    }
    if (rt_service_load_object(o->svc, name, osc_str(argv, 1), &pose, spheres, err, sizeof err))
        osc_fail(o, path, "%s", err);
    else
        osc_done(o, path, name);
    return 0;
}

static void *osc_builder(void *arg)
{
    rt_osc *o = arg;
    pthread_mutex_lock(&o->build_lock);
    for (;;) {
        while (!o->build_pending && !o->build_quit)
            pthread_cond_wait(&o->build_cond, &o->build_lock);
        if (!o->build_pending)
            break; /* (a job handed over before the quit still runs) */
        osc_load_job j = o->job;
        o->build_pending = 0;
        pthread_mutex_unlock(&o->build_lock);
        char err[512];
        const char *cmd = j.kind == OSC_JOB_LOAD ? "/load" : "/tool";
        if (j.kind == OSC_JOB_LOAD ? rt_service_load_object(o->svc, j.name, j.path, &j.pose, j.spheres, err, sizeof err)
                                   : rt_service_set_tool(o->svc, j.name, err, sizeof err))
            osc_fail_to(o, &j.to, j.to_valid, cmd, err);
        else
            osc_done_to(o, &j.to, j.to_valid, cmd, j.name);
        free(j.path);
        atomic_store(&o->building, 0);
        const char byte = 1;
        if (write(o->wake[1], &byte, 1) < 0) { /* full: the OSC thread wakes anyway within its poll's timeout */
        }
        pthread_mutex_lock(&o->build_lock);
    }
    pthread_mutex_unlock(&o->build_lock);
    return NULL;
}

OSC_HANDLER(h_remove)
{
    OSC_PREAMBLE;
    const char *name;
    if (osc_check(o, path, types, argc, "s", 1) || osc_name(o, path, argv, 0, &name))
        return 0;
    if (rt_service_remove_object(o->svc, name, err, sizeof err))
        osc_fail(o, path, "%s", err);
    else
        osc_done(o, path, name);
    return 0;
}

/* /pose name tx ty tz qw qx qy qz: no /done (a stream), /fail on error */
OSC_HANDLER(h_pose)
{
    OSC_PREAMBLE;
    const char *name;
    double v[7];
    prox_xform pose;
    if (osc_check(o, path, types, argc, "snnnnnnn", 8) || osc_name(o, path, argv, 0, &name) ||
        osc_numbers(o, path, types, argv, 1, 7, v) || osc_pose(o, path, v, &pose))
        return 0;
    if (rt_service_set_pose(o->svc, name, &pose, err, sizeof err))
        osc_fail(o, path, "%s", err);
    return 0;
}

OSC_HANDLER(h_tool)
{
    OSC_PREAMBLE;
    const char *name;
    if (osc_check(o, path, types, argc, "s", 1) || osc_name(o, path, argv, 0, &name))
        return 0;
    if (o->builder_started && !o->in_bundle) { /* the builder answers it (it may build a surface BVH) */
        osc_hand_over(o, OSC_JOB_TOOL, name, NULL, NULL, 0);
        return 0;
    }
    if (rt_service_set_tool(o->svc, name, err, sizeof err))
        osc_fail(o, path, "%s", err);
    else
        osc_done(o, path, name);
    return 0;
}

OSC_HANDLER(h_budget)
{
    OSC_PREAMBLE;
    double us;
    if (osc_check(o, path, types, argc, "n", 1) || osc_numbers(o, path, types, argv, 0, 1, &us))
        return 0;
    if (rt_service_set_budget_us(o->svc, us, err, sizeof err))
        osc_fail(o, path, "%s", err);
    else
        osc_done(o, path, NULL);
    return 0;
}

/* /gains stiffness margin margin_stiffness damping coupling_k coupling_b torque_scale */
OSC_HANDLER(h_gains)
{
    OSC_PREAMBLE;
    double v[7];
    if (osc_check(o, path, types, argc, "nnnnnnn", 7) || osc_numbers(o, path, types, argv, 0, 7, v))
        return 0;
    rt_gains g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
    if (rt_service_set_gains(o->svc, &g, err, sizeof err))
        osc_fail(o, path, "%s", err);
    else
        osc_done(o, path, NULL);
    return 0;
}

/* /limits max_force max_torque max_rate ramp_s watchdog_ms stale_ms */
OSC_HANDLER(h_limits)
{
    OSC_PREAMBLE;
    double v[6];
    if (osc_check(o, path, types, argc, "nnnnnn", 6) || osc_numbers(o, path, types, argv, 0, 6, v))
        return 0;
    rt_limits l = {v[0], v[1], v[2], v[3], v[4], v[5]};
    if (rt_service_set_limits(o->svc, &l, err, sizeof err))
        osc_fail(o, path, "%s", err);
    else
        osc_done(o, path, NULL);
    return 0;
}

OSC_HANDLER(h_forces)
{
    OSC_PREAMBLE;
    double on;
    if (osc_check(o, path, types, argc, "n", 1) || osc_numbers(o, path, types, argv, 0, 1, &on))
        return 0;
    if (on != 0.0 && on != 1.0) {
        osc_fail(o, path, "expected 0 or 1");
        return 0;
    }
    if (rt_service_enable_forces(o->svc, on != 0.0, err, sizeof err))
        osc_fail(o, path, "%s", err);
    else
        osc_done(o, path, NULL);
    return 0;
}

static int osc_cell(rt_osc *o, const char *path, const double v[3], int32_t c[3])
{
    for (int i = 0; i < 3; i++) {
        if (v[i] != floor(v[i]) || fabs(v[i]) > 2147483647.0) {
            osc_fail(o, path, "cell coordinate %d is not an integer in range", i + 1);
            return -1;
        }
        c[i] = (int32_t)v[i];
    }
    return 0;
}

static void osc_voxels(rt_osc *o, const char *path, const char *map, const rt_voxel_update *u, uint32_t n)
{
    char err[256] = "";
    int got = rt_service_voxel_update(o->svc, map, u, n, err, sizeof err);
    if (got < 0)
        osc_fail(o, path, "%s", err);
    else if ((uint32_t)got < n)
        osc_fail(o, path, "voxel queue full: %d of %u updates queued, the rest dropped", got, n);
    else {
        char detail[32];
        snprintf(detail, sizeof detail, "%u", n);
        osc_done(o, path, detail);
    }
}

/* (the class messages below name the classes there are) */
_Static_assert(PROX_VOXEL_CLASS_COUNT == 3, "voxel classes: update RT_VOXEL_CLASS_NAMES (rt_service.h)");

/* /voxel/set map x y z class */
OSC_HANDLER(h_voxel_set)
{
    OSC_PREAMBLE;
    const char *map;
    double v[4];
    int32_t c[3];
    if (osc_check(o, path, types, argc, "snnnn", 5) || osc_name(o, path, argv, 0, &map) ||
        osc_numbers(o, path, types, argv, 1, 4, v) || osc_cell(o, path, v, c))
        return 0;
    if (!osc_whole(v[3], 0, PROX_VOXEL_CLASS_COUNT - 1)) {
        osc_fail(o, path, "class must be one of " RT_VOXEL_CLASS_NAMES);
        return 0;
    }
    rt_voxel_update u = {c[0], c[1], c[2], (uint32_t)v[3]};
    osc_voxels(o, path, map, &u, 1);
    return 0;
}

/* /voxel/clear map x y z */
OSC_HANDLER(h_voxel_clear)
{
    OSC_PREAMBLE;
    const char *map;
    double v[3];
    int32_t c[3];
    if (osc_check(o, path, types, argc, "snnn", 4) || osc_name(o, path, argv, 0, &map) ||
        osc_numbers(o, path, types, argv, 1, 3, v) || osc_cell(o, path, v, c))
        return 0;
    rt_voxel_update u = {c[0], c[1], c[2], RT_VOXEL_FREE};
    osc_voxels(o, path, map, &u, 1);
    return 0;
}

/* /voxel/batch map blob: packed records, 16 bytes each, little endian:
 * int32 x, int32 y, int32 z, uint32 class (docs/osc.md). */
OSC_HANDLER(h_voxel_batch)
{
    OSC_PREAMBLE;
    const char *map;
    if (osc_check(o, path, types, argc, "sb", 2) || osc_name(o, path, argv, 0, &map))
        return 0;
    lo_blob b = (lo_blob)argv[1];
    uint32_t size = lo_blob_datasize(b);
    const unsigned char *p = lo_blob_dataptr(b);
    if (size == 0 || size % 16 != 0) {
        osc_fail(o, path, "blob of %u bytes is not a whole number of 16-byte records", size);
        return 0;
    }
    if (size > RT_OSC_MAX_BLOB) {
        osc_fail(o, path, "blob of %u bytes is over the %d byte limit", size, RT_OSC_MAX_BLOB);
        return 0;
    }
    uint32_t n = size / 16;
    rt_voxel_update u[RT_OSC_MAX_BLOB / 16];
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *r = p + 16 * i;
        uint32_t w[4];
        for (int k = 0; k < 4; k++)
            w[k] = (uint32_t)r[4 * k] | (uint32_t)r[4 * k + 1] << 8 | (uint32_t)r[4 * k + 2] << 16 |
                   (uint32_t)r[4 * k + 3] << 24;
        if (w[3] >= PROX_VOXEL_CLASS_COUNT) {
            osc_fail(o, path, "record %u has class %u (" RT_VOXEL_CLASS_NAMES "); nothing applied", i, w[3]);
            return 0;
        }
        u[i].x = (int32_t)w[0];
        u[i].y = (int32_t)w[1];
        u[i].z = (int32_t)w[2];
        u[i].cls = w[3];
    }
    osc_voxels(o, path, map, u, n);
    return 0;
}

static void osc_on_telemetry(const rt_telemetry *t, void *user);

/* a live subscription to `to` */
static int osc_sub_to(const osc_subscriber *sub, const struct sockaddr_in *to)
{
    return sub->period_s > 0 && sub->addr.sin_port == to->sin_port && sub->addr.sin_addr.s_addr == to->sin_addr.s_addr;
}

/* where a subscription goes: the sender, or its host at *port when given
 * (an integer 1..65535); -1 (answered /fail) without either */
static int osc_telemetry_to(rt_osc *o, const char *path, const double *port, struct sockaddr_in *to)
{
    if (!o->sender_valid) {
        osc_fail(o, path, "no sender address");
        return -1;
    }
    *to = o->sender;
    if (port) {
        if (!osc_whole(*port, 1, 65535)) {
            osc_fail(o, path, "port must be an integer 1..65535");
            return -1;
        }
        to->sin_port = htons((uint16_t)*port);
    }
    return 0;
}

/* /telemetry/subscribe rate_hz [port]: telemetry to the sender (or to the
 * sender's host at port) */
OSC_HANDLER(h_subscribe)
{
    OSC_PREAMBLE;
    double v[2];
    if (osc_check(o, path, types, argc, "nn", 1) || osc_numbers(o, path, types, argv, 0, argc, v))
        return 0;
    if (!(v[0] > 0 && v[0] <= 1000)) {
        osc_fail(o, path, "rate must be in (0, 1000] Hz");
        return 0;
    }
    struct sockaddr_in to;
    if (osc_telemetry_to(o, path, argc == 2 ? &v[1] : NULL, &to))
        return 0;
    int slot = -1;
    pthread_mutex_lock(&o->sub_lock);
    for (int i = 0; i < RT_OSC_MAX_SUBSCRIBERS; i++)
        if (osc_sub_to(&o->subs[i], &to))
            slot = i;
    for (int i = 0; slot < 0 && i < RT_OSC_MAX_SUBSCRIBERS; i++)
        if (o->subs[i].period_s == 0)
            slot = i;
    if (slot >= 0) {
        o->subs[slot].addr = to;
        o->subs[slot].period_s = 1.0 / v[0];
        o->subs[slot].next_s = 0;
    }
    pthread_mutex_unlock(&o->sub_lock);
    if (slot < 0) {
        osc_fail(o, path, "too many subscribers (%d)", RT_OSC_MAX_SUBSCRIBERS);
        return 0;
    }
    if (!o->listening) {
        if (rt_service_add_telemetry_listener(o->svc, osc_on_telemetry, o) == 0)
            o->listening = 1;
    }
    osc_done(o, path, NULL);
    return 0;
}

/* /telemetry/unsubscribe [port]: the sender's subscription (or its host's
 * at port: what /telemetry/subscribe with a port made, which a tool such
 * as oscsend, sending from a new port each time, could not end before) */
OSC_HANDLER(h_unsubscribe)
{
    OSC_PREAMBLE;
    double v[1];
    if (osc_check(o, path, types, argc, "n", 0) || osc_numbers(o, path, types, argv, 0, argc, v))
        return 0;
    struct sockaddr_in to;
    if (osc_telemetry_to(o, path, argc == 1 ? &v[0] : NULL, &to))
        return 0;
    int found = 0;
    pthread_mutex_lock(&o->sub_lock);
    for (int i = 0; i < RT_OSC_MAX_SUBSCRIBERS; i++)
        if (osc_sub_to(&o->subs[i], &to)) {
            o->subs[i].period_s = 0;
            found = 1;
        }
    pthread_mutex_unlock(&o->sub_lock);
    if (!found)
        osc_fail(o, path, "not subscribed");
    else
        osc_done(o, path, NULL);
    return 0;
}

OSC_HANDLER(h_record_start)
{
    OSC_PREAMBLE;
    if (osc_check(o, path, types, argc, "s", 1))
        return 0;
    /* Anyone who can send to the control port can start a recording: only
     * a new file (never an existing one, never through a link) named
     * without a directory, in the folder given by --record-dir. */
    const char *name = osc_str(argv, 0);
    char dir[sizeof o->record_dir];
    pthread_mutex_lock(&o->sub_lock);
    memcpy(dir, o->record_dir, sizeof dir);
    pthread_mutex_unlock(&o->sub_lock);
    if (!dir[0]) {
        osc_fail(o, path, "recording over OSC is off (start hapticd with --record-dir DIR)");
        return 0;
    }
    size_t nl = strlen(name);
    int name_ok = nl >= 1 && nl <= 128 && name[0] != '.';
    for (size_t i = 0; i < nl && name_ok; i++)
        name_ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
                  name[i] == '.' || name[i] == '_' || name[i] == '-';
    if (!name_ok) {
        osc_fail(o, path, "a recording is a file name: 1 to 128 of A-Z a-z 0-9 . _ -, not starting with '.'");
        return 0;
    }
    char full[512];
    snprintf(full, sizeof full, "%s/%s", dir, name);
    if (rt_service_record_start_new(o->svc, full, err, sizeof err))
        osc_fail(o, path, "%s", err);
    else
        osc_done(o, path, name);
    return 0;
}

OSC_HANDLER(h_record_stop)
{
    OSC_PREAMBLE;
    (void)argv;
    if (osc_check(o, path, types, argc, "", 0))
        return 0;
    const int rc = rt_service_record_stop(o->svc);
    if (rc)
        osc_fail(o, path, rc == -1 ? "not recording" : "the recording's last lines could not be written (the service's stderr says why)");
    else
        osc_done(o, path, NULL);
    return 0;
}

/* /device/pose tx ty tz qw qx qy qz [buttons]: the OSC device's input */
OSC_HANDLER(h_device_pose)
{
    OSC_PREAMBLE;
    double v[8];
    prox_xform pose;
    if (osc_check(o, path, types, argc, "nnnnnnnn", 7) || osc_numbers(o, path, types, argv, 0, argc, v) ||
        osc_pose(o, path, v, &pose))
        return 0;
    if (!o->pose_fn) {
        osc_fail(o, path, "the device is not the OSC driver (start hapticd with --driver osc)");
        return 0;
    }
    uint32_t buttons = 0;
    if (argc == 8) {
        if (!osc_whole(v[7], 0, 4294967295.0)) {
            osc_fail(o, path, "buttons must be an unsigned integer bit mask");
            return 0;
        }
        buttons = (uint32_t)v[7];
    }
    o->pose_fn(o->pose_user, &pose, buttons);
    return 0;
}

/* Anything no method took. */
static int h_unknown(const char *path, const char *types, lo_arg **argv, int argc, lo_message msg, void *user)
{
    (void)types, (void)argv, (void)argc, (void)msg;
    rt_osc *o = (rt_osc *)user;
    osc_fail(o, path, "unknown address (see docs/osc.md)");
    return 0;
}

static const struct {
    const char *path;
    lo_method_handler fn;
} osc_methods[] = {
    {"/version", h_version},
    {"/status", h_status},
    {"/load", h_load},
    {"/remove", h_remove},
    {"/pose", h_pose},
    {"/tool", h_tool},
    {"/budget", h_budget},
    {"/gains", h_gains},
    {"/limits", h_limits},
    {"/forces", h_forces},
    {"/voxel/set", h_voxel_set},
    {"/voxel/clear", h_voxel_clear},
    {"/voxel/batch", h_voxel_batch},
    {"/telemetry/subscribe", h_subscribe},
    {"/telemetry/unsubscribe", h_unsubscribe},
    {"/record/start", h_record_start},
    {"/record/stop", h_record_stop},
    {"/device/pose", h_device_pose},
};

/* ---- telemetry fan-out (housekeeping thread) ---- */

static void osc_on_telemetry(const rt_telemetry *t, void *user)
{
    rt_osc *o = (rt_osc *)user;
    struct sockaddr_in to[RT_OSC_MAX_SUBSCRIBERS];
    int n = 0;
    pthread_mutex_lock(&o->sub_lock);
    for (int i = 0; i < RT_OSC_MAX_SUBSCRIBERS; i++) {
        osc_subscriber *s = &o->subs[i];
        if (s->period_s > 0 && t->time_s >= s->next_s) {
            to[n++] = s->addr;
            s->next_s = (s->next_s == 0 ? t->time_s : s->next_s) + s->period_s;
            if (s->next_s < t->time_s)
                s->next_s = t->time_s + s->period_s;
        }
    }
    pthread_mutex_unlock(&o->sub_lock);
    if (n == 0)
        return;
    lo_message m = lo_message_new();
    lo_message_add_int64(m, (int64_t)t->seq);
    lo_message_add_double(m, t->time_s);
    lo_message_add_double(m, t->tool_pos.x), lo_message_add_double(m, t->tool_pos.y), lo_message_add_double(m, t->tool_pos.z);
    lo_message_add_double(m, t->tool_rot.w), lo_message_add_double(m, t->tool_rot.x), lo_message_add_double(m, t->tool_rot.y),
        lo_message_add_double(m, t->tool_rot.z);
    lo_message_add_double(m, t->force_n.x), lo_message_add_double(m, t->force_n.y), lo_message_add_double(m, t->force_n.z);
    lo_message_add_double(m, t->torque_nm.x), lo_message_add_double(m, t->torque_nm.y), lo_message_add_double(m, t->torque_nm.z);
    lo_message_add_double(m, t->distance_m);
    lo_message_add_double(m, t->penvol_m3);
    lo_message_add_double(m, t->query_us);
    lo_message_add_int32(m, (int32_t)t->flags);
    for (int i = 0; i < n; i++) {
        osc_send_to(o, &to[i], "/telemetry", m);
        atomic_fetch_add(&o->telemetry_sent, 1);
    }
    lo_message_free(m);
}

/* ---- lifecycle ---- */

static void osc_lo_error(int num, const char *msg, const char *where)
{
    /* liblo reports parse errors through this; we count them in poll */
    (void)num, (void)msg, (void)where;
}

rt_osc *rt_osc_create(rt_service *svc, const char *addr, int port, char *err, size_t errlen)
{
    if (!svc || port < 0 || port > 65535) {
        snprintf(err, errlen, "osc: bad arguments (port %d)", port);
        return NULL;
    }
    rt_osc *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(err, errlen, "osc: out of memory");
        return NULL;
    }
    o->svc = svc;
    o->fd = -1;
    o->wake[0] = o->wake[1] = -1;
    pthread_mutex_init(&o->sub_lock, NULL);
    pthread_mutex_init(&o->build_lock, NULL);
    pthread_cond_init(&o->build_cond, NULL);
    atomic_init(&o->building, 0);
    o->held = malloc(OSC_HELD_BYTES);
    if (!o->held || pipe2(o->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "osc: %s", o->held ? strerror(errno) : "out of memory");
        goto fail;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    const char *a = addr && *addr ? addr : "127.0.0.1";
    if (inet_pton(AF_INET, a, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "osc: '%s' is not an IPv4 address", a);
        goto fail;
    }
    o->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (o->fd < 0 || bind(o->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        snprintf(err, errlen, "osc: cannot listen on %s:%d: %s", a, port, strerror(errno));
        goto fail;
    }
    /* room for bursts: a client that sends 65 kB voxel batches back to back
     * would overrun the default buffer (~200 kB), and the kernel drops
     * datagrams silently (best effort: the kernel caps it at rmem_max;
     * clients should still wait for each batch's /done) */
    int rcvbuf = 4 << 20;
    setsockopt(o->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    socklen_t sl = sizeof sa;
    getsockname(o->fd, (struct sockaddr *)&sa, &sl);
    o->port = ntohs(sa.sin_port);
    /* liblo needs a server to dispatch into; a private unix socket keeps it
     * off the network. We never read from it. */
    snprintf(o->lo_path, sizeof o->lo_path, "/tmp/hapticd-lo-%d-%d", (int)getpid(), o->port);
    unlink(o->lo_path);
    o->lo = lo_server_new_with_proto(o->lo_path, LO_UNIX, osc_lo_error);
    if (!o->lo) {
        snprintf(err, errlen, "osc: liblo could not create its dispatcher");
        goto fail;
    }
    for (size_t i = 0; i < sizeof osc_methods / sizeof osc_methods[0]; i++)
        lo_server_add_method(o->lo, osc_methods[i].path, NULL, osc_methods[i].fn, o);
    lo_server_add_method(o->lo, NULL, NULL, h_unknown, o);
    return o;
fail:
    rt_osc_destroy(o);
    return NULL;
}

int rt_osc_port(const rt_osc *o) { return o->port; }

int rt_osc_set_record_dir(rt_osc *o, const char *dir, char *err, size_t errlen)
{
    if (!dir || !dir[0]) {
        pthread_mutex_lock(&o->sub_lock);
        o->record_dir[0] = 0;
        pthread_mutex_unlock(&o->sub_lock);
        return 0;
    }
    struct stat st;
    if (strlen(dir) >= sizeof o->record_dir) { /* (h_record_start's full[] holds it, a '/' and a name) */
        snprintf(err, errlen, "record folder: path longer than %zu characters", sizeof o->record_dir - 1);
        return -1;
    }
    if (stat(dir, &st) != 0) {
        snprintf(err, errlen, "record folder %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "record folder %s: not a folder", dir);
        return -1;
    }
    pthread_mutex_lock(&o->sub_lock);
    snprintf(o->record_dir, sizeof o->record_dir, "%s", dir);
    pthread_mutex_unlock(&o->sub_lock);
    return 0;
}

/* Walk one datagram (a message, or a bundle and its elements, nested up to
 * 8 deep) before liblo does: 0, or -1 with why. Refused: addresses with
 * OSC pattern characters, and bundles with a time tag in the future. The
 * structure itself (sizes, alignment) is liblo's to check. */
static int osc_packet_check(const unsigned char *p, size_t n, int depth, char *why, size_t wl)
{
    if (n >= 8 && !memcmp(p, "#bundle", 8)) {
        if (depth >= 8) {
            snprintf(why, wl, "bundles nested more than 8 deep");
            return -1;
        }
        if (n < 16)
            return 0; /* malformed: liblo says so */
        uint32_t sec = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 | (uint32_t)p[10] << 8 | p[11];
        uint32_t frac = (uint32_t)p[12] << 24 | (uint32_t)p[13] << 16 | (uint32_t)p[14] << 8 | p[15];
        if (!(sec == 0 && frac <= 1)) { /* not "immediately" */
            lo_timetag now;
            lo_timetag_now(&now);
            if (sec > now.sec || (sec == now.sec && frac > now.frac)) {
                snprintf(why, wl, "bundle time tag in the future: not supported (send bundles tagged 'immediately')");
                return -1;
            }
        }
        size_t at = 16;
        while (at + 4 <= n) {
            uint32_t len = (uint32_t)p[at] << 24 | (uint32_t)p[at + 1] << 16 | (uint32_t)p[at + 2] << 8 | p[at + 3];
            at += 4;
            if (len > n - at)
                return 0; /* malformed: liblo says so */
            if (osc_packet_check(p + at, len, depth + 1, why, wl))
                return -1;
            at += len;
        }
        return 0;
    }
    size_t end = 0;
    while (end < n && p[end])
        end++;
    for (size_t i = 0; i < end; i++)
        if (strchr("*?[]{}", p[i])) {
            snprintf(why, wl, "address patterns (* ? [ ] { }) are not supported: send the exact address");
            return -1;
        }
    return 0;
}

void rt_osc_set_pose_input(rt_osc *o, rt_osc_pose_fn fn, void *user)
{
    o->pose_fn = fn;
    o->pose_user = user;
}

/* a datagram's address (its bytes up to the first NUL, at most
 * OSC_ECHO_MAX) into addr, for a /fail that names it */
static const char *osc_address_of(const unsigned char *buf, size_t n, char addr[OSC_ECHO_MAX + 1])
{
    size_t k = 0;
    while (k < n && k < OSC_ECHO_MAX && buf[k])
        addr[k] = (char)buf[k], k++;
    addr[k] = 0;
    return addr;
}

/* one datagram from o->sender (o->sender_valid): checked, then liblo
 * dispatches it */
static void osc_dispatch(rt_osc *o, const unsigned char *cbuf, ssize_t n)
{
    unsigned char *buf = (unsigned char *)cbuf; /* (liblo's calls take it non-const; they only read it) */
    /* Validate the datagram with liblo's parser first so that a
     * malformed one gets a /fail instead of silence. */
    int res = 0;
    char why[160];
    if (n > 0 && osc_packet_check(buf, (size_t)n, 0, why, sizeof why)) {
        char addr[OSC_ECHO_MAX + 1];
        atomic_fetch_add(&o->malformed, 1);
        osc_fail(o, osc_address_of(buf, (size_t)n, addr), "%s", why);
    } else if (n >= 8 && buf[0] == '#') {
        /* bundles: let liblo walk them; the service holds their
         * commands back and hands them to the loop together, so they
         * take effect in one cycle (rt_service_bundle_begin) */
        char berr[160];
        const int held = rt_service_bundle_begin(o->svc, berr, sizeof berr) == 0;
        if (!held)
            osc_fail(o, "#bundle", "%s: its elements run one by one", berr);
        o->in_bundle = 1;
        if (lo_server_dispatch_data(o->lo, buf, (size_t)n) < 0) {
            atomic_fetch_add(&o->malformed, 1);
            osc_fail(o, "#bundle", "malformed OSC bundle");
        }
        o->in_bundle = 0;
        if (held && rt_service_bundle_end(o->svc, berr, sizeof berr) < 0)
            osc_fail(o, "#bundle", "%s", berr);
    } else {
        lo_message m = n > 0 ? lo_message_deserialise(buf, (size_t)n, &res) : NULL;
        if (!m) {
            atomic_fetch_add(&o->malformed, 1);
            osc_fail(o, "?", "malformed OSC message (%zd bytes, liblo error %d)", n, res);
        } else {
            lo_message_free(m);
            lo_server_dispatch_data(o->lo, buf, (size_t)n);
        }
    }
}

/* whether a datagram runs at once while a build runs: a message that
 * touches neither the scene nor the loop's settings (/version, /status,
 * /device/pose, /telemetry/subscribe and unsubscribe), or /forces 0
 * (zeroing the output is never held back; /forces 1 waits its turn) */
static int osc_immediate(const unsigned char *buf, ssize_t n)
{
    static const char *const now[] = {"/version", "/status", "/device/pose", "/telemetry/subscribe", "/telemetry/unsubscribe"};
    if (n <= 0 || buf[0] != '/' || !memchr(buf, 0, (size_t)n))
        return 0;
    for (size_t i = 0; i < sizeof now / sizeof now[0]; i++)
        if (!strcmp((const char *)buf, now[i]))
            return 1;
    if (strcmp((const char *)buf, "/forces"))
        return 0;
    int res;
    lo_message m = lo_message_deserialise((void *)buf, (size_t)n, &res);
    if (!m)
        return 0;
    const int off = lo_message_get_argc(m) == 1 && osc_num(lo_message_get_types(m), lo_message_get_argv(m), 0) == 0.0;
    lo_message_free(m);
    return off;
}

/* keep the datagram from o->sender for after the build; 0, or -1 (no room) */
static int osc_hold(rt_osc *o, const unsigned char *buf, ssize_t n)
{
    const size_t need = sizeof(osc_held_head) + (size_t)n;
    if (o->held_to + need > OSC_HELD_BYTES && o->held_from > 0) { /* move what is left to the front */
        memmove(o->held, o->held + o->held_from, o->held_to - o->held_from);
        o->held_to -= o->held_from;
        o->held_from = 0;
    }
    if (o->held_to + need > OSC_HELD_BYTES)
        return -1;
    osc_held_head h = {(uint32_t)n, o->sender_valid, o->sender};
    memcpy(o->held + o->held_to, &h, sizeof h);
    memcpy(o->held + o->held_to + sizeof h, buf, (size_t)n);
    o->held_to += need;
    o->held_count++;
    return 0;
}

/* the oldest held datagram taken off the queue: its head into *h, its
 * bytes returned (they stay in place until the next osc_hold) */
static const unsigned char *osc_held_pop(rt_osc *o, osc_held_head *h)
{
    const unsigned char *b = o->held + o->held_from;
    memcpy(h, b, sizeof *h);
    o->held_from += sizeof *h + h->n;
    if (--o->held_count == 0)
        o->held_from = o->held_to = 0;
    return b + sizeof *h;
}

/* dispatch held datagrams, oldest first, until none is left or one starts
 * a build; how many */
static int osc_run_held(rt_osc *o)
{
    int handled = 0;
    while (o->held_count && !atomic_load(&o->building)) {
        osc_held_head h;
        const unsigned char *b = osc_held_pop(o, &h);
        o->sender = h.from;
        o->sender_valid = h.from_valid;
        osc_dispatch(o, b, (ssize_t)h.n);
        o->sender_valid = 0;
        handled++;
    }
    return handled;
}

int rt_osc_poll(rt_osc *o, int timeout_ms)
{
    int handled = osc_run_held(o);
    struct pollfd pfd[2] = {{o->fd, POLLIN, 0}, {o->wake[0], POLLIN, 0}};
    int r = poll(pfd, o->wake[0] >= 0 ? 2 : 1, timeout_ms);
    if (r > 0 && (pfd[1].revents & POLLIN)) { /* a build ended: what it held runs first */
        char drain[64];
        while (read(o->wake[0], drain, sizeof drain) > 0) {
        }
        handled += osc_run_held(o);
    }
    while (r > 0) {
        unsigned char buf[65536];
        socklen_t sl = sizeof o->sender;
        ssize_t n = recvfrom(o->fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&o->sender, &sl);
        if (n < 0)
            break;
        o->sender_valid = sl == sizeof o->sender && o->sender.sin_family == AF_INET;
        atomic_fetch_add(&o->received, 1);
        /* behind a build, or behind what one held: held, in order */
        if ((atomic_load(&o->building) || o->held_count) && !osc_immediate(buf, n)) {
            if (osc_hold(o, buf, n) != 0) {
                char addr[OSC_ECHO_MAX + 1];
                osc_fail(o, *osc_address_of(buf, (size_t)n, addr) ? addr : "?",
                         "not run: a /load or /tool is under way and %u messages (%u bytes at most) wait behind it; send "
                         "it again after its reply",
                         o->held_count, OSC_HELD_BYTES);
            }
        } else
            osc_dispatch(o, buf, n);
        o->sender_valid = 0;
        handled++;
        r = poll(pfd, 1, 0);
    }
    return handled;
}

static void *osc_thread(void *arg)
{
    rt_osc *o = arg;
    while (atomic_load(&o->running))
        rt_osc_poll(o, 50);
    return NULL;
}

int rt_osc_start(rt_osc *o, char *err, size_t errlen)
{
    if (pthread_create(&o->builder, NULL, osc_builder, o) != 0) {
        snprintf(err, errlen, "osc: cannot start its builder thread");
        return -1;
    }
    o->builder_started = 1;
    atomic_store(&o->running, 1);
    if (pthread_create(&o->thread, NULL, osc_thread, o) != 0) {
        atomic_store(&o->running, 0);
        snprintf(err, errlen, "osc: cannot start its thread");
        rt_osc_stop(o);
        return -1;
    }
    o->thread_started = 1;
    return 0;
}

void rt_osc_stop(rt_osc *o)
{
    if (!o)
        return;
    if (o->thread_started) {
        atomic_store(&o->running, 0);
        pthread_join(o->thread, NULL);
        o->thread_started = 0;
    }
    if (o->builder_started) { /* a build under way finishes and answers */
        pthread_mutex_lock(&o->build_lock);
        o->build_quit = 1;
        pthread_cond_signal(&o->build_cond);
        pthread_mutex_unlock(&o->build_lock);
        pthread_join(o->builder, NULL);
        o->builder_started = 0;
    }
    /* what waited behind a build is not run: its senders are told */
    while (o->held_count) {
        osc_held_head h;
        const unsigned char *b = osc_held_pop(o, &h);
        char addr[OSC_ECHO_MAX + 1];
        osc_fail_to(o, &h.from, h.from_valid, *osc_address_of(b, h.n, addr) ? addr : "?",
                    "not run: hapticd stopped while it waited behind a /load or /tool");
    }
}

void rt_osc_destroy(rt_osc *o)
{
    if (!o)
        return;
    rt_osc_stop(o);
    if (o->listening)
        rt_service_remove_telemetry_listener(o->svc, osc_on_telemetry, o);
    if (o->lo)
        lo_server_free(o->lo);
    if (o->lo_path[0])
        unlink(o->lo_path);
    if (o->fd >= 0)
        close(o->fd);
    for (int i = 0; i < 2; i++)
        if (o->wake[i] >= 0)
            close(o->wake[i]);
    free(o->held);
    pthread_mutex_destroy(&o->sub_lock);
    pthread_mutex_destroy(&o->build_lock);
    pthread_cond_destroy(&o->build_cond);
    free(o);
}

void rt_osc_get_stats(const rt_osc *o, rt_osc_stats *out)
{
    out->received = atomic_load(&o->received);
    out->dispatched = atomic_load(&o->dispatched);
    out->failed = atomic_load(&o->failed);
    out->malformed = atomic_load(&o->malformed);
    out->replies = atomic_load(&o->replies);
    out->telemetry_sent = atomic_load(&o->telemetry_sent);
    out->reply_drops = atomic_load(&o->reply_drops);
}
