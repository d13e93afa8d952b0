/* rt_service.h - the hapticd service: configuration, control and status.
 *
 * The service owns the real-time thread (rt_loop), the rings between it and
 * the non-RT side, the live scene, and a housekeeping thread (non-RT) that
 * drains telemetry, records, and frees retired objects.
 *
 * Thread rules: every function here is called from non-RT threads (main,
 * the OSC thread); none of them is real-time safe, none blocks on the RT
 * thread. Control functions turn into commands on the command ring; a full
 * ring returns -1 with "command queue full" and changes nothing. Functions
 * may be called from several non-RT threads: the service serializes its
 * producers internally with a mutex (the RT thread never takes it).
 *
 * Units: metres, newtons, newton-metres, seconds unless a name says
 * otherwise. Poses are world frame.
 */
#ifndef RT_SERVICE_H
#define RT_SERVICE_H

#include <stddef.h>
#include <stdint.h>

#include "dev_device.h"
#include "prox_math.h"
#include "rt_objects.h"

#define RT_NAME_MAX 32 /* object names, including the terminating NUL */

typedef struct rt_gains {
    double stiffness_n_per_m3;  /* penalty force per unit penetration volume */
    double margin_m;            /* repulsive force inside this distance when not penetrating; while penetrating, its
                                   full value (margin_stiffness x margin_m) along the volume's push: continuous */
    double margin_stiffness_n_per_m;
    double damping_n_s_per_m;   /* damping on the tool's velocity while in contact/margin */
    double coupling_k_n_per_m;  /* virtual coupling between device and tool */
    double coupling_b_n_s_per_m;
    double torque_scale;        /* torque gain relative to force */
} rt_gains;

typedef struct rt_limits {
    double max_force_n;         /* clamped to the device's own limit as well */
    double max_torque_nm;
    double max_force_rate_n_per_cycle;
    double ramp_s;              /* ramp from 0 to full force when forces are enabled */
    double watchdog_ms;         /* zero output if the loop has not run for this long (above 0, at most RT_LIMIT_MAX_MS) */
    double stale_device_ms;     /* a device reading older than this is a fault (above 0, at most RT_LIMIT_MAX_MS) */
} rt_limits;
/* the longest watchdog and stale-device times (10 s): a limit no hand can
 * wait out; longer ones were taken, and one past 1.8e13 ms overflowed the
 * watchdog's nanosecond count (found by fuzzing /limits) */
#define RT_LIMIT_MAX_MS 1e4

/* the most objects a service holds (rt_config.max_objects) */
#define RT_MAX_OBJECTS 4096u

/* the longest a mesh load may be given (rt_config.loader.seconds) */
#define RT_LOAD_SECONDS_MAX 3600.0

typedef struct rt_config {
    double rate_hz;             /* loop rate; default 1000 */
    double budget_us;           /* query budget per cycle; default 300 */
    int cpu;                    /* CPU to pin the RT thread to; -1 = none */
    int priority;               /* SCHED_FIFO priority; 0 = do not ask */
    int cpu_latency_us;         /* while running, ask the kernel (PM QoS, /dev/cpu_dma_latency) to
                                   wake CPUs from idle within this many microseconds, as cyclictest
                                   does; default 0; -1 = do not ask */
    uint32_t cmd_ring_capacity;  /* power of two */
    uint32_t voxel_ring_capacity;
    uint32_t telemetry_ring_capacity;
    uint32_t max_objects;       /* 1 .. RT_MAX_OBJECTS */
    uint32_t max_cmds_per_cycle; /* commands a cycle applies at most, and a bundle holds at most (a cycle finishes a
                                    bundle it started: up to twice this less one in a cycle) */
    uint32_t max_voxels_per_cycle;
    uint32_t ist_spheres;       /* inner spheres a closed mesh gets when loaded (rt_service_load_object, OSC /load,
                                   hapticd --load and its demo) unless the load gives its own count (the
                                   ist_spheres argument, OSC /load's count, a scenario object's `spheres N`):
                                   1 .. RT_IST_SPHERES_MAX, default RT_IST_SPHERES (500); .ist files keep theirs */
    double voxel_budget_us;     /* time the loop spends on voxel updates per cycle at most (default
                                   100; above 0, below the period); the rest wait for the next cycles */
    uint32_t queue_capacity;    /* engine queue (node pairs) */
    uint32_t front_pairs;       /* per object: traversal/contact front storage (node pairs, two halves); 0 = none */
    rt_gains gains;
    rt_limits limits;
    prox_loader loader;         /* how meshes are read (rt_service_load_object, OSC /load, scenarios): in a child
                                   process under a time and memory limit when loader.exe is set (hapticd sets its
                                   own executable), so that a mesh reader's crash or hang costs one load, not the
                                   service; default: in this process, 60 s, 4096 MiB. exe must outlive the
                                   service; seconds above 0 and at most RT_LOAD_SECONDS_MAX */
} rt_config;

