/* service.c - the hapticd service: RT loop, handoff, housekeeping, watchdog.
 *
 * Threads:
 *  - RT thread (rt_loop): owns the live scene; every period it drains
 *    commands and voxel updates (bounded), reads the device, moves the tool
 *    proxy (virtual coupling), runs the combined query under the remaining
 *    budget, renders force and torque, applies safety, writes the device and
 *    pushes telemetry. It never allocates, locks or prints.
 *  - housekeeping (non-RT): drains telemetry (listeners, recording, status),
 *    frees objects the RT thread has released.
 *  - watchdog (non-RT): zeroes the device output if the loop stalls.
 *  - callers (main, OSC): control functions push commands under `ctl_lock`
 *    (producers only; the RT thread never takes it).
 *
 * Reclamation: removing an object sends REMOVE; the RT thread drops its
 * reference and answers on the release ring with the slot; only then does
 * housekeeping free it. The RT thread holds no reference across cycles
 * other than its scene slots, so the answer is a quiescent-state proof (the
 * same guarantee an epoch scheme gives, with one reader and no grace
 * periods to track).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "prox.h"
#include "rt_objects.h"
#include "rt_ring.h"
#include "rt_service.h"

#define LAT_BINS 20000 /* 1 us bins; the last bin collects everything above */

enum rt_cmd_type { CMD_ADD = 1, CMD_REMOVE, CMD_POSE, CMD_TOOL, CMD_BUDGET, CMD_GAINS, CMD_LIMITS, CMD_FORCES };

typedef struct rt_cmd {
    uint32_t type, slot;
    const prox_tree *tree;
    prox_xform pose;
    double v[8];
    uint32_t gen;  /* ADD: the object's generation (see rt_vox_msg) */
    uint32_t more; /* a bundle's command with more of it behind (rt_service_bundle_begin) */
} rt_cmd;

/* A voxel update for the object in `slot` whose generation is `gen`: every
 * object added gets a new generation, so updates still queued for a removed
 * map are dropped, not applied to whatever object takes its slot next. */
typedef struct rt_vox_msg {
    uint32_t slot, gen;
    rt_voxel_update u;
} rt_vox_msg;

typedef struct rt_slot { /* RT side */
    const prox_tree *tree;
    prox_xform pose;
    prox_cache cache;
    int active;
    uint32_t gen;
} rt_slot;

typedef struct nrt_object { /* non-RT registry */
    char name[RT_NAME_MAX];
    int used;     /* name taken (also while being removed) */
    int removing; /* REMOVE sent, waiting for the RT thread's release */
    uint32_t gen; /* generation given at add (rt_vox_msg) */
    rt_object obj;
} nrt_object;

typedef struct listener {
    rt_telemetry_fn fn;
    void *user;
} listener;

struct rt_service {
    rt_config cfg;
    dev_device *dev;
    /* rings */
    rt_ring cmd, vox, tel, rel;
    /* RT state (RT thread only while running) */
    rt_slot *slots;
    int tool_slot;
    double budget_us;
    rt_gains gains;
    rt_limits limits;
    int forces_on;
    uint32_t forces_off_seen; /* the forces_off_req the loop last acted on */
    double ramp;     /* 0..1 */
    prox_vec3 proxy_x, proxy_v;
    int proxy_init;
    int proxy_hold_left; /* cycles the proxy may still hold: RT_PROXY_HOLD_MAX after a cycle that measured something
                            within the margin, one less each cycle held, 0 from free space (RT thread only) */
    prox_vec3 contact_nrm; /* the last contact's push direction, unit or zero (RT thread only) */
    prox_vec3 last_force;
    uint64_t last_cycle_ns;
    prox_engine *engine;
    prox_bank *bank;
    prox_object_pair *pairs;
    prox_front_entry *fronts; /* max_objects x cfg.front_pairs */
    uint64_t seq;
    /* shared counters (atomics) */
    atomic_uint_fast64_t cycles, overruns, heartbeat, watchdog_fired, cmd_drops_rt;
    atomic_uint_fast64_t lat_sum_ns, lat_min_ns, lat_max_ns;
    atomic_uint lat_hist[LAT_BINS];
    atomic_uint query_hist[LAT_BINS];
    atomic_uint_fast64_t overshoot_max_ns;
    atomic_uint_fast64_t voxel_drops;  /* updates that did not fit the voxel ring */
    atomic_uint_fast64_t watchdog_ns;  /* the watchdog's limit now (/limits changes it) */
    atomic_int running, stop, stop_hk, fault_now, last_fault;
    atomic_uint_fast64_t faults_by[RT_FAULT_CAUSE_COUNT];
    atomic_int test_stall_ms; /* test hook: the loop sleeps this long once */
    /* threads */
    pthread_t rt_thread, hk_thread, wd_thread;
    int rt_started, hk_started, wd_started;
    int realtime, memlocked, pinned;
    int cpu_latency_fd;   /* /dev/cpu_dma_latency while the request holds, else -1 */
    int cpu_latency_held; /* the request held during the (last) run */
    char rt_note[320];
    uint64_t start_ns;
    uint64_t stop_ns; /* when rt_service_stop returned (0: running or never started); lockstep: the last step's end */
    int lockstep;     /* rt_service_step ran: the caller's thread and clock drive the loop, never the threads */
    int ever_started; /* rt_service_start succeeded once: lockstep is refused */
    /* non-RT */
    pthread_mutex_t ctl_lock; /* command producers, registry */
    nrt_object *objects;
    uint32_t next_gen; /* generations handed out (under ctl_lock) */
    pthread_mutex_t tel_lock; /* listeners, recording, last telemetry */
    listener listeners[16];
    int listener_count;
    FILE *record;
    rt_telemetry last_tel;
    uint64_t tel_received, tel_gaps;
    /* the bundle open (under ctl_lock): its commands, held back until
     * rt_service_bundle_end hands them to the loop at once */
    rt_cmd *bundle;       /* max_cmds_per_cycle */
    uint32_t bundle_n;    /* commands held */
    int bundle_depth;     /* begins less ends; 0: none open */
    pthread_t bundle_owner;
    uint64_t cmd_refused; /* commands refused before the queue (its room, a bundle's size) */
    /* forces off: rt_service_enable_forces(0) counts a request here, with
     * no lock and no queue, and the loop zeroes the output at its next
     * cycle's start; a forces-on command carries the count it followed and
     * is dropped when another off came after it. forces_on_gen: the count
     * the last forces-on taken carried (the forces are enabled while it is
     * the count) */
    _Atomic uint32_t forces_off_req, forces_on_gen;
    /* what rt_service_status read under ctl_lock the last time it got it
     * within RT_STATUS_WAIT_MS; a caller that finds the lock held longer (a
     * build under it: the BVH of a tree's surface, 0.2 s on 75k triangles)
     * gets this copy instead of waiting (under status_lock) */
    pthread_mutex_t status_lock;
    struct {
        uint64_t cmd_refused;
        uint32_t objects;
        double budget_us;
        char tool[RT_NAME_MAX];
        int fell_back; /* the last call answered from the copy */
    } status_copy;
    /* non-RT mirrors of RT parameters, for status (under ctl_lock) */
    double budget_mirror_us;
    char tool_mirror[RT_NAME_MAX];
};

/* the longest rt_service_status waits for the control lock before it
 * answers with its last copy of what the lock guards */
#define RT_STATUS_WAIT_MS 5

rt_config rt_config_default(void)
{
    rt_config c;
    memset(&c, 0, sizeof c);
    c.rate_hz = 1000;
    c.budget_us = 300;
    c.cpu = -1;
    c.priority = 80;
    c.cpu_latency_us = 0;
    c.cmd_ring_capacity = 1024;
    c.voxel_ring_capacity = 1u << 18;
    c.telemetry_ring_capacity = 8192;
    c.max_objects = 64;
    c.max_cmds_per_cycle = 64;
    c.ist_spheres = RT_IST_SPHERES;
    c.max_voxels_per_cycle = 20000;
    c.voxel_budget_us = 100;
    c.queue_capacity = 1u << 16;
    c.front_pairs = 1u << 14;
    c.gains.stiffness_n_per_m3 = 2.0e6;
    c.gains.margin_m = 0.005;
    c.gains.margin_stiffness_n_per_m = 400;
    c.gains.damping_n_s_per_m = 2.0;
    c.gains.coupling_k_n_per_m = 800;
    c.gains.coupling_b_n_s_per_m = 4.0;
    c.gains.torque_scale = 1.0;
    c.limits.max_force_n = 8.0;
    c.limits.max_torque_nm = 0.4;
    c.limits.max_force_rate_n_per_cycle = 0.5;
    c.limits.ramp_s = 0.5;
    c.limits.watchdog_ms = 50;
    c.limits.stale_device_ms = 20;
    c.loader = prox_loader_default();
    return c;
}

/* whether the n doubles of v are all finite and not below 0 */
static int all_finite_nonneg(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || v[i] < 0)
            return 0;
    return 1;
}

/* Each field by name (reading a struct through its first member as an
 * array is undefined, and would take a field that is not a double); the
 * size checks catch a field added and not listed here. */
static int gains_ok(const rt_gains *g)
{
    const double v[] = {g->stiffness_n_per_m3, g->margin_m,    g->margin_stiffness_n_per_m, g->damping_n_s_per_m,
                        g->coupling_k_n_per_m, g->coupling_b_n_s_per_m, g->torque_scale};
    _Static_assert(sizeof v == sizeof *g, "every gain listed");
    return all_finite_nonneg(v, sizeof v / sizeof *v);
}

/* The coupling and margin gains stay within what the device renders
 * stably (dev_info's max stiffness and damping; 0 there: no bound): a
 * coupling far stiffer flings the tool proxy. NULL, or why not. */
