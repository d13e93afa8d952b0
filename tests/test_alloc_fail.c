/* test_alloc_fail.c - every allocation that can fail is made to fail, one at
 * a time: building and loading each kind of tree, the engine, a scenario,
 * the service with its scene, and a whole simulated run. Each operation must
 * then report an error (with a message where it takes an error buffer) or,
 * where a failed allocation only costs speed, still give the right answer;
 * it must never crash, and must free everything it had allocated (counted
 * here; ASan's leak check also runs over this program).
 *
 * (Each query also makes its own engine, whose allocations fail in turn
 * too: the engine's creation is covered with every operation that asks.)
 *
 * Blocks are counted by address: a leak is a block handed out and not
 * freed, and a free of a block these wrappers never handed out is counted
 * apart (it cannot hide a leak).
 *
 * How: the link wraps malloc, calloc, realloc, aligned_alloc and free
 * (-Wl,--wrap, Makefile), which redirects the calls made by libprox,
 * libhapticd and this file, and no others (liblo, assimp and libc's own
 * calls go to the allocator directly). While armed, the wrapper counts
 * those calls and fails the k-th; every operation is first run with nothing
 * failing to learn how many calls it makes (n), then once for each k from 1
 * to n (past K_ALL, at a stride that still visits every call site's
 * neighbourhood, and the last 16). Works in every build: under ASan the
 * wrapped calls reach ASan's allocator.
 *
 * Debugging a failure: ALLOC_FAIL_K=k runs only call k of each operation,
 * and ALLOC_FAIL_TRACE=1 prints the failing call's backtrace (addr2line
 * names it). */
#include <arpa/inet.h>
#include <execinfo.h>
#include <pthread.h>
#include <lo/lo.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dev_device.h"
#include "prox.h"
#include "check_prox.h"
#include "rt_osc.h"
#include "rt_service.h"
#include "sim.h"
#include "sim_internal.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
void __wrap_free(void *p);

/* armed: count calls, fail the fail_at-th (0: none). Atomic: the
 * service's threads allocate too. */
static atomic_int armed;
static atomic_long calls, fail_at, failed_calls;

/* The blocks the wrappers handed out and not yet freed, by address (open
 * addressing, linear probing, deletion by backward shift), under a lock:
 * live counts them; a free of a block they never handed out (one libc made,
 * say) counts in foreign_frees instead of hiding a leak. */
enum { LIVE_SLOTS = 1 << 18 };
static void *live_set[LIVE_SLOTS];
static long live, foreign_frees;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t live_slot(const void *p) { return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 46) & (LIVE_SLOTS - 1); }

static void live_add(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&live_lock);
    size_t i = live_slot(p);
    while (live_set[i])
        i = (i + 1) & (LIVE_SLOTS - 1);
    live_set[i] = p;
    live++;
    pthread_mutex_unlock(&live_lock);
}

static void live_remove(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&live_lock);
    size_t i = live_slot(p);
    while (live_set[i] && live_set[i] != p)
        i = (i + 1) & (LIVE_SLOTS - 1);
    if (!live_set[i]) {
        foreign_frees++;
    } else {
        live--;
        /* backward shift: move later entries of the run into the hole when
         * their home slot does not lie between the hole and them */
        size_t hole = i, j = i;
        live_set[hole] = NULL;
        for (;;) {
            j = (j + 1) & (LIVE_SLOTS - 1);
            if (!live_set[j])
                break;
            const size_t home = live_slot(live_set[j]);
            if (((j - home) & (LIVE_SLOTS - 1)) >= ((j - hole) & (LIVE_SLOTS - 1))) {
                live_set[hole] = live_set[j];
                live_set[j] = NULL;
                hole = j;
            }
        }
    }
    pthread_mutex_unlock(&live_lock);
}

static void live_counts(long *n, long *foreign)
{
    pthread_mutex_lock(&live_lock);
    *n = live, *foreign = foreign_frees;
    pthread_mutex_unlock(&live_lock);
}

static int should_fail(void)
{
    if (!atomic_load(&armed))
        return 0;
    long c = atomic_fetch_add(&calls, 1) + 1;
    if (c == atomic_load(&fail_at)) {
        atomic_fetch_add(&failed_calls, 1);
        if (getenv("ALLOC_FAIL_TRACE")) { /* where the failing call is made (debugging) */
            void *bt[16];
            backtrace_symbols_fd(bt, backtrace(bt, 16), 2);
        }
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    if (should_fail())
        return NULL;
    void *p = __real_malloc(n);
    live_add(p);
    return p;
}
void *__wrap_calloc(size_t a, size_t b)
{
    if (should_fail())
        return NULL;
    void *p = __real_calloc(a, b);
    live_add(p);
    return p;
}
void *__wrap_aligned_alloc(size_t a, size_t n)
{
    if (should_fail())
        return NULL;
    void *p = __real_aligned_alloc(a, n);
    live_add(p);
    return p;
}
void *__wrap_realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL; /* p stays valid, as realloc leaves it */
    void *q = __real_realloc(p, n);
    if (q || n == 0) { /* moved, grown or shrunk in place; or freed (glibc's realloc(p, 0)) */
        live_remove(p);
        live_add(q);
    }
    return q;
}
void __wrap_free(void *p)
{
    live_remove(p);
    __real_free(p);
}

