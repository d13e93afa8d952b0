/* dev_device.h - the haptic device interface and its drivers.
 *
 * Modelled on what haptic SDKs expose (CHAI3D's cGenericHapticDevice,
 * OpenHaptics HD, HAPI): open/close/calibrate; read position, orientation,
 * linear and angular velocity, buttons; write force, torque and gripper
 * force; device information.
 *
 * Frames and units: the device reports the pose of its handle in the
 * device's base frame (metres, unit quaternion); forces and torques are
 * written in the same frame (newtons, newton-metres).
 *
 * Thread rules: open/close/calibrate run on non-RT threads. read/write are
 * called from the RT thread only, once per cycle, and are real-time safe
 * (no allocation, no locks; only the device's own I/O).
 */
#ifndef DEV_DEVICE_H
#define DEV_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "prox_math.h"

typedef struct dev_info {
    char name[64];
    char driver[16];
    prox_vec3 workspace_min, workspace_max; /* metres, device frame */
    double max_force_n, max_torque_nm, max_gripper_force_n;
    double max_stiffness_n_per_m;   /* stable stiffness at 1 kHz */
    double max_damping_n_s_per_m;
    double max_angular_stiffness_nm_per_rad;
} dev_info;

typedef struct dev_state {
    uint64_t time_ns;   /* CLOCK_MONOTONIC time of the reading */
    prox_vec3 position; /* metres */
    prox_quat orientation;
    prox_vec3 linear_velocity;  /* m/s */
    prox_vec3 angular_velocity; /* rad/s */
    uint32_t buttons;           /* bit i = button i */
    double gripper_angle_rad;
} dev_state;

typedef struct dev_command {
    prox_vec3 force_n;
    prox_vec3 torque_nm;
    double gripper_force_n;
} dev_command;

typedef struct dev_device dev_device;

typedef struct dev_ops {
    int (*calibrate)(dev_device *d);
    int (*read)(dev_device *d, dev_state *out);              /* 0, or -1 on a device fault */
    int (*write)(dev_device *d, const dev_command *cmd);     /* 0, or -1 on a device fault */
    void (*close)(dev_device *d);
} dev_ops;

struct dev_device {
    const dev_ops *ops;
    dev_info info;
    void *impl;
};

static inline int dev_calibrate(dev_device *d) { return d->ops->calibrate ? d->ops->calibrate(d) : 0; }
static inline int dev_read(dev_device *d, dev_state *out) { return d->ops->read(d, out); }
static inline int dev_write(dev_device *d, const dev_command *cmd) { return d->ops->write(d, cmd); }
static inline void dev_close(dev_device *d)
{
    if (d && d->ops->close)
        d->ops->close(d);
}

/* ---- drivers (open: non-RT; each returns NULL + err on failure) ---- */

/* sim: a handle with mass and damping, pushed by a scripted user: a spring
 * pulls it toward the hand's target, and the forces we write act on it.
 * By default the target follows a raised cosine (below) and time advances
 * with CLOCK_MONOTONIC; the hooks let a caller supply both (sim/: a
 * virtual clock and a scripted trajectory). */
typedef struct dev_sim_def {
    double mass_kg, damping_n_s_per_m;
    double hand_stiffness_n_per_m, hand_damping_n_s_per_m;
    prox_vec3 start, amplitude; /* target(t) = start + amplitude * (1 - cos(2 pi f t)) / 2 */
    double frequency_hz;
    double max_force_n;
    /* optional hooks, called on the thread that reads the device (both
     * must be real-time safe there); NULL: the defaults above */
    uint64_t (*clock_ns)(void *user); /* the time the device lives in (monotonic, ns) */
    /* the hand at t seconds after open (on the system clock: after the
     * first reading): the target the spring pulls the handle toward, and
     * the handle's orientation (held by the wrist) */
    void (*hand)(void *user, double t, prox_vec3 *target, prox_quat *orientation);
    void *user;
} dev_sim_def;
dev_sim_def dev_sim_def_default(void);
dev_device *dev_sim_open(const dev_sim_def *def, char *err, size_t errlen);
/* the simulated device's longest integration substep (seconds) */
#define DEV_SIM_SUBSTEP_S 0.00025
/* Test hook: make the next reading report NaN (a broken sensor). */
void dev_sim_inject_nan(dev_device *d);
/* Last force written (for tests), thread-safe. */
prox_vec3 dev_sim_last_force(dev_device *d);
/* The handle's state after the last reading (position, velocity), and the
 * work the written forces have done on it since open (joules: positive
 * when the device pushed energy into the user's hand). Call from the
 * thread that reads the device, or after it stopped. */
void dev_sim_handle(dev_device *d, prox_vec3 *position, prox_vec3 *velocity, double *work_j);

/* null: a device at the origin that ignores forces. */
dev_device *dev_null_open(char *err, size_t errlen);

/* replay: plays a trajectory file, lines `t tx ty tz qw qx qy qz` (t in
 * seconds from start; # comments), holding the last pose at the end. */
dev_device *dev_replay_open(const char *path, char *err, size_t errlen);

/* osc: the pose comes from an external program (/device/pose on hapticd's
 * OSC port, fed in with dev_osc_set_pose), forces go back as /device/force
 * fx fy fz tx ty tz datagrams to host:port. */
dev_device *dev_osc_open(const char *host, int port, char *err, size_t errlen);
void dev_osc_set_pose(dev_device *d, const prox_xform *pose, uint32_t buttons); /* any non-RT thread */

#endif