static const char *gains_fit(const rt_gains *g, const dev_info *d)
{
    if (d->max_stiffness_n_per_m > 0 &&
        (g->coupling_k_n_per_m > d->max_stiffness_n_per_m || g->margin_stiffness_n_per_m > d->max_stiffness_n_per_m))
        return "coupling and margin stiffness must not exceed the device's stable stiffness";
    if (d->max_damping_n_s_per_m > 0 &&
        (g->coupling_b_n_s_per_m > d->max_damping_n_s_per_m || g->damping_n_s_per_m > d->max_damping_n_s_per_m))
        return "coupling and contact damping must not exceed the device's stable damping";
    return NULL;
}

static int limits_ok(const rt_limits *l)
{
    const double v[] = {l->max_force_n, l->max_torque_nm, l->max_force_rate_n_per_cycle, l->ramp_s, l->watchdog_ms, l->stale_device_ms};
    _Static_assert(sizeof v == sizeof *l, "every limit listed");
    return all_finite_nonneg(v, sizeof v / sizeof *v) && l->watchdog_ms > 0 && l->watchdog_ms <= RT_LIMIT_MAX_MS &&
           l->stale_device_ms > 0 && l->stale_device_ms <= RT_LIMIT_MAX_MS;
}

/* ---- the RT cycle ---- */

/* A slot's coherence cache starts over (its front storage kept). The cache
 * serves the pair (tool, slot): it starts over when either object changes.
 * The engine refuses a front recorded for other trees by their addresses,
 * but a removed tool's memory can be reused for the next object added, and
 * a front taken for the old tool's would then pass that check. */
static void reset_cache(rt_service *s, uint32_t slot)
{
    prox_cache *k = &s->slots[slot].cache;
    memset(k, 0, sizeof *k);
    if (s->fronts) {
        k->front = s->fronts + (size_t)slot * s->cfg.front_pairs;
        k->front_capacity = s->cfg.front_pairs;
    }
}

static void apply_cmd(rt_service *s, const rt_cmd *c)
{
    switch (c->type) {
    case CMD_ADD:
        s->slots[c->slot].tree = c->tree;
        s->slots[c->slot].pose = c->pose;
        s->slots[c->slot].gen = c->gen;
        reset_cache(s, c->slot);
        s->slots[c->slot].active = 1;
        break;
    case CMD_REMOVE: {
        s->slots[c->slot].active = 0;
        s->slots[c->slot].tree = NULL;
        if (s->tool_slot == (int)c->slot)
            s->tool_slot = -1;
        uint32_t slot = c->slot;
        /* (the release ring holds twice max_objects, and a slot stays in
         * use until its entry is drained: it cannot be full) */
        (void)rt_ring_push(&s->rel, &slot);
        break;
    }
    case CMD_POSE:
        s->slots[c->slot].pose = c->pose;
        if ((int)c->slot == s->tool_slot)
            s->proxy_init = 0;
        break;
    case CMD_TOOL:
        if (s->tool_slot != (int)c->slot)
            for (uint32_t i = 0; i < s->cfg.max_objects; i++)
                reset_cache(s, i); /* every pair's tool changed */
        s->tool_slot = (int)c->slot;
        s->proxy_init = 0;
        break;
    case CMD_BUDGET:
        s->budget_us = c->v[0];
        break;
    case CMD_GAINS:
        memcpy(&s->gains, c->v, sizeof s->gains);
        break;
    case CMD_LIMITS:
        memcpy(&s->limits, c->v, sizeof s->limits);
        break;
    case CMD_FORCES: /* on, unless a forces-off came after it (gen: the off requests it followed) */
        if (c->gen == atomic_load_explicit(&s->forces_off_req, memory_order_acquire)) {
            s->forces_on = 1;
            s->forces_off_seen = c->gen;
        }
        break;
    default:
        break;
    }
}

/* v shortened to at most max; a vector whose length overflows a double
 * (finite components up to 1.8e308) keeps its direction: scaled down by
 * its largest component first, so it is never clamped to zero */
static prox_vec3 clamp_len(prox_vec3 v, double max)
{
    double l = prox_v3_len(v);
    if (l <= max || !(l > 0))
        return v;
    if (!isfinite(l)) {
        double m = fmax(fabs(v.x), fmax(fabs(v.y), fabs(v.z)));
        if (!isfinite(m))
            return v; /* not finite: the caller's fault check sees it */
        v = prox_v3_scale(v, 1.0 / m);
        l = prox_v3_len(v);
    }
    return prox_v3_scale(v, max / l);
}

/* clock reads while draining voxel updates: one per this many (an update
 * costs 40-80 ns on a small map, up to 0.8 us on a large one) */
#define RT_VOXEL_CLOCK_EVERY 64u

/* the farthest the tool proxy may lie from the device handle before the
 * cycle counts as a fault (a handle pushed into an object holds the proxy
 * at the surface: the separation is how deep the handle went, a few
 * centimetres on a desktop device) */
#define RT_PROXY_MAX_SEPARATION_M 1.0

static void hist_add(atomic_uint *h, double us)
{
    int b = us < 0 ? 0 : (us >= LAT_BINS - 1 ? LAT_BINS - 1 : (int)us);
    atomic_fetch_add_explicit(&h[b], 1, memory_order_relaxed);
}

/* The proxy's time step at most: the coupling (800 N/m on 0.05 kg: 126
 * rad/s) integrated over a whole period is unstable below ~320 Hz; at 10
 * Hz the proxy once flew off metres in a second. At 1 kHz one step. */
#define RT_PROXY_STEP_S 0.001

/* The relative error the loop accepts in a separated tool's distance: 0.1%
 * of a 5 mm margin is 5 um, 2 mN of margin force at 400 N/m. Flat faces
 * hovering over each other tie at every leaf pair, and an exact answer
 * settles them all: a 3 cm box tool 0.1-3 mm over a 0.6 m table (500
 * spheres each) 276 -> 195 us median (prox distance --rel-err). */
#define RT_DISTANCE_REL_ERR 1e-3
/* Cycles in a row the proxy holds next to an object while queries find
 * nothing in the budget; then it moves on as in free space. Unbounded,
 * an ASan build held obstacles.sim's tool at the cleared pillar for good
 * (its flat rest on the table cut at 300 us, cycle after cycle). */
#define RT_PROXY_HOLD_MAX 20
/* with a margin of 0 the distance is measured this far (overlap, in effect) */
#define RT_NO_MARGIN_RANGE_M 1e-9

/* the virtual coupling's pull on the proxy toward the device handle,
 * clamped to f_lim */
static prox_vec3 coupling(const rt_service *s, const dev_state *st, double f_lim)
{
    const rt_gains *g = &s->gains;
    prox_vec3 f = prox_v3_add(prox_v3_scale(prox_v3_sub(st->position, s->proxy_x), g->coupling_k_n_per_m),
                              prox_v3_scale(prox_v3_sub(st->linear_velocity, s->proxy_v), g->coupling_b_n_s_per_m));
    return clamp_len(f, f_lim);
}

/* one queued voxel update, where its object is still the one it was queued
 * for (active, the same generation); a full map counts a drop. RT safe. */
static void apply_vox(rt_service *s, const rt_vox_msg *vm)
{
    const rt_slot *sl = &s->slots[vm->slot];
    if (sl->active && sl->gen == vm->gen && rt_object_voxel_apply(sl->tree, &vm->u) != 0)
        atomic_fetch_add_explicit(&s->voxel_drops, 1, memory_order_relaxed); /* the map is full */
}

/* One cycle at cycle_start (the loop's clock: CLOCK_MONOTONIC, or the
 * caller's in lockstep); real_start is CLOCK_MONOTONIC at its start (the
 * voxel budget is real time, whatever the loop's clock). */
