/* test_rt_loop.c - the service with the sim device for a few seconds:
 * forces within limits and rate limits, no telemetry lost, the tool does
 * not tunnel, NaN and stalls zero the output, and (plain builds) no
 * allocation on the RT thread. Also runs under TSan. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dev_device.h"
#include "prox.h"
#include "check_prox.h"
#include "rt_service.h"

/* count the allocator's calls made on the thread named "hapticd-rt" (the
 * service names its loop thread before the loop) */
static _Thread_local int tls_is_rt = -1;
static int on_rt_thread(void)
{
    if (tls_is_rt < 0) {
        char name[32] = "";
        prctl(PR_GET_NAME, name, 0, 0, 0);
        if (!strcmp(name, "hapticd-rt"))
            tls_is_rt = 1;
        else if (name[0])
            return 0; /* named otherwise; may still be renamed, so do not cache */
    }
    return tls_is_rt == 1;
}
#define CHECK_ALLOC_WHEN() on_rt_thread()
#include "check_alloc.h"

typedef struct watch {
    pthread_mutex_t lock;
    long n;
    double max_force, max_step;
    double min_tool_z;
    prox_vec3 last_f;
    int have_last;
    long faults, zero_after_fault;
    long contacts;
    double max_penvol;
    /* records whose cycle began after mark_s (service time): the largest
     * force, faults, contact cycles with a force */
    double mark_s, max_force_after;
    long faults_after, pushing_after;
} watch;

static void on_tel(const rt_telemetry *t, void *user)
{
    watch *w = user;
    pthread_mutex_lock(&w->lock);
    double f = prox_v3_len(t->force_n);
    if (f > w->max_force)
        w->max_force = f;
    /* safety zeroing (faults) may drop the force at once; every other
     * change obeys the rate limit */
    if (w->have_last && !(t->flags & RT_TEL_FAULT) && !(f == 0.0)) {
        double step = prox_v3_dist(t->force_n, w->last_f);
        if (step > w->max_step)
            w->max_step = step;
    }
    w->last_f = t->force_n;
    w->have_last = 1;
    if (t->tool_pos.z < w->min_tool_z)
        w->min_tool_z = t->tool_pos.z;
    if (t->flags & RT_TEL_FAULT) {
        w->faults++;
        if (f == 0)
            w->zero_after_fault++;
    }
    if (t->flags & RT_TEL_CONTACT)
        w->contacts++;
    if (t->penvol_m3 > w->max_penvol)
        w->max_penvol = t->penvol_m3;
    if (t->time_s > w->mark_s) {
        if (f > w->max_force_after)
            w->max_force_after = f;
        w->faults_after += (t->flags & RT_TEL_FAULT) != 0;
        w->pushing_after += (t->flags & RT_TEL_CONTACT) && f > 0.5;
    }
    w->n++;
    pthread_mutex_unlock(&w->lock);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static int add(rt_service *svc, const char *name, prox_mesh *m, prox_vec3 at, char *err)
{
    rt_object o;
    if (rt_object_from_mesh(m, RT_IST_SPHERES, &o, err, 256))
        return -1;
    prox_xform x = prox_xform_from_pose(at, prox_quat_identity());
    if (rt_service_add_object(svc, name, &o, &x, err, 256) != 0) {
        rt_object_free(&o); /* refused: still ours */
        return -1;
    }
    return 0;
}

/* a service on the null device (a device at the origin), not started,
 * with cfg's changes made by the caller; NULL (a failed check) if it
 * cannot be had */
static rt_service *null_service(const rt_config *cfg, dev_device **dev)
{
    char err[256] = "";
    *dev = dev_null_open(err, sizeof err);
    rt_service *svc = *dev ? rt_service_create(cfg, *dev, err, sizeof err) : NULL;
    CHECK(svc != NULL, "service: %s", err);
    if (!svc && *dev)
        dev_close(*dev), *dev = NULL;
    return svc;
}

/* the scene's refusals: a name in use (before any build: a missing file
 * is not even opened), a full scene; a removed object's slot is free again */
static void test_scene_refusals(void)
{
    char err[256] = "";
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    cfg.max_objects = 2;
    dev_device *dev;
    rt_service *svc = null_service(&cfg, &dev);
    if (!svc)
        return;
    CHECK(add(svc, "a", prox_mesh_make_box(prox_v3(0.1, 0.1, 0.1)), prox_v3(0, 0, 0), err) == 0, "a: %s", err);
    CHECK(add(svc, "b", prox_mesh_make_box(prox_v3(0.1, 0.1, 0.1)), prox_v3(1, 0, 0), err) == 0, "b: %s", err);
    rt_object o;
    const int made = rt_object_from_mesh(prox_mesh_make_box(prox_v3(0.1, 0.1, 0.1)), RT_IST_SPHERES, &o, err, sizeof err) == 0;
    CHECK(made, "c: %s", err);
    if (!made) {
        rt_service_destroy(svc);
        dev_close(dev);
        return;
    }
    CHECK(rt_service_add_object(svc, "c", &o, NULL, err, sizeof err) == -1 && strstr(err, "scene full (2 objects)"), "a third: '%s'", err);
    rt_object none = {0};
    CHECK(rt_service_add_object(svc, "d", &none, NULL, err, sizeof err) == -1 && strstr(err, "'d': no object to add (not built)"),
          "an object with no tree: '%s'", err);
    CHECK(rt_service_add_object(svc, "d", NULL, NULL, err, sizeof err) == -1 && strstr(err, "no object to add"), "no object: '%s'", err);
    CHECK(rt_service_add_object(svc, "a", &o, NULL, err, sizeof err) == -1 && strstr(err, "an object named 'a' exists; remove it first"),
          "a name in use: '%s'", err);
    CHECK(rt_service_load_object(svc, "a", "/nonexistent/mesh.off", NULL, 0, err, sizeof err) == -1 &&
              strstr(err, "an object named 'a' exists; remove it first"),
          "a name in use, loaded from a file: '%s' (the name is checked before the file is read)", err);
    CHECK(rt_service_remove_object(svc, "a", err, sizeof err) == 0, "remove a: %s", err);
    const int added = rt_service_add_object(svc, "c", &o, NULL, err, sizeof err) == 0;
    CHECK(added, "c in a's slot: %s", err);
    if (!added)
        rt_object_free(&o);
    rt_status st;
    rt_service_status(svc, &st);
    CHECK(st.object_count == 2, "%u objects", st.object_count);
    rt_service_destroy(svc);
    dev_close(dev);
}

static void free_boxes(void *p) { prox_boxes_free(p); }

/* an object of inner and outer boxes (a convex box), as the service holds
 * its objects (rt_objects.h has no loader for them); 0 or -1 */
static int boxes_object(prox_vec3 half, rt_object *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    prox_mesh *m = prox_mesh_make_box(half);
    prox_boxes_def d = prox_boxes_def_default();
    prox_boxes *b = NULL;
    int rc = m ? prox_boxes_build(m, &d, &b, err, errlen) : -1;
    prox_mesh_free(m);
    if (rc != 0)
        return -1;
    o->tree = prox_boxes_tree(b);
    o->owner = b;
    o->free_owner = free_boxes;
    o->type = PROX_TREE_BOXES;
    return 0;
}

/* a scene the loop could not measure is refused while it is built: an
 * object that the engine has no distance query for against the tool
 * (inner and outer boxes against anything but boxes), whether the object
 * comes after the tool or the tool after it; nothing changes (the scene,
 * the tool). A mesh BVH (an open mesh) beside an inner sphere tree is
 * measured (either one the tool), and so is a voxel map beside either. */
static void test_unmeasurable_refused(void)
{
    char err[512] = "";
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    cfg.max_objects = 5;
    dev_device *dev;
    rt_service *svc = null_service(&cfg, &dev);
    if (!svc)
        return;
    CHECK(add(svc, "ball", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0.1), err) == 0, "ball: %s", err);
    CHECK(rt_service_set_tool(svc, "ball", err, sizeof err) == 0, "tool ball: %s", err);
    rt_object slab, brick;
    const int made = rt_object_from_mesh(prox_mesh_make_box(prox_v3(0.2, 0.2, 0.01)), 0, &slab, err, sizeof err) == 0;
    CHECK(made && slab.type == PROX_TREE_MESH, "a BVH slab: %s", err);
    const int made_brick = boxes_object(prox_v3(0.05, 0.05, 0.05), &brick, err, sizeof err) == 0;
    CHECK(made_brick, "a brick of boxes: %s", err);
    if (!made || !made_brick) {
        if (made)
            rt_object_free(&slab);
        if (made_brick)
            rt_object_free(&brick);
        rt_service_destroy(svc);
        dev_close(dev);
        return;
    }
    CHECK(rt_service_add_object(svc, "slab", &slab, NULL, err, sizeof err) == 0 && slab.tree == NULL,
          "a BVH beside an inner sphere tree tool is taken: '%s'", err);
    CHECK(rt_service_add_object(svc, "brick", &brick, NULL, err, sizeof err) == -1 &&
              strstr(err, "the loop cannot measure 'brick' (inner and outer boxes) against the tool 'ball' (an inner sphere tree)") &&
              strstr(err, "no distance query for that pair") && !strstr(err, "mesh") && brick.tree != NULL,
          "boxes beside an inner sphere tree tool: '%s' (the object stays the caller's)", err);
    rt_status st;
    rt_service_status(svc, &st);
    CHECK(st.object_count == 2 && !strcmp(st.tool, "ball"), "ball and slab: %u objects, tool '%s'", st.object_count, st.tool);
    /* the BVH as the tool beside the sphere tree: taken; the boxes: refused the other way round too */
    CHECK(rt_service_set_tool(svc, "slab", err, sizeof err) == 0, "a BVH tool beside an inner sphere tree: '%s'", err);
    CHECK(rt_service_add_object(svc, "brick", &brick, NULL, err, sizeof err) == -1 &&
              strstr(err, "the loop cannot measure 'brick' (inner and outer boxes) against the tool 'slab' (a mesh BVH)") &&
              strstr(err, "(a mesh that is not closed loads as a mesh BVH)"),
          "boxes beside a BVH tool: '%s'", err);
    /* with no tool the boxes are taken; then neither may become the tool beside them, nor they the tool */
    CHECK(rt_service_remove_object(svc, "slab", err, sizeof err) == 0, "remove slab: %s", err);
    CHECK(add(svc, "ball2", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0.3), err) == 0, "ball2: %s", err);
    CHECK(rt_service_add_object(svc, "brick", &brick, NULL, err, sizeof err) == 0, "the brick with no tool: %s", err);
    if (brick.tree)
        rt_object_free(&brick);
    CHECK(rt_service_set_tool(svc, "ball2", err, sizeof err) == -1 &&
              strstr(err, "the loop cannot measure 'brick' (inner and outer boxes) against the tool 'ball2' (an inner sphere tree)"),
          "a sphere tree tool beside the boxes: '%s'", err);
    CHECK(rt_service_set_tool(svc, "brick", err, sizeof err) == -1 && strstr(err, "against the tool 'brick' (inner and outer boxes)"),
          "the boxes as the tool beside sphere trees: '%s'", err);
    rt_service_status(svc, &st);
    CHECK(st.tool[0] == 0, "no tool taken: '%s'", st.tool);
    /* measurable: a voxel map beside a sphere tree tool */
    CHECK(rt_service_remove_object(svc, "brick", err, sizeof err) == 0, "remove brick: %s", err);
    CHECK(rt_service_set_tool(svc, "ball2", err, sizeof err) == 0, "the sphere tree tool: %s", err);
    prox_voxmap_def vd = {0.01, {0, 0, 0}, {8, 8, 8}, 0};
    prox_voxmap *vm = prox_voxmap_create(&vd, err, sizeof err);
    CHECK(vm != NULL, "map: %s", err);
    if (vm) {
        rt_object vo;
        rt_object_from_voxmap(vm, &vo);
        const int added = rt_service_add_object(svc, "map", &vo, NULL, err, sizeof err) == 0;
        CHECK(added, "a voxel map: %s", err);
        if (!added)
            rt_object_free(&vo);
    }
    rt_service_status(svc, &st);
    CHECK(st.object_count == 3 && !strcmp(st.tool, "ball2"), "ball, ball2 and map, tool ball2: %u objects, tool '%s'", st.object_count,
          st.tool);
    /* and a BVH as the tool beside the map (and the sphere trees) */
    rt_object slab2;
    const int made2 = rt_object_from_mesh(prox_mesh_make_box(prox_v3(0.2, 0.2, 0.01)), 0, &slab2, err, sizeof err) == 0;
    CHECK(made2 && slab2.type == PROX_TREE_MESH, "a second BVH slab: %s", err);
    if (made2) {
        CHECK(rt_service_add_object(svc, "slab2", &slab2, NULL, err, sizeof err) == 0, "the slab beside the sphere tree tool: %s", err);
        if (slab2.tree)
            rt_object_free(&slab2);
        CHECK(rt_service_set_tool(svc, "slab2", err, sizeof err) == 0, "the BVH tool beside a voxel map and sphere trees: %s", err);
        rt_service_status(svc, &st);
        CHECK(st.object_count == 4 && !strcmp(st.tool, "slab2"), "4 objects, tool slab2: %u objects, tool '%s'", st.object_count, st.tool);
    }
    if (slab.tree) /* (not taken: a failed check above) */
        rt_object_free(&slab);
    rt_service_destroy(svc);
    dev_close(dev);
}