rt_config rt_config_default(void);
/* the loop's period at rate_hz, whole nanoseconds (the threads', lockstep's
 * and the simulator's clock all step by it) */
static inline uint64_t rt_period_ns(double rate_hz) { return (uint64_t)(1e9 / rate_hz); }

typedef struct rt_service rt_service;

/* Create the service around an opened device (the service does not own
 * it). Allocates and prefaults all working memory. NULL + err on failure. */
rt_service *rt_service_create(const rt_config *cfg, dev_device *dev, char *err, size_t errlen);
/* Start the RT and housekeeping threads. Degrades (no SCHED_FIFO, no
 * mlockall) with one message on stderr when not permitted. */
int rt_service_start(rt_service *s, char *err, size_t errlen);
/* Stop: output zeroed within one cycle, threads joined. */
void rt_service_stop(rt_service *s);
void rt_service_destroy(rt_service *s);

/* ---- objects ---- */
/* Load a mesh (built into an inner sphere tree or BVH), an .ist or a .vox
 * file under `name` at `pose` (NULL = identity). A closed mesh becomes an
 * inner sphere tree of ist_spheres spheres (0: rt_config.ist_spheres; at
 * most RT_IST_SPHERES_MAX; a count with an .ist or .vox file is refused),
 * an open one a BVH. Builds on the calling thread (may take seconds), then
 * hands the object to the RT thread. A pose must be finite, translate at
 * most PROX_MAX_TRANSLATION and rotate (R orthonormal, det +1); any other
 * is refused, before the build, with a message saying which. Control
 * thread; not RT safe. */
int rt_service_load_object(rt_service *s, const char *name, const char *path, const prox_xform *pose, uint32_t ist_spheres,
                           char *err, size_t errlen);
/* Add an object built by the caller (rt_object_from_mesh...); the service
 * takes ownership on success (obj is cleared), the caller keeps it on
 * failure. The pose as for rt_service_load_object. Control thread. */
int rt_service_add_object(rt_service *s, const char *name, rt_object *obj, const prox_xform *pose, char *err,
                          size_t errlen);
int rt_service_remove_object(rt_service *s, const char *name, char *err, size_t errlen);
/* Move object `name` to `pose` (the pose as for rt_service_load_object;
 * refused, with the object's name and what is wrong, otherwise). Queued to
 * the RT thread, applied at its next cycle. Control thread. */
int rt_service_set_pose(rt_service *s, const char *name, const prox_xform *pose, char *err, size_t errlen);
/* Which object the device moves. */
int rt_service_set_tool(rt_service *s, const char *name, char *err, size_t errlen);

/* ---- bundles ----
 * Between rt_service_bundle_begin and rt_service_bundle_end, the calling
 * thread's control commands (add and load, remove, pose, tool, budget,
 * gains, limits, forces) are checked and answered as usual but held back,
 * then handed to the loop together: the loop applies all of them in one
 * cycle (it finishes a bundle it has started even past max_cmds_per_cycle),
 * so no cycle sees part of it (OSC 1.0: the messages of a bundle take
 * effect together). A bundle holds at most max_cmds_per_cycle commands; a
 * command beyond that, or one the command queue would have no room for
 * with the bundle's, is refused (nothing of it queued). Other threads'
 * commands go to the loop as before, ahead of the bundle. Voxel updates
 * have their own queue and are not held; those for a voxel map added in
 * the open bundle are refused until its end. Bundles nest (the outermost
 * end hands them over); one thread at a time holds one. Before the loop
 * runs (never started, not yet stepped) commands apply at once, as always;
 * a bundle open when the loop stops has its commands applied then, before
 * any sent after the stop (rt_service_stop also applies what the loop
 * left queued).
 * rt_service_bundle_begin: 0, or -1 with err where another thread holds a
 * bundle open. rt_service_bundle_end: how many commands it handed over
 * (0 for an inner end), or -1 with err where the calling thread holds no
 * bundle. Control thread. */