static void rt_cycle(rt_service *s, uint64_t cycle_start, uint64_t real_start, double period_s)
{
    /* 0. forces off (rt_service_enable_forces), ahead of every command */
    const uint32_t off = atomic_load_explicit(&s->forces_off_req, memory_order_acquire);
    if (off != s->forces_off_seen) {
        s->forces_off_seen = off;
        s->forces_on = 0;
        s->ramp = 0;
    }
    /* 1. commands and voxel updates, bounded */
    /* (a bundle started is finished: pushed at once, it is all there) */
    rt_cmd c;
    c.more = 0;
    for (uint32_t i = 0; (i < s->cfg.max_cmds_per_cycle || c.more) && rt_ring_pop(&s->cmd, &c) == 0; i++)
        apply_cmd(s, &c);
    /* voxel updates: at most max_voxels_per_cycle, and for at most
     * voxel_budget_us (a clock read every RT_VOXEL_CLOCK_EVERY updates);
     * the rest stay queued for the next cycles. Updates queued for an
     * object since removed (another generation) are dropped. */
    rt_vox_msg vm;
    const uint64_t vox_end = real_start + (uint64_t)(s->cfg.voxel_budget_us * 1000.0);
    for (uint32_t i = 0; i < s->cfg.max_voxels_per_cycle; i++) {
        if (i % RT_VOXEL_CLOCK_EVERY == RT_VOXEL_CLOCK_EVERY - 1 && prox_now_ns() >= vox_end)
            break;
        if (rt_ring_pop(&s->vox, &vm) != 0)
            break;
        apply_vox(s, &vm);
    }

    /* the force and torque limits: the configuration's, within the device's */
    const double f_lim = s->limits.max_force_n < s->dev->info.max_force_n ? s->limits.max_force_n : s->dev->info.max_force_n;
    const double t_lim = s->limits.max_torque_nm < s->dev->info.max_torque_nm ? s->limits.max_torque_nm : s->dev->info.max_torque_nm;

    /* 2. device */
    dev_state st;
    int fault = dev_read(s->dev, &st) != 0 ? RT_FAULT_DEVICE_READ : RT_FAULT_NONE; /* the first cause met */
    double dt_dev_ms = (double)((int64_t)(cycle_start - st.time_ns)) * 1e-6;
    if (!fault && (!prox_v3_isfinite(st.position) || !prox_v3_isfinite(st.linear_velocity) || !isfinite(st.orientation.w) ||
                   !isfinite(st.orientation.x) || !isfinite(st.orientation.y) || !isfinite(st.orientation.z)))
        fault = RT_FAULT_DEVICE_STATE;
    if (!fault && dt_dev_ms > s->limits.stale_device_ms)
        fault = RT_FAULT_DEVICE_STALE;

    rt_telemetry t;
    memset(&t, 0, sizeof t);
    t.seq = s->seq++;
    t.time_s = (double)(cycle_start - s->start_ns) * 1e-9;
    prox_vec3 f_dev = {0, 0, 0}, tq_dev = {0, 0, 0};
    double distance = INFINITY, penvol = 0, query_us = 0;
    int contact = 0, incomplete = 0, hold_proxy = 0;

    if (!fault) {
        /* 3. virtual coupling: a proxy tool follows the device through a
         * spring-damper and is pushed by the contact forces */
        if (!s->proxy_init) {
            s->proxy_x = st.position;
            /* at rest, not at the device's velocity: where it starts over
             * may be inside an object, and the OSC device's velocity is its
             * last two poses' difference (a pose 21 cm away 5 ms later:
             * 42 m/s); started over with it, a 2 cm ball 1 cm into a 4 cm
             * table went 3.9 cm in its first 1 ms step, out through the
             * bottom, and the device was pushed down at the force limit.
             * The coupling's damping gives the velocity's pull instead,
             * clamped to f_lim, and the output ramps up after a fault. */
            s->proxy_v = prox_v3(0, 0, 0);
            s->proxy_init = 1;
            s->contact_nrm = prox_v3(0, 0, 0); /* a direction from another tool or before a fault is not this one's */
            /* proxy_hold_left keeps the last measured cycle's mark: where the
             * proxy starts over (a fault, a tool change, a tool pose)
             * nothing is measured yet, and if it was near something, a
             * query that finds nothing holds it (at most RT_PROXY_HOLD_MAX
             * cycles): the cautious side */
        }
        const rt_gains *g = &s->gains;
        /* the coupling can pull the proxy no harder than the device can push
         * back: a user who overpowers the device moves the handle, not the
         * proxy through the wall (no tunnelling) */
        prox_vec3 f_couple = coupling(s, &st, f_lim);
        prox_vec3 f_contact = {0, 0, 0}, tq_contact = {0, 0, 0};
        /* 4. query the tool against every other object, one forest */
        if (s->tool_slot >= 0 && s->slots[s->tool_slot].active) {
            rt_slot *tool = &s->slots[s->tool_slot];
            prox_xform tool_pose = prox_xform_from_pose(s->proxy_x, st.orientation);
            uint32_t n = 0;
            for (uint32_t i = 0; i < s->cfg.max_objects; i++) {
                if (!s->slots[i].active || (int)i == s->tool_slot)
                    continue;
                prox_object_pair *p = &s->pairs[n++];
                p->a = s->slots[i].tree;
                p->b = tool->tree;
                p->pose_a = s->slots[i].pose;
                p->pose_b = tool_pose;
                p->cache = &s->slots[i].cache;
            }
            if (n) {
                prox_query q = prox_query_default(PROX_QUERY_DISTANCE);
                q.check_every = 1; /* a clock read (~25 ns) per expansion keeps the overshoot to one expansion */
                /* Distance matters to the forces only inside the margin:
                 * nothing farther is measured (+inf: no force), and within
                 * it a distance within RT_DISTANCE_REL_ERR of the closest
                 * will do. With no margin, overlap alone. */
                q.max_distance = g->margin_m > 0 ? g->margin_m : RT_NO_MARGIN_RANGE_M;
                q.rel_err = RT_DISTANCE_REL_ERR;
                uint64_t q0 = prox_now_ns();
                q.deadline_ns = q0 + (uint64_t)(s->budget_us * 1000.0);
                prox_result r;
                int rc = prox_query_combined(s->engine, &q, s->pairs, n, &r);
                uint64_t q1 = prox_now_ns();
                query_us = (double)(q1 - q0) * 1e-3;
                hist_add(s->query_hist, query_us);
                if (q1 > q.deadline_ns) {
                    uint64_t over = q1 - q.deadline_ns, prev = atomic_load_explicit(&s->overshoot_max_ns, memory_order_relaxed);
                    if (over > prev)
                        atomic_store_explicit(&s->overshoot_max_ns, over, memory_order_relaxed);
                }
                /* +inf without overlap is no distance found: an empty voxel
                 * map, or a budget spent before any pair was settled (no
                 * force this cycle, flagged incomplete). Any other value
                 * that is not finite is a fault, and so is a pair with no
                 * handler: one the engine cannot measure is never walked
                 * through. */
                const int none_found = r.value == INFINITY && !(r.flags & PROX_RESULT_OVERLAP);
                if (rc != 0 || !(isfinite(r.value) || none_found) || !prox_v3_isfinite(r.force) || (r.flags & PROX_RESULT_NO_HANDLER)) {
                    fault = rc == 0 && (r.flags & PROX_RESULT_NO_HANDLER) ? RT_FAULT_UNMEASURABLE : RT_FAULT_QUERY;
                } else {
                    incomplete = !r.complete;
                    /* nothing settled within the budget next to an object (the
                     * last cycle measured had something within the margin):
                     * where the tool is is unknown this cycle, so the proxy
                     * holds its place (the coupling still pulls the device
                     * toward it). Coming from free space it moves on: the
                     * loop measures only within the margin, so a slow
                     * machine (an ASan build: obstacles.sim) whose queries in
                     * free space end at the budget finding nothing that
                     * close would hold the proxy for good. */
                    hold_proxy = incomplete && none_found && s->proxy_hold_left > 0;
                    if (r.flags & PROX_RESULT_OVERLAP) {
                        contact = 1;
                        distance = 0;
                        penvol = -r.value;
                        /* an incomplete (budgeted) query has summed only part of
                         * the overlap into the force; scale it to the estimate */
                        double scale = (r.lower > 0 && r.value > r.lower) ? r.value / r.lower : 1.0;
                        if (scale > 20)
                            scale = 20;
                        const double k_vol = g->stiffness_n_per_m3 * scale, f_margin = g->margin_stiffness_n_per_m * g->margin_m;
                        f_contact = prox_v3_scale(r.force, k_vol);
                        tq_contact = prox_v3_scale(r.torque, g->stiffness_n_per_m3 * g->torque_scale * scale);
                        /* the margin force stays at its full value (its value
                         * at distance 0) along the volume's push, so the force
                         * is continuous where the query turns from distance to
                         * volume: without it the 2 N a default margin gives at
                         * the surface fell to the first overlap's ~0 and the
                         * tool dropped 4 mm into the table before the volume
                         * caught up. Its direction is the volume force's once
                         * that is at least the margin force; until then (the
                         * first overlaps, or a tool so deep that the pushes
                         * cancel to rounding noise) the last contact's. */
                        const double fl = prox_v3_len(r.force);
                        if (fl > 0 && k_vol * fl >= f_margin)
                            s->contact_nrm = prox_v3_scale(r.force, 1.0 / fl);
                        f_contact = prox_v3_madd(f_contact, s->contact_nrm, f_margin);
                        f_contact = prox_v3_madd(f_contact, s->proxy_v, -g->damping_n_s_per_m);
                    } else {
                        distance = r.value;
                        if (r.value < g->margin_m) {
                            /* (touching, the closest points coincide: the
                             * last contact's direction) */
                            const prox_vec3 ab = prox_v3_sub(r.point_b, r.point_a);
                            const double l = prox_v3_len(ab);
                            if (l > 0)
                                s->contact_nrm = prox_v3_scale(ab, 1.0 / l);
                            const prox_vec3 nrm = s->contact_nrm;
                            f_contact = prox_v3_scale(nrm, g->margin_stiffness_n_per_m * (g->margin_m - r.value));
                            f_contact = prox_v3_madd(f_contact, nrm, -g->damping_n_s_per_m * prox_v3_dot(s->proxy_v, nrm));
                            contact = 1;
                        }
                    }
                    if (hold_proxy)
                        s->proxy_hold_left--;
                    else {
                        s->proxy_hold_left = contact ? RT_PROXY_HOLD_MAX : 0;
                        if (!contact) /* out of contact: the next one finds its own direction */
                            s->contact_nrm = prox_v3(0, 0, 0);
                    }
                }
            }
        }
        if (!fault) {
            /* proxy dynamics (mass 0.05 kg, semi-implicit Euler) over the
             * real time since the last cycle (skipped cycles included, at
             * most 4 periods so a stall cannot fling the proxy), in steps
             * of at most RT_PROXY_STEP_S, the coupling taken again at each
             * (the contact force held) */
            const double m = 0.05;
            double dt = s->last_cycle_ns ? (double)(cycle_start - s->last_cycle_ns) * 1e-9 : period_s;
            if (dt > 4 * period_s)
                dt = 4 * period_s;
            int steps = (int)ceil(dt / RT_PROXY_STEP_S - 1e-6);
            steps = steps < 1 ? 1 : steps;
            const double h = dt / steps;
            prox_vec3 fc = f_couple;
            if (hold_proxy)
                s->proxy_v = prox_v3(0, 0, 0);
            for (int k = 0; !hold_proxy && k < steps; k++) {
                if (k > 0)
                    fc = coupling(s, &st, f_lim);
                prox_vec3 acc = prox_v3_scale(prox_v3_add(fc, f_contact), 1.0 / m);
                s->proxy_v = prox_v3_madd(s->proxy_v, acc, h);
                s->proxy_x = prox_v3_madd(s->proxy_x, s->proxy_v, h);
            }
            f_dev = prox_v3_scale(f_couple, -1.0); /* the device feels the coupling spring */
            tq_dev = tq_contact;
            /* a proxy flung off (a contact force the integration cannot
             * hold: a huge volume stiffness) or no longer finite is a
             * fault; it starts over at the device next cycle */
            if (!prox_v3_isfinite(s->proxy_x) || !prox_v3_isfinite(s->proxy_v) ||
                prox_v3_dist(s->proxy_x, st.position) > RT_PROXY_MAX_SEPARATION_M)
                fault = RT_FAULT_PROXY;
        }
    }

    s->last_cycle_ns = cycle_start;
    /* 5. safety: whatever the geometry says */
    if (fault || !s->forces_on || atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        f_dev = prox_v3(0, 0, 0);
        tq_dev = prox_v3(0, 0, 0);
        s->ramp = 0;
    } else {
        if (s->limits.ramp_s > 0) {
            s->ramp += period_s / s->limits.ramp_s;
            if (s->ramp > 1)
                s->ramp = 1;
        } else
            s->ramp = 1;
        f_dev = prox_v3_scale(f_dev, s->ramp);
        tq_dev = prox_v3_scale(tq_dev, s->ramp);
        prox_vec3 fc = clamp_len(f_dev, f_lim);
        if (fc.x != f_dev.x || fc.y != f_dev.y || fc.z != f_dev.z)
            t.flags |= RT_TEL_CLAMPED;
        f_dev = fc;
        tq_dev = clamp_len(tq_dev, t_lim);
        /* rate limit per cycle */
        prox_vec3 df = prox_v3_sub(f_dev, s->last_force);
        if (s->limits.max_force_rate_n_per_cycle > 0 && prox_v3_len(df) > s->limits.max_force_rate_n_per_cycle) {
            f_dev = prox_v3_add(s->last_force, clamp_len(df, s->limits.max_force_rate_n_per_cycle));
            t.flags |= RT_TEL_CLAMPED;
        }
        /* the force limit wins over the rate limit: after a lower limit
         * (/limits) the last force may lie above it, and a step from there
         * would keep the output above the new limit for as long as the
         * rate takes to come down */
        fc = clamp_len(f_dev, f_lim);
        if (fc.x != f_dev.x || fc.y != f_dev.y || fc.z != f_dev.z)
            t.flags |= RT_TEL_CLAMPED;
        f_dev = fc;
    }
    if (!prox_v3_isfinite(f_dev) || !prox_v3_isfinite(tq_dev)) {
        f_dev = tq_dev = prox_v3(0, 0, 0);
        fault = RT_FAULT_OUTPUT;
    }
    s->last_force = f_dev;
    dev_command cmd = {f_dev, tq_dev, 0.0};
    if (dev_write(s->dev, &cmd) != 0 && !fault)
        fault = RT_FAULT_DEVICE_WRITE;
    if (fault) {
        /* counted by cause; the proxy starts over at the handle next cycle */
        atomic_fetch_add_explicit(&s->faults_by[fault], 1, memory_order_relaxed);
        atomic_store_explicit(&s->last_fault, fault, memory_order_relaxed);
        s->proxy_init = 0;
        s->ramp = 0;
    }
    atomic_store_explicit(&s->fault_now, fault != 0, memory_order_relaxed);

    /* 6. telemetry */
    t.tool_pos = s->proxy_init ? s->proxy_x : st.position;
    t.tool_rot = st.orientation;
    t.force_n = f_dev;
    t.torque_nm = tq_dev;
    t.distance_m = isfinite(distance) ? distance : -1.0;
    t.penvol_m3 = penvol;
    t.query_us = query_us;
    if (contact)
        t.flags |= RT_TEL_CONTACT;
    if (incomplete)
        t.flags |= RT_TEL_QUERY_INCOMPLETE;
    if (fault)
        t.flags |= RT_TEL_FAULT;
    rt_ring_push(&s->tel, &t); /* a full ring is counted by the ring */
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000.0) * 1e6)};
    nanosleep(&ts, NULL);
}