/* a full command queue: a command that finds no room is refused with a
 * message that says so and counted; none that was taken is lost (the
 * last pose taken is the one the loop holds) */
static void test_command_queue_full(void)
{
    char err[256] = "";
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    cfg.cpu_latency_us = -1;
    cfg.cmd_ring_capacity = 4;
    cfg.max_cmds_per_cycle = 2;
    dev_device *dev;
    rt_service *svc = null_service(&cfg, &dev);
    if (!svc)
        return;
    /* the tool, a 2 cm ball, at the null device's origin; the box far off */
    CHECK(add(svc, "box", prox_mesh_make_box(prox_v3(0.1, 0.1, 0.1)), prox_v3(2, 0, 0), err) == 0, "box: %s", err);
    CHECK(add(svc, "tool", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0), err) == 0, "tool: %s", err);
    CHECK(rt_service_set_tool(svc, "tool", err, sizeof err) == 0, "tool: %s", err);
    CHECK(rt_service_start(svc, err, sizeof err) == 0, "start: %s", err);
    /* far faster than 2 commands a millisecond, every pose away from the tool */
    int taken = 0, refused = 0, other = 0;
    for (int i = 0; i < 2000; i++) {
        prox_xform x = prox_xform_from_pose(prox_v3(1 + 0.001 * i, 0, 0), prox_quat_identity());
        if (rt_service_set_pose(svc, "box", &x, err, sizeof err) == 0)
            taken++;
        else if (strstr(err, "command queue full (4 commands); try again"))
            refused++;
        else
            other++;
    }
    CHECK(refused > 0 && other == 0 && taken + refused == 2000, "%d taken, %d refused as full, %d other refusals (%s)", taken, refused, other,
          err);
    /* the last pose, tried again until there is room: the box's face 3 mm
     * from the ball, which the loop then measures (the margin is 5 mm) */
    prox_xform last = prox_xform_from_pose(prox_v3(0.123, 0, 0), prox_quat_identity());
    int tries = 0;
    while (rt_service_set_pose(svc, "box", &last, err, sizeof err) != 0 && tries++ < 1000)
        usleep(1000);
    rt_status st;
    for (int w = 0; w < 200; w++) { /* (the loop drains the queue at 2 a cycle) */
        usleep(5000);
        rt_service_status(svc, &st);
        if (st.distance_m >= 0)
            break;
    }
    CHECK(st.distance_m >= 0.0029 && st.distance_m <= 0.0036, "distance %g after the last pose: its face 3 mm from the ball", st.distance_m);
    CHECK(st.cmd_drops == (uint64_t)(refused + tries), "the status counts %llu command drops, %d refused", (unsigned long long)st.cmd_drops,
          refused + tries);
    /* forces off takes no queue room: taken with the queue full (a pose
     * just refused as full), where forces on is refused like any command */
    int off_refused = 0, on_refused = 0;
    for (int i = 0; i < 200 && !on_refused; i++) {
        while (rt_service_set_pose(svc, "box", &last, err, sizeof err) == 0) {
        }
        off_refused += rt_service_enable_forces(svc, 0, err, sizeof err) != 0;
        on_refused = rt_service_enable_forces(svc, 1, err, sizeof err) != 0 && strstr(err, "command queue full");
    }
    CHECK(off_refused == 0 && on_refused, "the queue full: forces off refused %d times, forces on refused %d", off_refused, on_refused);
    rt_service_stop(svc);
    rt_service_destroy(svc);
    dev_close(dev);
}

static void test_loop_with_sim_device(void)
{
    char err[256];
    dev_sim_def sd = dev_sim_def_default();
    sd.start = prox_v3(0, 0, 0.10);
    sd.amplitude = prox_v3(0, 0, -0.14); /* the hand pushes 4 cm into the floor's top */
    sd.frequency_hz = 0.5;
    dev_device *dev = dev_sim_open(&sd, err, sizeof err);
    CHECK(dev != NULL, "sim device: %s", err);
    rt_config cfg = rt_config_default();
    cfg.priority = 0; /* the test must pass without privileges */
    cfg.limits.max_force_n = 6.0;
    cfg.limits.max_force_rate_n_per_cycle = 0.3;
    cfg.limits.ramp_s = 0.05;
    rt_service *svc = rt_service_create(&cfg, dev, err, sizeof err);
    CHECK(svc != NULL, "service: %s", err);
    /* floor top at z = 0; the tool is a 2 cm ball */
    CHECK(add(svc, "floor", prox_mesh_make_box(prox_v3(0.2, 0.2, 0.03)), prox_v3(0, 0, -0.03), err) == 0, "floor: %s", err);
    CHECK(add(svc, "tool", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0.1), err) == 0, "tool: %s", err);
    CHECK(rt_service_set_tool(svc, "tool", err, sizeof err) == 0, "tool: %s", err);
    /* a voxel map beside the floor, updated while the loop runs */
    prox_voxmap_def vd = {0.01, prox_v3(0.25, -0.05, -0.05), {16, 16, 16}, 4096};
    prox_voxmap *vm = prox_voxmap_create(&vd, err, sizeof err);
    rt_object vo;
    rt_object_from_voxmap(vm, &vo);
    CHECK(rt_service_add_object(svc, "map", &vo, NULL, err, sizeof err) == 0, "voxel map: %s", err);
    watch w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.lock, NULL);
    w.min_tool_z = INFINITY;
    rt_service_add_telemetry_listener(svc, on_tel, &w);
    CHECK(rt_service_start(svc, err, sizeof err) == 0, "start: %s", err);
    sleep_s(0.5); /* warm-up: the first cycles may fault the pages of lazily bound code */
#ifdef CHECK_ALLOC_ON
    long a0 = atomic_load(&check_alloc_calls);
#endif
    rt_voxel_update vu[256];
    for (int i = 0; i < 256; i++)
        vu[i] = (rt_voxel_update){i % 16, (i / 16) % 16, 3, i % 5 == 0 ? RT_VOXEL_FREE : 1u};
    CHECK(rt_service_voxel_update(svc, "map", vu, 256, err, sizeof err) == 256, "voxel updates queued: %s", err);
    rt_voxel_update badv = {99, 0, 0, 1};
    CHECK(rt_service_voxel_update(svc, "map", &badv, 1, err, sizeof err) == -1 && strstr(err, "outside"), "bad cell: %s", err);
    sleep_s(2.5);
#ifdef CHECK_ALLOC_ON
    long a1 = atomic_load(&check_alloc_calls);
    CHECK(a1 == a0, "the RT thread allocated %ld times in steady state", a1 - a0);
#endif
    /* a NaN from the device zeroes the output within one cycle */
    dev_sim_inject_nan(dev);
    sleep_s(0.05);
    pthread_mutex_lock(&w.lock);
    long faults = w.faults, zeroed = w.zero_after_fault;
    pthread_mutex_unlock(&w.lock);
    CHECK(faults >= 1 && zeroed == faults, "NaN reading: %ld faults, %ld with zero force", faults, zeroed);
    {
        rt_status fs;
        rt_service_status(svc, &fs);
        CHECK(fs.faults >= 1 && fs.faults_by_cause[RT_FAULT_DEVICE_STATE] == fs.faults && fs.last_fault_cause == RT_FAULT_DEVICE_STATE &&
                  !strcmp(rt_fault_name(fs.last_fault_cause), "device_state"),
              "the NaN reading's faults are counted as the device's state: %llu of %llu, last '%s'",
              (unsigned long long)fs.faults_by_cause[RT_FAULT_DEVICE_STATE], (unsigned long long)fs.faults,
              rt_fault_name(fs.last_fault_cause));
    }
    /* a stalled loop: the watchdog zeroes the device */
    sleep_s(0.3);
    rt_service_test_stall(svc, 200);
    sleep_s(0.15);
    prox_vec3 f_stalled = dev_sim_last_force(dev);
    sleep_s(0.2);
    rt_status st;
    rt_service_status(svc, &st);
    CHECK(st.watchdog_fired >= 1, "watchdog fired %llu times", (unsigned long long)st.watchdog_fired);
    CHECK(prox_v3_len(f_stalled) == 0, "output zero during the stall (%g N)", prox_v3_len(f_stalled));
    rt_service_stop(svc);
    prox_vec3 f_end = dev_sim_last_force(dev);
    CHECK(prox_v3_len(f_end) == 0, "zero output after shutdown");
    rt_service_status(svc, &st);
    uint32_t cells = prox_voxmap_count(vm, PROX_CLASS_ALL);
    CHECK(cells == 256 - 52, "the RT thread applied the voxel updates (%u cells)", cells);
    pthread_mutex_lock(&w.lock);
    CHECK(st.cycles > 2000, "cycles %llu", (unsigned long long)st.cycles);
    CHECK(st.uptime_s > 1 && st.rate_hz > 0 && st.rate_hz <= 1000 * 1.02,
          "final statistics keep the run's length and rate after the stop (%.2f s, %.1f Hz)", st.uptime_s, st.rate_hz);
    CHECK(st.telemetry_drops == 0 && st.telemetry_gaps == 0 && (uint64_t)w.n == st.cycles,
          "telemetry: %ld records for %llu cycles, %llu drops, %llu gaps", w.n, (unsigned long long)st.cycles,
          (unsigned long long)st.telemetry_drops, (unsigned long long)st.telemetry_gaps);
    CHECK(w.max_force <= 6.0 + 1e-9, "force limit: max %g N", w.max_force);
    CHECK(w.max_step <= 0.3 + 1e-9, "rate limit: largest step %g N", w.max_step);
    CHECK(w.contacts > 100, "the tool touched the floor (%ld contact cycles)", w.contacts);
    /* no tunnelling: the user pushes with up to 12 N against a 6 N device,
     * and the 6 cm slab holds the tool (r 2 cm): its centre never gets
     * below the slab's bottom face (on an idle machine it stays within a
     * few millimetres of the top; see the depth printed below) */
    /* Under the sanitizers every query runs several times slower and blows
     * the 300 us budget, so the rendered stiffness is not the real one: the
     * physical check belongs to the plain build (the sanitizer runs are
     * there for memory and race errors). */
    if (!getenv("HAPTICD_SANITIZED"))
        CHECK(w.min_tool_z > -0.06, "the tool never went through the slab (min z %g)", w.min_tool_z);
    fprintf(stderr, "    %llu cycles, max force %.3f N, min tool z %.4f m, max penvol %.3g m3, wake p99 %.0f us, overruns %llu\n",
            (unsigned long long)st.cycles, w.max_force, w.min_tool_z, w.max_penvol, st.latency_p99_us,
            (unsigned long long)st.overruns);
    pthread_mutex_unlock(&w.lock);
    rt_service_destroy(svc);
    dev_close(dev);
}

/* From now on (service time, plus a cycle's margin), the watcher's
 * "after" counters start over. */
static void watch_mark(watch *w, rt_service *svc)
{
    rt_status st;
    rt_service_status(svc, &st);
    pthread_mutex_lock(&w->lock);
    w->mark_s = st.uptime_s + 0.002;
    w->max_force_after = 0;
    w->faults_after = w->pushing_after = 0;
    pthread_mutex_unlock(&w->lock);
}

/* The sim hand pushes a 2 cm ball tool into a floor slab (as in
 * test_loop_with_sim_device); the service runs, its watcher registered. */
static rt_service *contact_scene(dev_device **dev, watch *w, char *err)
{
    dev_sim_def sd = dev_sim_def_default();
    sd.start = prox_v3(0, 0, 0.02);
    sd.amplitude = prox_v3(0, 0, -0.06);
    sd.frequency_hz = 0.5;
    *dev = dev_sim_open(&sd, err, 256);
    if (!*dev)
        return NULL;
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    cfg.limits.max_force_n = 6.0;
    cfg.limits.ramp_s = 0.05;
    rt_service *svc = rt_service_create(&cfg, *dev, err, 256);
    if (!svc)
        return NULL;
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->lock, NULL);
    w->min_tool_z = INFINITY;
    w->mark_s = 1e30;
    if (add(svc, "floor", prox_mesh_make_box(prox_v3(0.2, 0.2, 0.03)), prox_v3(0, 0, -0.03), err) ||
        add(svc, "tool", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0.1), err) || rt_service_set_tool(svc, "tool", err, 256) ||
        rt_service_add_telemetry_listener(svc, on_tel, w) || rt_service_start(svc, err, 256)) {
        rt_service_destroy(svc);
        return NULL;
    }
    return svc;
}