/* One operation run with one allocation failing: returns 1 when it
 * succeeded and its answer checked right, 0 when it reported the failure
 * (err holds its message; the calls without an error buffer have none:
 * needs_message 0), -1 when it succeeded with a wrong answer (a CHECK in
 * it says what). */
typedef struct op {
    const char *name;
    int needs_message;
    int (*run)(void *ctx, char *err, size_t errlen);
    void *ctx;
} op;

/* set while an operation runs with nothing failing: the operations that
 * keep what they answered as their reference then (a scenario, the
 * service, a simulated run) take it; every failing run that succeeds must
 * answer the same */
static int taking_reference;

/* every call up to K_ALL, then about K_STRIDED more spread evenly, and the
 * last 16 */
enum { K_ALL = 150, K_STRIDED = 150 };

/* run o with the k-th call failing (0: none); *made: the calls it made */
static int run_failing(const op *o, long k, long *made, char *err, size_t errlen)
{
    err[0] = '\0';
    atomic_store(&calls, 0);
    atomic_store(&fail_at, k);
    atomic_store(&failed_calls, 0);
    atomic_store(&armed, 1);
    int rc = o->run(o->ctx, err, errlen);
    atomic_store(&armed, 0);
    *made = atomic_load(&calls);
    return rc;
}

static long next_k(long k, long n)
{
    if (k < K_ALL || k >= n - 16)
        return k + 1;
    const long stride = (n - K_ALL) / K_STRIDED + 1;
    return k + stride < n - 16 ? k + stride : n - 16;
}

static void exercise(const op *o)
{
    const double t0 = check_now_s();
    char err[512];
    long n = 0, live0, foreign0, live1, foreign1;
    live_counts(&live0, &foreign0);
    taking_reference = 1;
    int rc = run_failing(o, 0, &n, err, sizeof err);
    taking_reference = 0;
    live_counts(&live1, &foreign1);
    CHECK(rc == 1, "%s: fails with nothing failing: %s", o->name, err);
    CHECK(live1 == live0 && foreign1 == foreign0, "%s: a clean run left %ld blocks not freed, freed %ld it was not handed by these wrappers",
          o->name, live1 - live0, foreign1 - foreign0);
    CHECK(n > 0, "%s: no allocation seen (is the link wrapped?)", o->name);
    if (rc != 1)
        return;
    const char *only = getenv("ALLOC_FAIL_K"); /* one call (debugging, with ALLOC_FAIL_TRACE) */
    int reported = 0, survived = 0, tried = 0;
    for (long k = only ? atol(only) : 1; k <= n; k = only ? n + 1 : next_k(k, n)) {
        long made;
        live_counts(&live0, &foreign0);
        rc = run_failing(o, k, &made, err, sizeof err);
        tried++;
        live_counts(&live1, &foreign1);
        CHECK(live1 == live0 && foreign1 == foreign0, "%s: call %ld of %ld failing: %ld blocks not freed, %ld freed not from these wrappers (%s)",
              o->name, k, n, live1 - live0, foreign1 - foreign0, rc == 1 ? "it succeeded" : err);
        CHECK(made >= k && atomic_load(&failed_calls) == 1, "%s: call %ld of %ld not reached (%ld made)", o->name, k, n, made);
        CHECK(rc != -1, "%s: call %ld of %ld failing: a wrong answer", o->name, k, n);
        if (rc == 1)
            survived++;
        else if (rc == 0) {
            reported++;
            /* the message says what ran out, not that the input was bad */
            CHECK(!o->needs_message || strstr(err, "out of memory"), "%s: call %ld of %ld failing: reported as '%s'", o->name, k, n, err);
        }
        if (check_current_failed > 10)
            break;
    }
    fprintf(stderr, "    %s (%.1f s): %ld allocations; %d failed in turn: %d reported, %d still answered right\n", o->name, check_now_s() - t0, n, tried,
            reported, survived);
    CHECK(reported > 0, "%s: no failed allocation was reported", o->name);
}

/* ---- what the operations answer, and the references ---- */

static prox_bank *bank;

