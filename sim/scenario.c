/* scenario.c - the scenario text format (docs/scenarios.md): one command
 * a line, `#` starts a comment. Every line is checked as it is read, and
 * the names it uses once the whole file is read; the first bad line
 * refuses the scenario with its line number. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

#define SIM_MAX_TOKENS 24
#define SIM_MAX_TEXT (16u << 20) /* bytes of scenario text */
#define SIM_MAX_ITEMS 100000u    /* objects, waypoints, events or expectations each */
#define SIM_MAX_DURATION_S 3600.0

typedef struct parser {
    sim_scenario *sc;
    const char *name, *dir;
    int line;
    char *err;
    size_t errlen;
} parser;

static int fail(parser *p, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->line > 0)
        snprintf(p->err, p->errlen, "%s:%d: %s", p->name, p->line, msg);
    else /* the file as a whole */
        snprintf(p->err, p->errlen, "%s: %s", p->name, msg);
    return -1;
}

/* a finite number filling the whole token */
static int num(parser *p, const char *tok, const char *what, double *out)
{
    char *end;
    double v = strtod(tok, &end);
    if (end == tok || *end || !isfinite(v)) /* (an overflow is inf; an underflow, ERANGE too, is a tiny number) */
        return fail(p, "%s: '%s' is not a finite number", what, tok);
    *out = v;
    return 0;
}

static int num_in(parser *p, const char *tok, const char *what, double lo, double hi, double *out)
{
    if (num(p, tok, what, out))
        return -1;
    if (!(*out >= lo && *out <= hi))
        return fail(p, "%s: %s is outside %g..%g", what, tok, lo, hi);
    return 0;
}

static int whole(parser *p, const char *tok, const char *what, double lo, double hi, double *out)
{
    if (num_in(p, tok, what, lo, hi, out))
        return -1;
    if (*out != floor(*out))
        return fail(p, "%s: %s is not a whole number", what, tok);
    return 0;
}

/* grow an array by one element (zeroed); NULL when out of memory or full.
 * Its capacity is the least power of two not below *n, so it is full
 * only when *n is 0 or a power of two, and then grows to 2 * *n (1 at
 * first): one realloc a line took 133 s to parse 100,001 lines under
 * ASan, whose realloc always moves the block (quadratic). */
static void *push(parser *p, void **arr, uint32_t *n, size_t size)
{
    if (*n >= SIM_MAX_ITEMS) {
        fail(p, "more than %u items of one kind", SIM_MAX_ITEMS);
        return NULL;
    }
    if ((*n & (*n - 1)) == 0) { /* 0, 1, 2, 4, ...: full */
        void *a = realloc(*arr, (*n ? 2 * (size_t)*n : 1) * size);
        if (!a) {
            fail(p, "out of memory");
            return NULL;
        }
        *arr = a;
    }
    char *e = (char *)*arr + (size_t)*n * size;
    memset(e, 0, size);
    ++*n;
    return e;
}

static int name_arg(parser *p, const char *tok, char out[RT_NAME_MAX])
{
    if (strlen(tok) >= RT_NAME_MAX)
        return fail(p, "name '%s' is longer than %d characters", tok, RT_NAME_MAX - 1);
    snprintf(out, RT_NAME_MAX, "%s", tok);
    return 0;
}

/* tx ty tz [qw qx qy qz] from tok[0..n): 3 or 7 numbers */
static int pose_args(parser *p, char **tok, int n, const char *what, prox_xform *out)
{
    if (n != 3 && n != 7)
        return fail(p, "%s wants x y z or x y z qw qx qy qz (%d numbers given)", what, n);
    double v[7] = {0, 0, 0, 1, 0, 0, 0};
    for (int i = 0; i < n; i++)
        if (num(p, tok[i], what, &v[i]))
            return -1;
    double big = fmax(fmax(fabs(v[3]), fabs(v[4])), fmax(fabs(v[5]), fabs(v[6])));
    if (!(big > 0))
        return fail(p, "%s: the rotation quaternion is zero", what);
    /* prox_quat_normalize scales tiny and huge components itself */
    *out = prox_xform_from_pose(prox_v3(v[0], v[1], v[2]), prox_quat_normalize((prox_quat){v[3], v[4], v[5], v[6]}));
    return 0;
}

