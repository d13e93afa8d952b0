/* sim.h - simulation in the loop: scenarios run through the real service
 * loop on a virtual clock, with a scripted user, and a report.
 *
 * A scenario (text, docs/scenarios.md) names the scene (procedural shapes,
 * mesh, .ist and .vox files, empty voxel maps), the tool, the gains and
 * limits, the simulated user (a handle of some mass pulled by a hand that
 * follows timed waypoints), timed events (object poses, voxel updates,
 * forces on or off, object removal, budget changes) and expectations on
 * the outcome (`expect max_force_n <= 8`). sim_run builds the scene, then
 * steps the service (rt_service_step: the very cycle the RT thread runs)
 * at every period of a virtual clock, the simulated device living on the
 * same clock, applying each event through the service's own control
 * functions when its time comes, and summarizes the telemetry. A run
 * takes as long as its queries do, not as long as its scenario: seconds
 * of contact run in a fraction of that on an idle machine, and stalls of
 * the machine do not disturb it.
 *
 * Determinism: the same scenario gives the same telemetry bit for bit
 * (query times aside) whenever every query completes within the budget
 * (a budget that bites ends queries at a real-time deadline).
 *
 * Thread rules: everything here runs on the caller's (non-RT) thread.
 */
#ifndef SIM_H
#define SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rt_service.h"

typedef struct sim_scenario sim_scenario;

/* Parse a scenario from text; `name` labels error messages ("NAME:LINE:
 * what"), `dir` resolves relative file names (NULL: the working folder).
 * NULL + err on any malformed line; nothing is half loaded. */
sim_scenario *sim_scenario_parse(const char *text, const char *name, const char *dir, char *err, size_t errlen);
/* The same from a file (relative paths inside resolve against its folder). */
sim_scenario *sim_scenario_load(const char *path, char *err, size_t errlen);
void sim_scenario_free(sim_scenario *sc);
double sim_scenario_duration_s(const sim_scenario *sc);

/* What a run measured. Times in seconds of the virtual clock unless named
 * wall; forces are the device's output. */
typedef struct sim_report {
    uint64_t cycles;
    double sim_s, wall_s, speedup;         /* speedup: sim_s / wall_s */
    double contact_s, first_contact_s;     /* first_contact_s: -1 when never */
    double max_force_n, max_force_step_n;  /* the largest change from one cycle to the next */
    double max_torque_nm;
    double max_penvol_m3, min_distance_m;  /* min_distance_m: -1 when no distance was measured */
    double query_p50_us, query_p99_us, query_max_us; /* real time */
    uint64_t incomplete, faults, clamped, overruns;
    uint64_t faults_unmeasurable, faults_proxy, faults_other; /* faults by cause (rt_fault_cause): the tool and an
                                                                 object the engine cannot measure, a proxy flung
                                                                 off, the rest (device, query, output) */
    uint64_t voxel_drops, cmd_drops, telemetry_gaps;
    double work_j;                         /* by the device on the user's hand (positive: energy put in) */
    prox_vec3 tool_min, tool_max;          /* the tool's (proxy's) position range */
    prox_vec3 handle_end;                  /* the handle where the run ended */
} sim_report;

typedef struct sim_options {
    const char *record_path; /* telemetry record (NULL: none), the service's format */
    int quiet;               /* no progress lines on stderr */
    const prox_loader *loader; /* how the scenario's mesh files are read (rt_config.loader); NULL: in this
                                  process, with prox_loader_default's limits */
} sim_options;

/* Run the scenario; 0 and *rep filled, or -1 + err (the scene failed to
 * build, an event was refused: "NAME:LINE: ..."). */
int sim_run(const sim_scenario *sc, const sim_options *opt, sim_report *rep, char *err, size_t errlen);

/* A report metric by name (the names sim_report_print prints); 0 and *v,
 * or -1 for an unknown name. */
int sim_report_metric(const sim_report *rep, const char *name, double *v);
/* The report as `name value` lines (json: one JSON object). */
void sim_report_print(FILE *f, const sim_report *rep, int json);
/* Check the scenario's expectations: one line each on f (NULL: silent),
 * `expect NAME OP VALUE: ok (VALUE)` or `... FAILED (VALUE)`; returns how
 * many failed. */
int sim_check(const sim_scenario *sc, const sim_report *rep, FILE *f);

#endif
