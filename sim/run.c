/* run.c - running a scenario: the scene built through the service's own
 * functions, the service stepped on a virtual clock (rt_service_step), the
 * simulated device on the same clock with the scripted hand, events
 * applied when their time comes, telemetry summarized into a report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dev_device.h"
#include "prox.h"
#include "sim_internal.h"

/* voxel updates queued before one step at most, over all blocks (the loop
 * applies up to 20,000 a cycle by default; the ring holds 262,144) */
#define SIM_VOXELS_PER_STEP 16384u
#define SIM_VOXMAP_MAX_CAPACITY (1u << 22) /* cells an empty scenario map holds at most */

typedef struct runner {
    const sim_scenario *sc;
    uint64_t now_ns; /* the virtual clock */
    uint64_t period_ns;
    /* telemetry summary */
    sim_report *rep;
    double *query_us;
    uint64_t nq, cap_q;
    int have_last, seen_contact;
    prox_vec3 last_force;
    uint32_t wp_i; /* the hand's waypoint segment (the device's time never goes back) */
} runner;

static uint64_t virtual_clock(void *user) { return ((const runner *)user)->now_ns; }

/* the hand: straight lines at constant speed between waypoints, the
 * orientation turning along the shorter arc (normalized lerp); held
 * before the first and after the last */
static void scripted_hand(void *user, double t, prox_vec3 *target, prox_quat *q)
{
    runner *r = user;
    const sim_scenario *sc = r->sc;
    const sim_waypoint *w = sc->wp;
    uint32_t n = sc->nwp, i = r->wp_i;
    if (t <= w[0].t) {
        *target = w[0].x, *q = w[0].q;
        return;
    }
    while (i + 1 < n && w[i + 1].t <= t)
        i++;
    r->wp_i = i;
    if (i + 1 == n) {
        *target = w[n - 1].x, *q = w[n - 1].q;
        return;
    }
    double span = w[i + 1].t - w[i].t, u = span > 0 ? (t - w[i].t) / span : 1.0;
    *target = prox_v3_madd(w[i].x, prox_v3_sub(w[i + 1].x, w[i].x), u);
    prox_quat a = w[i].q, b = w[i + 1].q;
    double dot = a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z, sgn = dot < 0 ? -1.0 : 1.0;
    prox_quat m = {(1 - u) * a.w + u * sgn * b.w, (1 - u) * a.x + u * sgn * b.x, (1 - u) * a.y + u * sgn * b.y,
                   (1 - u) * a.z + u * sgn * b.z};
    *q = prox_quat_normalize(m);
}

static void on_telemetry(const rt_telemetry *t, void *user)
{
    runner *r = user;
    sim_report *rep = r->rep;
    const double period_s = (double)r->period_ns * 1e-9;
    double f = prox_v3_len(t->force_n), tq = prox_v3_len(t->torque_nm);
    if (f > rep->max_force_n)
        rep->max_force_n = f;
    if (tq > rep->max_torque_nm)
        rep->max_torque_nm = tq;
    if (r->have_last) {
        double step = prox_v3_dist(t->force_n, r->last_force);
        if (step > rep->max_force_step_n)
            rep->max_force_step_n = step;
    }
    r->last_force = t->force_n, r->have_last = 1;
    if (t->flags & RT_TEL_CONTACT) {
        rep->contact_s += period_s;
        if (!r->seen_contact)
            rep->first_contact_s = t->time_s, r->seen_contact = 1;
    }
    if (t->penvol_m3 > rep->max_penvol_m3)
        rep->max_penvol_m3 = t->penvol_m3;
    if (t->distance_m >= 0 && (rep->min_distance_m < 0 || t->distance_m < rep->min_distance_m))
        rep->min_distance_m = t->distance_m;
    rep->incomplete += (t->flags & RT_TEL_QUERY_INCOMPLETE) != 0;
    rep->faults += (t->flags & RT_TEL_FAULT) != 0;
    rep->clamped += (t->flags & RT_TEL_CLAMPED) != 0;
    if (rep->cycles == 0)
        rep->tool_min = rep->tool_max = t->tool_pos;
    rep->tool_min = prox_v3_min(rep->tool_min, t->tool_pos);
    rep->tool_max = prox_v3_max(rep->tool_max, t->tool_pos);
    rep->cycles++;
    if (t->query_us > 0 && r->nq < r->cap_q)
        r->query_us[r->nq++] = t->query_us;
}