static const sim_object *find_object(const sim_scenario *sc, const char *name)
{
    for (uint32_t i = 0; i < sc->nobj; i++)
        if (!strcmp(sc->obj[i].name, name))
            return &sc->obj[i];
    return NULL;
}

/* object NAME KIND ARGS... [at x y z [qw qx qy qz]] [spheres N | bvh] */
static int cmd_object(parser *p, char **tok, int n)
{
    if (n < 3)
        return fail(p, "object wants NAME KIND ...");
    sim_scenario *sc = p->sc;
    if (find_object(sc, tok[1]))
        return fail(p, "object '%s' is defined twice", tok[1]);
    sim_object o;
    memset(&o, 0, sizeof o);
    o.line = p->line;
    o.pose = prox_xform_identity();
    if (name_arg(p, tok[1], o.name))
        return -1;
    /* trailing options, in either order (both together are refused below) */
    int end = n;
    for (int more = 1; more;) {
        more = 0;
        if (end > 3 && !o.bvh && !strcmp(tok[end - 1], "bvh"))
            o.bvh = 1, end--, more = 1;
        else if (end > 4 && !o.spheres && !strcmp(tok[end - 2], "spheres")) {
            double v;
            if (whole(p, tok[end - 1], "spheres", 1, RT_IST_SPHERES_MAX, &v))
                return -1;
            o.spheres = (uint32_t)v;
            end -= 2, more = 1;
        }
    }
    for (int i = 3; i < end; i++)
        if (!strcmp(tok[i], "at")) {
            if (pose_args(p, tok + i + 1, end - i - 1, "at", &o.pose))
                return -1;
            end = i;
            break;
        }
    const char *k = tok[2];
    int na = end - 3;
    char **a = tok + 3;
    const double big = 1e3;
    if (!strcmp(k, "box")) {
        o.kind = SOBJ_BOX;
        if (na != 3)
            return fail(p, "box wants half extents HX HY HZ");
        for (int i = 0; i < 3; i++)
            if (num_in(p, a[i], "box half extent", 1e-6, big, &o.a[i]))
                return -1;
    } else if (!strcmp(k, "tiled_box")) {
        o.kind = SOBJ_TILED_BOX;
        if (na != 4)
            return fail(p, "tiled_box wants half extents HX HY HZ and tiles a side N");
        for (int i = 0; i < 3; i++)
            if (num_in(p, a[i], "box half extent", 1e-6, big, &o.a[i]))
                return -1;
        if (whole(p, a[3], "tiles", 1, 256, &o.a[3]))
            return -1;
    } else if (!strcmp(k, "sphere")) {
        o.kind = SOBJ_SPHERE;
        if (na != 1 && na != 2)
            return fail(p, "sphere wants R [SUBDIVISIONS]");
        o.a[1] = 3;
        if (num_in(p, a[0], "sphere radius", 1e-6, big, &o.a[0]) || (na == 2 && whole(p, a[1], "subdivisions", 0, 6, &o.a[1])))
            return -1;
    } else if (!strcmp(k, "torus")) {
        o.kind = SOBJ_TORUS;
        if (na != 2 && na != 4)
            return fail(p, "torus wants R r [MAJOR_SEGMENTS MINOR_SEGMENTS]");
        o.a[2] = 48, o.a[3] = 16;
        if (num_in(p, a[0], "torus radius", 1e-6, big, &o.a[0]) || num_in(p, a[1], "tube radius", 1e-6, big, &o.a[1]))
            return -1;
        if (!(o.a[1] < o.a[0]))
            return fail(p, "torus: the tube radius must be below the ring radius");
        if (na == 4 && (whole(p, a[2], "major segments", 3, 1024, &o.a[2]) || whole(p, a[3], "minor segments", 3, 1024, &o.a[3])))
            return -1;
    } else if (!strcmp(k, "file")) {
        o.kind = SOBJ_FILE;
        if (na != 1)
            return fail(p, "file wants one PATH (no spaces)");
        size_t dl = p->dir && a[0][0] != '/' ? strlen(p->dir) + 1 : 0;
        o.path = malloc(dl + strlen(a[0]) + 1);
        if (!o.path)
            return fail(p, "out of memory");
        if (dl)
            sprintf(o.path, "%s/%s", p->dir, a[0]);
        else
            strcpy(o.path, a[0]);
    } else if (!strcmp(k, "voxels")) {
        o.kind = SOBJ_VOXELS;
        if (na != 4)
            return fail(p, "voxels wants CELL NX NY NZ (an empty map; cell (0,0,0)'s corner at the object's origin)");
        if (num_in(p, a[0], "voxel cell", 1e-5, 10, &o.a[0]))
            return -1;
        for (int i = 0; i < 3; i++) {
            double v;
            if (whole(p, a[1 + i], "cells per axis", 1, 65536, &v))
                return -1;
            o.n[i] = (uint32_t)v;
        }
    } else
        return fail(p, "unknown object kind '%s' (box, tiled_box, sphere, torus, file, voxels)", k);
    if (o.bvh && (o.kind == SOBJ_VOXELS))
        return fail(p, "bvh applies to meshes, not voxel maps");
    if (o.spheres && (o.bvh || o.kind == SOBJ_VOXELS || (o.kind == SOBJ_FILE && rt_object_is_file(o.path)))) {
        free(o.path);
        return fail(p, "spheres sizes the inner sphere tree built from a mesh: not with bvh, a voxel map or an .ist/.vox file");
    }
    if (sc->nobj >= RT_MAX_OBJECTS) {
        free(o.path);
        return fail(p, "more than %u objects", RT_MAX_OBJECTS);
    }
    sim_object *slot = push(p, (void **)&sc->obj, &sc->nobj, sizeof *slot);
    if (!slot) {
        free(o.path);
        return -1;
    }
    *slot = o;
    return 0;
}