/* the force once the scene's hand pushes with `want` newtons (polled
 * every 10 ms, 3 s at most): what it last read */
static double wait_pushing(rt_service *svc, double want)
{
    double f = 0;
    for (int i = 0; i < 300 && f < want; i++) {
        sleep_s(0.01);
        rt_status st;
        rt_service_status(svc, &st);
        f = prox_v3_len(st.force_n);
    }
    return f;
}

/* Lowering the force limit while pushing: the output obeys the new limit
 * from the next cycle on, however slow the rate limit (the rate limit
 * once stepped down from the old force, 1e-6 N a cycle). */
static void test_lower_force_limit(void)
{
    char err[256];
    dev_device *dev = NULL;
    watch w;
    rt_service *svc = contact_scene(&dev, &w, err);
    CHECK(svc != NULL, "scene: %s", err);
    if (!svc)
        return;
    const double f = wait_pushing(svc, 3.0);
    CHECK(f >= 3.0, "pushing with %g N", f);
    rt_limits l = rt_config_default().limits;
    l.max_force_n = 1.0;
    l.max_force_rate_n_per_cycle = 1e-6;
    CHECK(rt_service_set_limits(svc, &l, err, sizeof err) == 0, "limits: %s", err);
    watch_mark(&w, svc);
    sleep_s(0.4);
    pthread_mutex_lock(&w.lock);
    CHECK(w.max_force_after <= 1.0 + 1e-9 && w.pushing_after > 50, "after the lower limit: max %g N over %ld pushing cycles",
          w.max_force_after, w.pushing_after);
    pthread_mutex_unlock(&w.lock);
    l.max_force_n = 0;
    CHECK(rt_service_set_limits(svc, &l, err, sizeof err) == 0, "limits: %s", err);
    watch_mark(&w, svc);
    sleep_s(0.2);
    pthread_mutex_lock(&w.lock);
    CHECK(w.max_force_after == 0, "a limit of 0 N: max %g N", w.max_force_after);
    pthread_mutex_unlock(&w.lock);
    rt_service_destroy(svc);
    dev_close(dev);
}

/* Forces off never waits and is never overtaken: after forces on then
 * off in quick succession (500 times: the ons queued, some 8 cycles' worth
 * at 64 commands a cycle, the offs not) the output is zero from the third
 * cycle on, while the queued ons are still being taken; after off then on,
 * the force comes back */
static void test_forces_off_first(void)
{
    char err[256];
    dev_device *dev = NULL;
    watch w;
    rt_service *svc = contact_scene(&dev, &w, err);
    CHECK(svc != NULL, "scene: %s", err);
    if (!svc)
        return;
    const double f = wait_pushing(svc, 1.0);
    CHECK(f >= 1.0, "pushing with %g N", f);
    int refused = 0;
    for (int i = 0; i < 500; i++) {
        refused += rt_service_enable_forces(svc, 1, err, sizeof err) != 0;
        refused += rt_service_enable_forces(svc, 0, err, sizeof err) != 0;
    }
    watch_mark(&w, svc); /* (from 2 ms on) */
    rt_status st;
    rt_service_status(svc, &st);
    CHECK(refused == 0 && !st.forces_enabled, "on then off: %d refused, the status says enabled %d", refused, st.forces_enabled);
    sleep_s(0.2);
    pthread_mutex_lock(&w.lock);
    CHECK(w.max_force_after == 0, "on then off: %g N after", w.max_force_after);
    pthread_mutex_unlock(&w.lock);
    /* off then on: on (the ramp brings the force back) */
    CHECK(rt_service_enable_forces(svc, 0, err, sizeof err) == 0 && rt_service_enable_forces(svc, 1, err, sizeof err) == 0,
          "off, on: %s", err);
    rt_service_status(svc, &st);
    CHECK(st.forces_enabled, "off then on: the status says disabled");
    watch_mark(&w, svc);
    sleep_s(0.3);
    pthread_mutex_lock(&w.lock);
    CHECK(w.max_force_after >= 1.0, "off then on: %g N after", w.max_force_after);
    pthread_mutex_unlock(&w.lock);
    rt_service_destroy(svc);
    dev_close(dev);
}

/* A volume stiffness the proxy integration cannot hold (finite, so the
 * gains are accepted) flings the proxy: a fault with zero output, not a
 * proxy lost at 1e293 m rendering nothing; with sane gains again the tool
 * pushes back as before. Coupling gains above the device's stable ones
 * are refused. */
static void test_proxy_flung(void)
{
    char err[256];
    dev_device *dev = NULL;
    watch w;
    rt_service *svc = contact_scene(&dev, &w, err);
    CHECK(svc != NULL, "scene: %s", err);
    if (!svc)
        return;
    rt_gains g = rt_config_default().gains;
    rt_gains bad = g;
    bad.coupling_k_n_per_m = 1e6;
    CHECK(rt_service_set_gains(svc, &bad, err, sizeof err) == -1 && strstr(err, "stable"), "stiff coupling refused: %s", err);
    bad = g;
    bad.coupling_b_n_s_per_m = 1e4;
    CHECK(rt_service_set_gains(svc, &bad, err, sizeof err) == -1 && strstr(err, "damping"), "heavy damping refused: %s", err);
    sleep_s(0.6); /* the hand reaches the floor */
    bad = g;
    bad.stiffness_n_per_m3 = 1e300;
    watch_mark(&w, svc);
    CHECK(rt_service_set_gains(svc, &bad, err, sizeof err) == 0, "huge volume stiffness accepted: %s", err);
    sleep_s(1.0);
    pthread_mutex_lock(&w.lock);
    long faults = w.faults_after;
    pthread_mutex_unlock(&w.lock);
    CHECK(faults > 0, "the flung proxy is a fault (%ld fault cycles)", faults);
    rt_status fs;
    rt_service_status(svc, &fs);
    CHECK(fs.faults_by_cause[RT_FAULT_PROXY] > 0 && fs.last_fault_cause == RT_FAULT_PROXY && fs.faults_by_cause[RT_FAULT_UNMEASURABLE] == 0,
          "the faults are counted as the proxy's: %llu of %llu, last '%s'", (unsigned long long)fs.faults_by_cause[RT_FAULT_PROXY],
          (unsigned long long)fs.faults, rt_fault_name(fs.last_fault_cause));
    CHECK(rt_service_set_gains(svc, &g, err, sizeof err) == 0, "gains back: %s", err);
    sleep_s(0.05);
    watch_mark(&w, svc);
    sleep_s(2.0); /* a full period of the hand */
    pthread_mutex_lock(&w.lock);
    CHECK(w.pushing_after > 100 && w.faults_after == 0, "the tool pushes back again: %ld pushing cycles, %ld faults",
          w.pushing_after, w.faults_after);
    CHECK(w.zero_after_fault == w.faults, "every fault cycle had zero output (%ld of %ld)", w.zero_after_fault, w.faults);
    pthread_mutex_unlock(&w.lock);
    rt_service_destroy(svc);
    dev_close(dev);
}

/* At a low loop rate the proxy still follows the handle in free space:
 * the coupling integrated over a whole 50 ms period diverged (the proxy
 * flew off, a fault every few cycles); it is integrated in 1 ms steps. */
static void test_low_rate_coupling(void)
{
    char err[256];
    dev_device *dev = dev_sim_open(NULL, err, sizeof err); /* the hand moves 25 cm up and down */
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    cfg.rate_hz = 20;
    rt_service *svc = rt_service_create(&cfg, dev, err, sizeof err);
    CHECK(svc != NULL, "service: %s", err);
    watch w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.lock, NULL);
    w.min_tool_z = INFINITY;
    w.mark_s = 0;
    CHECK(add(svc, "tool", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0.1), err) == 0 && rt_service_set_tool(svc, "tool", err, sizeof err) == 0,
          "tool: %s", err);
    CHECK(rt_service_add_telemetry_listener(svc, on_tel, &w) == 0 && rt_service_start(svc, err, sizeof err) == 0, "start: %s", err);
    sleep_s(2.0);
    rt_service_stop(svc);
    pthread_mutex_lock(&w.lock);
    CHECK(w.n >= 20 && w.faults == 0, "20 Hz, free space: %ld faults in %ld cycles", w.faults, w.n);
    CHECK(w.min_tool_z > -0.2, "the proxy stayed with the handle (lowest z %g m)", w.min_tool_z);
    pthread_mutex_unlock(&w.lock);
    rt_service_destroy(svc);
    dev_close(dev);
}

static prox_voxmap *small_map(char *err)
{
    prox_voxmap_def vd = {0.01, prox_v3(0.5, 0, 0), {16, 16, 16}, 8192};
    return prox_voxmap_create(&vd, err, 256);
}

/* Voxel updates still queued when their map is removed never reach the
 * object that takes the slot next (they once did: a new voxel map got
 * them, an inner sphere tree was written through as if it were a map);
 * a full voxel queue counts every update it could not take; the loop
 * spends at most voxel_budget_us a cycle on updates, the rest wait. */
static void test_voxel_queue(void)
{
    char err[256];
    dev_device *dev = dev_null_open(err, sizeof err);
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    cfg.rate_hz = 20;
    cfg.max_voxels_per_cycle = 8;
    cfg.voxel_ring_capacity = 1024;
    rt_service *svc = rt_service_create(&cfg, dev, err, sizeof err);
    CHECK(svc != NULL, "service: %s", err);
    prox_voxmap *vm1 = small_map(err);
    rt_object o1;
    rt_object_from_voxmap(vm1, &o1);
    CHECK(rt_service_add_object(svc, "map", &o1, NULL, err, sizeof err) == 0, "map: %s", err);
    CHECK(rt_service_start(svc, err, sizeof err) == 0, "start: %s", err);
    rt_voxel_update vu[3000];
    for (int i = 0; i < 3000; i++)
        vu[i] = (rt_voxel_update){i % 16, (i / 16) % 16, (i / 256) % 16, 1u};
    int queued = rt_service_voxel_update(svc, "map", vu, 3000, err, sizeof err);
    rt_status st;
    rt_service_status(svc, &st);
    CHECK(queued >= 1000 && queued <= 1024 && st.voxel_drops == (uint64_t)(3000 - queued),
          "a full voxel queue: %d queued, %llu drops (one per update)", queued, (unsigned long long)st.voxel_drops);
    CHECK(rt_service_remove_object(svc, "map", err, sizeof err) == 0, "remove: %s", err);
    sleep_s(0.3); /* the loop lets go of the slot */
    prox_voxmap *vm2 = small_map(err);
    rt_object o2;
    rt_object_from_voxmap(vm2, &o2);
    CHECK(rt_service_add_object(svc, "map2", &o2, NULL, err, sizeof err) == 0, "map2: %s", err);
    sleep_s(0.5); /* ten cycles: 80 updates would have been drained */
    CHECK(prox_voxmap_count(vm2, PROX_CLASS_ALL) == 0, "the new map in the slot got none of the old one's updates (%u cells)",
          prox_voxmap_count(vm2, PROX_CLASS_ALL));
    /* the same with an inner sphere tree taking the slot */
    queued = rt_service_voxel_update(svc, "map2", vu, 500, err, sizeof err);
    CHECK(queued > 0, "queued %d: %s", queued, err); /* behind what is left of the old map's */
    CHECK(rt_service_remove_object(svc, "map2", err, sizeof err) == 0, "remove: %s", err);
    sleep_s(0.3);
    CHECK(add(svc, "ball", prox_mesh_make_sphere(0.05, 2), prox_v3(0.6, 0, 0), err) == 0, "ball: %s", err);
    rt_service_status(svc, &st);
    uint64_t c0 = st.cycles;
    sleep_s(0.5);
    rt_service_status(svc, &st);
    CHECK(st.cycles >= c0 + 5, "the loop runs on (%llu cycles)", (unsigned long long)(st.cycles - c0));
    rt_service_stop(svc);
    rt_service_destroy(svc);
    dev_close(dev);

    /* time budget: at 100 Hz with 1 us for voxels a cycle applies 63
     * updates (a clock read every 64), however many are queued and
     * allowed by max_voxels_per_cycle; all arrive in the end */
    dev = dev_null_open(err, sizeof err);
    cfg = rt_config_default();
    cfg.priority = 0;
    cfg.rate_hz = 100;
    cfg.voxel_budget_us = 1;
    svc = rt_service_create(&cfg, dev, err, sizeof err);
    CHECK(svc != NULL, "service: %s", err);
    prox_voxmap_def vd = {0.01, prox_v3(0.5, 0, 0), {64, 64, 64}, 8192};
    prox_voxmap *vm3 = prox_voxmap_create(&vd, err, sizeof err);
    rt_object o3;
    rt_object_from_voxmap(vm3, &o3);
    CHECK(rt_service_add_object(svc, "big", &o3, NULL, err, sizeof err) == 0, "map: %s", err);
    CHECK(rt_service_start(svc, err, sizeof err) == 0, "start: %s", err);
    static rt_voxel_update many[4000];
    for (int i = 0; i < 4000; i++)
        many[i] = (rt_voxel_update){i % 64, (i / 64) % 64, i / 4096, 1u};
    CHECK(rt_service_voxel_update(svc, "big", many, 4000, err, sizeof err) == 4000, "queued: %s", err);
    sleep_s(0.1);
    rt_service_status(svc, &st);
    uint32_t early = st.voxel_queued;
    for (int i = 0; i < 400 && st.voxel_queued > 0; i++) {
        sleep_s(0.01);
        rt_service_status(svc, &st);
    }
    CHECK(early > 0, "the first cycles applied part of the queue (%u of 4000 still queued after 0.1 s)", early);
    CHECK(st.voxel_queued == 0, "the queue drained (%u left)", st.voxel_queued);
    rt_service_stop(svc); /* the map is the test's to read again */
    CHECK(prox_voxmap_count(vm3, PROX_CLASS_ALL) == 4000, "every update arrived (%u cells)", prox_voxmap_count(vm3, PROX_CLASS_ALL));
    rt_service_destroy(svc);
    dev_close(dev);
}