static int object_error(const sim_scenario *sc, const sim_object *o, const char *why, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s:%d: object %s: %s", sc->name, o->line, o->name, why);
    return -1;
}

static int build_object(rt_service *svc, const prox_loader *loader, const sim_scenario *sc, const sim_object *o, char *err,
                        size_t errlen)
{
    char e2[400];
    rt_object obj;
    prox_mesh *m = NULL;
    switch (o->kind) {
    case SOBJ_BOX: m = prox_mesh_make_box(prox_v3(o->a[0], o->a[1], o->a[2])); break;
    case SOBJ_TILED_BOX: m = prox_mesh_make_tiled_box(prox_v3(o->a[0], o->a[1], o->a[2]), (int)o->a[3]); break;
    case SOBJ_SPHERE: m = prox_mesh_make_sphere(o->a[0], (int)o->a[1]); break;
    case SOBJ_TORUS: m = prox_mesh_make_torus(o->a[0], o->a[1], (int)o->a[2], (int)o->a[3]); break;
    case SOBJ_FILE:
        if (!o->bvh)
            return rt_service_load_object(svc, o->name, o->path, &o->pose, o->spheres, e2, sizeof e2) == 0 ? 0
                                                                                                            : object_error(sc, o, e2, err, errlen);
        if (prox_mesh_load_apart(loader, o->path, &m, e2, sizeof e2) != 0)
            return object_error(sc, o, e2, err, errlen);
        break;
    case SOBJ_VOXELS: {
        /* room for every cell (up to SIM_VOXMAP_MAX_CAPACITY; past it a
         * full map refuses updates, counted as voxel drops) */
        double cells = (double)o->n[0] * o->n[1] * o->n[2];
        prox_voxmap_def vd = {o->a[0], prox_v3(0, 0, 0), {o->n[0], o->n[1], o->n[2]},
                              cells < SIM_VOXMAP_MAX_CAPACITY ? (uint32_t)cells : SIM_VOXMAP_MAX_CAPACITY};
        prox_voxmap *vm = prox_voxmap_create(&vd, e2, sizeof e2);
        if (!vm)
            return object_error(sc, o, e2, err, errlen);
        rt_object_from_voxmap(vm, &obj);
        goto add;
    }
    default: return object_error(sc, o, "unknown kind", err, errlen);
    }
    if (!m)
        return object_error(sc, o, "cannot make the mesh (out of memory or out of range)", err, errlen);
    if (rt_object_from_mesh(m, o->bvh ? 0 : o->spheres ? o->spheres : sc->ist_spheres, &obj, e2, sizeof e2) != 0) /* takes the mesh */
        return object_error(sc, o, e2, err, errlen);
add:
    if (rt_service_add_object(svc, o->name, &obj, &o->pose, e2, sizeof e2) != 0) {
        rt_object_free(&obj);
        return object_error(sc, o, e2, err, errlen);
    }
    return 0;
}

static uint64_t block_cells(const sim_event *e)
{
    return (uint64_t)(e->hi[0] - e->lo[0] + 1) * (uint64_t)(e->hi[1] - e->lo[1] + 1) * (uint64_t)(e->hi[2] - e->lo[2] + 1);
}

static int event_error(const sim_scenario *sc, const sim_event *e, const char *why, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s:%d: at %g s: %s", sc->name, e->line, e->t, why);
    return -1;
}

/* Queue the next part of voxel block e: from *done cells on, at most *room
 * cells (both advanced). 0, or -1 + err. (What does not fit the queue is
 * counted by the service, voxel_drops.) */
static int queue_block(rt_service *svc, const sim_scenario *sc, const sim_event *e, uint64_t *done, uint32_t *room, char *err,
                       size_t errlen)
{
    const uint64_t nx = (uint64_t)(e->hi[0] - e->lo[0] + 1), ny = (uint64_t)(e->hi[1] - e->lo[1] + 1), total = block_cells(e);
    rt_voxel_update u[512];
    char e2[400];
    while (*done < total && *room > 0) {
        uint32_t k = 0;
        for (; k < 512 && k < *room && *done + k < total; k++) {
            uint64_t i = *done + k;
            u[k].x = e->lo[0] + (int32_t)(i % nx), u[k].y = e->lo[1] + (int32_t)(i / nx % ny), u[k].z = e->lo[2] + (int32_t)(i / nx / ny);
            u[k].cls = e->cls;
        }
        if (rt_service_voxel_update(svc, e->name, u, k, e2, sizeof e2) < 0)
            return event_error(sc, e, e2, err, errlen);
        *done += k, *room -= k;
    }
    return 0;
}