static void prefault_stack(void)
{
    volatile unsigned char buf[256 * 1024];
    for (size_t i = 0; i < sizeof buf; i += 4096)
        buf[i] = 0;
}

static void *rt_main(void *arg)
{
    rt_service *s = arg;
    pthread_setname_np(pthread_self(), "hapticd-rt");
    prefault_stack();
    const uint64_t period = rt_period_ns(s->cfg.rate_hz);
    const double period_s = (double)period * 1e-9;
    uint64_t next = prox_now_ns() + period;
    uint64_t lat_min = UINT64_MAX, lat_max = 0;
    while (!atomic_load_explicit(&s->stop, memory_order_acquire)) {
        struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        uint64_t woke = prox_now_ns();
        uint64_t lat = woke > next ? woke - next : 0;
        if (lat < lat_min)
            lat_min = lat;
        if (lat > lat_max)
            lat_max = lat;
        atomic_store_explicit(&s->lat_min_ns, lat_min, memory_order_relaxed);
        atomic_store_explicit(&s->lat_max_ns, lat_max, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->lat_sum_ns, lat, memory_order_relaxed);
        hist_add(s->lat_hist, (double)lat * 1e-3);
        rt_cycle(s, woke, woke, period_s);
        int stall = atomic_exchange_explicit(&s->test_stall_ms, 0, memory_order_relaxed);
        if (stall > 0) /* test hook only: simulates a stalled loop */
            sleep_ms(stall);
        atomic_fetch_add_explicit(&s->cycles, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->heartbeat, 1, memory_order_release);
        next += period;
        uint64_t done = prox_now_ns();
        if (done > next) {
            /* late: skip the missed cycles instead of bursting to catch up */
            uint64_t missed = (done - next) / period + 1;
            atomic_fetch_add_explicit(&s->overruns, missed, memory_order_relaxed);
            next += missed * period;
        }
    }
    /* shutdown: zero output within this cycle */
    dev_command zero = {{0, 0, 0}, {0, 0, 0}, 0};
    dev_write(s->dev, &zero);
    return NULL;
}

/* ---- housekeeping and watchdog ---- */

/* an object the loop has released: freed, and its name free (under
 * ctl_lock) */
static void release_locked(rt_service *s, uint32_t slot)
{
    nrt_object *o = &s->objects[slot];
    if (o->removing) {
        rt_object_free(&o->obj);
        memset(o, 0, sizeof *o);
    }
}

/* A command applied by the caller while no loop runs (under ctl_lock),
 * and the objects it released freed. */
static void apply_now_locked(rt_service *s, const rt_cmd *c)
{
    apply_cmd(s, c);
    uint32_t slot;
    while (rt_ring_pop(&s->rel, &slot) == 0)
        release_locked(s, slot);
}

static void drain_releases(rt_service *s)
{
    uint32_t slot;
    while (rt_ring_pop(&s->rel, &slot) == 0) {
        pthread_mutex_lock(&s->ctl_lock);
        release_locked(s, slot);
        pthread_mutex_unlock(&s->ctl_lock);
    }
}

static void drain_telemetry(rt_service *s)
{
    rt_telemetry t;
    while (rt_ring_pop(&s->tel, &t) == 0) {
        pthread_mutex_lock(&s->tel_lock);
        if (s->tel_received && t.seq != s->last_tel.seq + 1)
            s->tel_gaps += t.seq - s->last_tel.seq - 1;
        s->tel_received++;
        s->last_tel = t;
        for (int i = 0; i < s->listener_count; i++)
            s->listeners[i].fn(&t, s->listeners[i].user);
        if (s->record &&
            (fprintf(s->record, "%llu %.6f %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.6g %.6g %.6g %.6g %.6g %.6g %.9g %.9g %.3f %u\n",
                     (unsigned long long)t.seq, t.time_s, t.tool_pos.x, t.tool_pos.y, t.tool_pos.z, t.tool_rot.w, t.tool_rot.x,
                     t.tool_rot.y, t.tool_rot.z, t.force_n.x, t.force_n.y, t.force_n.z, t.torque_nm.x, t.torque_nm.y,
                     t.torque_nm.z, t.distance_m, t.penvol_m3, t.query_us, t.flags) < 0 ||
             ferror(s->record))) {
            /* a full disk or a failed device: said once, and the recording
             * ends (its file is incomplete) instead of losing lines unseen */
            fprintf(stderr, "hapticd: telemetry recording failed at record %llu (%s); recording stopped\n",
                    (unsigned long long)t.seq, strerror(errno));
            fclose(s->record);
            s->record = NULL;
        }
        pthread_mutex_unlock(&s->tel_lock);
    }
}


static void *hk_main(void *arg)
{
    rt_service *s = arg;
    /* stops after the RT thread: the final drain sees its last record */
    while (!atomic_load_explicit(&s->stop_hk, memory_order_acquire)) {
        drain_telemetry(s);
        drain_releases(s);
        sleep_ms(2);
    }
    drain_telemetry(s);
    drain_releases(s);
    return NULL;
}

static void *wd_main(void *arg)
{
    rt_service *s = arg;
    uint64_t last = atomic_load_explicit(&s->heartbeat, memory_order_acquire);
    uint64_t last_change = prox_now_ns();
    int fired = 0;
    double wd_ms = (double)atomic_load_explicit(&s->watchdog_ns, memory_order_relaxed) * 1e-6;
    while (!atomic_load_explicit(&s->stop, memory_order_acquire)) {
        sleep_ms(wd_ms / 4 > 1 ? wd_ms / 4 : 1);
        wd_ms = (double)atomic_load_explicit(&s->watchdog_ns, memory_order_relaxed) * 1e-6; /* /limits may change it */
        uint64_t hb = atomic_load_explicit(&s->heartbeat, memory_order_acquire), now = prox_now_ns();
        if (hb != last) {
            last = hb;
            last_change = now;
            fired = 0;
        } else if (!fired && (double)(now - last_change) * 1e-6 > wd_ms) {
            dev_command zero = {{0, 0, 0}, {0, 0, 0}, 0};
            dev_write(s->dev, &zero);
            atomic_fetch_add(&s->watchdog_fired, 1);
            fired = 1;
        }
    }
    return NULL;
}