/* distance from a at the origin to b 0.15 m along x (turned), and (penvol)
 * the penetration volume with b 0.02 m along x; for inner and outer boxes
 * (collide: 1 or 0) whether the two poses collide. 0, 1 when the engine
 * could not be made (its allocations fail too: a reported failure), -1
 * when a query failed */
typedef struct answers {
    double dist, vol;
} answers;

static int query_pair(const prox_tree *a, const prox_tree *b, int penvol, int collide, answers *out)
{
    out->dist = out->vol = NAN;
    prox_engine_def ed = prox_engine_def_default();
    ed.queue_capacity = 8192;
    ed.max_pairs = 2;
    prox_engine *e = prox_engine_create(&ed, bank);
    if (!e)
        return 1;
    const prox_quat q = prox_quat_normalize((prox_quat){0.9, 0.1, 0.3, -0.2});
    prox_object_pair pr = {a, b, prox_xform_identity(), prox_xform_from_pose(prox_v3(0.15, 0.01, -0.02), q), NULL};
    prox_result r;
    prox_query qd = prox_query_default(collide ? PROX_QUERY_COLLIDE : PROX_QUERY_DISTANCE);
    int rc = prox_query_run(e, &qd, &pr, 1, &r) == 0 && r.complete ? 0 : -1;
    out->dist = r.value;
    out->vol = 0;
    if ((penvol || collide) && rc == 0) {
        pr.pose_b = prox_xform_from_pose(prox_v3(0.02, 0.01, -0.01), q);
        prox_query qv = prox_query_default(collide ? PROX_QUERY_COLLIDE : PROX_QUERY_PENVOL);
        rc = prox_query_run(e, &qv, &pr, 1, &r) == 0 && r.complete ? 0 : -1;
        out->vol = r.value;
    }
    prox_engine_destroy(e);
    CHECK(rc == 0, "a query failed (flags 0x%x)", r.flags);
    return rc;
}

/* an operation's result from its answers: 1 when they are the reference's
 * (to 1e-12 relative: the same build), 0 when no engine could be made to
 * ask (a reported failure), -1 otherwise (a CHECK says how) */
static int judge(const char *what, int query_rc, const answers *got, const answers *ref, char *err, size_t errlen)
{
    if (query_rc == 1) {
        snprintf(err, errlen, "out of memory making the engine");
        return 0;
    }
    const int ok = query_rc == 0 && fabs(got->dist - ref->dist) <= 1e-12 * fabs(ref->dist) &&
                   fabs(got->vol - ref->vol) <= 1e-12 * fabs(ref->vol);
    /* (collide answers 1 or 0: equal) */
    CHECK(ok, "%s: distance %.15g (reference %.15g), volume %.15g (reference %.15g)", what, got->dist, ref->dist, got->vol,
          ref->vol);
    return ok ? 1 : -1;
}

static prox_mesh *torus_mesh(void) { return prox_mesh_make_torus(0.05, 0.02, 24, 12); }

static char dir[64];
static char ist_path[96], off_path[96], vox_path[96], xyz_path[96];
static answers ref_ist, ref_bvh, ref_boxes;
static prox_boxes_stats ref_boxes_stats;
static prox_ist *ref_owner; /* the clean build: its tree is the other side of every inner sphere tree's query */
static uint32_t ref_spheres;

/* ---- operations ---- */

static int op_meshes(void *ctx, char *err, size_t errlen)
{
    (void)ctx, (void)err, (void)errlen;
    prox_mesh *s = prox_mesh_make_sphere(0.05, 2), *t = torus_mesh(), *b = prox_mesh_make_tiled_box(prox_v3(0.1, 0.1, 0.02), 3);
    const prox_vec3 v[4] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    const uint32_t f[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};
    prox_mesh *a = prox_mesh_from_arrays(v, 4, f, 4);
    int rc = 0;
    if (s && t && b && a) {
        rc = s->triangle_count == 320 && t->triangle_count == 576 && s->closed && t->closed && b->closed && a->closed &&
                     fabs(a->volume - 1.0 / 6) < 1e-12
                 ? 1
                 : -1;
        CHECK(rc == 1, "meshes made after a failed allocation: %u and %u triangles, tetrahedron volume %g", s->triangle_count,
              t->triangle_count, a->volume);
    }
    prox_mesh_free(s), prox_mesh_free(t), prox_mesh_free(b), prox_mesh_free(a);
    return rc;
}

static int op_mesh_load(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    prox_mesh *m = NULL;
    if (prox_mesh_load(off_path, &m, err, errlen) != 0) {
        CHECK(m == NULL, "a failed load handed out a mesh");
        return 0;
    }
    const int ok = m->triangle_count == 576 && m->closed && m->oriented;
    CHECK(ok, "loaded %u triangles, closed %d, oriented %d", m->triangle_count, m->closed, m->oriented);
    prox_mesh_free(m);
    return ok ? 1 : -1;
}