int rt_service_bundle_begin(rt_service *s, char *err, size_t errlen);
int rt_service_bundle_end(rt_service *s, char *err, size_t errlen);

/* ---- parameters ---- */
int rt_service_set_budget_us(rt_service *s, double budget_us, char *err, size_t errlen);
int rt_service_set_gains(rt_service *s, const rt_gains *g, char *err, size_t errlen);
int rt_service_set_limits(rt_service *s, const rt_limits *l, char *err, size_t errlen);
/* Forces off (enable 0) takes no lock and no queue room: it always
 * succeeds, from any thread, even while another control thread holds the
 * service (a long build) or the command queue is full, and the loop zeroes
 * the output at its next cycle's start, ahead of any command (inside a
 * bundle too: it is not held back). Forces on is a command like the
 * others (queued, refused when the queue is full; in a bundle, held) and
 * is dropped by the loop when a forces-off was asked for after it. */
int rt_service_enable_forces(rt_service *s, int enable, char *err, size_t errlen);

/* ---- voxel updates ---- */
#define RT_VOXEL_FREE 0u /* class value that clears a cell */
/* the classes as refusals name them (PROX_VOXEL_FREE, _OBSTACLE, _UNKNOWN) */
#define RT_VOXEL_CLASS_NAMES "0 free, 1 obstacle, 2 unknown"
typedef struct rt_voxel_update {
    int32_t x, y, z; /* cell coordinates */
    uint32_t cls;    /* voxel class; the FREE class clears */
} rt_voxel_update;
/* Queue updates for voxel map `name`; returns how many were queued (the rest
 * did not fit and are counted, one each, in rt_status.voxel_drops), or -1
 * with err. Updates still queued when the map is removed are dropped. */
int rt_service_voxel_update(rt_service *s, const char *name, const rt_voxel_update *u, uint32_t count, char *err,
                            size_t errlen);

/* ---- telemetry and status ---- */
typedef struct rt_telemetry {
    uint64_t seq;
    double time_s;          /* since start, CLOCK_MONOTONIC */
    prox_vec3 tool_pos;
    prox_quat tool_rot;
    prox_vec3 force_n, torque_nm;
    double distance_m;      /* when separated, within the margin (gains.margin_m: measured no farther); 0 when
                               penetrating; -1 when nothing is that close */
    double penvol_m3;       /* when penetrating */
    double query_us;
    uint32_t flags;         /* RT_TEL_* */
} rt_telemetry;

enum rt_telemetry_flags {
    RT_TEL_CONTACT = 1u << 0,
    RT_TEL_QUERY_INCOMPLETE = 1u << 1,
    RT_TEL_FAULT = 1u << 2,
    RT_TEL_CLAMPED = 1u << 3,
    RT_TEL_OVERRUN = 1u << 4
};

/* Called on the housekeeping thread for every telemetry record, in order. */
typedef void (*rt_telemetry_fn)(const rt_telemetry *t, void *user);
int rt_service_add_telemetry_listener(rt_service *s, rt_telemetry_fn fn, void *user);
int rt_service_remove_telemetry_listener(rt_service *s, rt_telemetry_fn fn, void *user);

/* Record telemetry lines to path (replacing a file there). */
int rt_service_record_start(rt_service *s, const char *path, char *err, size_t errlen);
/* The same into a new file only: refused if path exists (or is a link). */
int rt_service_record_start_new(rt_service *s, const char *path, char *err, size_t errlen);
/* 0; -1 when not recording; -2 when the file's last lines could not be
 * written as it was closed (said on stderr). */
int rt_service_record_stop(rt_service *s);

/* Why a cycle faulted (its output zeroed, the proxy started over at the
 * handle): the first cause the cycle met. */
