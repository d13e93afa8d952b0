/* sim.c - the simulated device: a handle of given mass and damping, pulled
 * by a scripted user's hand (a spring-damper toward a moving target) and
 * pushed by the forces hapticd writes. Integrated (semi-implicit Euler) on
 * each read over the elapsed time (CLOCK_MONOTONIC, or the caller's clock
 * hook), in 0.25 ms substeps. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_device.h"

typedef struct sim_dev {
    dev_device dev;
    dev_sim_def def;
    uint64_t t0, last_ns;
    int started; /* the hand's time has its start: at open on a caller's clock, at the first reading on the system clock */
    prox_vec3 x, v;
    prox_quat q;   /* the hand's orientation at the last reading */
    double work_j; /* by the written forces on the handle */
    _Atomic double fx, fy, fz; /* last force written; atomics: the watchdog may write too */
    atomic_int inject_nan;
} sim_dev;

dev_sim_def dev_sim_def_default(void)
{
    dev_sim_def d;
    d.mass_kg = 0.2;
    d.damping_n_s_per_m = 2.0;
    d.hand_stiffness_n_per_m = 300.0;
    d.hand_damping_n_s_per_m = 5.0;
    d.start = prox_v3(0, 0, 0.15);
    d.amplitude = prox_v3(0, 0, -0.25);
    d.frequency_hz = 0.25;
    d.max_force_n = 10.0;
    d.clock_ns = NULL;
    d.hand = NULL;
    d.user = NULL;
    return d;
}

static uint64_t now_ns(const sim_dev *s) { return s->def.clock_ns ? s->def.clock_ns(s->def.user) : prox_now_ns(); }

static prox_vec3 target(sim_dev *s, double t)
{
    if (s->def.hand) {
        prox_vec3 p = s->x;
        s->def.hand(s->def.user, t, &p, &s->q);
        return p;
    }
    double k = 0.5 * (1.0 - cos(2.0 * M_PI * s->def.frequency_hz * t));
    return prox_v3_madd(s->def.start, s->def.amplitude, k);
}

prox_vec3 dev_sim_last_force(dev_device *d);

static int sim_read(dev_device *d, dev_state *out)
{
    sim_dev *s = (sim_dev *)d;
    uint64_t now = now_ns(s);
    /* On the system clock the hand's script starts at the first reading,
     * when the loop starts, not at open: what is built in between (the
     * demo's trees: 0.4 s, 2 s under ThreadSanitizer) would otherwise run
     * the script on unseen (tests/test_rt_main.c). A caller's clock keeps
     * the time since open (the scenarios' virtual clock starts there). */
    if (!s->started)
        s->t0 = s->last_ns = now, s->started = 1;
    double dt_total = now > s->last_ns ? (double)(now - s->last_ns) * 1e-9 : 0.0;
    if (dt_total > 0.05 && !s->def.clock_ns)
        dt_total = 0.05; /* after a stall, do not integrate a huge step (a caller's clock does not stall) */
    int steps = (int)(dt_total / DEV_SIM_SUBSTEP_S) + 1;
    double dt = dt_total / steps;
    double t = (double)(s->last_ns - s->t0) * 1e-9;
    prox_vec3 out_f = dev_sim_last_force(d);
    for (int i = 0; i < steps; i++) {
        t += dt;
        prox_vec3 tg = target(s, t);
        prox_vec3 f = prox_v3_scale(prox_v3_sub(tg, s->x), s->def.hand_stiffness_n_per_m);
        f = prox_v3_madd(f, s->v, -(s->def.hand_damping_n_s_per_m + s->def.damping_n_s_per_m));
        f = prox_v3_add(f, out_f);
        s->v = prox_v3_madd(s->v, f, dt / s->def.mass_kg);
        s->x = prox_v3_madd(s->x, s->v, dt);
        s->work_j += prox_v3_dot(out_f, s->v) * dt;
    }
    s->last_ns = now;
    out->time_ns = now;
    out->position = s->x;
    out->orientation = s->q;
    out->linear_velocity = s->v;
    out->angular_velocity = prox_v3(0, 0, 0);
    out->buttons = 0;
    out->gripper_angle_rad = 0;
    if (atomic_exchange(&s->inject_nan, 0))
        out->position.x = NAN;
    return 0;
}

static int sim_write(dev_device *d, const dev_command *cmd)
{
    sim_dev *s = (sim_dev *)d;
    atomic_store_explicit(&s->fx, cmd->force_n.x, memory_order_relaxed);
    atomic_store_explicit(&s->fy, cmd->force_n.y, memory_order_relaxed);
    atomic_store_explicit(&s->fz, cmd->force_n.z, memory_order_relaxed);
    return 0;
}

static void sim_close(dev_device *d) { free(d); }

static const dev_ops sim_ops = {NULL, sim_read, sim_write, sim_close};

dev_device *dev_sim_open(const dev_sim_def *def, char *err, size_t errlen)
{
    dev_sim_def d = def ? *def : dev_sim_def_default();
    if (!(d.mass_kg > 0) || !(d.max_force_n > 0)) {
        snprintf(err, errlen, "sim device: mass and max force must be positive");
        return NULL;
    }
    sim_dev *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "sim device: out of memory");
        return NULL;
    }
    s->def = d;
    s->dev.ops = &sim_ops;
    s->dev.impl = s;
    snprintf(s->dev.info.name, sizeof s->dev.info.name, "simulated device (%.2f kg)", d.mass_kg);
    snprintf(s->dev.info.driver, sizeof s->dev.info.driver, "sim");
    s->dev.info.workspace_min = prox_v3(-0.3, -0.3, -0.3);
    s->dev.info.workspace_max = prox_v3(0.3, 0.3, 0.3);
    s->dev.info.max_force_n = d.max_force_n;
    s->dev.info.max_torque_nm = 0.5;
    s->dev.info.max_gripper_force_n = 0;
    s->dev.info.max_stiffness_n_per_m = 3000;
    s->dev.info.max_damping_n_s_per_m = 20;
    s->dev.info.max_angular_stiffness_nm_per_rad = 5;
    s->t0 = s->last_ns = now_ns(s);
    s->started = d.clock_ns != NULL;
    s->q = prox_quat_identity();
    s->x = d.start;
    if (d.hand) /* the handle starts in the hand */
        s->x = target(s, 0.0);
    return &s->dev;
}

void dev_sim_inject_nan(dev_device *d) { atomic_store(&((sim_dev *)d)->inject_nan, 1); }

prox_vec3 dev_sim_last_force(dev_device *d)
{
    sim_dev *s = (sim_dev *)d;
    return prox_v3(atomic_load_explicit(&s->fx, memory_order_relaxed), atomic_load_explicit(&s->fy, memory_order_relaxed),
                   atomic_load_explicit(&s->fz, memory_order_relaxed));
}

void dev_sim_handle(dev_device *d, prox_vec3 *position, prox_vec3 *velocity, double *work_j)
{
    const sim_dev *s = (const sim_dev *)d;
    if (position)
        *position = s->x;
    if (velocity)
        *velocity = s->v;
    if (work_j)
        *work_j = s->work_j;
}