/* the same file read by a child process (this program, answering
 * PROX_LOADER_FLAG in main): the allocations failed are the parent's */
static int op_mesh_load_apart(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    const prox_loader ld = {"/proc/self/exe", 60, 0};
    prox_mesh *m = NULL;
    if (prox_mesh_load_apart(&ld, off_path, &m, err, errlen) != 0) {
        CHECK(m == NULL, "a failed load handed out a mesh");
        return 0;
    }
    const int ok = m->triangle_count == 576 && m->closed && m->oriented;
    CHECK(ok, "loaded apart %u triangles, closed %d, oriented %d", m->triangle_count, m->closed, m->oriented);
    prox_mesh_free(m);
    return ok ? 1 : -1;
}

static int check_ist(prox_ist *t, const char *what, char *err, size_t errlen)
{
    answers a;
    int rc = judge(what, query_pair(prox_ist_tree(t), prox_ist_tree(ref_owner), 1, 0, &a), &a, &ref_ist, err, errlen);
    prox_ist_stats st;
    prox_ist_get_stats(t, &st);
    if (st.spheres != ref_spheres) {
        CHECK(0, "%s: %u spheres, %u in the reference", what, st.spheres, ref_spheres);
        rc = -1;
    }
    prox_ist_free(t);
    return rc;
}

static int op_ist_build(void *ctx, char *err, size_t errlen)
{
    prox_ist_def d = prox_ist_def_default();
    d.target_spheres = 150;
    d.voxels = 30000; /* a coarse grid: the build runs once per allocation */
    d.progress = 0;
    prox_ist *t = NULL;
    if (prox_ist_build(ctx, &d, &t, err, errlen) != 0) {
        CHECK(t == NULL, "a failed build handed out a tree");
        return 0;
    }
    return check_ist(t, "a build", err, errlen);
}

static int op_ist_load(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    prox_ist *t = NULL;
    if (prox_ist_load(ist_path, &t, err, errlen) != 0) {
        CHECK(t == NULL, "a failed load handed out a tree");
        return 0;
    }
    return check_ist(t, "a load", err, errlen);
}

static int op_bvh(void *ctx, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    prox_bvh *b = prox_bvh_build(ctx);
    if (!b)
        return 0;
    answers a;
    const int rc = judge("a BVH", query_pair(prox_bvh_tree(b), prox_bvh_tree(b), 0, 0, &a), &a, &ref_bvh, err, errlen);
    prox_bvh_free(b);
    return rc;
}

static int op_boxes(void *ctx, char *err, size_t errlen)
{
    prox_boxes_def d = prox_boxes_def_default();
    prox_boxes *b = NULL;
    if (prox_boxes_build(ctx, &d, &b, err, errlen) != 0) {
        CHECK(b == NULL, "a failed build handed out boxes");
        return 0;
    }
    answers a;
    int rc = judge("inner and outer boxes", query_pair(prox_boxes_tree(b), prox_boxes_tree(b), 0, 1, &a), &a, &ref_boxes, err, errlen);
    /* the same tree: nodes, leaves and inner boxes (a box left out answers
     * right, only slower) */
    prox_boxes_stats st;
    prox_boxes_get_stats(b, &st);
    if (rc == 1 && (st.nodes != ref_boxes_stats.nodes || st.leaves != ref_boxes_stats.leaves ||
                    st.root_inner_volume != ref_boxes_stats.root_inner_volume || st.leaf_inner_volume != ref_boxes_stats.leaf_inner_volume)) {
        CHECK(0, "boxes: %u nodes, %u leaves, inner volume %.17g + %.17g; the reference %u, %u, %.17g + %.17g", st.nodes, st.leaves,
              st.root_inner_volume, st.leaf_inner_volume, ref_boxes_stats.nodes, ref_boxes_stats.leaves, ref_boxes_stats.root_inner_volume,
              ref_boxes_stats.leaf_inner_volume);
        rc = -1;
    }
    prox_boxes_free(b);
    return rc;
}

/* a map made, filled, saved, loaded back and compared; and one from a
 * point cloud */
static void count_cell(int32_t x, int32_t y, int32_t z, uint32_t cls, void *u)
{
    long *n = u;
    n[0]++;
    n[1] += x + 3 * y + 7 * z + 11 * (long)cls;
}