typedef enum rt_fault_cause {
    RT_FAULT_NONE = 0,
    RT_FAULT_DEVICE_READ,  /* the driver's read failed */
    RT_FAULT_DEVICE_STATE, /* the device's position, velocity or orientation is not finite */
    RT_FAULT_DEVICE_STALE, /* the device's reading is older than limits.stale_device_ms */
    RT_FAULT_QUERY,        /* the query failed or answered a value that is not finite */
    RT_FAULT_UNMEASURABLE, /* the tool and an object form a pair the engine has no query for (distance,
                              or penetration volume once they overlap: a mesh BVH or a voxel map against
                              a mesh BVH or a voxel map, an inner sphere tree against a mesh BVH) */
    RT_FAULT_PROXY,        /* the proxy was flung off (farther than RT_PROXY_MAX_SEPARATION_M from the
                              handle) or is not finite: a volume stiffness too high */
    RT_FAULT_OUTPUT,       /* the force or torque to send is not finite */
    RT_FAULT_DEVICE_WRITE, /* the driver's write failed */
    RT_FAULT_CAUSE_COUNT
} rt_fault_cause;

/* the cause's name as /status and the stats print it ("none",
 * "device_read", ...; "unknown" out of range) */
const char *rt_fault_name(int cause);

typedef struct rt_status {
    int running, realtime, memlocked, pinned;
    int cpu_latency_held; /* the PM QoS request held (running: holds) */
    double rate_hz, uptime_s;
    uint64_t cycles, overruns;
    double latency_min_us, latency_avg_us, latency_max_us, latency_p50_us, latency_p99_us, latency_p999_us;
    double query_p99_us, query_max_us, budget_us, budget_overshoot_max_us;
    uint64_t cmd_drops, voxel_drops, telemetry_drops; /* voxel_drops: updates that did not fit the queue or the map */
    uint32_t voxel_queued; /* voxel updates waiting for the loop */
    uint32_t object_count;
    char tool[RT_NAME_MAX];
    int forces_enabled, fault; /* fault: the last cycle faulted */
    int last_fault_cause;      /* the latest fault's cause (RT_FAULT_NONE: none yet) */
    double distance_m, penvol_m3;
    prox_vec3 force_n;
    uint64_t telemetry_received, telemetry_gaps; /* gaps: sequence numbers never seen */
    uint64_t faults, watchdog_fired;
    uint64_t faults_by_cause[RT_FAULT_CAUSE_COUNT]; /* faults counted by cause (faults is their sum) */
    const char *rt_note; /* why RT was degraded, or "" */
} rt_status;

/* A snapshot; any thread. It waits at most 5 ms for another control
 * thread (and not at all after a call that waited in vain, until one gets
 * through): while one holds the service for longer (pairing an inner
 * sphere tree with an open mesh builds a BVH of its surface under the
 * control lock), the object count, budget, tool and refused commands are
 * those of the last snapshot that got them. */
int rt_service_status(rt_service *s, rt_status *out);

/* ---- lockstep (simulation in the loop: sim/) ----
 * Run one loop cycle now, on the calling thread, at time t_ns of the
 * caller's clock (a virtual clock: the device must read the same clock,
 * see dev_sim_def.clock_ns), then hand its telemetry to the listeners and
 * the recording and free the objects it released, before returning. Every
 * cycle does what the RT thread's does (commands, voxel updates, device,
 * proxy, query, safety, telemetry); from the first step on, control
 * functions and voxel updates go through the queues as they do to a
 * running loop. The query budget and the voxel budget stay real time.
 * t_ns must increase from step to step; the period is the configured
 * rate's, whatever the steps' spacing (a gap counts as skipped cycles, as
 * a late RT cycle does). Only for a service never started (refused after
 * rt_service_start, even once stopped); once stepped, rt_service_start
 * refuses it. Not real-time safe (it is the loop, run by a non-RT
 * caller); 0, or -1 with err. */
int rt_service_step(rt_service *s, uint64_t t_ns, char *err, size_t errlen);

/* Test hook: the RT thread sleeps `ms` once, as if the loop stalled (the
 * watchdog must zero the output). Never used by hapticd itself. */
void rt_service_test_stall(rt_service *s, int ms);

#endif