/* The watchdog keeps the limit given last (/limits), not the start-up one. */
static void test_watchdog_limit(void)
{
    char err[256];
    dev_device *dev = dev_null_open(err, sizeof err);
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    rt_service *svc = rt_service_create(&cfg, dev, err, sizeof err);
    CHECK(svc != NULL && rt_service_start(svc, err, sizeof err) == 0, "service: %s", err);
    /* a 200 ms stall under a 1000 ms watchdog, then under a 20 ms one:
     * fired 0 times, then once */
    const double limit_ms[2] = {1000, 20};
    for (int k = 0; k < 2; k++) {
        rt_limits l = cfg.limits;
        l.watchdog_ms = limit_ms[k];
        CHECK(rt_service_set_limits(svc, &l, err, sizeof err) == 0, "limits: %s", err);
        sleep_s(0.3);
        rt_service_test_stall(svc, 200);
        sleep_s(0.4);
        rt_status st;
        rt_service_status(svc, &st);
        CHECK(st.watchdog_fired == (uint64_t)k, "watchdog at %g ms, stall of 200 ms: fired %llu times in all", limit_ms[k],
              (unsigned long long)st.watchdog_fired);
    }
    rt_service_destroy(svc);
    dev_close(dev);
}

static void test_bad_control_input(void)
{
    char err[256];
    dev_device *dev = dev_null_open(err, sizeof err);
    rt_config cfg = rt_config_default();
    rt_service *svc = rt_service_create(&cfg, dev, err, sizeof err);
    CHECK(svc != NULL, "service");
    prox_xform bad = prox_xform_identity();
    bad.t.y = NAN;
    CHECK(rt_service_set_pose(svc, "nothing", &bad, err, sizeof err) == -1 && strstr(err, "not finite") && !strstr(err, "beyond") &&
              !strstr(err, "rotation"),
          "NaN pose: %s", err);
    /* beyond the engine's reach, or no rotation: refused here, not a fault
     * every cycle (the engine's bad_xform refuses both), each with its own
     * message */
    bad.t.y = 2 * PROX_MAX_TRANSLATION;
    CHECK(rt_service_set_pose(svc, "nothing", &bad, err, sizeof err) == -1 && strstr(err, "nothing: pose translates beyond") &&
              !strstr(err, "finite") && !strstr(err, "rotation"),
          "far pose: %s", err);
    const struct {
        double R[3][3];
        const char *says;
    } bad_R[] = {
        {{{3, 0, 0}, {0, 3, 0}, {0, 0, 3}}, "not a rotation"},  /* a scale */
        {{{1, 0, 0}, {0, 1, 0}, {0, 0, -1}}, "not a rotation"}, /* a mirror: orthonormal, det -1 */
        {{{1, 0, 0}, {0, NAN, 0}, {0, 0, 1}}, "not finite"},
    };
    for (size_t k = 0; k < sizeof bad_R / sizeof bad_R[0]; k++) {
        prox_xform r = prox_xform_identity();
        memcpy(r.R.m, bad_R[k].R, sizeof r.R.m);
        err[0] = 0;
        CHECK(rt_service_set_pose(svc, "nothing", &r, err, sizeof err) == -1 && strstr(err, bad_R[k].says), "R %zu: %s", k, err);
        rt_object o = {0};
        CHECK(rt_service_add_object(svc, "r", &o, &r, err, sizeof err) == -1 && strstr(err, "r: pose") && strstr(err, bad_R[k].says),
              "add, R %zu: %s", k, err);
    }
    /* a rotation passes the pose check (and then finds no such object),
     * one with rounding off 1e-9 as well */
    prox_xform turn = prox_xform_identity();
    turn.R.m[0][0] = 0, turn.R.m[0][1] = -1, turn.R.m[1][0] = 1, turn.R.m[1][1] = 0;
    CHECK(rt_service_set_pose(svc, "nothing", &turn, err, sizeof err) == -1 && strstr(err, "no object"), "turn: %s", err);
    turn.R.m[0][1] = -(1 + 1e-9), turn.R.m[2][2] = 1 - 1e-9;
    CHECK(rt_service_set_pose(svc, "nothing", &turn, err, sizeof err) == -1 && strstr(err, "no object"), "turn, off 1e-9: %s", err);
    CHECK(rt_service_set_tool(svc, "nothing", err, sizeof err) == -1 && strstr(err, "nothing"), "unknown: %s", err);
    CHECK(rt_service_set_budget_us(svc, 5000, err, sizeof err) == -1, "budget over the period refused");
    rt_gains g = cfg.gains;
    g.stiffness_n_per_m3 = -1;
    CHECK(rt_service_set_gains(svc, &g, err, sizeof err) == -1, "negative gain refused");
    CHECK(rt_service_load_object(svc, "x", "/nonexistent.obj", NULL, 0, err, sizeof err) == -1 && strstr(err, "nonexistent"),
          "missing file: %s", err);
    CHECK(rt_service_load_object(svc, "", "/nonexistent.obj", NULL, 0, err, sizeof err) == -1, "empty name refused");
    rt_voxel_update u = {0, 0, 0, 1};
    CHECK(rt_service_voxel_update(svc, "nothing", &u, 1, err, sizeof err) == -1, "voxels for an unknown map");
    /* watchdog and stale-device times above RT_LIMIT_MAX_MS (a watchdog of
     * 1.86e34 ms overflowed its nanosecond count: found by fuzzing /limits) */
    const double long_ms[] = {1.86e34, RT_LIMIT_MAX_MS * (1 + 1e-12), 1e300};
    for (int k = 0; k < 3; k++) {
        rt_limits l = cfg.limits;
        l.watchdog_ms = long_ms[k];
        CHECK(rt_service_set_limits(svc, &l, err, sizeof err) == -1 && strstr(err, "at most 10000 ms"), "watchdog %g ms: %s",
              long_ms[k], err);
        l = cfg.limits;
        l.stale_device_ms = long_ms[k];
        CHECK(rt_service_set_limits(svc, &l, err, sizeof err) == -1 && strstr(err, "at most 10000 ms"), "stale %g ms: %s",
              long_ms[k], err);
    }
    rt_limits l10 = cfg.limits;
    l10.watchdog_ms = l10.stale_device_ms = RT_LIMIT_MAX_MS;
    CHECK(rt_service_set_limits(svc, &l10, err, sizeof err) == 0, "10 s limits taken: %s", err);
    rt_config cfg_sph = cfg;
    cfg_sph.ist_spheres = 0;
    rt_service *svc_sph = rt_service_create(&cfg_sph, dev, err, sizeof err);
    CHECK(!svc_sph && strstr(err, "inner spheres an object"), "a configuration with no inner spheres an object refused: %s", err);
    if (svc_sph)
        rt_service_destroy(svc_sph);
    rt_config cfg_long = cfg;
    cfg_long.limits.watchdog_ms = 1e20;
    rt_service *svc_long = rt_service_create(&cfg_long, dev, err, sizeof err);
    CHECK(!svc_long && strstr(err, "at most 10000 ms"), "a configuration with a 1e20 ms watchdog refused: %s", err);
    if (svc_long)
        rt_service_destroy(svc_long);
    rt_service_destroy(svc);
    dev_close(dev);
}

/* the kernel's current CPU wake-up latency target (PM QoS), or -1 */
static long cpu_latency_now(void)
{
    int fd = open("/dev/cpu_dma_latency", O_RDONLY | O_CLOEXEC);
    int32_t v = -1;
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
            v = -1;
        close(fd);
    }
    return v;
}

/* While running, the service asks the kernel to wake CPUs from idle at
 * once (as cyclictest does for itself); where it may not (no such file,
 * not permitted) it runs anyway and says why. */
static void test_cpu_latency_request(void)
{
    char err[256];
    dev_device *dev = dev_null_open(err, sizeof err);
    rt_config cfg = rt_config_default();
    cfg.cpu_latency_us = -2;
    CHECK(rt_service_create(&cfg, dev, err, sizeof err) == NULL && strstr(err, "latency"), "CPU latency -2 refused: %s", err);
    const int may = access("/dev/cpu_dma_latency", W_OK) == 0;
    for (int ask = 0; ask < 2; ask++) {
        cfg = rt_config_default();
        cfg.priority = 0;
        cfg.cpu_latency_us = ask ? 0 : -1;
        rt_service *svc = rt_service_create(&cfg, dev, err, sizeof err);
        CHECK(svc && rt_service_start(svc, err, sizeof err) == 0, "start: %s", err);
        if (!svc)
            continue;
        rt_status st;
        rt_service_status(svc, &st);
        CHECK(st.cpu_latency_held == (ask && may), "asked %d, may %d: held %d", ask, may, st.cpu_latency_held);
        if (ask && may)
            CHECK(cpu_latency_now() == 0, "the kernel's target while running: %ld us", cpu_latency_now());
        if (ask && !may)
            CHECK(strstr(st.rt_note, "cpu_dma_latency") != NULL, "the note says why: %s", st.rt_note);
        rt_service_destroy(svc);
    }
    dev_close(dev);
}

static void test_replay_driver(void)
{
    char path[] = "/tmp/hapticd-replay-XXXXXX", err[256];
    FILE *f = fdopen(mkstemp(path), "w");
    fputs("# t x y z qw qx qy qz\n0 0 0 0 1 0 0 0\n0.2 0.1 0 0 1 0 0 0\n0.4 0.1 0.2 0 1 0 0 0\n", f);
    fclose(f);
    dev_device *d = dev_replay_open(path, err, sizeof err);
    CHECK(d != NULL, "replay open: %s", err);
    if (d) {
        dev_state s;
        CHECK(dev_read(d, &s) == 0 && fabs(s.position.x) < 0.01, "starts at the first pose (%g)", s.position.x);
        sleep_s(0.1);
        dev_read(d, &s);
        CHECK(s.position.x > 0.02 && s.position.x < 0.09 && fabs(s.linear_velocity.x - 0.5) < 1e-9, "interpolates (x %g, vx %g)",
              s.position.x, s.linear_velocity.x);
        sleep_s(0.45);
        dev_read(d, &s);
        CHECK(fabs(s.position.x - 0.1) < 1e-12 && fabs(s.position.y - 0.2) < 1e-12, "holds the last pose (%g %g)", s.position.x, s.position.y);
        dev_command zero = {{1, 2, 3}, {0, 0, 0}, 0};
        CHECK(dev_write(d, &zero) == 0, "accepts forces");
        dev_close(d);
    }
    f = fopen(path, "w");
    fputs("0 0 0 0 1 0 0 0\n0.5 1 2\n", f);
    fclose(f);
    CHECK(dev_replay_open(path, err, sizeof err) == NULL && strstr(err, ":2:"), "short line refused: %s", err);
    f = fopen(path, "w");
    fputs("1 0 0 0 1 0 0 0\n0.5 0 0 0 1 0 0 0\n", f);
    fclose(f);
    CHECK(dev_replay_open(path, err, sizeof err) == NULL && strstr(err, "rising"), "time going back refused: %s", err);
    /* a line over the reader's 1022 characters (a pose padded with spaces),
     * and a file of comments and blank lines only: each named */
    char want[400];
    f = fopen(path, "w");
    fprintf(f, "0 0 0 0 1 0 0 0\n%1100s\n", "0.5 0 0 0 1 0 0 0");
    fclose(f);
    snprintf(want, sizeof want, "replay device: %s:2: line longer than 1022 characters", path);
    CHECK(dev_replay_open(path, err, sizeof err) == NULL && !strcmp(err, want), "long line refused: '%s'", err);
    /* a NUL byte in a line: the line ended at it, and "0.5 0 0 0 1 0 0 0\0 9"
     * was a pose */
    static const char nul_text[] = "0 0 0 0 1 0 0 0\n0.5 0 0 0 1 0 0 0\0 9\n";
    f = fopen(path, "wb");
    fwrite(nul_text, 1, sizeof nul_text - 1, f);
    fclose(f);
    snprintf(want, sizeof want, "replay device: %s:2: a NUL byte in the line (binary data in a text file?)", path);
    CHECK(dev_replay_open(path, err, sizeof err) == NULL && !strcmp(err, want), "NUL byte refused: '%s'", err);
    f = fopen(path, "w");
    fputs("# t x y z qw qx qy qz\n\n   \n# nothing\n", f);
    fclose(f);
    snprintf(want, sizeof want, "replay device: %s holds no trajectory", path);
    CHECK(dev_replay_open(path, err, sizeof err) == NULL && !strcmp(err, want), "no pose at all refused: '%s'", err);
    unlink(path);
    CHECK(dev_replay_open(path, err, sizeof err) == NULL && strstr(err, path), "missing file: %s", err);
}