/* ---- lifecycle ---- */

rt_service *rt_service_create(const rt_config *cfg, dev_device *dev, char *err, size_t errlen)
{
    rt_config c = cfg ? *cfg : rt_config_default();
    if (!dev || !(c.rate_hz >= 10 && c.rate_hz <= 20000) || !(c.budget_us >= 0) || !gains_ok(&c.gains) ||
        !limits_ok(&c.limits) || c.max_objects == 0 || c.max_objects > RT_MAX_OBJECTS || c.cpu_latency_us < -1 ||
        !(c.voxel_budget_us > 0 && c.voxel_budget_us < 1e6 / c.rate_hz) || c.ist_spheres == 0 || c.ist_spheres > RT_IST_SPHERES_MAX ||
        (c.loader.exe && !(c.loader.seconds > 0 && c.loader.seconds <= RT_LOAD_SECONDS_MAX))) {
        snprintf(err, errlen,
                 "service: invalid configuration (rate 10..20000 Hz, non-negative gains and limits, watchdog and stale times at most %g ms, 1..%u objects, CPU latency -1 or more, voxel budget above 0 and below the period, 1..%u inner spheres an object, a mesh load time limit above 0 and at most %g s)",
                 RT_LIMIT_MAX_MS, (unsigned)RT_MAX_OBJECTS, RT_IST_SPHERES_MAX, RT_LOAD_SECONDS_MAX);
        return NULL;
    }
    const char *why = gains_fit(&c.gains, &dev->info);
    if (why) {
        snprintf(err, errlen, "service: %s", why);
        return NULL;
    }
    rt_service *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "service: out of memory");
        return NULL;
    }
    s->cfg = c;
    s->dev = dev;
    s->cpu_latency_fd = -1;
    s->tool_slot = -1;
    s->budget_us = c.budget_us;
    s->gains = c.gains;
    s->limits = c.limits;
    atomic_init(&s->watchdog_ns, (uint_fast64_t)(c.limits.watchdog_ms * 1e6));
    atomic_init(&s->voxel_drops, 0);
    s->forces_on = 1;
    atomic_init(&s->forces_off_req, 0);
    atomic_init(&s->forces_on_gen, 0);
    s->budget_mirror_us = c.budget_us;
    pthread_mutex_init(&s->ctl_lock, NULL);
    pthread_mutex_init(&s->status_lock, NULL);
    s->status_copy.budget_us = c.budget_us;
    pthread_mutex_init(&s->tel_lock, NULL);
    atomic_init(&s->lat_min_ns, 0);
    s->slots = calloc(c.max_objects, sizeof *s->slots);
    s->objects = calloc(c.max_objects, sizeof *s->objects);
    s->bundle = calloc(c.max_cmds_per_cycle ? c.max_cmds_per_cycle : 1, sizeof *s->bundle);
    s->pairs = calloc(c.max_objects, sizeof *s->pairs);
    /* fronts let coherent queries start from the last cycle's cut (mesh
     * distance) or contact list (inner-sphere penetration volume) */
    s->fronts = c.front_pairs ? calloc((size_t)c.max_objects * c.front_pairs, sizeof *s->fronts) : NULL;
    if (s->fronts)
        memset(s->fronts, 0, (size_t)c.max_objects * c.front_pairs * sizeof *s->fronts); /* touch the pages now */
    s->bank = prox_bank_create();
    if (s->bank)
        prox_bank_register_defaults(s->bank);
    prox_engine_def ed = {c.queue_capacity, c.max_objects};
    s->engine = s->bank ? prox_engine_create(&ed, s->bank) : NULL;
    if (!s->slots || !s->objects || !s->bundle || !s->pairs || !s->engine || (c.front_pairs && !s->fronts) || rt_ring_init(&s->cmd, c.cmd_ring_capacity, sizeof(rt_cmd)) ||
        rt_ring_init(&s->vox, c.voxel_ring_capacity, sizeof(rt_vox_msg)) ||
        rt_ring_init(&s->tel, c.telemetry_ring_capacity, sizeof(rt_telemetry)) ||
        rt_ring_init(&s->rel, c.max_objects * 2, sizeof(uint32_t))) {
        snprintf(err, errlen, "service: out of memory");
        rt_service_destroy(s);
        return NULL;
    }
    return s;
}

int rt_service_start(rt_service *s, char *err, size_t errlen)
{
    if (atomic_load(&s->running)) {
        snprintf(err, errlen, "service: already running");
        return -1;
    }
    if (s->lockstep) {
        snprintf(err, errlen, "service: driven in lockstep (rt_service_step); the threads cannot take over its clock");
        return -1;
    }
    s->ever_started = 1;
    s->start_ns = prox_now_ns();
    s->stop_ns = 0;
    atomic_store(&s->stop, 0);
    atomic_store(&s->stop_hk, 0);
    char note[320] = "";
    s->cpu_latency_held = 0;
    if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0)
        s->memlocked = 1;
    else
        snprintf(note, sizeof note, "mlockall failed (%s)", strerror(errno));
    /* CPU idle states: a CPU woken from a deep one adds its exit latency
     * to every cycle's wake-up. The PM QoS request holds while the file
     * stays open (cyclictest makes the same request for itself: on this
     * VM, bench/run_rt.sh, hapticd's wake-up p99 was 66-84 us without it
     * against cyclictest's 34-40, and 28-32 against 28-36 with it) */
    if (s->cfg.cpu_latency_us >= 0) {
        int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
        int32_t us = s->cfg.cpu_latency_us;
        if (fd >= 0 && write(fd, &us, sizeof us) == (ssize_t)sizeof us)
            s->cpu_latency_fd = fd, s->cpu_latency_held = 1;
        else {
            size_t l = strlen(note);
            snprintf(note + l, sizeof note - l, "%sno CPU wake-up latency request (/dev/cpu_dma_latency: %s)", l ? "; " : "",
                     strerror(errno));
            if (fd >= 0)
                close(fd);
        }
    }
    /* RT thread: SCHED_FIFO and pinning when allowed; any failure (EPERM,
     * EAGAIN, EINVAL) means "no RT": retry plainly and say so once */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    int rc = -1;
    if (s->cfg.priority > 0) {
        struct sched_param sp = {.sched_priority = s->cfg.priority};
        pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
        pthread_attr_setschedparam(&attr, &sp);
        if (s->cfg.cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(s->cfg.cpu, &set);
            pthread_attr_setaffinity_np(&attr, sizeof set, &set);
        }
        rc = pthread_create(&s->rt_thread, &attr, rt_main, s);
        if (rc == 0) {
            s->realtime = 1;
            s->pinned = s->cfg.cpu >= 0;
        } else {
            size_t l = strlen(note);
            snprintf(note + l, sizeof note - l, "%sSCHED_FIFO %d not permitted (%s)", l ? "; " : "", s->cfg.priority, strerror(rc));
        }
    }
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pthread_attr_init(&attr);
        if (s->cfg.cpu >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(s->cfg.cpu, &set);
            s->pinned = pthread_attr_setaffinity_np(&attr, sizeof set, &set) == 0;
        }
        rc = pthread_create(&s->rt_thread, &attr, rt_main, s);
        pthread_attr_destroy(&attr);
        if (rc != 0 && s->pinned) {
            s->pinned = 0;
            rc = pthread_create(&s->rt_thread, NULL, rt_main, s);
        }
    }
    if (rc != 0) {
        snprintf(err, errlen, "service: cannot start the loop thread: %s", strerror(rc));
        if (s->cpu_latency_fd >= 0)
            close(s->cpu_latency_fd); /* no run to hold it for */
        s->cpu_latency_fd = -1, s->cpu_latency_held = 0;
        return -1;
    }
    snprintf(s->rt_note, sizeof s->rt_note, "%s", note);
    if (note[0])
        fprintf(stderr, "hapticd: running without full real-time support: %s\n", note);
    s->rt_started = 1;
    if (pthread_create(&s->hk_thread, NULL, hk_main, s) == 0)
        s->hk_started = 1;
    if (pthread_create(&s->wd_thread, NULL, wd_main, s) == 0)
        s->wd_started = 1;
    atomic_store(&s->running, 1);
    return 0;
}

void rt_service_stop(rt_service *s)
{
    if (!s || !atomic_load(&s->running))
        return;
    atomic_store_explicit(&s->stop, 1, memory_order_release);
    if (s->rt_started)
        pthread_join(s->rt_thread, NULL);
    atomic_store_explicit(&s->stop_hk, 1, memory_order_release);
    if (s->hk_started)
        pthread_join(s->hk_thread, NULL);
    if (s->wd_started)
        pthread_join(s->wd_thread, NULL);
    s->rt_started = s->hk_started = s->wd_started = 0;
    s->stop_ns = prox_now_ns();
    /* what the loop left queued is applied now, in order, before any
     * command sent after the stop (those apply at once): left in the
     * queues, it would run at a restart, over the newer ones */
    pthread_mutex_lock(&s->ctl_lock);
    rt_cmd c;
    while (rt_ring_pop(&s->cmd, &c) == 0)
        apply_now_locked(s, &c);
    rt_vox_msg vm;
    while (rt_ring_pop(&s->vox, &vm) == 0)
        apply_vox(s, &vm);
    /* a bundle open now: its commands too, before the next ones (staged
     * only while a loop owns the queues, so only here do they outlive it;
     * the bundle stays open, empty) */
    for (uint32_t i = 0; i < s->bundle_n; i++)
        apply_now_locked(s, &s->bundle[i]);
    s->bundle_n = 0;
    atomic_store(&s->running, 0);
    pthread_mutex_unlock(&s->ctl_lock);
    if (s->memlocked)
        munlockall();
    if (s->cpu_latency_fd >= 0)
        close(s->cpu_latency_fd); /* ends the request */
    s->cpu_latency_fd = -1;
}

