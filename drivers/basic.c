/* basic.c - the null and replay drivers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_device.h"

static void fill_info(dev_info *i, const char *name, const char *driver)
{
    snprintf(i->name, sizeof i->name, "%s", name);
    snprintf(i->driver, sizeof i->driver, "%s", driver);
    i->workspace_min = prox_v3(-0.3, -0.3, -0.3);
    i->workspace_max = prox_v3(0.3, 0.3, 0.3);
    i->max_force_n = 10;
    i->max_torque_nm = 0.5;
    i->max_stiffness_n_per_m = 3000;
    i->max_damping_n_s_per_m = 20;
    i->max_angular_stiffness_nm_per_rad = 5;
}

/* ---- null ---- */

static int null_read(dev_device *d, dev_state *out)
{
    (void)d;
    memset(out, 0, sizeof *out);
    out->time_ns = prox_now_ns();
    out->orientation = prox_quat_identity();
    return 0;
}
static int null_write(dev_device *d, const dev_command *c) { (void)d, (void)c; return 0; }
static void plain_close(dev_device *d) { free(d->impl); }
static const dev_ops null_ops = {NULL, null_read, null_write, plain_close};

dev_device *dev_null_open(char *err, size_t errlen)
{
    dev_device *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "null device: out of memory");
        return NULL;
    }
    d->ops = &null_ops;
    d->impl = d;
    fill_info(&d->info, "null device", "null");
    return d;
}

/* ---- replay ---- */

typedef struct replay_dev {
    dev_device dev;
    double *t;        /* seconds */
    prox_vec3 *p;
    prox_quat *q;
    size_t n, i;
    uint64_t t0;
} replay_dev;

static int replay_read(dev_device *d, dev_state *out)
{
    replay_dev *r = d->impl;
    uint64_t now = prox_now_ns();
    if (!r->t0)
        r->t0 = now;
    double t = (double)(now - r->t0) * 1e-9;
    while (r->i + 1 < r->n && r->t[r->i + 1] <= t)
        r->i++;
    size_t i = r->i, j = i + 1 < r->n ? i + 1 : i;
    double a = (j != i && r->t[j] > r->t[i]) ? (t - r->t[i]) / (r->t[j] - r->t[i]) : 0;
    a = a < 0 ? 0 : (a > 1 ? 1 : a);
    memset(out, 0, sizeof *out);
    out->time_ns = now;
    out->position = prox_v3_add(prox_v3_scale(r->p[i], 1 - a), prox_v3_scale(r->p[j], a));
    out->orientation = a < 0.5 ? r->q[i] : r->q[j];
    if (j != i && r->t[j] > r->t[i])
        out->linear_velocity = prox_v3_scale(prox_v3_sub(r->p[j], r->p[i]), 1.0 / (r->t[j] - r->t[i]));
    return 0;
}

static void replay_close(dev_device *d)
{
    replay_dev *r = d->impl;
    free(r->t);
    free(r->p);
    free(r->q);
    free(r);
}
static const dev_ops replay_ops = {NULL, replay_read, null_write, replay_close};

dev_device *dev_replay_open(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "replay device: %s: %s", path, strerror(errno));
        return NULL;
    }
    replay_dev *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "replay device: out of memory");
        fclose(f);
        return NULL;
    }
    r->dev.impl = r;
    size_t cap = 0;
    char line[1024];
    int lineno = 0, got;
    while ((got = prox_read_line(f, line, sizeof line)) != 0) {
        lineno++;
        if (got < 0) {
            char why[96];
            snprintf(err, errlen, "replay device: %s:%d: %s", path, lineno, prox_read_line_why(got, sizeof line, why, sizeof why));
            goto fail;
        }
        char *h = strchr(line, '#');
        if (h)
            *h = 0;
        double v[8];
        int n = sscanf(line, "%lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
        if (n <= 0)
            continue;
        int ok = n == 8;
        for (int k = 0; ok && k < 8; k++)
            ok = isfinite(v[k]);
        if (ok && r->n && v[0] < r->t[r->n - 1])
            ok = 0;
        if (!ok || (v[4] == 0 && v[5] == 0 && v[6] == 0 && v[7] == 0)) {
            snprintf(err, errlen, "replay device: %s:%d: want 't tx ty tz qw qx qy qz' with finite numbers and rising t", path,
                     lineno);
            goto fail;
        }
        if (r->n == cap) {
            cap = cap ? 2 * cap : 256;
            double *nt = realloc(r->t, sizeof *r->t * cap);
            r->t = nt ? nt : r->t;
            prox_vec3 *np = realloc(r->p, sizeof *r->p * cap);
            r->p = np ? np : r->p;
            prox_quat *nq = realloc(r->q, sizeof *r->q * cap);
            r->q = nq ? nq : r->q;
            if (!nt || !np || !nq) {
                snprintf(err, errlen, "replay device: out of memory");
                goto fail;
            }
        }
        r->t[r->n] = v[0];
        r->p[r->n] = prox_v3(v[1], v[2], v[3]);
        prox_quat q = {v[4], v[5], v[6], v[7]};
        r->q[r->n] = prox_quat_normalize(q);
        r->n++;
    }
    if (r->n == 0) {
        snprintf(err, errlen, "replay device: %s holds no trajectory", path);
        goto fail;
    }
    fclose(f);
    r->dev.ops = &replay_ops;
    fill_info(&r->dev.info, "replay", "replay");
    return &r->dev;
fail:
    fclose(f);
    replay_close(&r->dev);
    return NULL;
}