/* ---- bundles: commands handed to the loop together ---- */

typedef struct last_tel {
    pthread_mutex_t lock;
    rt_telemetry t;
    long n;
    /* distances seen that no whole bundle gives (test_bundle_running) */
    long torn, near, far;
    double near_d;
} last_tel;

static void on_last(const rt_telemetry *t, void *user)
{
    last_tel *w = user;
    pthread_mutex_lock(&w->lock);
    w->t = *t;
    w->n++;
    if (t->distance_m < 0)
        w->far++;
    else if (fabs(t->distance_m - w->near_d) < 2e-4)
        w->near++;
    else
        w->torn++;
    pthread_mutex_unlock(&w->lock);
}

/* a 2 cm ball at the origin as the tool (the null device holds it there)
 * and four 2 cm balls o1..o4 far off; 0, or -1 with err */
static int bundle_scene(rt_service *svc, char *err)
{
    prox_mesh *m = prox_mesh_make_sphere(0.02, 2);
    if (!m || add(svc, "tool", m, prox_v3(0, 0, 0), err) || rt_service_set_tool(svc, "tool", err, 256))
        return -1;
    for (int i = 1; i <= 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", i);
        prox_mesh *mi = prox_mesh_make_sphere(0.02, 2);
        if (!mi || add(svc, name, mi, prox_v3(10.0 * i, 0, 0), err))
            return -1;
    }
    return 0;
}

/* o_i's pose near the tool: its surface 5 - i mm from the tool's along
 * +x (o4 the closest, at 1 mm; all within the 5 mm margin) or far off */
static prox_xform near_pose(int i, int near)
{
    return prox_xform_from_pose(near ? prox_v3(0.04 + 0.001 * (5 - i), 0, 0) : prox_v3(10.0 * i, 0, 0), prox_quat_identity());
}

/* the budgets the bundle tests set as filler commands stay this high */
#define BUNDLE_BUDGET_US 900

/* a lockstep-ready service (null device, max_cmds_per_cycle 4, no margin
 * force: the margin measures, its force does not move the tool) with the
 * bundle scene and telemetry to w; NULL (a failed check, the device
 * closed) otherwise */
static rt_service *bundle_service(dev_device **dev, last_tel *w)
{
    char err[256] = "";
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    cfg.max_cmds_per_cycle = 4;
    cfg.gains.margin_stiffness_n_per_m = 0;
    /* the budget is real time in lockstep too: 300 us left an ASan build's
     * first query after a move incomplete now and then (distance -1) */
    cfg.budget_us = BUNDLE_BUDGET_US;
    rt_service *svc = null_service(&cfg, dev);
    if (!svc)
        return NULL;
    CHECK(bundle_scene(svc, err) == 0, "scene: %s", err);
    rt_service_add_telemetry_listener(svc, on_last, w);
    return svc;
}

/* o1..o4 all near or all far, one set_pose each; how many were refused.
 * Near in the order o1..o4, far in the order o4..o1, so that a cycle that
 * saw either move in part measures 2-4 mm (o4 is the nearest). */
static int move_all(rt_service *svc, int near)
{
    char err[256];
    int refused = 0;
    for (int k = 1; k <= 4; k++) {
        const int i = near ? k : 5 - k;
        char name[16];
        snprintf(name, sizeof name, "o%d", i);
        prox_xform x = near_pose(i, near);
        refused += rt_service_set_pose(svc, name, &x, err, sizeof err) != 0;
    }
    return refused;
}

static double step_distance(rt_service *svc, last_tel *w, uint64_t t_ns, char *err)
{
    CHECK(rt_service_step(svc, t_ns, err, 256) == 0, "step: %s", err);
    pthread_mutex_lock(&w->lock);
    double d = w->t.distance_m;
    pthread_mutex_unlock(&w->lock);
    return d;
}

static void *begin_elsewhere(void *arg)
{
    char err[256];
    rt_service *svc = arg;
    int rc = rt_service_bundle_begin(svc, err, sizeof err);
    return (void *)(intptr_t)(rc == -1 && strstr(err, "another thread holds a bundle open"));
}

static void *budgets_elsewhere(void *arg)
{
    char err[256];
    rt_service *svc = arg;
    int ok = 1;
    for (int k = 0; k < 3; k++)
        ok &= rt_service_set_budget_us(svc, BUNDLE_BUDGET_US - k, err, sizeof err) == 0;
    return (void *)(intptr_t)ok;
}

/* In lockstep: a cycle applies at most max_cmds_per_cycle commands, but a
 * bundle it starts it finishes, so no cycle sees a bundle in part. The
 * ball's distance tells which of o1..o4 the cycle had moved (the
 * ball-sphere distance is exact within 0.2 mm at 320 triangles). */
static void test_bundle_one_cycle(void)
{
    char err[256];
    dev_device *dev;
    last_tel w = {.lock = PTHREAD_MUTEX_INITIALIZER};
    rt_service *svc = bundle_service(&dev, &w);
    if (!svc)
        return;
    uint64_t t = 1000000;
    double d = step_distance(svc, &w, t, err);
    CHECK(d == -1.0, "nothing within the margin at first: %g", d);
    /* three other commands first, then o1..o4 one by one: the cycle takes
     * four, so only o1 has moved (o1 at 4 mm) */
    for (int k = 0; k < 3; k++)
        CHECK(rt_service_set_budget_us(svc, BUNDLE_BUDGET_US - k, err, sizeof err) == 0, "budget: %s", err);
    CHECK(move_all(svc, 1) == 0, "poses near taken");
    d = step_distance(svc, &w, t += 1000000, err);
    CHECK(fabs(d - 0.004) < 2e-4, "without a bundle the cycle moved o1 alone: distance %g, want 0.004", d);
    d = step_distance(svc, &w, t += 1000000, err);
    CHECK(fabs(d - 0.001) < 2e-4, "the next cycle moved the rest: distance %g, want 0.001", d);
    /* back off, then the same as a bundle: all four in the one cycle */
    CHECK(move_all(svc, 0) == 0, "poses far taken");
    d = step_distance(svc, &w, t += 1000000, err);
    CHECK(d == -1.0, "all far again: %g", d);
    CHECK(rt_service_bundle_begin(svc, err, sizeof err) == 0, "begin: %s", err);
    CHECK(move_all(svc, 1) == 0, "bundled poses taken");
    /* a fifth command does not fit a bundle of max_cmds_per_cycle */
    CHECK(rt_service_set_budget_us(svc, 250, err, sizeof err) == -1 && strstr(err, "a bundle holds at most 4 commands"),
          "fifth command: %s", err);
    pthread_t th;
    void *ok = NULL;
    pthread_create(&th, NULL, begin_elsewhere, svc);
    pthread_join(th, &ok);
    CHECK(ok != NULL, "another thread cannot open a bundle while one is open");
    d = step_distance(svc, &w, t += 1000000, err);
    CHECK(d == -1.0, "an open bundle is held back: distance %g", d);
    /* another thread's three commands go ahead of the bundle: the cycle
     * takes them and one pose, and finishes the bundle it started */
    pthread_create(&th, NULL, budgets_elsewhere, svc);
    pthread_join(th, &ok);
    CHECK(ok != NULL, "another thread's commands are not held in this thread's bundle");
    CHECK(rt_service_bundle_end(svc, err, sizeof err) == 4, "end hands four over: %s", err);
    d = step_distance(svc, &w, t += 1000000, err);
    CHECK(fabs(d - 0.001) < 2e-4, "the bundle took effect in one cycle: distance %g, want 0.001", d);
    CHECK(rt_service_bundle_end(svc, err, sizeof err) == -1 && strstr(err, "no bundle open"), "end without begin: %s", err);
    /* nested: the inner end hands nothing over, the outer end all */
    CHECK(rt_service_bundle_begin(svc, err, sizeof err) == 0 && rt_service_bundle_begin(svc, err, sizeof err) == 0,
          "nested begin: %s", err);
    prox_xform x4 = near_pose(4, 0);
    CHECK(rt_service_set_pose(svc, "o4", &x4, err, sizeof err) == 0, "pose: %s", err);
    CHECK(rt_service_bundle_end(svc, err, sizeof err) == 0, "inner end: %s", err);
    d = step_distance(svc, &w, t += 1000000, err);
    CHECK(fabs(d - 0.001) < 2e-4, "held until the outer end: distance %g", d);
    CHECK(rt_service_bundle_end(svc, err, sizeof err) == 1, "outer end: %s", err);
    d = step_distance(svc, &w, t += 1000000, err);
    CHECK(fabs(d - 0.002) < 2e-4, "o4 gone back: o3 at 2 mm is the nearest: %g", d);
    rt_status st;
    rt_service_status(svc, &st);
    CHECK(st.cmd_drops == 1, "the refused fifth command counted: %llu", (unsigned long long)st.cmd_drops);
    rt_service_destroy(svc);
    dev_close(dev);
}

/* The running loop (its own thread) and a producer sending bundles that
 * move o1..o4 all near or all far: no cycle's distance is other than
 * all-near's (o4 at 1 mm) or nothing within the margin. Also under TSan. */
static void test_bundle_running(void)
{
    char err[256];
    dev_device *dev;
    last_tel w = {.lock = PTHREAD_MUTEX_INITIALIZER, .near_d = 0.001};
    rt_service *svc = bundle_service(&dev, &w);
    if (!svc)
        return;
    CHECK(rt_service_start(svc, err, sizeof err) == 0, "start: %s", err);
    uint64_t t0 = prox_now_ns();
    long bundles = 0, refused = 0;
    for (int near = 1; prox_now_ns() - t0 < 600000000ull; near = !near) {
        /* three commands ahead of each bundle: a cycle that takes them
         * takes one pose more unless it finishes the bundle */
        for (int k = 0; k < 3; k++)
            refused += rt_service_set_budget_us(svc, BUNDLE_BUDGET_US - k, err, sizeof err) != 0;
        CHECK(rt_service_bundle_begin(svc, err, sizeof err) == 0, "begin: %s", err);
        refused += move_all(svc, near);
        bundles += rt_service_bundle_end(svc, err, sizeof err) > 0;
        sleep_s(0.003);
    }
    sleep_s(0.05);
    rt_service_stop(svc);
    pthread_mutex_lock(&w.lock);
    CHECK(w.torn == 0, "%ld of %ld cycles saw a bundle in part (near %ld, far %ld; %ld bundles, %ld commands refused)", w.torn,
          w.n, w.near, w.far, bundles, refused);
    CHECK(refused == 0, "%ld commands refused (a full queue)", refused);
    CHECK(w.near > 10 && w.far > 10, "both states seen: near %ld far %ld of %ld", w.near, w.far, w.n);
    pthread_mutex_unlock(&w.lock);
    rt_service_destroy(svc);
    dev_close(dev);
}

/* A bundle open when the loop stops: what it holds applies before the
 * commands sent after the stop (they apply at once), never after them at a
 * restart. (A held ADD applied after a REMOVE sent since was a use after
 * free: found by review.) A voxel map added in a bundle takes no voxel
 * updates until the bundle's end (the loop would drop them unseen). */