/* KEY VALUE pairs into named doubles */
typedef struct keyed {
    const char *key;
    double *v;
    double lo, hi;
} keyed;

static int pairs(parser *p, char **tok, int n, const char *what, const keyed *k, int nk)
{
    if (n < 3 || (n - 1) % 2)
        return fail(p, "%s wants KEY VALUE pairs", what);
    for (int i = 1; i < n; i += 2) {
        int j = 0;
        while (j < nk && strcmp(k[j].key, tok[i]))
            j++;
        if (j == nk) {
            char keys[384] = "";
            for (int m = 0; m < nk; m++)
                snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", m ? ", " : "", k[m].key);
            return fail(p, "%s: unknown key '%s' (%s)", what, tok[i], keys);
        }
        if (num_in(p, tok[i + 1], k[j].key, k[j].lo, k[j].hi, k[j].v))
            return -1;
    }
    return 0;
}

static int voxel_class(parser *p, const char *tok, uint32_t *out)
{
    if (!strcmp(tok, "free"))
        *out = PROX_VOXEL_FREE;
    else if (!strcmp(tok, "obstacle"))
        *out = PROX_VOXEL_OBSTACLE;
    else if (!strcmp(tok, "unknown"))
        *out = PROX_VOXEL_UNKNOWN;
    else
        return fail(p, "voxel class '%s' (free, obstacle, unknown)", tok);
    return 0;
}

