/* osc_dev.c - the OSC device: an external program is the device.
 *
 * Pose in: hapticd's OSC server receives /device/pose and calls
 * dev_osc_set_pose (non-RT thread); a triple buffer hands the newest pose
 * to the RT thread without locks. Force out: one UDP datagram per cycle,
 * `/device/force ,ffffff fx fy fz tx ty tz`, encoded by hand into a fixed
 * buffer (liblo's senders allocate; this is the RT thread's device I/O). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dev_device.h"

typedef struct pose_slot {
    prox_xform pose;
    uint32_t buttons;
    uint64_t time_ns;
} pose_slot;

typedef struct osc_dev {
    dev_device dev;
    pose_slot slot[3];
    atomic_uint middle; /* index of the middle buffer | 4 when it holds news */
    unsigned back, front; /* writer's and reader's own buffers */
    int fd;
    struct sockaddr_in to;
    prox_vec3 last_v, last_p;
    uint64_t last_t;
} osc_dev;

void dev_osc_set_pose(dev_device *d, const prox_xform *pose, uint32_t buttons)
{
    osc_dev *o = d->impl;
    pose_slot *s = &o->slot[o->back];
    s->pose = *pose;
    s->buttons = buttons;
    s->time_ns = prox_now_ns();
    unsigned old = atomic_exchange_explicit(&o->middle, o->back | 4u, memory_order_acq_rel);
    o->back = old & 3u;
}

static int osc_read(dev_device *d, dev_state *out)
{
    osc_dev *o = d->impl;
    if (atomic_load_explicit(&o->middle, memory_order_relaxed) & 4u) {
        unsigned old = atomic_exchange_explicit(&o->middle, o->front, memory_order_acq_rel);
        o->front = old & 3u;
    }
    const pose_slot *s = &o->slot[o->front];
    memset(out, 0, sizeof *out);
    out->time_ns = s->time_ns; /* stale when the sender stops: the loop's stale check sees it */
    out->position = s->pose.t;
    out->orientation = prox_m3_to_quat(&s->pose.R);
    out->buttons = s->buttons;
    if (o->last_t && s->time_ns > o->last_t)
        o->last_v = prox_v3_scale(prox_v3_sub(s->pose.t, o->last_p), 1e9 / (double)(s->time_ns - o->last_t));
    if (s->time_ns != o->last_t) {
        o->last_t = s->time_ns;
        o->last_p = s->pose.t;
    }
    out->linear_velocity = o->last_v;
    return 0;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static int osc_write(dev_device *d, const dev_command *c)
{
    osc_dev *o = d->impl;
    unsigned char buf[16 + 8 + 24];
    memcpy(buf, "/device/force\0\0\0", 16);
    memcpy(buf + 16, ",ffffff\0", 8);
    float v[6] = {(float)c->force_n.x, (float)c->force_n.y, (float)c->force_n.z,
                  (float)c->torque_nm.x, (float)c->torque_nm.y, (float)c->torque_nm.z};
    for (int i = 0; i < 6; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        put_be32(buf + 24 + 4 * i, u);
    }
    ssize_t n = sendto(o->fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&o->to, sizeof o->to);
    return n == (ssize_t)sizeof buf ? 0 : 0; /* a lost datagram is not a device fault: UDP */
}

static void osc_close(dev_device *d)
{
    osc_dev *o = d->impl;
    if (o->fd >= 0)
        close(o->fd);
    free(o);
}

static const dev_ops osc_ops = {NULL, osc_read, osc_write, osc_close};

dev_device *dev_osc_open(const char *host, int port, char *err, size_t errlen)
{
    osc_dev *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(err, errlen, "osc device: out of memory");
        return NULL;
    }
    o->to.sin_family = AF_INET;
    o->to.sin_port = htons((uint16_t)port);
    if (port <= 0 || port > 65535 || inet_pton(AF_INET, host ? host : "127.0.0.1", &o->to.sin_addr) != 1) {
        snprintf(err, errlen, "osc device: bad force destination %s:%d", host ? host : "127.0.0.1", port);
        free(o);
        return NULL;
    }
    o->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (o->fd < 0) {
        snprintf(err, errlen, "osc device: cannot open a socket");
        free(o);
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        o->slot[i].pose = prox_xform_identity();
    o->back = 0;
    atomic_init(&o->middle, 1u);
    o->front = 2;
    o->dev.ops = &osc_ops;
    o->dev.impl = o;
    snprintf(o->dev.info.name, sizeof o->dev.info.name, "OSC device (forces to %s:%d)", host ? host : "127.0.0.1", port);
    snprintf(o->dev.info.driver, sizeof o->dev.info.driver, "osc");
    o->dev.info.workspace_min = prox_v3(-0.3, -0.3, -0.3);
    o->dev.info.workspace_max = prox_v3(0.3, 0.3, 0.3);
    o->dev.info.max_force_n = 10;
    o->dev.info.max_torque_nm = 0.5;
    o->dev.info.max_stiffness_n_per_m = 3000;
    o->dev.info.max_damping_n_s_per_m = 20;
    return &o->dev;
}