static int op_voxels(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    prox_voxmap_def d = {0.01, {0, 0, 0}, {40, 40, 40}, 256};
    prox_voxmap *m = prox_voxmap_create(&d, err, errlen);
    if (!m)
        return 0;
    int rc = 1;
    for (int32_t i = 0; i < 200 && rc == 1; i++) {
        const int s = prox_voxmap_set(m, i % 20, i / 20, (i * 7) % 40, 1 + (uint32_t)(i % 2)); /* 200 cells */
        if (s != PROX_VOXEL_OK) {
            snprintf(err, errlen, "set cell %d: status %d", (int)i, s);
            rc = s == PROX_VOXEL_FULL ? 0 : -1;
        }
    }
    prox_voxmap *back = NULL, *cloud = NULL;
    if (rc == 1 && (prox_voxmap_save(m, vox_path, err, errlen) != 0 || prox_voxmap_load(vox_path, &back, err, errlen) != 0))
        rc = 0;
    if (rc == 1) {
        long a[2] = {0, 0}, b[2] = {0, 0};
        prox_voxmap_foreach(m, count_cell, a);
        prox_voxmap_foreach(back, count_cell, b);
        if (a[0] != 200 || a[0] != b[0] || a[1] != b[1] || prox_voxmap_validate(back, err, errlen) != 0) {
            CHECK(0, "the map read back: %ld cells (sum %ld), written %ld (sum %ld)", b[0], b[1], a[0], a[1]);
            rc = -1;
        }
    }
    if (rc == 1) {
        if (prox_voxmap_from_cloud(xyz_path, 0.01, 1, &cloud, err, errlen) != 0)
            rc = 0;
        else {
            long c[2] = {0, 0};
            prox_voxmap_foreach(cloud, count_cell, c);
            rc = c[0] == 3 ? 1 : -1;
            CHECK(rc == 1, "the cloud's map has %ld cells, not 3", c[0]);
        }
    }
    prox_voxmap_free(m), prox_voxmap_free(back), prox_voxmap_free(cloud);
    return rc;
}

static int op_scenario(void *ctx, char *err, size_t errlen)
{
    sim_scenario *sc = sim_scenario_parse(ctx, "t.sim", NULL, err, errlen);
    if (!sc)
        return 0;
    /* what was parsed: settings and item counts */
    static double ref[8];
    const double got[8] = {sim_scenario_duration_s(sc), sc->rate_hz, sc->budget_us, sc->ist_spheres, sc->nobj, sc->nwp, sc->nev, sc->nex};
    sim_scenario_free(sc);
    if (taking_reference)
        memcpy(ref, got, sizeof ref);
    const int same = !memcmp(ref, got, sizeof ref) && got[0] == 0.05 && got[4] == 3;
    CHECK(same, "parsed: duration %g, %g objects, %g waypoints, %g events (reference %g, %g, %g, %g)", got[0], got[4], got[5], got[6],
          ref[0], ref[4], ref[5], ref[6]);
    return same ? 1 : -1;
}

/* the service with a scene: created, a voxel map added, an inner sphere
 * tree and a voxel map loaded from files (op_voxels's, written by
 * test_trees), the tool set, stepped in lockstep (the trees' own builds
 * and loads have their tests above) */
static int op_service(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    rt_config cfg = rt_config_default();
    cfg.priority = 0, cfg.cpu = -1, cfg.cpu_latency_us = -1;
    cfg.max_objects = 4, cfg.ist_spheres = 100;
    dev_device *dev = dev_null_open(err, errlen);
    if (!dev)
        return 0;
    rt_service *s = rt_service_create(&cfg, dev, err, errlen);
    if (!s) {
        dev_close(dev);
        return 0;
    }
    int rc = 1;
    rt_object o;
    const prox_xform far = prox_xform_from_pose(prox_v3(0.5, 0, 0), prox_quat_identity());
    prox_voxmap_def vd = {0.01, {0, 0, -0.05}, {20, 20, 5}, 0};
    prox_voxmap *vm = prox_voxmap_create(&vd, err, errlen);
    if (!vm)
        rc = 0;
    else {
        rt_object_from_voxmap(vm, &o);
        if (rt_service_add_object(s, "slab", &o, &far, err, errlen) != 0)
            rt_object_free(&o), rc = 0;
    }
    if (rc == 1 && (rt_service_load_object(s, "ring", ist_path, NULL, 0, err, errlen) != 0 ||
                    rt_service_load_object(s, "file", vox_path, &far, 0, err, errlen) != 0 || rt_service_set_tool(s, "ring", err, errlen) != 0))
        rc = 0;
    for (int i = 1; rc == 1 && i <= 20; i++)
        if (rt_service_step(s, (uint64_t)i * 1000000u, err, errlen) != 0)
            rc = 0;
    /* the scene and what its 20 cycles measured */
    static rt_status ref;
    rt_status st;
    if (rc == 1 && rt_service_status(s, &st) == 0) {
        if (taking_reference)
            ref = st;
        if (st.object_count != 3 || ref.object_count != 3 || strcmp(st.tool, ref.tool) || st.cycles != ref.cycles ||
            st.faults != ref.faults || memcmp(&st.distance_m, &ref.distance_m, sizeof st.distance_m) ||
            memcmp(&st.penvol_m3, &ref.penvol_m3, sizeof st.penvol_m3) || memcmp(&st.force_n, &ref.force_n, sizeof st.force_n)) {
            CHECK(0, "the scene: %u objects, tool '%s', %llu cycles, distance %g, force %g (reference %u, '%s', %llu, %g, %g)",
                  (unsigned)st.object_count, st.tool, (unsigned long long)st.cycles, st.distance_m, prox_v3_len(st.force_n),
                  (unsigned)ref.object_count, ref.tool, (unsigned long long)ref.cycles, ref.distance_m, prox_v3_len(ref.force_n));
            rc = -1;
        }
    }
    rt_service_destroy(s);
    dev_close(dev);
    return rc;
}