/* at T WHAT ... */
static int cmd_at(parser *p, char **tok, int n)
{
    sim_scenario *sc = p->sc;
    double t;
    if (n < 3)
        return fail(p, "at wants T WHAT ...");
    if (num_in(p, tok[1], "time", 0, SIM_MAX_DURATION_S, &t))
        return -1;
    const char *w = tok[2];
    if (!strcmp(w, "hand")) {
        prox_xform x;
        if (pose_args(p, tok + 3, n - 3, "hand", &x))
            return -1;
        if (sc->nwp && t < sc->wp[sc->nwp - 1].t)
            return fail(p, "hand waypoints must come in time order (%g after %g)", t, sc->wp[sc->nwp - 1].t);
        sim_waypoint *wp = push(p, (void **)&sc->wp, &sc->nwp, sizeof *wp);
        if (!wp)
            return -1;
        wp->t = t, wp->x = x.t, wp->q = prox_m3_to_quat(&x.R);
        return 0;
    }
    sim_event e;
    memset(&e, 0, sizeof e);
    e.t = t, e.line = p->line;
    if (!strcmp(w, "pose")) {
        e.type = SEV_POSE;
        if (n < 4 || name_arg(p, tok[3], e.name) || pose_args(p, tok + 4, n - 4, "pose", &e.pose))
            return n < 4 ? fail(p, "pose wants NAME x y z [qw qx qy qz]") : -1;
    } else if (!strcmp(w, "forces")) {
        e.type = SEV_FORCES;
        if (n != 4 || (strcmp(tok[3], "on") && strcmp(tok[3], "off")))
            return fail(p, "forces wants on or off");
        e.on = !strcmp(tok[3], "on");
    } else if (!strcmp(w, "voxel") || !strcmp(w, "voxels")) {
        int block = !strcmp(w, "voxels"), nc = block ? 6 : 3;
        if (n != 4 + nc + 1)
            return fail(p, block ? "voxels wants NAME X0 Y0 Z0 X1 Y1 Z1 CLASS" : "voxel wants NAME X Y Z CLASS");
        e.type = SEV_VOXELS;
        if (name_arg(p, tok[3], e.name))
            return -1;
        double c[6];
        for (int i = 0; i < nc; i++)
            if (whole(p, tok[4 + i], "cell coordinate", 0, 65535, &c[i]))
                return -1;
        for (int i = 0; i < 3; i++) {
            e.lo[i] = (int32_t)c[i];
            e.hi[i] = (int32_t)(block ? c[3 + i] : c[i]);
            if (e.hi[i] < e.lo[i])
                return fail(p, "voxels: the block's last cell comes before its first");
        }
        double cells = (double)(e.hi[0] - e.lo[0] + 1) * (e.hi[1] - e.lo[1] + 1) * (e.hi[2] - e.lo[2] + 1);
        if (cells > SIM_MAX_VOXEL_BLOCK)
            return fail(p, "voxels: %.0f cells in one block (at most %u)", cells, SIM_MAX_VOXEL_BLOCK);
        if (voxel_class(p, tok[4 + nc], &e.cls))
            return -1;
    } else if (!strcmp(w, "remove")) {
        e.type = SEV_REMOVE;
        if (n != 4 || name_arg(p, tok[3], e.name))
            return n != 4 ? fail(p, "remove wants NAME") : -1;
    } else if (!strcmp(w, "tool")) {
        e.type = SEV_TOOL;
        if (n != 4 || name_arg(p, tok[3], e.name))
            return n != 4 ? fail(p, "tool wants NAME") : -1;
    } else if (!strcmp(w, "budget_us")) {
        e.type = SEV_BUDGET; /* at most the period: checked once the rate is known */
        if (n != 4 || num_in(p, tok[3], "budget_us", 0, 1e6, &e.v))
            return n != 4 ? fail(p, "budget_us wants US") : -1;
    } else
        return fail(p, "unknown event '%s' (hand, pose, forces, voxel, voxels, remove, tool, budget_us)", w);
    sim_event *slot = push(p, (void **)&sc->ev, &sc->nev, sizeof *slot);
    if (!slot)
        return -1;
    *slot = e;
    return 0;
}

static int cmd_expect(parser *p, char **tok, int n)
{
    if (n != 4)
        return fail(p, "expect wants METRIC OP VALUE (OP: < <= > >= == !=)");
    sim_report zero;
    memset(&zero, 0, sizeof zero);
    double v;
    if (sim_report_metric(&zero, tok[1], &v))
        return fail(p, "expect: unknown metric '%s' (the names hapticd --scenario prints)", tok[1]);
    int op = 0;
    for (int i = SOP_LT; i <= SOP_NE; i++)
        if (!strcmp(tok[2], sim_op_names[i]))
            op = i;
    if (!op)
        return fail(p, "expect: unknown comparison '%s' (< <= > >= == !=)", tok[2]);
    if (num(p, tok[3], "expect", &v))
        return -1;
    sim_expect *x = push(p, (void **)&p->sc->ex, &p->sc->nex, sizeof *x);
    if (!x)
        return -1;
    snprintf(x->metric, sizeof x->metric, "%s", tok[1]);
    x->op = op, x->v = v, x->line = p->line;
    return 0;
}