/* Closes the recording (tel_lock held): 0, or -1 when its last lines,
 * still in the stream's buffer, could not be written (a full disk): said
 * on stderr as drain_telemetry says a line it cannot write. */
static int record_close(rt_service *s)
{
    const int rc = fclose(s->record);
    s->record = NULL;
    if (rc != 0) {
        fprintf(stderr, "hapticd: telemetry recording failed when closed (%s): its last lines are lost\n", strerror(errno));
        return -1;
    }
    return 0;
}

void rt_service_destroy(rt_service *s)
{
    if (!s)
        return;
    rt_service_stop(s);
    if (s->objects)
        for (uint32_t i = 0; i < s->cfg.max_objects; i++)
            if (s->objects[i].used)
                rt_object_free(&s->objects[i].obj);
    if (s->record)
        record_close(s);
    rt_ring_free(&s->cmd);
    rt_ring_free(&s->vox);
    rt_ring_free(&s->tel);
    rt_ring_free(&s->rel);
    prox_engine_destroy(s->engine);
    prox_bank_destroy(s->bank);
    free(s->slots);
    free(s->objects);
    free(s->bundle);
    free(s->pairs);
    free(s->fronts);
    pthread_mutex_destroy(&s->ctl_lock);
    pthread_mutex_destroy(&s->status_lock);
    pthread_mutex_destroy(&s->tel_lock);
    free(s);
}

/* ---- control (non-RT) ---- */

/* a loop drains the command and voxel queues: the RT thread, or the
 * caller's rt_service_step (lockstep); before either, updates apply at once */
static int loop_owns_queues(rt_service *s) { return atomic_load(&s->running) || s->lockstep; }

/* Before the loop runs, commands are applied directly (same code). */
static int push_cmd_locked(rt_service *s, const rt_cmd *c, char *err, size_t errlen)
{
    if (!loop_owns_queues(s)) { /* no loop yet: apply it here (lockstep: the next step drains the ring) */
        apply_now_locked(s, c);
        return 0;
    }
    /* a bundle's commands keep their room in the queue from the start, so
     * that its end can hand them all over */
    const int mine = s->bundle_depth > 0 && pthread_equal(s->bundle_owner, pthread_self());
    if (rt_ring_count(&s->cmd) + s->bundle_n >= s->cmd.capacity) {
        s->cmd_refused++;
        snprintf(err, errlen, "command queue full (%u commands%s); try again", s->cmd.capacity,
                 s->bundle_n ? ", a bundle's held back included" : "");
        return -1;
    }
    if (mine) {
        if (s->bundle_n >= s->cfg.max_cmds_per_cycle) {
            s->cmd_refused++;
            snprintf(err, errlen, "a bundle holds at most %u commands (max_cmds_per_cycle)", s->cfg.max_cmds_per_cycle);
            return -1;
        }
        s->bundle[s->bundle_n] = *c;
        s->bundle[s->bundle_n++].more = 1;
        return 0;
    }
    (void)rt_ring_push(&s->cmd, c); /* room checked above, under the lock every producer holds */
    return 0;
}

int rt_service_bundle_begin(rt_service *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->ctl_lock);
    int rc = 0;
    if (s->bundle_depth > 0 && !pthread_equal(s->bundle_owner, pthread_self())) {
        snprintf(err, errlen, "another thread holds a bundle open");
        rc = -1;
    } else if (s->bundle_depth++ == 0)
        s->bundle_owner = pthread_self();
    pthread_mutex_unlock(&s->ctl_lock);
    return rc;
}

int rt_service_bundle_end(rt_service *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->ctl_lock);
    int rc = 0;
    if (s->bundle_depth == 0 || !pthread_equal(s->bundle_owner, pthread_self())) {
        snprintf(err, errlen, "no bundle open on this thread");
        rc = -1;
    } else if (--s->bundle_depth == 0 && s->bundle_n) {
        /* (held only while a loop owns the queues: rt_service_stop applies
         * what a bundle holds when the loop stops) */
        s->bundle[s->bundle_n - 1].more = 0;
        if (rt_ring_push_n(&s->cmd, s->bundle, s->bundle_n) != 0) {
            /* cannot happen: the room was kept (push_cmd_locked), and
             * only the loop takes commands out meanwhile */
            snprintf(err, errlen, "command queue full: a bundle of %u commands lost", s->bundle_n);
            s->cmd_refused += s->bundle_n;
            rc = -1;
        } else
            rc = (int)s->bundle_n;
        s->bundle_n = 0;
    }
    pthread_mutex_unlock(&s->ctl_lock);
    return rc;
}

/* whether slot's ADD waits in the open bundle (the loop has not got the
 * object yet: voxel updates for it would be dropped unseen) */
static int add_held_locked(const rt_service *s, uint32_t slot)
{
    for (uint32_t i = 0; i < s->bundle_n; i++)
        if (s->bundle[i].type == CMD_ADD && s->bundle[i].slot == slot)
            return 1;
    return 0;
}

static int find_locked(rt_service *s, const char *name)
{
    for (uint32_t i = 0; i < s->cfg.max_objects; i++)
        if (s->objects[i].used && !s->objects[i].removing && !strcmp(s->objects[i].name, name))
            return (int)i;
    return -1;
}

/* the slot of the object named `name`, or -1 and the message */
static int find_named_locked(rt_service *s, const char *name, char *err, size_t errlen)
{
    const int slot = find_locked(s, name ? name : "");
    if (slot < 0)
        snprintf(err, errlen, "no object named '%s'", name ? name : "");
    return slot;
}

/* 1 (and the message) where an object has the name already */
static int name_taken_locked(rt_service *s, const char *name, char *err, size_t errlen)
{
    if (find_locked(s, name) < 0)
        return 0;
    snprintf(err, errlen, "an object named '%s' exists; remove it first", name);
    return 1;
}

static int name_ok(const char *name, char *err, size_t errlen)
{
    if (!name || !name[0] || strlen(name) >= RT_NAME_MAX) {
        snprintf(err, errlen, "object names are 1 to %d characters", RT_NAME_MAX - 1);
        return 0;
    }
    return 1;
}

/* A pose the engine takes: finite, within its reach (PROX_MAX_TRANSLATION)
 * and a rotation (prox_m3_is_rotation); the engine refuses any other as
 * bad input, so an object posed so would fault every cycle. 0 if fine,
 * else -1 with what is wrong in err (after `who: ` when who is given). */
static int pose_check(const prox_xform *p, const char *who, char *err, size_t errlen)
{
    const char *sep = who && who[0] ? ": " : "";
    who = who ? who : "";
    switch (prox_xform_check(p)) {
    case PROX_XFORM_OK:
        return 0;
    case PROX_XFORM_NOT_FINITE:
        snprintf(err, errlen, "%s%spose is not finite", who, sep);
        break;
    case PROX_XFORM_TOO_FAR:
        snprintf(err, errlen, "%s%spose translates beyond %g", who, sep, PROX_MAX_TRANSLATION);
        break;
    case PROX_XFORM_NOT_ROTATION:
        snprintf(err, errlen, "%s%spose matrix is not a rotation (orthonormal, det +1)", who, sep);
        break;
    }
    return -1;
}

static const char *tree_kind(uint32_t type)
{
    switch (type) {
    case PROX_TREE_MESH: return "a mesh BVH";
    case PROX_TREE_IST: return "an inner sphere tree";
    case PROX_TREE_VOXEL: return "a voxel map";
    case PROX_TREE_BOXES: return "inner and outer boxes";
    default: return "a tree of another type";
    }
}

/* The loop measures the tool against every other object with one distance
 * query (then penetration volume where they overlap): a pair the engine
 * has no distance query for would fault every cycle, so it is refused when
 * the scene is built. 1 (and the message) where object `name` (tree `tree`)
 * and the tool in slot `tool` are such a pair.
 * An inner sphere tree beside a mesh BVH (an open mesh) is measured
 * through a mesh BVH of its surface, built here (off the RT thread, once
 * a tree, prox_ist_prepare_pair) only when such a pair forms: scenes
 * without one pay nothing. The trees are built in place before the command
 * that pairs them is pushed (the ring's release orders it), and the RT
 * thread reads the new BVH only in the (IST, MESH) queries that command
 * starts. 1 with the message where that build fails. */
static int unmeasurable_locked(rt_service *s, const char *name, const prox_tree *tree, int tool, char *err, size_t errlen)
{
    const prox_tree *tt = s->objects[tool].obj.tree;
    const uint32_t ta = tree->type, tb = tt->type;
    int swapped;
    if (prox_bank_find(s->bank, ta, tb, PROX_QUERY_DISTANCE, &swapped)) {
        char e2[256];
        /* (the service made the trees, rt_object_load/from_mesh, and owns them) */
        if (prox_ist_prepare_pair(tree, tt, e2, sizeof e2) != 0) {
            snprintf(err, errlen, "the loop cannot measure '%s' (%s) against the tool '%s' (%s): %s", name, tree_kind(ta),
                     s->objects[tool].name, tree_kind(tb), e2);
            return 1;
        }
        return 0;
    }
    snprintf(err, errlen, "the loop cannot measure '%s' (%s) against the tool '%s' (%s): the engine has no distance query "
             "for that pair%s",
             name, tree_kind(ta), s->objects[tool].name, tree_kind(tb),
             ta == PROX_TREE_MESH || tb == PROX_TREE_MESH ? " (a mesh that is not closed loads as a mesh BVH)" : "");
    return 1;
}