/* the service's objects from meshes: an open mesh's BVH (the object owns
 * the mesh, freed with it or on failure) */
static int op_rt_object(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    prox_mesh *m = prox_mesh_make_box(prox_v3(0.2, 0.2, 0.01));
    if (!m)
        return snprintf(err, errlen, "out of memory (the box)"), 0;
    rt_object o;
    if (rt_object_from_mesh(m, 0, &o, err, errlen) != 0)
        return 0;
    const int ok = o.type == PROX_TREE_MESH && o.tree && o.tree->type == PROX_TREE_MESH;
    CHECK(ok, "the object is a mesh BVH (type %u)", (unsigned)o.type);
    rt_object_free(&o);
    return ok ? 1 : -1;
}

/* OSC control of a service: /load of an .ist and a .vox file, a
 * /voxel/batch, /tool, each answered; then the loop started and stopped
 * (the .vox file is op_voxels's, written by test_trees). The server is polled on this thread (rt_osc_poll), so the
 * service applies the commands before its first cycle; the reply says
 * whether each was done (/done) or refused with its reason (/fail). */
static int osc_ask(int fd, int port, rt_osc *o, lo_message m, const char *path, char *err, size_t errlen)
{
    char buf[4096];
    size_t size = sizeof buf;
    void *ok = lo_message_serialise(m, path, buf, &size);
    lo_message_free(m);
    struct sockaddr_in to = {0};
    to.sin_family = AF_INET;
    to.sin_port = htons((uint16_t)port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!ok || sendto(fd, buf, size, 0, (struct sockaddr *)&to, sizeof to) != (ssize_t)size) {
        snprintf(err, errlen, "cannot send %s", path);
        return -1;
    }
    for (int tries = 0; tries < 50; tries++) {
        rt_osc_poll(o, 20);
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 0) != 1)
            continue;
        const ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
        if (n <= 0)
            continue;
        buf[n] = 0;
        int res;
        lo_message r = lo_message_deserialise(buf, (size_t)n, &res);
        if (!r)
            continue;
        const int argc = lo_message_get_argc(r);
        const char *types = lo_message_get_types(r);
        lo_arg **argv = lo_message_get_argv(r);
        int rc = -2;
        if (!strcmp(buf, "/done") && argc >= 1 && types[0] == 's' && !strcmp((const char *)argv[0], path))
            rc = 1;
        else if (!strcmp(buf, "/fail") && argc >= 2 && types[1] == 's') {
            snprintf(err, errlen, "%s", (const char *)argv[1]);
            rc = 0;
        }
        lo_message_free(r);
        if (rc != -2)
            return rc;
    }
    snprintf(err, errlen, "no answer to %s", path);
    return -1;
}