static int parse_line(parser *p, char *s)
{
    char *hash = strchr(s, '#');
    if (hash)
        *hash = 0;
    char *tok[SIM_MAX_TOKENS + 1];
    int n = 0;
    for (char *q = strtok(s, " \t\r"); q; q = strtok(NULL, " \t\r")) {
        if (n == SIM_MAX_TOKENS)
            return fail(p, "more than %d words on a line", SIM_MAX_TOKENS);
        tok[n++] = q;
    }
    if (!n)
        return 0;
    sim_scenario *sc = p->sc;
    const char *c = tok[0];
    if (!strcmp(c, "rate")) {
        return n != 2 ? fail(p, "rate wants HZ") : num_in(p, tok[1], "rate", 10, 20000, &sc->rate_hz);
    } else if (!strcmp(c, "duration")) {
        sc->duration_set = 1;
        return n != 2 ? fail(p, "duration wants SECONDS") : num_in(p, tok[1], "duration", 0.001, SIM_MAX_DURATION_S, &sc->duration_s);
    } else if (!strcmp(c, "budget_us")) {
        return n != 2 ? fail(p, "budget_us wants US") : num_in(p, tok[1], "budget_us", 0, 1e6, &sc->budget_us);
    } else if (!strcmp(c, "ist_spheres")) {
        double v;
        if (n != 2)
            return fail(p, "ist_spheres wants N");
        if (whole(p, tok[1], "ist_spheres", 1, RT_IST_SPHERES_MAX, &v))
            return -1;
        sc->ist_spheres = (uint32_t)v;
        return 0;
    } else if (!strcmp(c, "object")) {
        return cmd_object(p, tok, n);
    } else if (!strcmp(c, "tool")) {
        return n != 2 ? fail(p, "tool wants NAME") : name_arg(p, tok[1], sc->tool);
    } else if (!strcmp(c, "hand")) {
        dev_sim_def *h = &sc->hand;
        const keyed k[] = {{"mass_kg", &h->mass_kg, 1e-3, 100},
                           {"damping_n_s_per_m", &h->damping_n_s_per_m, 0, 1e4},
                           {"stiffness_n_per_m", &h->hand_stiffness_n_per_m, 0, 1e6},
                           {"hand_damping_n_s_per_m", &h->hand_damping_n_s_per_m, 0, 1e4},
                           {"max_force_n", &h->max_force_n, 1e-3, 1e4}};
        return pairs(p, tok, n, "hand", k, (int)(sizeof k / sizeof k[0]));
    } else if (!strcmp(c, "gains")) {
        rt_gains *g = &sc->gains;
        const keyed k[] = {{"stiffness_n_per_m3", &g->stiffness_n_per_m3, 0, 1e12},
                           {"margin_m", &g->margin_m, 0, 1},
                           {"margin_stiffness_n_per_m", &g->margin_stiffness_n_per_m, 0, 1e6},
                           {"damping_n_s_per_m", &g->damping_n_s_per_m, 0, 1e4},
                           {"coupling_k_n_per_m", &g->coupling_k_n_per_m, 0, 1e6},
                           {"coupling_b_n_s_per_m", &g->coupling_b_n_s_per_m, 0, 1e4},
                           {"torque_scale", &g->torque_scale, 0, 1e3}};
        return pairs(p, tok, n, "gains", k, (int)(sizeof k / sizeof k[0]));
    } else if (!strcmp(c, "limits")) {
        rt_limits *l = &sc->limits;
        const keyed k[] = {{"max_force_n", &l->max_force_n, 0, 1e4},
                           {"max_torque_nm", &l->max_torque_nm, 0, 1e3},
                           {"max_force_rate_n_per_cycle", &l->max_force_rate_n_per_cycle, 0, 1e4},
                           {"ramp_s", &l->ramp_s, 0, 60},
                           {"watchdog_ms", &l->watchdog_ms, 1, RT_LIMIT_MAX_MS},
                           {"stale_device_ms", &l->stale_device_ms, 0.1, RT_LIMIT_MAX_MS}};
        return pairs(p, tok, n, "limits", k, (int)(sizeof k / sizeof k[0]));
    } else if (!strcmp(c, "at")) {
        return cmd_at(p, tok, n);
    } else if (!strcmp(c, "expect")) {
        return cmd_expect(p, tok, n);
    }
    return fail(p, "unknown command '%s' (rate, duration, budget_us, ist_spheres, object, tool, hand, gains, limits, at, expect)", c);
}