/* Apply command event e (any but a voxel block). 0, or -1 + err. */
static int apply_command(rt_service *svc, const sim_scenario *sc, const sim_event *e, char *err, size_t errlen)
{
    char e2[400];
    int rc;
    switch (e->type) {
    case SEV_POSE: rc = rt_service_set_pose(svc, e->name, &e->pose, e2, sizeof e2); break;
    case SEV_FORCES: rc = rt_service_enable_forces(svc, e->on, e2, sizeof e2); break;
    case SEV_REMOVE: rc = rt_service_remove_object(svc, e->name, e2, sizeof e2); break;
    case SEV_TOOL: rc = rt_service_set_tool(svc, e->name, e2, sizeof e2); break;
    case SEV_BUDGET: rc = rt_service_set_budget_us(svc, e->v, e2, sizeof e2); break;
    default: snprintf(e2, sizeof e2, "unknown event"); rc = -1;
    }
    return rc ? event_error(sc, e, e2, err, errlen) : 0;
}

int sim_run(const sim_scenario *sc, const sim_options *opt, sim_report *rep, char *err, size_t errlen)
{
    sim_options o = {NULL, 1, NULL};
    if (opt)
        o = *opt;
    memset(rep, 0, sizeof *rep);
    rep->first_contact_s = -1, rep->min_distance_m = -1;
    runner r;
    memset(&r, 0, sizeof r);
    r.sc = sc, r.rep = rep;
    r.period_ns = sim_period_ns(sc);
    const uint64_t steps = sim_cycles(sc);
    r.cap_q = steps;
    r.query_us = malloc(steps * sizeof *r.query_us);
    if (!r.query_us) {
        snprintf(err, errlen, "%s: out of memory", sc->name);
        return -1;
    }
    dev_sim_def dd = sc->hand;
    dd.clock_ns = virtual_clock, dd.hand = scripted_hand, dd.user = &r;
    char e2[400];
    dev_device *dev = dev_sim_open(&dd, e2, sizeof e2);
    rt_config cfg = rt_config_default();
    cfg.rate_hz = sc->rate_hz, cfg.budget_us = sc->budget_us, cfg.gains = sc->gains, cfg.limits = sc->limits;
    cfg.ist_spheres = sc->ist_spheres; /* the files it loads too */
    cfg.priority = 0, cfg.cpu = -1, cfg.cpu_latency_us = -1;
    if (o.loader)
        cfg.loader = *o.loader;
    cfg.max_objects = sc->nobj > cfg.max_objects ? sc->nobj : cfg.max_objects; /* no event adds objects */
    if (cfg.voxel_budget_us >= 0.5e6 / sc->rate_hz) /* below the period at every rate */
        cfg.voxel_budget_us = 0.5e6 / sc->rate_hz;
    rt_service *svc = dev ? rt_service_create(&cfg, dev, e2, sizeof e2) : NULL;
    uint64_t *vox_done = calloc(sc->nev ? sc->nev : 1, sizeof *vox_done);
    int rc = 0;
    if (!dev || !svc || !vox_done) {
        snprintf(err, errlen, "%s: %s", sc->name, !vox_done ? "out of memory" : e2);
        rc = -1;
    }
    for (uint32_t i = 0; i < sc->nobj && !rc; i++) {
        if (!o.quiet)
            fprintf(stderr, "sim: building %s\n", sc->obj[i].name);
        rc = build_object(svc, &cfg.loader, sc, &sc->obj[i], err, errlen);
    }
    if (!rc && rt_service_set_tool(svc, sc->tool, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: tool %s: %s", sc->name, sc->tool, e2);
        rc = -1;
    }
    if (!rc && rt_service_add_telemetry_listener(svc, on_telemetry, &r)) {
        snprintf(err, errlen, "%s: cannot listen to telemetry", sc->name);
        rc = -1;
    }
    if (!rc && o.record_path && rt_service_record_start(svc, o.record_path, e2, sizeof e2)) {
        snprintf(err, errlen, "%s: %s", sc->name, e2);
        rc = -1;
    }
    const uint64_t w0 = prox_now_ns();
    uint32_t next_ev = 0, first_open = 0; /* first_open: no voxel block before it is still being queued */
    double next_progress = 1.0;
    for (uint64_t k = 0; k < steps && !rc; k++) {
        r.now_ns = k * r.period_ns;
        const double t = (double)r.now_ns * 1e-9;
        /* events due: commands up to what one cycle drains (the ring never
         * fills; the rest wait a cycle); a voxel block is only started here
         * and queued below part by part, never holding the others back.
         * (Within a step the order of commands and voxel parts does not
         * matter: the cycle applies its commands first either way.) */
        for (uint32_t cmds = 0; !rc && next_ev < sc->nev && sc->ev[next_ev].t <= t + SIM_EVENT_TOL_S && cmds < cfg.max_cmds_per_cycle; next_ev++) {
            const sim_event *e = &sc->ev[next_ev];
            if (e->type == SEV_VOXELS)
                continue;
            rc = apply_command(svc, sc, e, err, errlen), cmds++;
            /* a removal ends its map's earlier blocks: their cells not yet
             * queued go with the map (file order: set, then removed) */
            if (!rc && e->type == SEV_REMOVE)
                for (uint32_t i = first_open; i < next_ev; i++)
                    if (sc->ev[i].type == SEV_VOXELS && !strcmp(sc->ev[i].name, e->name))
                        vox_done[i] = block_cells(&sc->ev[i]);
        }
        /* the started blocks, in order, never more than the voxel queue has
         * room for: the loop applies what its real-time voxel budget
         * allows, fewer on a slow machine */
        while (first_open < next_ev && (sc->ev[first_open].type != SEV_VOXELS || vox_done[first_open] == block_cells(&sc->ev[first_open])))
            first_open++;
        if (!rc && first_open < next_ev) {
            rt_status st;
            rt_service_status(svc, &st);
            uint32_t free_slots = cfg.voxel_ring_capacity > st.voxel_queued ? cfg.voxel_ring_capacity - st.voxel_queued : 0;
            uint32_t room = free_slots / 2 < SIM_VOXELS_PER_STEP ? free_slots / 2 : SIM_VOXELS_PER_STEP;
            for (uint32_t i = first_open; i < next_ev && room && !rc; i++)
                if (sc->ev[i].type == SEV_VOXELS)
                    rc = queue_block(svc, sc, &sc->ev[i], &vox_done[i], &room, err, errlen);
        }
        if (!rc && rt_service_step(svc, r.now_ns, e2, sizeof e2)) {
            snprintf(err, errlen, "%s: %s", sc->name, e2);
            rc = -1;
        }
        if (!o.quiet && t >= next_progress) {
            fprintf(stderr, "sim: t=%.0f/%.0f s\n", t, sc->duration_s);
            next_progress += 1.0;
        }
    }
    if (!rc) {
        rep->wall_s = (double)(prox_now_ns() - w0) * 1e-9;
        rep->sim_s = (double)rep->cycles * (double)r.period_ns * 1e-9;
        rep->speedup = rep->wall_s > 0 ? rep->sim_s / rep->wall_s : 0;
        if (r.nq) {
            qsort(r.query_us, r.nq, sizeof *r.query_us, prox_cmp_double);
            rep->query_p50_us = r.query_us[(size_t)(0.5 * (double)(r.nq - 1))];
            rep->query_p99_us = r.query_us[(size_t)(0.99 * (double)(r.nq - 1))];
            rep->query_max_us = r.query_us[r.nq - 1];
        }
        rt_status st;
        rt_service_status(svc, &st);
        rep->overruns = st.overruns;
        rep->cmd_drops = st.cmd_drops;
        rep->voxel_drops = st.voxel_drops; /* past the queue or a full map */
        rep->telemetry_gaps = st.telemetry_gaps + st.telemetry_drops;
        rep->faults_unmeasurable = st.faults_by_cause[RT_FAULT_UNMEASURABLE];
        rep->faults_proxy = st.faults_by_cause[RT_FAULT_PROXY];
        rep->faults_other = st.faults - rep->faults_unmeasurable - rep->faults_proxy;
        dev_sim_handle(dev, &rep->handle_end, NULL, &rep->work_j);
    }
    if (svc && o.record_path)
        rt_service_record_stop(svc);
    rt_service_destroy(svc);
    dev_close(dev);
    free(vox_done);
    free(r.query_us);
    return rc;
}

/* ---- the report ---- */

typedef struct metric {
    const char *name;
    double v;
} metric;

#define SIM_METRICS 31

static int metrics(const sim_report *r, metric m[SIM_METRICS])
{
    const metric all[] = {{"cycles", (double)r->cycles},
                          {"sim_s", r->sim_s},
                          {"wall_s", r->wall_s},
                          {"speedup", r->speedup},
                          {"contact_s", r->contact_s},
                          {"first_contact_s", r->first_contact_s},
                          {"max_force_n", r->max_force_n},
                          {"max_force_step_n", r->max_force_step_n},
                          {"max_torque_nm", r->max_torque_nm},
                          {"max_penvol_m3", r->max_penvol_m3},
                          {"min_distance_m", r->min_distance_m},
                          {"query_p50_us", r->query_p50_us},
                          {"query_p99_us", r->query_p99_us},
                          {"query_max_us", r->query_max_us},
                          {"incomplete", (double)r->incomplete},
                          {"faults", (double)r->faults},
                          {"faults_unmeasurable", (double)r->faults_unmeasurable},
                          {"faults_proxy", (double)r->faults_proxy},
                          {"faults_other", (double)r->faults_other},
                          {"clamped", (double)r->clamped},
                          {"overruns", (double)r->overruns},
                          {"voxel_drops", (double)r->voxel_drops},
                          {"cmd_drops", (double)r->cmd_drops},
                          {"telemetry_gaps", (double)r->telemetry_gaps},
                          {"work_j", r->work_j},
                          {"tool_min_z", r->tool_min.z},
                          {"tool_max_z", r->tool_max.z},
                          {"tool_min_x", r->tool_min.x},
                          {"tool_max_x", r->tool_max.x},
                          {"handle_end_x", r->handle_end.x},
                          {"handle_end_z", r->handle_end.z}};
    _Static_assert(sizeof all / sizeof all[0] == SIM_METRICS, "SIM_METRICS is the number of metrics listed");
    memcpy(m, all, sizeof all);
    return SIM_METRICS;
}

int sim_report_metric(const sim_report *rep, const char *name, double *v)
{
    metric m[SIM_METRICS];
    int n = metrics(rep, m);
    for (int i = 0; i < n; i++)
        if (!strcmp(m[i].name, name)) {
            *v = m[i].v;
            return 0;
        }
    return -1;
}

void sim_report_print(FILE *f, const sim_report *rep, int json)
{
    metric m[SIM_METRICS];
    int n = metrics(rep, m);
    if (json)
        fprintf(f, "{\n");
    for (int i = 0; i < n; i++) {
        if (json && !isfinite(m[i].v)) /* JSON has no NaN or infinity */
            fprintf(f, "  \"%s\": null%s\n", m[i].name, i + 1 < n ? "," : "");
        else if (json)
            fprintf(f, "  \"%s\": %.9g%s\n", m[i].name, m[i].v, i + 1 < n ? "," : "");
        else
            fprintf(f, "%-20s %.9g\n", m[i].name, m[i].v);
    }
    if (json)
        fprintf(f, "}\n");
}

int sim_check(const sim_scenario *sc, const sim_report *rep, FILE *f)
{
    int failed = 0;
    for (uint32_t i = 0; i < sc->nex; i++) {
        const sim_expect *x = &sc->ex[i];
        double v = NAN;
        int ok = sim_report_metric(rep, x->metric, &v) == 0;
        if (ok) {
            switch (x->op) {
            case SOP_LT: ok = v < x->v; break;
            case SOP_LE: ok = v <= x->v; break;
            case SOP_GT: ok = v > x->v; break;
            case SOP_GE: ok = v >= x->v; break;
            case SOP_EQ: ok = v == x->v; break;
            case SOP_NE: ok = v != x->v; break;
            default: ok = 0;
            }
        }
        failed += !ok;
        if (f)
            fprintf(f, "expect %s %s %.9g (line %d): %s (%.9g)\n", x->metric, sim_op_names[x->op], x->v, x->line, ok ? "ok" : "FAILED", v);
    }
    return failed;
}