static int op_osc(void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    rt_config cfg = rt_config_default();
    cfg.priority = 0, cfg.cpu = -1, cfg.cpu_latency_us = -1;
    cfg.max_objects = 4;
    dev_device *dev = dev_null_open(err, errlen);
    if (!dev)
        return 0;
    rt_service *s = rt_service_create(&cfg, dev, err, errlen);
    rt_osc *o = s ? rt_osc_create(s, NULL, 0, err, errlen) : NULL;
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int rc = o && fd >= 0 ? 1 : 0;
    lo_message m;
    if (rc == 1 && (m = lo_message_new())) {
        lo_message_add_string(m, "ring");
        lo_message_add_string(m, ist_path);
        rc = osc_ask(fd, rt_osc_port(o), o, m, "/load", err, errlen);
    }
    if (rc == 1 && (m = lo_message_new())) {
        lo_message_add_string(m, "map");
        lo_message_add_string(m, vox_path);
        rc = osc_ask(fd, rt_osc_port(o), o, m, "/load", err, errlen);
    }
    if (rc == 1 && (m = lo_message_new())) {
        const prox_voxel_record recs[2] = {{1, 2, 3, 1}, {4, 5, 6, 2}};
        lo_blob b = lo_blob_new(sizeof recs, recs);
        lo_message_add_string(m, "map");
        lo_message_add_blob(m, b);
        rc = osc_ask(fd, rt_osc_port(o), o, m, "/voxel/batch", err, errlen);
        lo_blob_free(b);
    }
    if (rc == 1 && (m = lo_message_new())) {
        lo_message_add_string(m, "ring");
        rc = osc_ask(fd, rt_osc_port(o), o, m, "/tool", err, errlen);
    }
    if (rc == 1 && rt_service_start(s, err, errlen) != 0)
        rc = 0;
    rt_status st;
    if (rc == 1 && rt_service_status(s, &st) == 0 && (st.object_count != 2 || strcmp(st.tool, "ring"))) {
        CHECK(0, "the scene has %u objects (not 2), tool '%s'", (unsigned)st.object_count, st.tool);
        rc = -1;
    }
    if (s)
        rt_service_stop(s);
    rt_osc_destroy(o);
    rt_service_destroy(s);
    dev_close(dev);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* the fields of a lockstep run's report that do not depend on real time */
enum { REPORT_FIELDS = 15 };
static void report_fields(const sim_report *r, double out[REPORT_FIELDS])
{
    const double f[REPORT_FIELDS] = {(double)r->cycles, r->contact_s, r->first_contact_s, r->max_force_n, r->max_force_step_n,
                                     r->max_torque_nm, r->max_penvol_m3, r->min_distance_m, (double)r->faults,
                                     (double)r->voxel_drops, (double)r->incomplete, r->work_j, r->tool_min.z, r->tool_max.z,
                                     r->handle_end.z};
    memcpy(out, f, sizeof f);
}

/* a whole simulated run: scene, device, loop, report */
static int op_sim(void *ctx, char *err, size_t errlen)
{
    sim_scenario *sc = sim_scenario_parse(ctx, "t.sim", NULL, err, errlen);
    if (!sc)
        return 0;
    sim_options o = {NULL, 1, NULL};
    sim_report r;
    int rc = sim_run(sc, &o, &r, err, errlen) == 0 ? 1 : 0;
    /* the lockstep run is deterministic (every query completes): what it
     * measured is the reference's, field by field (the times are real) */
    static sim_report ref;
    static uint32_t ref_items[3]; /* the scenario's objects, waypoints and events */
    const uint32_t items[3] = {sc->nobj, sc->nwp, sc->nev};
    if (rc == 1) {
        if (taking_reference)
            ref = r, memcpy(ref_items, items, sizeof items);
        double got[REPORT_FIELDS], want[REPORT_FIELDS];
        report_fields(&r, got), report_fields(&ref, want);
        if (memcmp(got, want, sizeof got) || memcmp(items, ref_items, sizeof items) || r.cycles < 50 || r.cycles > 51 || r.faults != 0) {
            CHECK(0, "the run: %llu cycles, %llu faults, max force %.17g, min tool z %.17g (reference %llu, %llu, %.17g, %.17g)",
                  (unsigned long long)r.cycles, (unsigned long long)r.faults, r.max_force_n, r.tool_min.z,
                  (unsigned long long)ref.cycles, (unsigned long long)ref.faults, ref.max_force_n, ref.tool_min.z);
            rc = -1;
        }
    }
    sim_scenario_free(sc);
    return rc;
}

/* a scene whose objects are quick to make (inner sphere trees from a file,
 * voxels); scene[] gets the .ist file's path at setup */
static char scene[1024];
#define SCENE_FMT                                                                                                    \
    "rate 1000\nduration 0.05\n"                                                                                     \
    "object table file %s at 0 0 -0.1\n"                                                                             \
    "object ring file %s\n"                                                                                          \
    "object pillar voxels 0.01 2 2 3 at 0.1 0 0\n"                                                                   \
    "tool ring\nbudget_us 200000\n"                                                                                  \
    "at 0 hand 0 0 0.03\nat 0.02 voxels pillar 0 0 0 1 1 2 obstacle\nat 0.04 hand 0 0 -0.07\n"

/* ---- tests ---- */

static void test_meshes(void)
{
    const op o = {"procedural meshes", 0, op_meshes, NULL};
    exercise(&o);
    const op l = {"an OFF mesh loaded", 1, op_mesh_load, NULL};
    exercise(&l);
    const op a = {"an OFF mesh loaded apart", 1, op_mesh_load_apart, NULL};
    exercise(&a);
}

static void test_trees(void)
{
    prox_mesh *torus = torus_mesh(), *box = prox_mesh_make_box(prox_v3(0.03, 0.02, 0.04));
    const op ops[] = {
        {"inner sphere tree build", 1, op_ist_build, torus},
        {"inner sphere tree load", 1, op_ist_load, NULL},
        {"mesh BVH build", 0, op_bvh, torus},
        {"inner and outer boxes build", 1, op_boxes, box},
        {"voxel map: made, saved, loaded, from a cloud", 1, op_voxels, NULL},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        exercise(&ops[i]);
    prox_mesh_free(torus), prox_mesh_free(box);
}

static void test_service(void)
{
    const op ops[] = {
        {"scenario parse", 1, op_scenario, scene},
        {"a mesh BVH object", 1, op_rt_object, NULL},
        {"service with a scene, stepped", 1, op_service, NULL},
        {"OSC commands, then the loop started", 1, op_osc, NULL},
        {"simulated run", 1, op_sim, scene},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        exercise(&ops[i]);
}

/* the references: built with nothing failing */
static int setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/hapticd-allocfail-%d", (int)getpid());
    if (mkdir(dir, 0700) != 0)
        return -1;
    snprintf(ist_path, sizeof ist_path, "%s/ring.ist", dir);
    snprintf(off_path, sizeof off_path, "%s/ring.off", dir);
    snprintf(vox_path, sizeof vox_path, "%s/map.vox", dir);
    snprintf(xyz_path, sizeof xyz_path, "%s/cloud.xyz", dir);
    snprintf(scene, sizeof scene, SCENE_FMT, ist_path, ist_path);
    char err[256];
    bank = prox_bank_create();
    if (!bank)
        return -1;
    prox_bank_register_defaults(bank);
    prox_mesh *torus = torus_mesh(), *box = prox_mesh_make_box(prox_v3(0.03, 0.02, 0.04));
    prox_ist_def d = prox_ist_def_default();
    d.target_spheres = 150;
    d.voxels = 30000; /* a coarse grid: the build runs once per allocation */
    d.progress = 0;
    prox_ist *t = NULL;
    prox_bvh *bvh = torus ? prox_bvh_build(torus) : NULL;
    prox_boxes *bx = NULL;
    prox_boxes_def bd = prox_boxes_def_default();
    FILE *f = fopen(xyz_path, "w");
    int rc = f && torus && box && bvh && prox_ist_build(torus, &d, &t, err, sizeof err) == 0 &&
                     prox_boxes_build(box, &bd, &bx, err, sizeof err) == 0 && prox_ist_save(t, ist_path, err, sizeof err) == 0 &&
                     prox_mesh_write_off(torus, off_path, err, sizeof err) == 0
                 ? 0
                 : -1;
    if (f) {
        fputs("0.005 0.005 0.005\n0.055 0.005 0.005\n0.055 0.035 0.045\n", f);
        rc = fclose(f) != 0 ? -1 : rc;
    }
    if (rc == 0) {
        prox_ist_stats st;
        prox_ist_get_stats(t, &st);
        ref_spheres = st.spheres;
        prox_boxes_get_stats(bx, &ref_boxes_stats);
        rc = query_pair(prox_ist_tree(t), prox_ist_tree(t), 1, 0, &ref_ist) | query_pair(prox_bvh_tree(bvh), prox_bvh_tree(bvh), 0, 0, &ref_bvh) |
             query_pair(prox_boxes_tree(bx), prox_boxes_tree(bx), 0, 1, &ref_boxes);
    }
    if (!(rc == 0 && ref_ist.dist > 0 && ref_ist.vol > 0 && ref_bvh.dist > 0 && ref_boxes.dist == 0 && ref_boxes.vol == 1)) {
        fprintf(stderr, "references: distance %g, volume %g, BVH %g, boxes %g, %g (%s)\n", ref_ist.dist, ref_ist.vol, ref_bvh.dist,
                ref_boxes.dist, ref_boxes.vol, err);
        rc = -1;
    }
    prox_mesh_free(torus), prox_mesh_free(box), prox_bvh_free(bvh), prox_boxes_free(bx);
    ref_owner = t;
    return rc;
}

static void teardown(void)
{
    prox_ist_free(ref_owner);
    prox_bank_destroy(bank);
    const char *files[] = {ist_path, off_path, vox_path, xyz_path};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], PROX_LOADER_FLAG)) /* op_mesh_load_apart's child */
        return prox_loader_main(argc, argv);
    if (setup() != 0) {
        fprintf(stderr, "setup failed\n");
        teardown();
        return 1;
    }
    RUN_TEST(test_meshes);
    RUN_TEST(test_trees);
    RUN_TEST(test_service);
    teardown();
    return check_summary(argv[0]);
}