static void test_bundle_across_stop(void)
{
    char err[256];
    dev_device *dev;
    last_tel w = {.lock = PTHREAD_MUTEX_INITIALIZER};
    rt_service *svc = bundle_service(&dev, &w);
    if (!svc)
        return;
    CHECK(rt_service_start(svc, err, sizeof err) == 0, "start: %s", err);
    /* o4 near in the bundle, then the loop stops, then o4 far: far it is */
    CHECK(rt_service_bundle_begin(svc, err, sizeof err) == 0, "begin: %s", err);
    prox_xform x4 = near_pose(4, 1);
    CHECK(rt_service_set_pose(svc, "o4", &x4, err, sizeof err) == 0, "held pose: %s", err);
    prox_mesh *m = prox_mesh_make_sphere(0.02, 1);
    CHECK(m && add(svc, "late", m, prox_v3(0, 1, 0), err) == 0, "held add: %s", err);
    prox_voxmap *vm = small_map(err);
    rt_object vo;
    rt_object_from_voxmap(vm, &vo);
    CHECK(rt_service_add_object(svc, "vmap", &vo, NULL, err, sizeof err) == 0, "held map: %s", err);
    rt_voxel_update u = {1, 1, 1, 1};
    CHECK(rt_service_voxel_update(svc, "vmap", &u, 1, err, sizeof err) == -1 && strstr(err, "bundle still open"),
          "voxels for a map the loop has not got: %s", err);
    rt_service_stop(svc);
    x4 = near_pose(4, 0);
    CHECK(rt_service_set_pose(svc, "o4", &x4, err, sizeof err) == 0, "pose after the stop: %s", err);
    CHECK(rt_service_remove_object(svc, "late", err, sizeof err) == 0, "remove after the stop: %s", err);
    CHECK(rt_service_voxel_update(svc, "vmap", &u, 1, err, sizeof err) == 1, "voxels once the map is the loop's: %s", err);
    CHECK(rt_service_bundle_end(svc, err, sizeof err) == 0, "the end hands nothing more over: %s", err);
    CHECK(rt_service_start(svc, err, sizeof err) == 0, "restart: %s", err);
    sleep_s(0.05);
    rt_service_stop(svc);
    pthread_mutex_lock(&w.lock);
    CHECK(w.t.distance_m == -1.0, "o4 far after the restart (the held near pose came first): distance %g", w.t.distance_m);
    pthread_mutex_unlock(&w.lock);
    rt_status st;
    rt_service_status(svc, &st);
    CHECK(st.object_count == 6, "tool, o1..o4 and the map: %u objects", st.object_count);
    rt_service_destroy(svc);
    dev_close(dev);
}

/* ---- lockstep checks of the cycle (null device at the origin) ---- */

#define LOCKSTEP_HZ 100

/* every telemetry record of a lockstep run, in order */
typedef struct tel_log {
    rt_telemetry t[64];
    int n;
} tel_log;

static void on_log(const rt_telemetry *t, void *user)
{
    tel_log *l = user; /* (lockstep: the caller's thread drains, no lock needed) */
    if (l->n < (int)(sizeof l->t / sizeof l->t[0]))
        l->t[l->n++] = *t;
}

/* a lockstep service on the null device (cfg at 100 Hz, priority 0) with
 * the 2 cm ball tool at the origin and a box (10 cm half side) whose face
 * lies gap_m from the ball along +x, its telemetry in log (emptied), its
 * clock t_ns at 1 ms. The budget, 5 ms, is real time in lockstep too:
 * room for a sanitized build, so that every query with a budget completes
 * and runs repeat exactly; a loaded machine can still preempt one past it
 * (see near_box_complete). */
typedef struct near_box {
    rt_service *svc;
    dev_device *dev;
    tel_log log;
    uint64_t t_ns;
} near_box;

/* 0, or -1 (a failed check) when the service cannot be had */
static int near_box_open(near_box *nb, rt_config cfg, double gap_m)
{
    char err[256] = "";
    memset(&nb->log, 0, sizeof nb->log);
    nb->t_ns = 1000000;
    cfg.priority = 0;
    cfg.rate_hz = LOCKSTEP_HZ;
    cfg.budget_us = 5000;
    nb->svc = null_service(&cfg, &nb->dev);
    if (!nb->svc)
        return -1;
    const int ok = add(nb->svc, "box", prox_mesh_make_box(prox_v3(0.1, 0.1, 0.1)), prox_v3(0.12 + gap_m, 0, 0), err) == 0 &&
                   add(nb->svc, "tool", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0), err) == 0 &&
                   rt_service_set_tool(nb->svc, "tool", err, sizeof err) == 0 &&
                   rt_service_add_telemetry_listener(nb->svc, on_log, &nb->log) == 0;
    CHECK(ok, "near-box scene: %s", err);
    if (!ok) {
        rt_service_destroy(nb->svc);
        dev_close(nb->dev);
        nb->svc = NULL, nb->dev = NULL;
        return -1;
    }
    return 0;
}

/* the service and device closed; the log stays */
static void near_box_close(near_box *nb)
{
    rt_service_destroy(nb->svc);
    dev_close(nb->dev);
    nb->svc = NULL, nb->dev = NULL;
}

/* n lockstep cycles a period apart after t_ns (updated); 0 or a failed check */
static int steps(rt_service *svc, uint64_t *t_ns, int n)
{
    char err[256];
    for (int i = 0; i < n; i++)
        if (rt_service_step(svc, *t_ns += 1000000000 / LOCKSTEP_HZ, err, sizeof err) != 0) {
            CHECK(0, "step: %s", err);
            return -1;
        }
    return 0;
}

/* A run repeats exactly only where its queries completed in their budget,
 * real time that a loaded machine can take (a preemption past 5 ms): a
 * test whose first n records are not all complete runs again, at most
 * NEAR_BOX_TRIES times. 1 when the first n records' queries all completed. */
#define NEAR_BOX_TRIES 5
static int log_complete(const tel_log *log, int n)
{
    for (int k = 0; k < n && k < log->n; k++)
        if (log->t[k].flags & RT_TEL_QUERY_INCOMPLETE)
            return 0;
    return 1;
}

static int near_box_complete(const near_box *nb, int n) { return log_complete(&nb->log, n); }

/* A ramp time of 0 means full force at once: the same output, cycle for
 * cycle, as the shortest ramp (1e-9 s, full after one cycle), not zero
 * force and not the default ramp. The 0.5 s ramp scales the same forces
 * by k * period / ramp_s at its k-th cycle (the null device ignores forces,
 * so the proxy moves the same in all three). */
static void test_ramp_zero(void)
{
    const double ramps[3] = {0.0, 1e-9, 0.5};
    static near_box nb[3];
    tel_log *const log[3] = {&nb[0].log, &nb[1].log, &nb[2].log};
    for (int r = 0; r < 3; r++) {
        rt_config cfg = rt_config_default();
        cfg.limits.ramp_s = ramps[r];
        cfg.limits.max_force_rate_n_per_cycle = 0; /* no rate limit: the ramp alone shapes the output */
        int tries = 0;
        do {
            if (near_box_open(&nb[r], cfg, 0.002) != 0)
                return;
            steps(nb[r].svc, &nb[r].t_ns, 40);
            near_box_close(&nb[r]);
        } while (!near_box_complete(&nb[r], 40) && ++tries < NEAR_BOX_TRIES);
        CHECK(near_box_complete(&nb[r], 40), "ramp %g s: every query within its budget in one of %d runs", ramps[r], tries);
    }
    CHECK(log[0]->n == 40 && log[1]->n == 40 && log[2]->n == 40, "40 records each: %d %d %d", log[0]->n, log[1]->n, log[2]->n);
    int pushing = 0, same = 0, ramped = 0;
    for (int k = 0; k < 40 && k < log[0]->n && k < log[1]->n && k < log[2]->n; k++) {
        const prox_vec3 f0 = log[0]->t[k].force_n, f1 = log[1]->t[k].force_n, f2 = log[2]->t[k].force_n;
        pushing += prox_v3_len(f0) > 0.01 && (log[0]->t[k].flags & RT_TEL_CONTACT);
        same += f0.x == f1.x && f0.y == f1.y && f0.z == f1.z;
        const double want = fmin(1.0, (k + 1) / (double)LOCKSTEP_HZ / 0.5); /* the k-th cycle's ramp (cycles counted from 1) */
        ramped += prox_v3_dist(f2, prox_v3_scale(f1, want)) <= 1e-12 + 1e-9 * prox_v3_len(f1);
    }
    CHECK(pushing >= 30, "the margin pushes the tool: %d of 40 cycles with force", pushing);
    CHECK(same == 40, "ramp 0 gives the instant ramp's output: %d of 40 cycles the same (cycle 10: %g N vs %g N)", same,
          log[0]->n > 10 ? prox_v3_len(log[0]->t[10].force_n) : -1, log[1]->n > 10 ? prox_v3_len(log[1]->t[10].force_n) : -1);
    CHECK(ramped == 40, "the 0.5 s ramp scales them by k/50: %d of 40 cycles (cycle 10: %g N vs %g N)", ramped,
          log[2]->n > 10 ? prox_v3_len(log[2]->t[10].force_n) : -1, log[1]->n > 10 ? prox_v3_len(log[1]->t[10].force_n) : -1);
}

/* Moving the tool object (set_pose on the tool) starts the proxy over at
 * the handle: the cycle after it finds the proxy where the first cycle
 * did (at the device, one step of the same margin push), not where the
 * push had carried it since. */
static void test_tool_pose_restarts_proxy(void)
{
    char err[256];
    static near_box nb;
    int tries = 0;
    do {
        if (tries)
            near_box_close(&nb);
        if (near_box_open(&nb, rt_config_default(), 0.002) != 0)
            return;
        steps(nb.svc, &nb.t_ns, 30);
        prox_xform x = prox_xform_from_pose(prox_v3(0, 0.5, 0), prox_quat_identity());
        CHECK(rt_service_set_pose(nb.svc, "tool", &x, err, sizeof err) == 0, "tool pose: %s", err);
        steps(nb.svc, &nb.t_ns, 1);
    } while (!near_box_complete(&nb, 31) && ++tries < NEAR_BOX_TRIES);
    CHECK(near_box_complete(&nb, 31), "every query within its budget in one of %d runs", tries);
    const tel_log *log = &nb.log;
    CHECK(log->n == 31, "31 records: %d", log->n);
    if (log->n == 31) {
        const prox_vec3 first = log->t[0].tool_pos, before = log->t[29].tool_pos, after = log->t[30].tool_pos;
        CHECK(first.x < -1e-9 && before.x < first.x, "the push carries the proxy on: -x %g m after 1 cycle, %g m after 30", first.x,
              before.x);
        CHECK(prox_v3_dist(after, first) <= 1e-15, "after the tool's pose the proxy starts over: (%g %g %g), the first cycle's (%g %g %g)",
              after.x, after.y, after.z, first.x, first.y, first.z);
    }
    near_box_close(&nb);
}

/* test_ist_tool_open_wall's run: the wall (the flat open square of side
 * 0.2, 4 x 4 squares) at wall_at, 5 cycles, 3 with the wall at cut, 3
 * with it back; the telemetry in log, the service's status after the cut
 * in st_cut. 0, or -1 (a failed check) when the scene cannot be had. */
static int open_wall_run(const prox_xform *wall_at, const prox_xform *cut, tel_log *log, rt_status *st_cut)
{
    char err[512] = "";
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    cfg.rate_hz = LOCKSTEP_HZ;
    cfg.budget_us = 5000;
    cfg.limits.ramp_s = 0;
    cfg.limits.max_force_rate_n_per_cycle = 0;
    memset(log, 0, sizeof *log);
    memset(st_cut, 0, sizeof *st_cut);
    dev_device *dev;
    rt_service *svc = null_service(&cfg, &dev);
    if (!svc)
        return -1;
    uint64_t t_ns = 1000000;
    rt_object wall;
    const int made = rt_object_from_mesh(check_mesh_height_field(4, 0.1, 0), RT_IST_SPHERES, &wall, err, sizeof err) == 0;
    CHECK(made && wall.type == PROX_TREE_MESH, "the wall, a mesh BVH: %s", err);
    const int ok = made && add(svc, "tool", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0), err) == 0 &&
                   rt_service_set_tool(svc, "tool", err, sizeof err) == 0 &&
                   rt_service_add_object(svc, "wall", &wall, wall_at, err, sizeof err) == 0 &&
                   rt_service_add_telemetry_listener(svc, on_log, log) == 0;
    CHECK(ok, "an inner sphere tree tool beside an open wall is taken: %s", err);
    if (made && wall.tree)
        rt_object_free(&wall);
    if (ok) {
        steps(svc, &t_ns, 5);
        CHECK(rt_service_set_pose(svc, "wall", cut, err, sizeof err) == 0, "wall pose: %s", err);
        steps(svc, &t_ns, 3);
        rt_service_status(svc, st_cut);
        CHECK(rt_service_set_pose(svc, "wall", wall_at, err, sizeof err) == 0, "wall back: %s", err);
        steps(svc, &t_ns, 3);
    }
    rt_service_destroy(svc);
    dev_close(dev);
    return ok ? 0 : -1;
}

/* An inner sphere tree tool (the 2 cm ball at the handle) beside an open
 * mesh (a wall above it, a mesh BVH) is taken; the loop measures their
 * distance (the brute force over every triangle pair, within the loop's
 * relative error and never below), and the margin pushes the tool away
 * from the wall (the device feels -z). Moved to cut through the ball, the
 * wall overlaps the tool: no penetration volume is defined against an
 * open mesh, so every cycle faults with zero force, counted as an
 * unmeasurable pair; moved back, the push returns. */