int rt_service_add_object(rt_service *s, const char *name, rt_object *obj, const prox_xform *pose, char *err, size_t errlen)
{
    if (!name_ok(name, err, errlen))
        return -1;
    prox_xform x = pose ? *pose : prox_xform_identity();
    if (pose_check(&x, name, err, errlen) != 0)
        return -1;
    if (!obj || !obj->tree) {
        snprintf(err, errlen, "'%s': no object to add (not built)", name);
        return -1;
    }
    pthread_mutex_lock(&s->ctl_lock);
    int rc = -1;
    if (!name_taken_locked(s, name, err, errlen)) {
        int slot = -1;
        for (uint32_t i = 0; i < s->cfg.max_objects && slot < 0; i++)
            if (!s->objects[i].used)
                slot = (int)i;
        if (slot < 0) {
            snprintf(err, errlen, "scene full (%u objects)", s->cfg.max_objects);
        } else {
            const int tool = s->tool_mirror[0] ? find_locked(s, s->tool_mirror) : -1;
            rt_cmd c = {CMD_ADD, (uint32_t)slot, obj->tree, x, {0}, s->next_gen + 1, 0};
            if ((tool < 0 || !unmeasurable_locked(s, name, obj->tree, tool, err, errlen)) &&
                push_cmd_locked(s, &c, err, errlen) == 0) {
                nrt_object *o = &s->objects[slot];
                snprintf(o->name, sizeof o->name, "%s", name);
                s->next_gen++;
                o->used = 1;
                o->gen = c.gen;
                o->obj = *obj; /* the service owns it now */
                memset(obj, 0, sizeof *obj);
                rc = 0;
            }
        }
    }
    pthread_mutex_unlock(&s->ctl_lock);
    return rc;
}

int rt_service_load_object(rt_service *s, const char *name, const char *path, const prox_xform *pose, uint32_t ist_spheres,
                           char *err, size_t errlen)
{
    if (!name_ok(name, err, errlen))
        return -1;
    if (pose && pose_check(pose, name, err, errlen) != 0) /* before a build that may take seconds (NULL: the identity) */
        return -1;
    if (ist_spheres > RT_IST_SPHERES_MAX) {
        snprintf(err, errlen, "'%s': %u inner spheres asked for, at most %u", name, (unsigned)ist_spheres, RT_IST_SPHERES_MAX);
        return -1;
    }
    if (ist_spheres && rt_object_is_file(path)) {
        snprintf(err, errlen, "'%s': a sphere count sizes the inner sphere tree built from a mesh; %s is built already", name, path);
        return -1;
    }
    /* a name in use is refused before a build that may take seconds (and
     * again when the object is added: the scene may change meanwhile) */
    pthread_mutex_lock(&s->ctl_lock);
    const int taken = name_taken_locked(s, name, err, errlen);
    pthread_mutex_unlock(&s->ctl_lock);
    if (taken)
        return -1;
    rt_object obj;
    if (rt_object_load(path, ist_spheres ? ist_spheres : s->cfg.ist_spheres, &s->cfg.loader, &obj, err, errlen) != 0)
        return -1;
    if (rt_service_add_object(s, name, &obj, pose, err, errlen) != 0) {
        rt_object_free(&obj);
        return -1;
    }
    return 0;
}

int rt_service_remove_object(rt_service *s, const char *name, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->ctl_lock);
    int slot = find_named_locked(s, name, err, errlen), rc = -1;
    if (slot >= 0) {
        rt_cmd c = {CMD_REMOVE, (uint32_t)slot, NULL, prox_xform_identity(), {0}, 0, 0};
        s->objects[slot].removing = 1;
        if (push_cmd_locked(s, &c, err, errlen) == 0) {
            rc = 0;
            if (!strcmp(s->tool_mirror, name))
                s->tool_mirror[0] = 0;
        } else
            s->objects[slot].removing = 0;
    }
    pthread_mutex_unlock(&s->ctl_lock);
    return rc;
}

static int slot_cmd(rt_service *s, const char *name, rt_cmd *c, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->ctl_lock);
    int slot = find_named_locked(s, name, err, errlen), rc = -1;
    if (slot >= 0) {
        c->slot = (uint32_t)slot;
        rc = push_cmd_locked(s, c, err, errlen);
    }
    pthread_mutex_unlock(&s->ctl_lock);
    return rc;
}

int rt_service_set_pose(rt_service *s, const char *name, const prox_xform *pose, char *err, size_t errlen)
{
    if (!pose) {
        snprintf(err, errlen, "no pose");
        return -1;
    }
    if (pose_check(pose, name, err, errlen) != 0)
        return -1;
    rt_cmd c = {CMD_POSE, 0, NULL, *pose, {0}, 0, 0};
    return slot_cmd(s, name, &c, err, errlen);
}

int rt_service_set_tool(rt_service *s, const char *name, char *err, size_t errlen)
{
    rt_cmd c = {CMD_TOOL, 0, NULL, prox_xform_identity(), {0}, 0, 0};
    pthread_mutex_lock(&s->ctl_lock);
    int slot = find_named_locked(s, name, err, errlen), rc = -1;
    if (slot >= 0) {
        int refused = 0;
        for (uint32_t i = 0; i < s->cfg.max_objects && !refused; i++)
            if ((int)i != slot && s->objects[i].used && !s->objects[i].removing)
                refused = unmeasurable_locked(s, s->objects[i].name, s->objects[i].obj.tree, slot, err, errlen);
        c.slot = (uint32_t)slot;
        if (!refused && (rc = push_cmd_locked(s, &c, err, errlen)) == 0)
            snprintf(s->tool_mirror, sizeof s->tool_mirror, "%s", name);
    }
    pthread_mutex_unlock(&s->ctl_lock);
    return rc;
}

static int global_cmd(rt_service *s, rt_cmd *c, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->ctl_lock);
    int rc = push_cmd_locked(s, c, err, errlen);
    pthread_mutex_unlock(&s->ctl_lock);
    return rc;
}

int rt_service_set_budget_us(rt_service *s, double budget_us, char *err, size_t errlen)
{
    double period_us = 1e6 / s->cfg.rate_hz;
    if (!isfinite(budget_us) || budget_us < 0 || budget_us > period_us) {
        snprintf(err, errlen, "budget must be 0..%.0f us (the loop period)", period_us);
        return -1;
    }
    rt_cmd c = {CMD_BUDGET, 0, NULL, prox_xform_identity(), {budget_us}, 0, 0};
    pthread_mutex_lock(&s->ctl_lock);
    int rc = push_cmd_locked(s, &c, err, errlen);
    if (rc == 0)
        s->budget_mirror_us = budget_us;
    pthread_mutex_unlock(&s->ctl_lock);
    return rc;
}

int rt_service_set_gains(rt_service *s, const rt_gains *g, char *err, size_t errlen)
{
    if (!g || !gains_ok(g)) {
        snprintf(err, errlen, "gains must be finite and non-negative");
        return -1;
    }
    const char *why = gains_fit(g, &s->dev->info);
    if (why) {
        snprintf(err, errlen, "%s (%g N/m, %g N s/m)", why, s->dev->info.max_stiffness_n_per_m, s->dev->info.max_damping_n_s_per_m);
        return -1;
    }
    rt_cmd c = {CMD_GAINS, 0, NULL, prox_xform_identity(), {0}, 0, 0};
    memcpy(c.v, g, sizeof *g);
    return global_cmd(s, &c, err, errlen);
}

int rt_service_set_limits(rt_service *s, const rt_limits *l, char *err, size_t errlen)
{
    if (!l || !limits_ok(l)) {
        snprintf(err, errlen, "limits must be finite and non-negative (watchdog and stale times above 0 and at most %g ms)", RT_LIMIT_MAX_MS);
        return -1;
    }
    rt_cmd c = {CMD_LIMITS, 0, NULL, prox_xform_identity(), {0}, 0, 0};
    memcpy(c.v, l, sizeof *l);
    int rc = global_cmd(s, &c, err, errlen);
    if (rc == 0) /* the watchdog (its own thread) takes the new limit at once */
        atomic_store_explicit(&s->watchdog_ns, (uint_fast64_t)(l->watchdog_ms * 1e6), memory_order_relaxed);
    return rc;
}

int rt_service_enable_forces(rt_service *s, int enable, char *err, size_t errlen)
{
    if (!enable) { /* no lock to wait for, no queue room to lack: never refused, never late */
        atomic_fetch_add_explicit(&s->forces_off_req, 1, memory_order_release);
        return 0;
    }
    pthread_mutex_lock(&s->ctl_lock);
    rt_cmd c = {CMD_FORCES, 0, NULL, prox_xform_identity(), {1.0}, atomic_load(&s->forces_off_req), 0};
    int rc = push_cmd_locked(s, &c, err, errlen);
    if (rc == 0)
        atomic_store(&s->forces_on_gen, c.gen);
    pthread_mutex_unlock(&s->ctl_lock);
    return rc;
}

int rt_service_voxel_update(rt_service *s, const char *name, const rt_voxel_update *u, uint32_t count, char *err,
                            size_t errlen)
{
    pthread_mutex_lock(&s->ctl_lock);
    int slot = find_named_locked(s, name, err, errlen);
    if (slot < 0) {
        pthread_mutex_unlock(&s->ctl_lock);
        return -1;
    }
    const char *why = add_held_locked(s, (uint32_t)slot) ? "added in a bundle still open: send its voxel updates after the bundle"
                                             : rt_object_voxel_check(&s->objects[slot].obj, u, count);
    if (why) {
        pthread_mutex_unlock(&s->ctl_lock);
        snprintf(err, errlen, "%s: %s", name, why);
        return -1;
    }
    uint32_t i = 0;
    for (; i < count; i++) {
        rt_vox_msg m = {(uint32_t)slot, s->objects[slot].gen, u[i]};
        if (loop_owns_queues(s)) {
            if (rt_ring_push(&s->vox, &m) != 0)
                break;
        } else /* (no loop: its ADD was applied here, the slot is live) */
            apply_vox(s, &m);
    }
    if (i < count) /* every update that did not fit, not one per call */
        atomic_fetch_add_explicit(&s->voxel_drops, count - i, memory_order_relaxed);
    pthread_mutex_unlock(&s->ctl_lock);
    return (int)i;
}

