/* sim_internal.h - the parsed scenario, shared by scenario.c and run.c. */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "sim.h"

enum sim_obj_kind { SOBJ_BOX = 1, SOBJ_TILED_BOX, SOBJ_SPHERE, SOBJ_TORUS, SOBJ_FILE, SOBJ_VOXELS };

typedef struct sim_object {
    char name[RT_NAME_MAX];
    int kind, line;
    double a[4];  /* box: half extents; tiled_box: half extents, tiles; sphere: r, subdivisions; torus: R, r, segments
                     (major, minor); voxels: cell size, then in n[] the cells per axis */
    uint32_t n[3];
    char *path;   /* file: resolved against the scenario's folder */
    int bvh;      /* a mesh BVH instead of an inner sphere tree */
    uint32_t spheres; /* its inner sphere tree's size (`spheres N`); 0: the scenario's ist_spheres */
    prox_xform pose;
} sim_object;

typedef struct sim_waypoint {
    double t;
    prox_vec3 x;
    prox_quat q;
} sim_waypoint;

enum sim_ev_type { SEV_POSE = 1, SEV_FORCES, SEV_VOXELS, SEV_REMOVE, SEV_BUDGET, SEV_TOOL };

typedef struct sim_event {
    double t;
    int type, line;
    char name[RT_NAME_MAX];
    prox_xform pose;       /* pose */
    int on;                /* forces */
    int32_t lo[3], hi[3];  /* voxels: an inclusive block of cells */
    uint32_t cls;
    double v;              /* budget */
} sim_event;

enum sim_op { SOP_LT = 1, SOP_LE, SOP_GT, SOP_GE, SOP_EQ, SOP_NE };
static const char *const sim_op_names[] = {"", "<", "<=", ">", ">=", "==", "!="}; /* by enum sim_op */

typedef struct sim_expect {
    char metric[32];
    int op, line;
    double v;
} sim_expect;

struct sim_scenario {
    char name[256];
    double rate_hz, duration_s, budget_us;
    uint32_t ist_spheres; /* inner spheres a closed mesh object gets (rt_config.ist_spheres) */
    int duration_set;
    rt_gains gains;
    rt_limits limits;
    dev_sim_def hand; /* the simulated user and device (the hooks are the runner's) */
    char tool[RT_NAME_MAX];
    sim_object *obj;
    uint32_t nobj;
    sim_waypoint *wp;
    uint32_t nwp;
    sim_event *ev; /* in time order (stable: file order within a time) */
    uint32_t nev;
    sim_expect *ex;
    uint32_t nex;
};

/* an event applies at the first cycle at or after its time, within this
 * (the runner, and the parser's check that some cycle takes it) */
#define SIM_EVENT_TOL_S 1e-12

/* the loop's period, and how many cycles a run has: the first at time 0,
 * the last at or before the duration */
static inline uint64_t sim_period_ns(const sim_scenario *sc) { return rt_period_ns(sc->rate_hz); }
static inline uint64_t sim_cycles(const sim_scenario *sc)
{
    /* the duration in whole ns first: 1.001 s / 1 ms in doubles is
     * 1000.9999999999999, which would lose the cycle at 1.001 s */
    return (uint64_t)llround(sc->duration_s * 1e9) / sim_period_ns(sc) + 1;
}

#define SIM_MAX_VOXEL_BLOCK 1000000u /* cells in one voxels event */
#define SIM_MAX_CYCLES 7200000.0     /* duration x rate (2 hours at 1 kHz) */

#endif