static void test_ist_tool_open_wall(void)
{
    const double gap = 0.002;
    const prox_xform wall_at = prox_xform_from_pose(prox_v3(0.003, -0.001, 0.02 + gap), prox_quat_identity());
    prox_xform cut = wall_at; /* the wall through the ball */
    cut.t.z = 0.01;
    static tel_log log;
    rt_status st;
    /* the budget is real time: a run that a loaded machine preempted past
     * it runs again (as the near-box tests do) */
    int tries = 0;
    do {
        if (open_wall_run(&wall_at, &cut, &log, &st) != 0)
            return;
    } while (!log_complete(&log, log.n) && ++tries < NEAR_BOX_TRIES);
    CHECK(log_complete(&log, log.n), "every query within its budget in one of %d runs", tries);
    prox_mesh *ball = prox_mesh_make_sphere(0.02, 2), *sq = check_mesh_height_field(4, 0.1, 0);
    const prox_xform at0 = prox_xform_identity();
    const double want = ball && sq ? check_mesh_pair_dist(ball, &at0, sq, &wall_at, NULL, 0, NULL) : NAN;
    prox_mesh_free(ball);
    prox_mesh_free(sq);
    CHECK(log.n == 11, "11 records: %d", log.n);
    if (log.n >= 1) {
        const rt_telemetry *t = &log.t[0];
        CHECK(!(t->flags & (RT_TEL_FAULT | RT_TEL_QUERY_INCOMPLETE)) && (t->flags & RT_TEL_CONTACT),
              "the first cycle measured, within the margin: flags %#x", t->flags);
        CHECK(t->distance_m >= want - 1e-12 && t->distance_m <= want * (1 + 1e-3) + 1e-12,
              "the loop's distance %.12g m, brute force %.12g m", t->distance_m, want);
    }
    if (log.n >= 5) {
        /* (the device feels the coupling spring: from the second cycle on,
         * once the push has moved the proxy) */
        const rt_telemetry *t = &log.t[4];
        const double f = prox_v3_len(t->force_n);
        CHECK(f > 0.01 && t->force_n.z < -0.99 * f && (t->flags & RT_TEL_CONTACT) && !(t->flags & RT_TEL_FAULT),
              "the margin pushes the tool away from the wall: (%g %g %g) N, flags %#x", t->force_n.x, t->force_n.y, t->force_n.z,
              t->flags);
    }
    int faulted = 0;
    for (int k = 5; k < 8 && k < log.n; k++)
        faulted += (log.t[k].flags & RT_TEL_FAULT) && prox_v3_len(log.t[k].force_n) == 0 && prox_v3_len(log.t[k].torque_nm) == 0;
    CHECK(log.n >= 8 && faulted == 3, "overlapping the open wall: %d of 3 cycles faulted with zero output", faulted);
    CHECK(st.faults_by_cause[RT_FAULT_UNMEASURABLE] == 3 && st.last_fault_cause == RT_FAULT_UNMEASURABLE &&
              !strcmp(rt_fault_name(st.last_fault_cause), "unmeasurable_pair"),
          "counted as an unmeasurable pair: %llu, last '%s'", (unsigned long long)st.faults_by_cause[RT_FAULT_UNMEASURABLE],
          rt_fault_name(st.last_fault_cause));
    CHECK(log.n == 11 && !(log.t[10].flags & RT_TEL_FAULT) && log.t[10].force_n.z < 0, "the push returns: flags %#x, force z %g",
          log.n == 11 ? log.t[10].flags : 0u, log.n == 11 ? log.t[10].force_n.z : 0.0);
}

/* A query that settles nothing in its budget next to an object holds the
 * proxy where it was (the last cycle measured something within the
 * margin) for at most 20 cycles; then it moves on as in free space.
 * A budget of 0 leaves every query incomplete, and the box replaced by a
 * new one at the same place leaves its pair no cached answer: nothing is
 * found (with the old box's cache a budget-0 query still answers). */
static void test_proxy_hold_bounded(void)
{
    char err[256];
    static near_box nb;
    int tries = 0;
    do {
        if (tries)
            near_box_close(&nb);
        if (near_box_open(&nb, rt_config_default(), 0.002) != 0)
            return;
        steps(nb.svc, &nb.t_ns, 10);
    } while (!near_box_complete(&nb, 10) && ++tries < NEAR_BOX_TRIES);
    CHECK(near_box_complete(&nb, 10), "the first 10 queries within their budget in one of %d runs", tries);
    rt_service *svc = nb.svc;
    CHECK(rt_service_set_budget_us(svc, 0, err, sizeof err) == 0, "budget 0: %s", err);
    CHECK(rt_service_remove_object(svc, "box", err, sizeof err) == 0, "remove box: %s", err);
    CHECK(add(svc, "box2", prox_mesh_make_box(prox_v3(0.1, 0.1, 0.1)), prox_v3(0.122, 0, 0), err) == 0, "box2: %s", err);
    steps(nb.svc, &nb.t_ns, 25);
    const tel_log *log = &nb.log;
    CHECK(log->n == 35, "35 records: %d", log->n);
    if (log->n == 35) {
        CHECK(log->t[9].flags & RT_TEL_CONTACT, "cycle 10 measured the margin: flags %u", log->t[9].flags);
        int incomplete = 0, held = 0;
        for (int k = 10; k < 35; k++) {
            incomplete += (log->t[k].flags & RT_TEL_QUERY_INCOMPLETE) && log->t[k].distance_m == -1.0;
            held += k < 30 && prox_v3_dist(log->t[k].tool_pos, log->t[9].tool_pos) == 0;
        }
        CHECK(incomplete == 25, "every budget-0 query incomplete, nothing found: %d of 25", incomplete);
        CHECK(held == 20, "the proxy held its place 20 cycles: %d", held);
        CHECK(prox_v3_dist(log->t[30].tool_pos, log->t[9].tool_pos) > 1e-9, "then it moves on (%g m)",
              prox_v3_dist(log->t[30].tool_pos, log->t[9].tool_pos));
    }
    near_box_close(&nb);
}

/* A second recording replaces the first: the first file keeps the records
 * up to the switch, the second those after it, each with its header, no
 * record lost or written twice. */
static void test_record_switch(void)
{
    char err[256], dir[] = "/tmp/hapticd-rec-XXXXXX", pa[300], pb[300];
    static near_box nb;
    if (near_box_open(&nb, rt_config_default(), 0.5) != 0)
        return;
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        near_box_close(&nb);
        return;
    }
    snprintf(pa, sizeof pa, "%s/a.tel", dir);
    snprintf(pb, sizeof pb, "%s/b.tel", dir);
    rt_service *svc = nb.svc;
    uint64_t *t = &nb.t_ns;
    CHECK(rt_service_record_start(svc, pa, err, sizeof err) == 0, "record a: %s", err);
    steps(svc, t, 3);
    CHECK(rt_service_record_start_new(svc, pb, err, sizeof err) == 0, "record b: %s", err);
    steps(svc, t, 5);
    CHECK(rt_service_record_stop(svc) == 0, "stop: recording");
    CHECK(rt_service_record_stop(svc) == -1, "stop again: not recording");
    steps(svc, t, 1);
    const char *paths[2] = {pa, pb};
    const unsigned long long first[2] = {0, 3}, count[2] = {3, 5};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(paths[i], "r");
        CHECK(f != NULL, "%s written", paths[i]);
        if (!f)
            continue;
        char line[512];
        int header = 0, lines = 0, in_order = 1;
        while (fgets(line, sizeof line, f)) {
            if (line[0] == '#') {
                header += lines == 0 && strstr(line, "# hapticd telemetry: seq") == line;
                continue;
            }
            unsigned long long seq = 0;
            in_order &= sscanf(line, "%llu", &seq) == 1 && seq == first[i] + (unsigned long long)lines;
            lines++;
        }
        fclose(f);
        CHECK(header == 1 && lines == (int)count[i] && in_order, "%s: header %d, %d records (want %llu from seq %llu), in order %d",
              paths[i], header, lines, count[i], first[i], in_order);
        remove(paths[i]);
    }
    rmdir(dir);
    near_box_close(&nb);
}

/* The control calls' refusals not met elsewhere: gains a device cannot
 * render stably refused at create (its limit itself taken), a second
 * start, no pose, a name too short or too long for add, a sphere count
 * above RT_IST_SPHERES_MAX and a bad pose refused before the file is read,
 * a closed mesh the sphere tree refuses named with its file, a remove
 * that finds the queue full (the object stays). */
static void test_more_refusals(void)
{
    char err[512] = "";
    dev_device *dev = dev_null_open(err, sizeof err);
    CHECK(dev != NULL, "null device: %s", err);
    if (!dev)
        return;
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    const double k_max = dev->info.max_stiffness_n_per_m, b_max = dev->info.max_damping_n_s_per_m;
    for (int i = 0; i < 4; i++) {
        rt_config c = cfg;
        if (i == 0)
            c.gains.coupling_k_n_per_m = k_max * (1 + 1e-9);
        else if (i == 1)
            c.gains.margin_stiffness_n_per_m = k_max * (1 + 1e-9);
        else if (i == 2)
            c.gains.coupling_b_n_s_per_m = b_max * (1 + 1e-9);
        else
            c.gains.damping_n_s_per_m = b_max * (1 + 1e-9);
        err[0] = 0;
        rt_service *s = rt_service_create(&c, dev, err, sizeof err);
        CHECK(!s && !strcmp(err, i < 2 ? "service: coupling and margin stiffness must not exceed the device's stable stiffness"
                                       : "service: coupling and contact damping must not exceed the device's stable damping"),
              "gains %d above the device's: '%s'", i, err);
        rt_service_destroy(s);
    }
    rt_config at = cfg;
    at.gains.coupling_k_n_per_m = at.gains.margin_stiffness_n_per_m = k_max;
    at.gains.coupling_b_n_s_per_m = at.gains.damping_n_s_per_m = b_max;
    rt_service *s_at = rt_service_create(&at, dev, err, sizeof err);
    CHECK(s_at != NULL, "gains at the device's limits taken: %s", err);
    rt_service_destroy(s_at);

    rt_service *svc = rt_service_create(&cfg, dev, err, sizeof err);
    CHECK(svc != NULL, "service: %s", err);
    if (!svc) {
        dev_close(dev);
        return;
    }
    CHECK(rt_service_set_pose(svc, "x", NULL, err, sizeof err) == -1 && !strcmp(err, "no pose"), "no pose: '%s'", err);
    rt_object o;
    const int made = rt_object_from_mesh(prox_mesh_make_box(prox_v3(0.1, 0.1, 0.1)), RT_IST_SPHERES, &o, err, sizeof err) == 0;
    CHECK(made, "box: %s", err);
    char long_name[RT_NAME_MAX + 1];
    memset(long_name, 'n', RT_NAME_MAX);
    long_name[RT_NAME_MAX] = 0;
    const char *bad_names[2] = {"", long_name};
    for (int i = 0; i < 2 && made; i++)
        CHECK(rt_service_add_object(svc, bad_names[i], &o, NULL, err, sizeof err) == -1 &&
                  !strcmp(err, "object names are 1 to 31 characters") && o.tree != NULL,
              "add named '%s': '%s' (the object stays the caller's)", bad_names[i], err);
    long_name[RT_NAME_MAX - 1] = 0; /* 31 characters: taken */
    CHECK(made && rt_service_add_object(svc, long_name, &o, NULL, err, sizeof err) == 0, "a 31-character name: %s", err);
    if (made && o.tree)
        rt_object_free(&o);
    char msg[200];
    snprintf(msg, sizeof msg, "'x': %u inner spheres asked for, at most %u", RT_IST_SPHERES_MAX + 1, RT_IST_SPHERES_MAX);
    CHECK(rt_service_load_object(svc, "x", "/nonexistent/m.off", NULL, RT_IST_SPHERES_MAX + 1, err, sizeof err) == -1 && !strcmp(err, msg),
          "too many spheres: '%s'", err);
    CHECK(rt_service_load_object(svc, "x", "/nonexistent/m.off", NULL, RT_IST_SPHERES_MAX, err, sizeof err) == -1 &&
              strstr(err, "/nonexistent/m.off") && !strstr(err, "spheres"),
          "the most spheres pass to the file: '%s'", err);
    prox_xform far = prox_xform_identity();
    far.t.z = INFINITY;
    CHECK(rt_service_load_object(svc, "x", "/nonexistent/m.off", &far, 0, err, sizeof err) == -1 && !strcmp(err, "x: pose is not finite"),
          "a bad pose before the file: '%s'", err);
    /* a closed box turned inside out: its file named, and why */
    char dir[] = "/tmp/hapticd-inv-XXXXXX", path[300];
    if (mkdtemp(dir)) {
        snprintf(path, sizeof path, "%s/inside-out.obj", dir);
        prox_mesh *b = prox_mesh_make_box(prox_v3(0.05, 0.05, 0.05));
        CHECK(b != NULL, "box");
        for (uint32_t i = 0; b && i < b->triangle_count; i++) {
            const uint32_t v1 = b->triangles[i][1];
            b->triangles[i][1] = b->triangles[i][2], b->triangles[i][2] = v1;
        }
        if (b)
            check_write_obj(path, b);
        prox_mesh_free(b);
        CHECK(rt_service_load_object(svc, "inv", path, NULL, 0, err, sizeof err) == -1 && strstr(err, path) == err &&
                  strstr(err, "mesh encloses no positive volume") && strstr(err, "inside out"),
              "an inside-out box: '%s'", err);
        remove(path);
        rmdir(dir);
    } else
        CHECK(0, "mkdtemp");
    rt_status st;
    rt_service_status(svc, &st);
    CHECK(st.object_count == 1, "only the 31-character box taken: %u objects", st.object_count);
    CHECK(rt_service_start(svc, err, sizeof err) == 0, "start: %s", err);
    CHECK(rt_service_start(svc, err, sizeof err) == -1 && !strcmp(err, "service: already running"), "second start: '%s'", err);
    rt_service_status(svc, &st);
    CHECK(st.running == 1, "still running after the refused start");
    rt_service_destroy(svc);
    /* lockstep: the queue fills until a step drains it, so a remove can
     * find it full; the object stays, and goes once there is room */
    rt_config small = cfg;
    small.cmd_ring_capacity = 4;
    small.max_cmds_per_cycle = 8;
    svc = rt_service_create(&small, dev, err, sizeof err);
    CHECK(svc != NULL, "service: %s", err);
    if (svc) {
        CHECK(add(svc, "box", prox_mesh_make_box(prox_v3(0.1, 0.1, 0.1)), prox_v3(1, 0, 0), err) == 0, "box: %s", err);
        uint64_t t = 1000000;
        steps(svc, &t, 1);
        int taken = 0;
        for (int i = 0; i < 4; i++) {
            prox_xform x = prox_xform_from_pose(prox_v3(1 + 0.01 * i, 0, 0), prox_quat_identity());
            taken += rt_service_set_pose(svc, "box", &x, err, sizeof err) == 0;
        }
        CHECK(taken == 4, "4 poses fill the queue: %d taken", taken);
        CHECK(rt_service_remove_object(svc, "box", err, sizeof err) == -1 && strstr(err, "command queue full (4 commands); try again"),
              "remove on a full queue: '%s'", err);
        prox_xform x = prox_xform_identity();
        CHECK(rt_service_set_pose(svc, "box", &x, err, sizeof err) == -1 && strstr(err, "command queue full"),
              "the box is still there (the queue, not the name, refuses): '%s'", err);
        rt_service_status(svc, &st);
        CHECK(st.object_count == 1, "the box stays: %u objects", st.object_count);
        steps(svc, &t, 1);
        CHECK(rt_service_remove_object(svc, "box", err, sizeof err) == 0, "remove once the queue has room: %s", err);
        steps(svc, &t, 1);
        rt_service_status(svc, &st);
        CHECK(st.object_count == 0, "the box gone: %u objects", st.object_count);
        rt_service_destroy(svc);
    }
    dev_close(dev);
}