int rt_service_add_telemetry_listener(rt_service *s, rt_telemetry_fn fn, void *user)
{
    pthread_mutex_lock(&s->tel_lock);
    int rc = -1;
    if (s->listener_count < (int)(sizeof s->listeners / sizeof s->listeners[0])) {
        s->listeners[s->listener_count++] = (listener){fn, user};
        rc = 0;
    }
    pthread_mutex_unlock(&s->tel_lock);
    return rc;
}

int rt_service_remove_telemetry_listener(rt_service *s, rt_telemetry_fn fn, void *user)
{
    pthread_mutex_lock(&s->tel_lock);
    int rc = -1;
    for (int i = 0; i < s->listener_count; i++)
        if (s->listeners[i].fn == fn && s->listeners[i].user == user) {
            s->listeners[i] = s->listeners[--s->listener_count];
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&s->tel_lock);
    return rc;
}

static int record_open(rt_service *s, const char *path, int fresh, char *err, size_t errlen)
{
    /* fresh: a new regular file only (O_EXCL: never an existing file, nor
     * through a symbolic link) */
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (fresh ? O_EXCL | O_NOFOLLOW : O_TRUNC), 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, errno == EEXIST ? "exists (a recording never replaces a file)" : strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fprintf(f, "# hapticd telemetry: seq time_s tx ty tz qw qx qy qz fx fy fz mx my mz distance_m penvol_m3 query_us flags\n");
    pthread_mutex_lock(&s->tel_lock);
    if (s->record)
        record_close(s);
    s->record = f;
    pthread_mutex_unlock(&s->tel_lock);
    return 0;
}

int rt_service_record_start(rt_service *s, const char *path, char *err, size_t errlen)
{
    return record_open(s, path, 0, err, errlen);
}

int rt_service_record_start_new(rt_service *s, const char *path, char *err, size_t errlen)
{
    return record_open(s, path, 1, err, errlen);
}

int rt_service_record_stop(rt_service *s)
{
    pthread_mutex_lock(&s->tel_lock);
    const int rc = !s->record ? -1 : record_close(s) ? -2 : 0;
    pthread_mutex_unlock(&s->tel_lock);
    return rc;
}

static double hist_pct(const atomic_uint *h, double p)
{
    uint64_t total = 0;
    for (int i = 0; i < LAT_BINS; i++)
        total += atomic_load_explicit(&h[i], memory_order_relaxed);
    if (!total)
        return 0;
    uint64_t want = (uint64_t)(p * (double)(total - 1)), acc = 0;
    for (int i = 0; i < LAT_BINS; i++) {
        acc += atomic_load_explicit(&h[i], memory_order_relaxed);
        if (acc > want)
            return i + 1.0; /* upper edge of the 1 us bin */
    }
    return LAT_BINS;
}

int rt_service_status(rt_service *s, rt_status *o)
{
    memset(o, 0, sizeof *o);
    o->running = atomic_load(&s->running);
    o->realtime = s->realtime;
    o->memlocked = s->memlocked;
    o->pinned = s->pinned;
    o->cpu_latency_held = s->cpu_latency_held;
    o->cycles = atomic_load(&s->cycles);
    o->overruns = atomic_load(&s->overruns);
    /* after a stop: the run's length, so the final statistics keep their rate */
    uint64_t end = o->running ? prox_now_ns() : s->stop_ns;
    o->uptime_s = end > s->start_ns && (s->start_ns || s->lockstep) ? (double)(end - s->start_ns) * 1e-9 : 0;
    o->rate_hz = o->uptime_s > 0 ? (double)o->cycles / o->uptime_s : 0;
    o->latency_min_us = (double)atomic_load(&s->lat_min_ns) * 1e-3;
    o->latency_max_us = (double)atomic_load(&s->lat_max_ns) * 1e-3;
    o->latency_avg_us = o->cycles ? (double)atomic_load(&s->lat_sum_ns) * 1e-3 / (double)o->cycles : 0;
    o->latency_p50_us = hist_pct(s->lat_hist, 0.5);
    o->latency_p99_us = hist_pct(s->lat_hist, 0.99);
    o->latency_p999_us = hist_pct(s->lat_hist, 0.999);
    o->query_p99_us = hist_pct(s->query_hist, 0.99);
    o->query_max_us = hist_pct(s->query_hist, 1.0);
    o->budget_overshoot_max_us = (double)atomic_load(&s->overshoot_max_ns) * 1e-3;
    o->cmd_drops = rt_ring_drops(&s->cmd);
    o->voxel_drops = atomic_load_explicit(&s->voxel_drops, memory_order_relaxed);
    o->voxel_queued = rt_ring_count(&s->vox);
    o->telemetry_drops = rt_ring_drops(&s->tel);
    o->fault = atomic_load(&s->fault_now);
    o->rt_note = s->rt_note;
    /* the scene's mirrors: read under ctl_lock when it comes within
     * RT_STATUS_WAIT_MS (other holders keep it for microseconds), else (a
     * control thread building under it) the last copy read */
    pthread_mutex_lock(&s->status_lock);
    /* (tried every 200 us: pthread_mutex_clocklock would do, but
     * ThreadSanitizer does not know it) */
    int got = pthread_mutex_trylock(&s->ctl_lock) == 0;
    for (int i = 0; !got && !s->status_copy.fell_back && i < RT_STATUS_WAIT_MS * 5; i++) {
        const struct timespec pause = {0, 200000};
        nanosleep(&pause, NULL);
        got = pthread_mutex_trylock(&s->ctl_lock) == 0;
    }
    s->status_copy.fell_back = !got; /* the next ones do not wait again until the lock is free */
    if (got) {
        s->status_copy.cmd_refused = s->cmd_refused;
        s->status_copy.objects = 0;
        for (uint32_t i = 0; i < s->cfg.max_objects; i++)
            s->status_copy.objects += s->objects[i].used && !s->objects[i].removing;
        s->status_copy.budget_us = s->budget_mirror_us;
        snprintf(s->status_copy.tool, sizeof s->status_copy.tool, "%s", s->tool_mirror);
        pthread_mutex_unlock(&s->ctl_lock);
    }
    o->cmd_drops += s->status_copy.cmd_refused;
    o->object_count = s->status_copy.objects;
    o->budget_us = s->status_copy.budget_us;
    snprintf(o->tool, sizeof o->tool, "%s", s->status_copy.tool);
    pthread_mutex_unlock(&s->status_lock);
    o->forces_enabled = atomic_load(&s->forces_on_gen) == atomic_load(&s->forces_off_req);
    pthread_mutex_lock(&s->tel_lock);
    o->distance_m = s->last_tel.distance_m;
    o->penvol_m3 = s->last_tel.penvol_m3;
    o->force_n = s->last_tel.force_n;
    o->telemetry_gaps = s->tel_gaps;
    o->telemetry_received = s->tel_received;
    pthread_mutex_unlock(&s->tel_lock);
    /* faults: the sum of the causes read, so they add up in a snapshot of a
     * running loop too (the two counters are not read at one instant) */
    o->faults = 0;
    for (int c = 0; c < RT_FAULT_CAUSE_COUNT; c++)
        o->faults += o->faults_by_cause[c] = atomic_load(&s->faults_by[c]);
    o->last_fault_cause = atomic_load(&s->last_fault);
    o->watchdog_fired = atomic_load(&s->watchdog_fired);
    return 0;
}

const char *rt_fault_name(int cause)
{
    static const char *const names[RT_FAULT_CAUSE_COUNT] = {
        [RT_FAULT_NONE] = "none",
        [RT_FAULT_DEVICE_READ] = "device_read",
        [RT_FAULT_DEVICE_STATE] = "device_state",
        [RT_FAULT_DEVICE_STALE] = "device_stale",
        [RT_FAULT_QUERY] = "query",
        [RT_FAULT_UNMEASURABLE] = "unmeasurable_pair",
        [RT_FAULT_PROXY] = "proxy",
        [RT_FAULT_OUTPUT] = "output",
        [RT_FAULT_DEVICE_WRITE] = "device_write",
    };
    return cause >= 0 && cause < RT_FAULT_CAUSE_COUNT ? names[cause] : "unknown";
}

void rt_service_test_stall(rt_service *s, int ms) { atomic_store(&s->test_stall_ms, ms); }

int rt_service_step(rt_service *s, uint64_t t_ns, char *err, size_t errlen)
{
    if (atomic_load(&s->running) || s->ever_started) {
        snprintf(err, errlen, "service: started on its own thread once; lockstep steps only a service never started");
        return -1;
    }
    const uint64_t period = rt_period_ns(s->cfg.rate_hz);
    if (s->lockstep && t_ns <= s->last_cycle_ns) {
        snprintf(err, errlen, "service: step time %llu ns is not after the last step's (%llu ns)", (unsigned long long)t_ns,
                 (unsigned long long)s->last_cycle_ns);
        return -1;
    }
    if (!s->lockstep)
        s->lockstep = 1, s->start_ns = t_ns;
    rt_cycle(s, t_ns, prox_now_ns(), (double)period * 1e-9);
    atomic_fetch_add_explicit(&s->cycles, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->heartbeat, 1, memory_order_release);
    s->stop_ns = t_ns + period;
    drain_telemetry(s);
    drain_releases(s);
    return 0;
}