static int cmp_event(const void *a, const void *b)
{
    const sim_event *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* names used by tools and events exist; events in time order */
static int check_names(parser *p)
{
    sim_scenario *sc = p->sc;
    p->line = 0;
    if (!sc->tool[0])
        return fail(p, "no tool: a 'tool NAME' line names the object the hand moves");
    if (!find_object(sc, sc->tool))
        return fail(p, "the tool '%s' is not an object", sc->tool);
    if (!sc->nwp)
        return fail(p, "no hand waypoints: 'at T hand X Y Z' lines say where the user's hand goes");
    for (uint32_t i = 0; i < sc->nev; i++) {
        const sim_event *e = &sc->ev[i];
        p->line = e->line;
        if (e->type == SEV_FORCES || e->type == SEV_BUDGET)
            continue;
        const sim_object *o = find_object(sc, e->name);
        if (!o)
            return fail(p, "no object named '%s'", e->name);
        if (e->type == SEV_VOXELS && o->kind != SOBJ_VOXELS && o->kind != SOBJ_FILE)
            return fail(p, "'%s' is not a voxel map", e->name);
        if (e->type == SEV_VOXELS && o->kind == SOBJ_VOXELS)
            for (int k = 0; k < 3; k++)
                if ((uint32_t)e->hi[k] >= o->n[k])
                    return fail(p, "voxel cell %d on axis %d is outside '%s' (%u cells)", e->hi[k], k, e->name, o->n[k]);
    }
    /* by time, file order within a time (the line numbers keep it) */
    if (sc->nev) /* (qsort wants a non-null array even for none) */
        qsort(sc->ev, sc->nev, sizeof *sc->ev, cmp_event);
    if (!sc->duration_set) {
        double last = sc->wp[sc->nwp - 1].t;
        if (sc->nev && sc->ev[sc->nev - 1].t > last)
            last = sc->ev[sc->nev - 1].t;
        sc->duration_s = last + 1.0 < SIM_MAX_DURATION_S ? last + 1.0 : SIM_MAX_DURATION_S;
    }
    p->line = 0;
    if (sc->duration_s * sc->rate_hz > SIM_MAX_CYCLES)
        return fail(p, "%.0f s at %.0f Hz is more than %.0f cycles", sc->duration_s, sc->rate_hz, SIM_MAX_CYCLES);
    /* the simulated hand integrates stably at the device's substep
     * (semi-implicit Euler: h c/m + h^2 k/m below 2, with a margin) */
    const dev_sim_def *h = &sc->hand;
    double hs = DEV_SIM_SUBSTEP_S, cm = (h->damping_n_s_per_m + h->hand_damping_n_s_per_m) / h->mass_kg;
    if (hs * cm + hs * hs * h->hand_stiffness_n_per_m / h->mass_kg > 1.5)
        return fail(p, "the hand's settings are unstable at the simulated device's %.2f ms steps (a heavier mass_kg, or less "
                       "stiffness or damping)", 1e3 * hs);
    /* in time: no event after the end, none naming an object removed before */
    int *gone = calloc(sc->nobj ? sc->nobj : 1, sizeof *gone);
    if (!gone)
        return fail(p, "out of memory");
    int rc = 0;
    const double last_s = (double)((sim_cycles(sc) - 1) * sim_period_ns(sc)) * 1e-9;
    for (uint32_t i = 0; i < sc->nev && !rc; i++) {
        const sim_event *e = &sc->ev[i];
        p->line = e->line;
        if (e->t > last_s + SIM_EVENT_TOL_S) /* never applied */
            rc = fail(p, "at %g s is after the scenario's end (its last cycle is at %.9g s, duration %g s)", e->t, last_s,
                      sc->duration_s);
        else if (e->type == SEV_BUDGET && e->v > 1e6 / sc->rate_hz)
            rc = fail(p, "budget_us %g is more than the loop period (%g us)", e->v, 1e6 / sc->rate_hz);
        else if (e->type != SEV_FORCES && e->type != SEV_BUDGET) {
            uint32_t k = (uint32_t)(find_object(sc, e->name) - sc->obj);
            if (gone[k])
                rc = fail(p, "'%s' was removed before %g s", e->name, e->t);
            else if (e->type == SEV_REMOVE)
                gone[k] = 1;
        }
    }
    free(gone);
    return rc;
}

sim_scenario *sim_scenario_parse(const char *text, const char *name, const char *dir, char *err, size_t errlen)
{
    size_t len = strlen(text);
    if (len > SIM_MAX_TEXT) {
        snprintf(err, errlen, "%s: %zu bytes (a scenario is at most %u)", name, len, SIM_MAX_TEXT);
        return NULL;
    }
    sim_scenario *sc = calloc(1, sizeof *sc);
    char *buf = malloc(len + 1);
    if (!sc || !buf) {
        free(sc);
        free(buf);
        snprintf(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    memcpy(buf, text, len + 1);
    snprintf(sc->name, sizeof sc->name, "%s", name);
    rt_config d = rt_config_default();
    sc->rate_hz = d.rate_hz;
    sc->budget_us = d.budget_us;
    sc->ist_spheres = d.ist_spheres;
    sc->gains = d.gains;
    sc->limits = d.limits;
    sc->hand = dev_sim_def_default();
    parser p = {sc, name, dir, 0, err, errlen};
    int rc = 0;
    char *s = buf;
    while (s && !rc) {
        char *nl = strchr(s, '\n');
        if (nl)
            *nl = 0;
        p.line++;
        for (const char *q = s; *q && *q != '#' && !rc; q++) /* comments may hold any text (UTF-8) */
            if (!isprint((unsigned char)*q) && *q != '\t' && *q != '\r')
                rc = fail(&p, "a byte that is not text (0x%02x)", (unsigned char)*q);
        if (!rc)
            rc = parse_line(&p, s);
        s = nl ? nl + 1 : NULL;
    }
    if (!rc)
        rc = check_names(&p);
    free(buf);
    if (rc) {
        sim_scenario_free(sc);
        return NULL;
    }
    return sc;
}

sim_scenario *sim_scenario_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(SIM_MAX_TEXT + 2);
    size_t n = text ? fread(text, 1, SIM_MAX_TEXT + 1, f) : 0;
    int bad = text ? ferror(f) : 1, read_errno = errno; /* (a folder opens, and its read fails: EISDIR) */
    fclose(f);
    if (bad || n > SIM_MAX_TEXT) {
        snprintf(err, errlen, "%s: %s%s", path, !text ? "out of memory" : bad ? "cannot read: " : "larger than a scenario may be (16 MiB)",
                 text && bad ? strerror(read_errno) : "");
        free(text);
        return NULL;
    }
    text[n] = 0;
    if (memchr(text, 0, n)) {
        snprintf(err, errlen, "%s: a NUL byte: not a scenario text", path);
        free(text);
        return NULL;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    sim_scenario *sc = sim_scenario_parse(text, path, slash ? (dir[0] ? dir : "/") : NULL, err, errlen);
    free(text);
    return sc;
}

void sim_scenario_free(sim_scenario *sc)
{
    if (!sc)
        return;
    for (uint32_t i = 0; i < sc->nobj; i++)
        free(sc->obj[i].path);
    free(sc->obj);
    free(sc->wp);
    free(sc->ev);
    free(sc->ex);
    free(sc);
}

double sim_scenario_duration_s(const sim_scenario *sc) { return sc->duration_s; }