/* stderr into a temporary file between capture_begin and capture_end,
 * which returns what was written (malloc'd, NUL-ended; "" if the capture
 * failed) */
typedef struct capture {
    char path[32];
    int fd, saved;
} capture;

static void capture_begin(capture *c)
{
    snprintf(c->path, sizeof c->path, "/tmp/hapticd-recerr-XXXXXX");
    c->fd = mkstemp(c->path);
    c->saved = dup(2);
    CHECK(c->fd >= 0 && c->saved >= 0, "stderr capture");
    fflush(stderr);
    if (c->fd >= 0 && c->saved >= 0)
        dup2(c->fd, 2);
}

static char *capture_end(capture *c)
{
    fflush(stderr);
    if (c->saved >= 0)
        dup2(c->saved, 2), close(c->saved);
    size_t size = 0;
    unsigned char *text = c->fd >= 0 ? check_read_file(c->path, &size) : NULL;
    if (text)
        text[size] = 0; /* (check_read_file allocates a byte more, not set) */
    if (c->fd >= 0)
        close(c->fd), remove(c->path);
    return text ? (char *)text : calloc(1, 1);
}

static int count_in(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text ? text : ""; (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* A recording that cannot be written (/dev/full: no space left) is said
 * on stderr, once, naming the cause, and ends (record_stop: not
 * recording); the lines were lost without a word before. Lines still in
 * the stream's buffer when the recording is closed (a few cycles: less
 * than the buffer) are said lost too, by record_stop (-2) and by
 * rt_service_destroy; they were lost silently. */
static void test_record_write_error(void)
{
    char err[256];
    static near_box nb;
    if (near_box_open(&nb, rt_config_default(), 0.5) != 0)
        return;
    rt_service *svc = nb.svc;
    uint64_t *t = &nb.t_ns;
    capture c;
    CHECK(rt_service_record_start(svc, "/dev/full", err, sizeof err) == 0, "record to /dev/full: %s", err);
    capture_begin(&c);
    steps(svc, t, 200); /* some 30 kB of lines: more than a stdio buffer */
    char *text = capture_end(&c);
    const int stopped = rt_service_record_stop(svc);
    const int said = count_in(text, "hapticd: telemetry recording failed at record ");
    CHECK(said == 1 && strstr(text, "(No space left on device); recording stopped\n"), "the failure said once: %d times in '%s'", said,
          text);
    CHECK(stopped == -1, "the recording ended (record_stop %d)", stopped);
    free(text);
    rt_status st;
    rt_service_status(svc, &st);
    CHECK(st.cycles == 200 && st.telemetry_received == 200 && st.faults == 0, "the loop went on: %llu cycles, %llu records, %llu faults",
          (unsigned long long)st.cycles, (unsigned long long)st.telemetry_received, (unsigned long long)st.faults);
    /* a few cycles, all in the buffer: lost at the close */
    static const char closed[] = "hapticd: telemetry recording failed when closed (No space left on device): its last lines are lost\n";
    CHECK(rt_service_record_start(svc, "/dev/full", err, sizeof err) == 0, "record to /dev/full: %s", err);
    steps(svc, t, 5);
    capture_begin(&c);
    const int stop2 = rt_service_record_stop(svc);
    text = capture_end(&c);
    CHECK(stop2 == -2 && count_in(text, closed) == 1 && !strstr(text, "at record"), "5 records in the buffer: record_stop %d, stderr '%s'",
          stop2, text);
    free(text);
    CHECK(rt_service_record_stop(svc) == -1, "then not recording");
    /* and by rt_service_destroy, the end of hapticd --record */
    CHECK(rt_service_record_start(svc, "/dev/full", err, sizeof err) == 0, "record to /dev/full: %s", err);
    steps(svc, t, 5);
    capture_begin(&c);
    rt_service_destroy(svc);
    nb.svc = NULL;
    text = capture_end(&c);
    CHECK(count_in(text, closed) == 1, "destroyed with 5 records in the buffer: stderr '%s'", text);
    free(text);
    near_box_close(&nb); /* (the device) */
}

/* The proxy starting over (a fault, a tool pose, a tool change) inside
 * an object must not carry the device's velocity in with it: the OSC
 * device's velocity is its last two poses' difference, and a pose 21 cm
 * away 5 ms after the last reads as about 42 m/s. Started over with it,
 * the proxy of a 2 cm ball 1 cm into a 4 cm table went 3.9 cm in the first
 * 1 ms step, out through the table's bottom, and was pushed down from
 * there: the device pushed down at the force limit (seen in make test's
 * test_osc_device on a loaded machine, where a late pose faulted the
 * cycle of the jump). Lockstep at 1 kHz: the ball above the table, the
 * pose into it 5 ms (real time: the device's clock) later, the tool's pose
 * set in that cycle (it starts the proxy over, as a fault does), then the
 * same pose every cycle for 0.3 s. Want: the proxy pushed back up to the
 * table's top, the device pushed up. */
typedef struct latest_rec {
    rt_telemetry t;
    int n;
} latest_rec;

static void on_latest(const rt_telemetry *t, void *user)
{
    latest_rec *l = user; /* (lockstep: the caller's thread) */
    l->t = *t;
    l->n++;
}

static void test_proxy_restart_at_rest(void)
{
    char err[256] = "";
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    cfg.rate_hz = 1000;
    cfg.budget_us = 5000;
    dev_device *dev = dev_osc_open("127.0.0.1", 9, err, sizeof err); /* (forces to the discard port) */
    rt_service *svc = dev ? rt_service_create(&cfg, dev, err, sizeof err) : NULL;
    CHECK(svc != NULL, "service: %s", err);
    latest_rec last;
    memset(&last, 0, sizeof last);
    const int ok = svc && add(svc, "table", prox_mesh_make_box(prox_v3(0.2, 0.2, 0.02)), prox_v3(0, 0, -0.02), err) == 0 &&
                   add(svc, "ball", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0), err) == 0 &&
                   rt_service_set_tool(svc, "ball", err, sizeof err) == 0 &&
                   rt_service_add_telemetry_listener(svc, on_latest, &last) == 0;
    CHECK(ok, "table and ball: %s", err);
    const prox_xform above = prox_xform_from_pose(prox_v3(0, 0, 0.2), prox_quat_identity()),
                     into = prox_xform_from_pose(prox_v3(0, 0, -0.01), prox_quat_identity());
    uint64_t t = 1000000, above_ns = 0;
    int stepped = ok;
    for (int k = 0; stepped && k < 50; k++) {
        above_ns = prox_now_ns();
        dev_osc_set_pose(dev, &above, 0);
        stepped = rt_service_step(svc, t += 1000000, err, sizeof err) == 0;
    }
    struct timespec five = {0, 5000000};
    nanosleep(&five, NULL);
    dev_osc_set_pose(dev, &into, 0);
    /* the device's clock stamps the poses: on a loaded machine the gap can
     * outgrow the 5 ms; at most 0.2 s, the 21 cm jump still reads as at
     * least 1.05 m/s, 1.05 mm in a step, outside the 1 mm window below, so
     * a proxy started at that velocity still fails the check */
    const double gap_s = (double)(prox_now_ns() - above_ns) * 1e-9;
    const prox_xform id = prox_xform_identity();
    stepped = stepped && rt_service_set_pose(svc, "ball", &id, err, sizeof err) == 0 &&
              rt_service_step(svc, t += 1000000, err, sizeof err) == 0;
    const double z0 = last.t.tool_pos.z;
    CHECK(!stepped || gap_s <= 0.2, "the jump took %.3f s of the device's clock: too slow to tell a restart at its velocity", gap_s);
    for (int k = 0; stepped && k < 300; k++) {
        dev_osc_set_pose(dev, &into, 0);
        stepped = rt_service_step(svc, t += 1000000, err, sizeof err) == 0;
    }
    CHECK(stepped && last.n == 351, "351 cycles: %d, %s", last.n, err);
    /* the restart cycle: at most one step's pull (8 N on the 50 g proxy:
     * 0.16 m/s, 0.16 mm) from the device; with its velocity (42 m/s at a
     * 5 ms gap: 4.2 cm a step) it was at z -0.049 */
    CHECK(z0 >= -0.0105 && z0 <= -0.0095, "the proxy started over at the device, z %.4f m after the first step", z0);
    /* then pushed up toward the table's top (z 0: the ball's centre at
     * 0.02 when just touching; the force limit holds it a little in), the
     * device pushed up, nothing faulting */
    rt_status st;
    memset(&st, 0, sizeof st);
    if (svc)
        rt_service_status(svc, &st);
    CHECK(svc && last.t.tool_pos.z > -0.005 && last.t.force_n.z > 1 && st.faults == 0,
          "after 0.3 s: the proxy at z %.4f m, the force (%.3f, %.3f, %.3f) N, %llu faults", last.t.tool_pos.z, last.t.force_n.x,
          last.t.force_n.y, last.t.force_n.z, (unsigned long long)st.faults);
    rt_service_destroy(svc);
    dev_close(dev);
}

int main(int argc, char **argv)
{
    (void)argc;
    RUN_TEST(test_bundle_one_cycle);
    RUN_TEST(test_bundle_running);
    RUN_TEST(test_bundle_across_stop);
    RUN_TEST(test_replay_driver);
    RUN_TEST(test_bad_control_input);
    RUN_TEST(test_cpu_latency_request);
    RUN_TEST(test_lower_force_limit);
    RUN_TEST(test_forces_off_first);
    RUN_TEST(test_proxy_flung);
    RUN_TEST(test_low_rate_coupling);
    RUN_TEST(test_scene_refusals);
    RUN_TEST(test_unmeasurable_refused);
    RUN_TEST(test_command_queue_full);
    RUN_TEST(test_voxel_queue);
    RUN_TEST(test_watchdog_limit);
    RUN_TEST(test_loop_with_sim_device);
    RUN_TEST(test_ramp_zero);
    RUN_TEST(test_tool_pose_restarts_proxy);
    RUN_TEST(test_ist_tool_open_wall);
    RUN_TEST(test_proxy_restart_at_rest);
    RUN_TEST(test_proxy_hold_bounded);
    RUN_TEST(test_record_switch);
    RUN_TEST(test_record_write_error);
    RUN_TEST(test_more_refusals);
    return check_summary(argv[0]);
}
