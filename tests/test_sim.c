/* test_sim.c - simulation in the loop: the scenario format, lockstep steps
 * of the service on a virtual clock, events at their cycle, the report. */
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "check_telemetry.h"
#include "dev_device.h"
#include "prox.h"
#include "rt_service.h"
#include "sim.h"
#include "sim_internal.h"

/* a 2 cm ball over a table (no hand waypoints yet); the press: the hand
 * aims 3 cm below the top */
#define BALL_SETTINGS                                                                                                \
    "tool ball\n"                                                                                                   \
    "budget_us 200000   # every query completes: the run is deterministic\n"                                      \
    "hand mass_kg 0.2 stiffness_n_per_m 300 hand_damping_n_s_per_m 5\n"
#define BALL_OVER_TABLE "object table box 0.25 0.25 0.02 at 0 0 -0.02\nobject ball sphere 0.02 2\n" BALL_SETTINGS
#define PRESS_EVENTS "at 0 hand 0 0 0.06\nat 1 hand 0 0 -0.01\n"
#define PRESS_SCENE BALL_OVER_TABLE PRESS_EVENTS

/* a 3 cm box tool 35 mm over a table's top (z = 0) */
#define BOX_OVER_TABLE "object table box 0.25 0.25 0.02 at 0 0 -0.02\nobject tool box 0.015 0.015 0.015 at 0 0 0.05\ntool tool\n"

typedef struct rec_line {
    double t, x, y, z, q[4], f[3], dist, penvol;
    unsigned flags;
    char text[400]; /* the line without its query time */
} rec_line;

static void keep_line(const tel_row *r, const char *line, int i, void *u)
{
    rec_line *o = &((rec_line *)u)[i];
    o->t = r->t, o->x = r->p[0], o->y = r->p[1], o->z = r->p[2];
    memcpy(o->q, r->q, sizeof o->q);
    memcpy(o->f, r->f, sizeof o->f);
    o->dist = r->distance, o->penvol = r->penvol, o->flags = r->flags;
    /* the text less the 18th field (query time, real) */
    const char *p = line;
    for (int field = 0; field < 17 && p; field++)
        p = strchr(p + 1, ' ');
    const char *q = p ? strchr(p + 1, ' ') : NULL;
    snprintf(o->text, sizeof o->text, "%.*s%s", p && q ? (int)(p - line) : 0, line, p && q ? q : "");
}

/* the telemetry record's lines (hapticd's format; check_telemetry.h): at
 * most cap, or -1 when one does not read */
static int read_record(const char *path, rec_line *out, int cap) { return tel_read(path, cap, keep_line, out); }

static sim_scenario *parse(const char *text, char *err, size_t errlen) { return sim_scenario_parse(text, "t.sim", NULL, err, errlen); }

/* run text, recording into path; 0 on success */
static int run_text(const char *text, const char *record, sim_report *rep)
{
    char err[600];
    sim_scenario *sc = parse(text, err, sizeof err);
    CHECK(sc, "%s", err);
    if (!sc)
        return -1;
    sim_options o = {record, 1, NULL};
    int rc = sim_run(sc, &o, rep, err, sizeof err);
    CHECK(rc == 0, "%s", err);
    sim_scenario_free(sc);
    return rc;
}

static void test_parse_errors(void)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"objekt a box 1 1 1\n", "t.sim:1: unknown command 'objekt'"},
        {"object a box 1 nan 1\ntool a\nat 0 hand 0 0 0\n", "t.sim:1: box half extent: 'nan' is not a finite number"},
        {"object a box 1 1\n", "t.sim:1: box wants half extents"},
        {"object a sphere 0.1\nobject a sphere 0.2\n", "t.sim:2: object 'a' is defined twice"},
        {"object a sphere 0.1\nat 0 hand 0 0 0\n", "t.sim: no tool"},
        {"object a sphere 0.1\ntool b\nat 0 hand 0 0 0\n", "t.sim: the tool 'b' is not an object"},
        {"object a sphere 0.1\ntool a\n", "t.sim: no hand waypoints"},
        {"object a sphere 0.1\ntool a\nat 1 hand 0 0 0\nat 0.5 hand 0 0 0\n", "t.sim:4: hand waypoints must come in time order"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0 0 0 0 0\n", "t.sim:3: hand: the rotation quaternion is zero"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0\n", "t.sim:3: hand wants x y z"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nat 1 pose b 0 0 0\n", "t.sim:4: no object named 'b'"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nat 1 voxel a 0 0 0 obstacle\n", "t.sim:4: 'a' is not a voxel map"},
        {"object v voxels 0.01 4 4 4\nobject a sphere 0.1\ntool a\nat 0 hand 0 0 0\nat 1 voxels v 0 0 0 3 3 4 obstacle\n",
         "t.sim:5: voxel cell 4 on axis 2 is outside 'v' (4 cells)"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nat 1 voxel a 0 0 0 rock\n", "t.sim:4: voxel class 'rock'"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nexpect max_forse_n < 1\n", "t.sim:4: expect: unknown metric 'max_forse_n'"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nexpect faults = 0\n", "t.sim:4: expect: unknown comparison '='"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\ngains stiffness 5\n", "t.sim:4: gains: unknown key 'stiffness'"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nlimits max_force_n -1\n", "t.sim:4: max_force_n: -1 is outside"},
        {"ist_spheres 0\n", "t.sim:1: ist_spheres: 0 is outside 1..1e+06"},
        {"ist_spheres 2000000\n", "t.sim:1: ist_spheres: 2000000 is outside"},
        {"ist_spheres 100.5\n", "t.sim:1: ist_spheres: 100.5 is not a whole number"},
        {"object a sphere 0.1 spheres 0\n", "t.sim:1: spheres: 0 is outside 1..1e+06"},
        {"object a sphere 0.1 spheres 100 bvh\n", "t.sim:1: spheres sizes the inner sphere tree built from a mesh"},
        {"object a sphere 0.1 bvh spheres 100\n", "t.sim:1: spheres sizes the inner sphere tree built from a mesh"},
        {"object v voxels 0.01 4 4 4 spheres 100\n", "t.sim:1: spheres sizes the inner sphere tree built from a mesh"},
        {"object f file f.ist spheres 100\n", "t.sim:1: spheres sizes the inner sphere tree built from a mesh"},
        {"rate 5\n", "t.sim:1: rate: 5 is outside 10..20000"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nat 1 jump a\n", "t.sim:4: unknown event 'jump'"},
        {"object a torus 0.1 0.2\n", "t.sim:1: torus: the tube radius must be below the ring radius"},
        {"object a sphere 0.1\x01\n", "t.sim:1: a byte that is not text (0x01)"},
        {"object a thing 1\n", "t.sim:1: unknown object kind 'thing'"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nduration 1\nat 2 forces off\n", "t.sim:5: at 2 s is after the scenario's end"},
        /* within the duration but after the last cycle (1.000 s): it would never apply */
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nduration 1.0005\nat 1.0003 forces off\n",
         "t.sim:5: at 1.0003 s is after the scenario's end (its last cycle is at 1 s"},
        {"object a sphere 0.1\nobject b sphere 0.1\ntool a\nat 0 hand 0 0 0\nat 1 remove b\nat 1.5 pose b 0 0 0\n",
         "t.sim:6: 'b' was removed before 1.5 s"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nat 1 budget_us 2000\n", "t.sim:4: budget_us 2000 is more than the loop period"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nhand mass_kg 0.001 damping_n_s_per_m 20\n", "the hand's settings are unstable"},
        {"object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nrate 20000\nduration 3600\n", "more than 7200000 cycles"},
        /* each command's missing or extra words */
        {"object a-name-of-thirty-two-characters2 box 1 1 1\n", "t.sim:1: name 'a-name-of-thirty-two-characters2' is longer than 31 characters"},
        {"object a\n", "t.sim:1: object wants NAME KIND ..."},
        {"object a tiled_box 1 1 1\n", "t.sim:1: tiled_box wants half extents HX HY HZ and tiles a side N"},
        {"object a sphere\n", "t.sim:1: sphere wants R [SUBDIVISIONS]"},
        {"object a torus 1\n", "t.sim:1: torus wants R r [MAJOR_SEGMENTS MINOR_SEGMENTS]"},
        {"object a file\n", "t.sim:1: file wants one PATH (no spaces)"},
        {"object a file x y\n", "t.sim:1: file wants one PATH (no spaces)"},
        {"object a voxels 0.1 2 2\n", "t.sim:1: voxels wants CELL NX NY NZ"},
        {"object a voxels 0.1 2 2 2 bvh\n", "t.sim:1: bvh applies to meshes, not voxel maps"},
        {"hand mass_kg\n", "t.sim:1: hand wants KEY VALUE pairs"},
        {"at 1\n", "t.sim:1: at wants T WHAT ..."},
        {"object a box 1 1 1\ntool a\nat 1 pose a 1 2\n", "t.sim:3: pose wants x y z or x y z qw qx qy qz (2 numbers given)"},
        {"object a box 1 1 1\ntool a\nat 1 forces maybe\n", "t.sim:3: forces wants on or off"},
        {"object m voxels 0.1 4 4 4\nobject a box 1 1 1\ntool a\nat 1 voxels m 3 3 3 1 1 1 obstacle\n",
         "t.sim:4: voxels: the block's last cell comes before its first"},
        {"object m voxels 0.1 4 4 4\nobject a box 1 1 1\ntool a\nat 1 voxels m 0 0 0 1000 1000 1000 obstacle\n",
         "t.sim:4: voxels: 1003003001 cells in one block (at most 1000000)"},
        {"object a box 1 1 1\ntool a\nat 1 remove\n", "t.sim:3: remove wants NAME"},
        {"object a box 1 1 1\ntool a\nat 1 tool\n", "t.sim:3: tool wants NAME"},
        {"object a box 1 1 1\ntool a\nat 1 budget_us\n", "t.sim:3: budget_us wants US"},
        {"expect faults\n", "t.sim:1: expect wants METRIC OP VALUE (OP: < <= > >= == !=)"},
        {"a b c d e f g h i j k l m n o p q r s t u v w x y z\n", "t.sim:1: more than 24 words on a line"},
        {"ist_spheres\n", "t.sim:1: ist_spheres wants N"},
        /* a bad number in each place that checks its own */
        {"object a box 1 1 1 at 0 0 zz\n", "t.sim:1: at: 'zz' is not a finite number"},
        {"object a tiled_box 1 0 1 4\n", "t.sim:1: box half extent: 0 is outside 1e-06..1000"},
        {"object a tiled_box 1 1 1 300\n", "t.sim:1: tiles: 300 is outside 1..256"},
        {"object a sphere 0.1 7\n", "t.sim:1: subdivisions: 7 is outside 0..6"},
        {"object a torus 0.2 x\n", "t.sim:1: tube radius: 'x' is not a finite number"},
        {"object a torus 0.2 0.1 48 2\n", "t.sim:1: minor segments: 2 is outside 3..1024"},
        {"object a voxels 20 4 4 4\n", "t.sim:1: voxel cell: 20 is outside 1e-05..10"},
        {"object a voxels 0.1 4 0 4\n", "t.sim:1: cells per axis: 0 is outside 1..65536"},
        {"at -1 hand 0 0 0\n", "t.sim:1: time: -1 is outside 0..3600"},
        {"at 1 pose a 1 y 2\n", "t.sim:1: pose: 'y' is not a finite number"},
        {"at 1 voxel a-name-of-thirty-two-characters2 0 0 0 obstacle\n",
         "t.sim:1: name 'a-name-of-thirty-two-characters2' is longer than 31 characters"},
        {"at 1 voxels v 0 0 0 1 1.5 1 obstacle\n", "t.sim:1: cell coordinate: 1.5 is not a whole number"},
        {"expect faults < lots\n", "t.sim:1: expect: 'lots' is not a finite number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[600] = "";
        sim_scenario *sc = parse(bad[i].text, err, sizeof err);
        CHECK(!sc, "case %zu parsed", i);
        CHECK(strstr(err, bad[i].want) != NULL, "case %zu: '%s' does not say '%s'", i, err, bad[i].want);
        sim_scenario_free(sc);
    }
    char err[600];
    CHECK(!sim_scenario_load("/nonexistent/x.sim", err, sizeof err) && strstr(err, "No such file"), "%s", err);
    /* comments may hold any text; a tiny quaternion is a rotation, not zero */
    sim_scenario *ok = parse("# \xc3\xa9t\xc3\xa9\nobject a sphere 0.1\ntool a\nat 0 hand 0 0 0 1e-200 0 0 0\n", err, sizeof err);
    CHECK(ok, "%s", err);
    sim_scenario_free(ok);
    /* a number too small for a normal double is a tiny finite number (as
     * the poses OSC and prox read), not "not finite"; the last cycle takes events */
    ok = parse("object a sphere 0.1\ntool a\nat 0 hand 1e-310 0 0\nduration 1.0005\nat 1.0 pose a 0 0 1e-320\n", err, sizeof err);
    CHECK(ok, "%s", err);
    sim_scenario_free(ok);
    /* a duration a whole number of periods has its last cycle at its end
     * (1.001 s / 1 ms is 1000.9999999999999 in doubles) */
    ok = parse("object a sphere 0.1\ntool a\nat 0 hand 0 0 0\nduration 1.001\nat 1.001 forces off\n", err, sizeof err);
    CHECK(ok, "%s", err);
    sim_scenario_free(ok);
    /* the three voxel class names, each its class */
    ok = parse("object v voxels 0.01 4 4 4\nobject a sphere 0.1\ntool a\nat 0 hand 0 0 0\nat 0.1 voxel v 0 0 0 free\n"
               "at 0.2 voxel v 0 0 0 obstacle\nat 0.3 voxels v 0 0 0 1 1 1 unknown\n",
               err, sizeof err);
    CHECK(ok && ok->nev == 3 && ok->ev[0].cls == PROX_VOXEL_FREE && ok->ev[1].cls == PROX_VOXEL_OBSTACLE && ok->ev[2].cls == PROX_VOXEL_UNKNOWN,
          "voxel classes: %s", ok ? "" : err);
    sim_scenario_free(ok);
}

/* n copies of line after head, in a malloc'd string */
static char *repeat_lines(const char *head, const char *line, int n)
{
    size_t hl = strlen(head), ll = strlen(line);
    char *t = malloc(hl + ll * (size_t)n + 1);
    if (!t)
        return NULL;
    memcpy(t, head, hl);
    for (int i = 0; i < n; i++)
        memcpy(t + hl + ll * (size_t)i, line, ll);
    t[hl + ll * (size_t)n] = 0;
    return t;
}

/* The scenario's size limits, each refused naming the line or the file:
 * more objects than the service holds, more items of one kind than a
 * scenario may list (the line of the first too many), text past 16 MiB
 * (given as text, and as a file); a file with a NUL byte, and a folder
 * (its read fails: the reason, not only "read error") */
static void test_scenario_limits(void)
{
    char err[600];
    char *t = repeat_lines("", "object o0000 sphere 0.1\n", 4097);
    for (int i = 0; t && i < 4097; i++) { /* distinct names o0000 .. o4096 */
        char name[16];
        snprintf(name, sizeof name, "o%04d", i);
        memcpy(t + 24 * i + 7, name, 5);
    }
    sim_scenario *sc = t ? parse(t, err, sizeof err) : NULL;
    CHECK(t && !sc && strstr(err, "t.sim:4097: more than 4096 objects"), "4097 objects: %s", err);
    sim_scenario_free(sc);
    free(t);
    t = repeat_lines("object a sphere 0.1\ntool a\nat 0 hand 0 0 0\n", "expect faults < 1\n", 100001);
    sc = t ? parse(t, err, sizeof err) : NULL;
    CHECK(t && !sc && strstr(err, "t.sim:100004: more than 100000 items of one kind"), "100001 expectations: %s", err);
    sim_scenario_free(sc);
    free(t);
    const size_t big = (16u << 20) + 1;
    t = malloc(big + 1);
    if (t) {
        memset(t, '\n', big);
        t[big] = 0;
    }
    sc = t ? parse(t, err, sizeof err) : NULL;
    CHECK(t && !sc && strstr(err, "t.sim: 16777217 bytes (a scenario is at most 16777216)"), "16 MiB + 1 of text: %s", err);
    sim_scenario_free(sc);
    char dir[] = "/tmp/test_sim_XXXXXX", path[300];
    CHECK(mkdtemp(dir) != NULL, "tmp dir");
    snprintf(path, sizeof path, "%s/big.sim", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f && t && fwrite(t, 1, big, f) == big, "write %s", path);
    if (f)
        fclose(f);
    free(t);
    sc = sim_scenario_load(path, err, sizeof err);
    CHECK(!sc && strstr(err, path) && strstr(err, ": larger than a scenario may be (16 MiB)"), "a 16 MiB + 1 file: %s", err);
    sim_scenario_free(sc);
    snprintf(path, sizeof path, "%s/nul.sim", dir);
    f = fopen(path, "wb");
    if (f) {
        fwrite("object a sphere 0.1\n\0tool a\n", 1, 28, f);
        fclose(f);
    }
    sc = sim_scenario_load(path, err, sizeof err);
    CHECK(!sc && strstr(err, path) && strstr(err, ": a NUL byte: not a scenario text"), "a NUL byte: %s", err);
    sim_scenario_free(sc);
    sc = sim_scenario_load(dir, err, sizeof err);
    CHECK(!sc && strstr(err, dir) && strstr(err, ": cannot read: Is a directory"), "a folder: %s", err);
    sim_scenario_free(sc);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    CHECK(system(path) == 0, "cleanup");
}

/* the lines of file f from its start, joined, into out */
static void read_back(FILE *f, char *out, size_t size)
{
    rewind(f);
    size_t n = fread(out, 1, size - 1, f);
    out[n] = 0;
}

/* r as sim_report_print writes it (json or text) into out; -1 (a failed
 * check) when no temporary file can be had */
static int report_printed(const sim_report *r, int json, char *out, size_t size)
{
    FILE *f = tmpfile();
    CHECK(f != NULL, "tmpfile");
    if (!f)
        return -1;
    sim_report_print(f, r, json);
    read_back(f, out, size);
    fclose(f);
    return 0;
}

/* expect's six comparisons at and beside a metric's value, each line as
 * sim_check writes it and the failures counted; the JSON report writes a
 * value that is not finite as null (JSON has no NaN or infinity) and
 * separates the members by commas, the last none */
static void test_expect_ops_and_json(void)
{
    char err[600];
    sim_scenario *sc = parse("object a sphere 0.1\ntool a\nat 0 hand 0 0 0\n"
                             "expect faults < 3\nexpect faults <= 3\nexpect faults > 3\nexpect faults >= 3\nexpect faults == 3\n"
                             "expect faults != 3\nexpect faults >= 3.5\nexpect max_force_n > 2.4\nexpect max_force_n >= 2.5\n"
                             "expect max_force_n < 2.5\nexpect max_force_n != 2\n",
                             err, sizeof err);
    CHECK(sc, "%s", err);
    if (!sc)
        return;
    sim_report r;
    memset(&r, 0, sizeof r);
    r.faults = 3, r.max_force_n = 2.5;
    FILE *f = tmpfile();
    CHECK(f != NULL, "tmpfile");
    if (!f) {
        sim_scenario_free(sc);
        return;
    }
    int failed = sim_check(sc, &r, f);
    static char out[8192];
    read_back(f, out, sizeof out);
    CHECK(failed == 5, "5 of 11 expectations fail (%d):\n%s", failed, out);
    const char *want[] = {"expect faults < 3 (line 4): FAILED (3)\n",    "expect faults <= 3 (line 5): ok (3)\n",
                          "expect faults > 3 (line 6): FAILED (3)\n",    "expect faults >= 3 (line 7): ok (3)\n",
                          "expect faults == 3 (line 8): ok (3)\n",       "expect faults != 3 (line 9): FAILED (3)\n",
                          "expect faults >= 3.5 (line 10): FAILED (3)\n", "expect max_force_n > 2.4 (line 11): ok (2.5)\n",
                          "expect max_force_n >= 2.5 (line 12): ok (2.5)\n", "expect max_force_n < 2.5 (line 13): FAILED (2.5)\n",
                          "expect max_force_n != 2 (line 14): ok (2.5)\n"};
    const char *p = out;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CHECK(!strncmp(p, want[i], strlen(want[i])), "line %zu: want '%s', have '%.60s'", i + 1, want[i], p);
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
    }
    CHECK(*p == 0, "no more lines: '%s'", p);
    sim_scenario_free(sc);
    /* JSON */
    r.first_contact_s = NAN, r.max_penvol_m3 = INFINITY, r.work_j = -0.25;
    fclose(f);
    /* the text report of the same run: one "name value" line a metric,
     * which the JSON must list in the same order with the same values */
    static char text[8192];
    if (report_printed(&r, 1, out, sizeof out) != 0 || report_printed(&r, 0, text, sizeof text) != 0)
        return;
    int metrics = 0, differ = 0;
    const char *jp = out;
    for (const char *t = text; *t; metrics++) {
        char name[64], val[64], member[160];
        int used = 0;
        if (sscanf(t, "%63s %63s%n", name, val, &used) != 2)
            break;
        t += used + (t[used] == '\n');
        snprintf(member, sizeof member, "  \"%s\": %s", name, strstr(val, "nan") || strstr(val, "inf") ? "null" : val);
        const char *at = strstr(jp, member);
        differ += !at || (at[strlen(member)] != ',' && at[strlen(member)] != '\n');
        jp = at ? at + strlen(member) : jp;
    }
    CHECK(metrics > 20 && differ == 0, "the JSON lists the text report's %d metrics in order with their values (%d differ)", metrics, differ);
    CHECK(strstr(out, "  \"first_contact_s\": null,") && strstr(out, "  \"max_penvol_m3\": null,") && strstr(out, "  \"faults\": 3,") &&
              strstr(out, "  \"work_j\": -0.25,"),
          "null for NaN and infinity, numbers as they are:\n%s", out);
    int lines = 0, bad = 0;
    for (char *q = out, *nl; (nl = strchr(q, '\n')); q = nl + 1, lines++) {
        *nl = 0;
        if (lines == 0) {
            bad += strcmp(q, "{") != 0;
            continue;
        }
        if (!strcmp(q, "}"))
            continue;
        /* every member "  \"name\": value," but the last (handle_end_z), its value a number or null */
        size_t len = strlen(q);
        int last = strstr(q, "\"handle_end_z\"") != NULL;
        bad += strncmp(q, "  \"", 3) != 0 || !strstr(q, "\": ") || (q[len - 1] == ',') == last || strstr(q, "nan") || strstr(q, "inf");
    }
    CHECK(lines == metrics + 2 && bad == 0, "%d JSON lines (want the text report's %d metrics and two braces), %d malformed", lines,
          metrics, bad);
}

/* Parts of a run no other test reaches: a mesh file as a BVH object
 * (prox_mesh_load, not the service's loader) runs as the same box made in
 * place does (the same faults and contact time; the largest force to
 * 1e-6 of itself, the nearest distance to 1e-8 m and the lowest point to
 * 1e-9 m: the triangles' order changes them over 1,500 cycles of
 * dynamics, by 4e-8 N and 2e-10 m when written); one that cannot be
 * read fails the run naming the line, the object and the file; a record
 * that cannot be created fails it naming the file; without quiet each
 * object is named as it is built and each simulated second shown on
 * stderr; an event the service refuses fails the run naming its line and
 * time. */
static void test_run_files_and_progress(void)
{
    char dir[] = "/tmp/test_sim_XXXXXX", path[300], err[600], text[1200];
    CHECK(mkdtemp(dir) != NULL, "tmp dir");
    prox_mesh *box = prox_mesh_make_box(prox_v3(0.25, 0.25, 0.02));
    snprintf(path, sizeof path, "%s/table.off", dir);
    CHECK(box && prox_mesh_write_off(box, path, err, sizeof err) == 0, "write the table: %s", err);
    prox_mesh_free(box);
    const char *rest = "object ball sphere 0.02 2 bvh\ntool ball\nat 0 hand 0 0 0.06\nat 1 hand 0 0 -0.1\nduration 1.5\n";
    sim_report made, loaded;
    snprintf(text, sizeof text, "object table box 0.25 0.25 0.02 at 0 0 -0.02 bvh\n%s", rest);
    int ok = run_text(text, NULL, &made) == 0;
    snprintf(text, sizeof text, "object table file %s at 0 0 -0.02 bvh\n%s", path, rest);
    ok &= run_text(text, NULL, &loaded) == 0;
    CHECK(ok && loaded.cycles == made.cycles && loaded.faults == made.faults && made.faults > 200 && loaded.contact_s == made.contact_s &&
              fabs(loaded.max_force_n - made.max_force_n) < 1e-6 * made.max_force_n &&
              fabs(loaded.min_distance_m - made.min_distance_m) < 1e-8 && fabs(loaded.tool_min.z - made.tool_min.z) < 1e-9,
          "the table from a file: %llu faults, contact %.17g s, force %.17g N, lowest %.17g, nearest %.17g; made in place: %llu, %.17g, %.17g, %.17g, %.17g",
          (unsigned long long)loaded.faults, loaded.contact_s, loaded.max_force_n, loaded.tool_min.z, loaded.min_distance_m,
          (unsigned long long)made.faults, made.contact_s, made.max_force_n, made.tool_min.z, made.min_distance_m);
    sim_report r;
    snprintf(text, sizeof text, "object table file %s/nope.off bvh\n%s", dir, rest);
    sim_scenario *sc = parse(text, err, sizeof err);
    CHECK(sc, "%s", err);
    if (sc) {
        snprintf(path, sizeof path, "%s/nope.off", dir);
        CHECK(sim_run(sc, NULL, &r, err, sizeof err) == -1 && strstr(err, "t.sim:1: object table: ") && strstr(err, path),
              "a BVH file that cannot be read: '%s'", err);
        sim_options o = {"/nonexistent/folder/t.rec", 1, NULL};
        sim_scenario_free(sc);
        sc = parse(PRESS_SCENE "duration 2\n", err, sizeof err);
        CHECK(sc && sim_run(sc, &o, &r, err, sizeof err) == -1 && !strncmp(err, "t.sim: ", 7) && strstr(err, "/nonexistent/folder/t.rec"),
              "a record that cannot be created: '%s'", err);
        /* not quiet: the progress on stderr */
        FILE *cap = tmpfile();
        int saved = dup(2);
        CHECK(cap && saved >= 0, "capture stderr");
        if (sc && cap && saved >= 0) {
            fflush(stderr);
            dup2(fileno(cap), 2);
            o.record_path = NULL, o.quiet = 0;
            int rc = sim_run(sc, &o, &r, err, sizeof err);
            fflush(stderr);
            dup2(saved, 2);
            static char out[4096];
            read_back(cap, out, sizeof out);
            CHECK(rc == 0 && !strcmp(out, "sim: building table\nsim: building ball\nsim: t=1/2 s\nsim: t=2/2 s\n"), "progress: rc %d, '%s'", rc,
                  out);
        }
        if (cap)
            fclose(cap);
        if (saved >= 0)
            close(saved);
        sim_scenario_free(sc);
    }
    /* a voxel map as the tool measures the BVH table and the sphere tree
     * ball; handing the tool to the ball, which the loop measures against
     * the table through a BVH of its surface, runs on */
    sc = parse("object v voxels 0.01 4 4 4 at 0.2 0 0\nobject table box 0.25 0.25 0.02 at 0 0 -0.3 bvh\n"
               "object ball sphere 0.02 2 at 0 0.2 0\ntool v\nat 0 hand 0 0 0.06\nat 0.5 tool ball\nduration 1\n",
               err, sizeof err);
    CHECK(sc && sim_run(sc, NULL, &r, err, sizeof err) == 0 && r.faults == 0,
          "a tool change to a sphere tree beside the BVH table runs, no faults (the table far below): '%s', %llu faults", err,
          sc ? (unsigned long long)r.faults : 0ULL);
    sim_scenario_free(sc);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    CHECK(system(path) == 0, "cleanup");
}

/* the same scenario twice: the same telemetry bit for bit (query times
 * aside); the press holds the ball on the table with forces the device's
 * limits allow, and the device absorbs energy (a passive wall) */
static void test_press_deterministic(void)
{
    const char *text = PRESS_SCENE "duration 2\n";
    char p1[64], p2[64];
    snprintf(p1, sizeof p1, "/tmp/test_sim_%d_a.rec", (int)getpid());
    snprintf(p2, sizeof p2, "/tmp/test_sim_%d_b.rec", (int)getpid());
    sim_report r1, r2;
    if (run_text(text, p1, &r1) || run_text(text, p2, &r2))
        return;
    static rec_line a[3000], b[3000];
    int na = read_record(p1, a, 3000), nb = read_record(p2, b, 3000);
    CHECK(na == 2001 && nb == 2001, "records of %d and %d lines (2001 cycles)", na, nb);
    int same = na == nb, i = 0;
    for (; same && i < na; i++)
        same = !strcmp(a[i].text, b[i].text);
    CHECK(same, "two runs of one scenario differ at record line %d: '%s' vs '%s'", i, a[i > 0 ? i - 1 : 0].text, b[i > 0 ? i - 1 : 0].text);
    CHECK(r1.cycles == 2001 && r1.incomplete == 0 && r1.faults == 0, "cycles %llu incomplete %llu faults %llu",
          (unsigned long long)r1.cycles, (unsigned long long)r1.incomplete, (unsigned long long)r1.faults);
    CHECK(r1.contact_s > 0.8 && r1.first_contact_s > 0.3 && r1.first_contact_s < 1.0, "contact %.3f s from %.3f s", r1.contact_s,
          r1.first_contact_s);
    CHECK(r1.max_force_n <= 8.0 + 1e-9 && r1.max_force_n > 2, "max force %.3f N", r1.max_force_n);
    CHECK(r1.tool_min.z > 0.0 && r1.tool_min.z < 0.02, "the ball's centre went down to %.4f (table top 0, radius 0.02)", r1.tool_min.z);
    CHECK(r1.work_j < 0, "the device did %.4f J of work on the hand: not passive", r1.work_j);
    /* at rest the device's force balances the hand's spring on the handle:
     * 300 N/m times the handle's distance from the hand's target */
    const rec_line *last = &a[na - 1];
    double hand_f = 300.0 * (r1.handle_end.z - (-0.01));
    CHECK_NEAR(last->f[2], hand_f, 0.02 * hand_f, "device force against the hand's pull at rest");
    /* and the table pushes up on the tool: the force follows the volume,
     * on top of the margin's full force (400 N/m x 5 mm, held through the
     * penetration so the force is continuous at the surface) */
    CHECK(last->penvol > 0 && last->f[2] > 0, "penvol %.3g force %.3f", last->penvol, last->f[2]);
    CHECK_NEAR(last->f[2], 2.0e6 * last->penvol + 400 * 0.005, 0.15 * last->f[2], "force against stiffness x penetration volume + margin");
    unlink(p1);
    unlink(p2);
}

/* The ball held 1 cm into the flat table: the force's sideways share
 * (|fx, fy| / fz over the held second), with the default 500 inner spheres
 * an object and with `ist_spheres 8000`. Each overlapping sphere pair
 * pushes along its centres' line, and under the thin table those lines
 * lean with where its few large spheres lie: measured 10.3% and 3.0%.
 * The same 8000 given to each object (`spheres 8000`) rather than the
 * scene gives the same force, bit for bit: built-in objects, and a table
 * loaded from a mesh file (rt_service_load_object's count). */
static double held_sideways(const char *text, const char *rec)
{
    sim_report r;
    if (run_text(text, rec, &r)) {
        unlink(rec);
        return -1;
    }
    /* every query complete (budget 200 ms): the run is deterministic */
    CHECK(r.incomplete == 0 && r.faults == 0, "incomplete %llu faults %llu", (unsigned long long)r.incomplete,
          (unsigned long long)r.faults);
    static rec_line a[3000];
    int n = read_record(rec, a, 3000);
    double sum = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (a[i].t >= 1.2 && a[i].t < 2.0 && a[i].f[2] > 0)
            sum += hypot(a[i].f[0], a[i].f[1]) / a[i].f[2], k++;
    unlink(rec);
    return k > 500 ? sum / k : -1;
}

static void test_ist_spheres_flat_force(void)
{
    char rec[64];
    snprintf(rec, sizeof rec, "/tmp/test_sim_%d_f.rec", (int)getpid());
    const double coarse = held_sideways(PRESS_SCENE "duration 2\n", rec);
    const double fine = held_sideways("ist_spheres 8000\n" PRESS_SCENE "duration 2\n", rec);
    CHECK(coarse > 0 && fine > 0, "held a second: sideways %.4f and %.4f", coarse, fine);
    CHECK(fine < 0.05 && fine < 0.5 * coarse, "ist_spheres 8000: sideways %.4f of the normal force (500 spheres: %.4f)", fine, coarse);
    const double each = held_sideways("object table box 0.25 0.25 0.02 at 0 0 -0.02 spheres 8000\n"
                                      "object ball sphere 0.02 2 spheres 8000\n" BALL_SETTINGS PRESS_EVENTS "duration 2\n",
                                      rec);
    CHECK(each == fine, "spheres 8000 on each object: sideways %.17g, ist_spheres 8000: %.17g", each, fine);
    /* the table from a mesh file */
    char off[64], text[1024], err[256];
    snprintf(off, sizeof off, "/tmp/test_sim_%d_t.off", (int)getpid());
    prox_mesh *box = prox_mesh_make_box(prox_v3(0.25, 0.25, 0.02));
    CHECK(box && prox_mesh_write_off(box, off, err, sizeof err) == 0, "table file: %s", box ? err : "out of memory");
    prox_mesh_free(box);
    snprintf(text, sizeof text,
             "ist_spheres 8000\nobject table file %s at 0 0 -0.02\nobject ball sphere 0.02 2\n" BALL_SETTINGS PRESS_EVENTS
             "duration 2\n",
             off);
    const double file_scene = held_sideways(text, rec);
    snprintf(text, sizeof text,
             "object table file %s at 0 0 -0.02 spheres 8000\nobject ball sphere 0.02 2 spheres 8000\n" BALL_SETTINGS PRESS_EVENTS
             "duration 2\n",
             off);
    const double file_each = held_sideways(text, rec);
    unlink(off);
    CHECK(file_scene > 0 && file_each == file_scene, "table file, spheres 8000 on each object: sideways %.17g, ist_spheres 8000: %.17g",
          file_each, file_scene);
    fprintf(stderr, "    held on the flat table, sideways over normal force: %.4f at 500 spheres, %.4f at 8000\n", coarse, fine);
}

/* events apply at the cycle of their time, through the service's commands */
static void test_events_at_their_cycle(void)
{
    const char *text = PRESS_SCENE "duration 2.5\n"
                                   "at 1.5 forces off\n"
                                   "at 2.0 pose table 0 0 -5\n";
    char p[64];
    snprintf(p, sizeof p, "/tmp/test_sim_%d_e.rec", (int)getpid());
    sim_report r;
    if (run_text(text, p, &r))
        return;
    static rec_line a[3000];
    int n = read_record(p, a, 3000);
    CHECK(n == 2501, "%d lines", n);
    int force_before = 0, force_after = 0, contact_after = 0, far_after = 1;
    for (int i = 0; i < n; i++) {
        double f = sqrt(a[i].f[0] * a[i].f[0] + a[i].f[1] * a[i].f[1] + a[i].f[2] * a[i].f[2]);
        if (a[i].t > 1.4 && a[i].t < 1.4995)
            force_before += f > 1;
        if (a[i].t >= 1.4995)
            force_after += f != 0;
        if (a[i].t >= 1.9995 && (a[i].flags & 1))
            contact_after++;
        if (a[i].t >= 1.9995 && a[i].dist != -1) /* nothing within the margin */
            far_after = 0;
    }
    CHECK(force_before > 90, "%d of 100 cycles before the event pressed", force_before);
    CHECK(force_after == 0, "%d cycles with force after 'forces off'", force_after);
    CHECK(contact_after == 0 && far_after, "contact %d cycles after the table moved away; far %d", contact_after, far_after);
    /* to the cycle: the one before each event still shows what it changes */
    CHECK(n == 2501 && a[1499].t < 1.4995 && a[1499].f[2] > 1 && a[1500].f[2] == 0, "force %g at %.4f s, %g at %.4f s",
          a[1499].f[2], a[1499].t, a[1500].f[2], a[1500].t);
    CHECK(n == 2501 && (a[1999].flags & 1) && !(a[2000].flags & 1) && a[2000].dist == -1, "contact flags %u then %u, distance %g",
          a[1999].flags, a[2000].flags, a[2000].dist);
    unlink(p);
}

/* the tool role handed over mid-run, and the budget changed: the small
 * ball is removed and the large one (4 cm, across the table) becomes the
 * tool at 0.3 s, where the hand is; pressed into the table it rests
 * higher than the small one would (about 1.1 cm, press.sim); from 1.5 s
 * a 1 us budget leaves every query of the contact incomplete */
static void test_tool_and_budget_events(void)
{
    const char *text = "object table box 0.25 0.25 0.02 at 0 0 -0.02\n"
                       "object small sphere 0.02 2\n"
                       "object big sphere 0.04 2 at 0.15 0 0.2\n"
                       "tool small\n"
                       "budget_us 200000\n"
                       "hand mass_kg 0.2 stiffness_n_per_m 300 hand_damping_n_s_per_m 5\n"
                       "duration 2\n"
                       "at 0 hand 0 0 0.1\n"
                       "at 0.3 hand 0 0 0.1\n"
                       "at 0.3 remove small\n"
                       "at 0.3 tool big\n"
                       "at 1.0 hand 0 0 -0.01\n"
                       "at 1.5 budget_us 1\n";
    char p[64];
    snprintf(p, sizeof p, "/tmp/test_sim_%d_tool.rec", (int)getpid());
    sim_report r;
    if (run_text(text, p, &r))
        return;
    static rec_line a[2100];
    int n = read_record(p, a, 2100);
    CHECK(n == 2001, "%d lines", n);
    int incomplete_before = 0, incomplete_after = 0, contact_after = 0, complete_in_contact = 0, resting = 0;
    double rest_lo = 1, rest_hi = -1; /* the tool's height while held, before the budget drops */
    for (int i = 0; i < n; i++) {
        if (a[i].t > 1.2 && a[i].t < 1.4995)
            resting++, rest_lo = fmin(rest_lo, a[i].z), rest_hi = fmax(rest_hi, a[i].z);
        if (a[i].t < 1.4995)
            incomplete_before += (a[i].flags & RT_TEL_QUERY_INCOMPLETE) != 0;
        else {
            incomplete_after += (a[i].flags & RT_TEL_QUERY_INCOMPLETE) != 0;
            contact_after += (a[i].flags & RT_TEL_CONTACT) != 0;
            complete_in_contact += (a[i].flags & RT_TEL_CONTACT) && !(a[i].flags & RT_TEL_QUERY_INCOMPLETE);
        }
    }
    CHECK(r.faults == 0 && r.contact_s > 0.5, "faults %llu, contact %.3f s", (unsigned long long)r.faults, r.contact_s);
    /* held on the table (1.2-1.5 s, every query complete), the large
     * ball's centre, 4 cm in radius, rests well above where the small
     * one's would (z about 0.011); after the budget drops, incomplete
     * queries under-report the overlap and it sinks (plain 0.026, under
     * ASan through the top: not judged) */
    CHECK(resting > 250 && rest_lo > 0.025 && rest_hi < 0.045, "the tool held at z %.4f-%.4f (%d rows): the 4 cm ball on the table", rest_lo,
          rest_hi, resting);
    CHECK(incomplete_before == 0 && complete_in_contact == 0 && contact_after > 400,
          "incomplete queries: %d before the 1 us budget, %d of 501 after (%d in contact, %d of them complete)", incomplete_before, incomplete_after,
          contact_after, complete_in_contact);
    fprintf(stderr, "    tool handed over: held at z %.4f-%.4f, contact %.2f s; 1 us budget: %d of 501 queries incomplete\n", rest_lo, rest_hi,
            r.contact_s, incomplete_after);
    unlink(p);
}

/* object kinds and failures no other test runs: a tiled box (the table
 * as 4 x 4 squares a face) holds the press like the plain box; a file
 * object that cannot be read fails the run naming the scenario's line,
 * the object and the file */
static void test_object_kinds_and_run_errors(void)
{
    sim_report r;
    char err[600] = "";
    if (run_text("object table tiled_box 0.25 0.25 0.02 4 at 0 0 -0.02\nobject ball sphere 0.02 2\n" BALL_SETTINGS PRESS_EVENTS
                 "duration 2\n",
                 NULL, &r) == 0)
        CHECK(r.contact_s > 0.5 && r.faults == 0 && r.tool_min.z > 0.005 && r.tool_min.z < 0.02, "tiled table: contact %.3f s, lowest z %.4f",
              r.contact_s, r.tool_min.z);
    sim_scenario *sc = sim_scenario_parse("object m file nope.off\nobject ball sphere 0.02 2\n" BALL_SETTINGS PRESS_EVENTS, "t.sim", "/nonexistent",
                                          err, sizeof err);
    CHECK(sc != NULL, "parsed: %s", err);
    if (sc) {
        sim_options o = {NULL, 1, NULL};
        CHECK(sim_run(sc, &o, &r, err, sizeof err) == -1 && strstr(err, "t.sim:1: object m: ") && strstr(err, "/nonexistent/nope.off"),
              "a file object that cannot be read: '%s'", err);
        sim_scenario_free(sc);
    }
}

/* a voxel map filled under the tool at 1 s: contact starts there. Before
 * that the map is empty: its distance is infinite, which the loop took for
 * a fault on every cycle (1,401 of 2,001 here), zeroing every force */
static void test_voxel_events(void)
{
    const char *text = "object floor voxels 0.01 20 20 4 at -0.1 -0.1 -0.04\n"
                       "object ball sphere 0.02 2\n"
                       "tool ball\n"
                       "budget_us 200000\n"
                       "at 0 hand 0 0 0.01\n"
                       "at 1.0 voxels floor 0 0 0 19 19 3 obstacle\n"
                       "at 1.6 voxels floor 0 0 0 19 19 3 free\n"
                       "duration 2\n";
    char p[64];
    snprintf(p, sizeof p, "/tmp/test_sim_%d_v.rec", (int)getpid());
    sim_report r;
    if (run_text(text, p, &r))
        return;
    static rec_line a[3000];
    int n = read_record(p, a, 3000);
    int before = 0, during = 0, after = 0;
    for (int i = 0; i < n; i++) {
        int c = (a[i].flags & 1) != 0;
        if (a[i].t < 0.9995)
            before += c;
        else if (a[i].t >= 1.2 && a[i].t < 1.5995)
            during += c;
        else if (a[i].t >= 1.65) /* (the loop applies updates within a real-time budget: a slow build takes cycles more) */
            after += c;
    }
    CHECK(n == 2001, "%d lines", n);
    CHECK(before == 0, "%d contact cycles before the map filled", before);
    CHECK(during > 350, "%d of 400 cycles in contact on the filled map", during);
    CHECK(after == 0, "%d contact cycles after the map was cleared", after);
    CHECK(r.voxel_drops == 0 && r.faults == 0, "drops %llu faults %llu", (unsigned long long)r.voxel_drops,
          (unsigned long long)r.faults);
    unlink(p);
}

/* a sphere tree tool over a BVH table (an open mesh's kind) is measured
 * against the table (the margin's force before they touch) and, once
 * they overlap, has no penetration volume: faults, output zero, counted as
 * unmeasurable; two BVHs alike. Never a tool that silently walks through
 * the table. */
static void test_unmeasurable_pair_faults(void)
{
    char err[600];
    sim_scenario *sc = parse("object table box 0.25 0.25 0.02 at 0 0 -0.02 bvh\nobject ball sphere 0.02 2\ntool ball\n"
                             "at 0 hand 0 0 0.06\nat 1 hand 0 0 -0.1\nduration 1.5\n",
                             err, sizeof err);
    CHECK(sc != NULL, "%s", err);
    if (sc) {
        sim_report r;
        CHECK(sim_run(sc, NULL, &r, err, sizeof err) == 0, "a sphere tree tool over a BVH table runs: '%s'", err);
        CHECK(r.faults > 200 && r.faults_unmeasurable == r.faults && r.max_force_n > 0.5 && r.min_distance_m >= 0,
              "a sphere tree pressed into a BVH: %llu faults, %llu unmeasurable, max %.3f N before, min distance %g m",
              (unsigned long long)r.faults, (unsigned long long)r.faults_unmeasurable, r.max_force_n, r.min_distance_m);
        sim_scenario_free(sc);
    }
    sim_report r;
    char p[64];
    snprintf(p, sizeof p, "/tmp/test_sim_%d_u.rec", (int)getpid());
    if (run_text("object table box 0.25 0.25 0.02 at 0 0 -0.02 bvh\nobject ball sphere 0.02 2 bvh\ntool ball\n"
                 "at 0 hand 0 0 0.06\nat 1 hand 0 0 -0.1\nduration 1.5\n",
                 p, &r))
        return;
    /* every faulting cycle sends nothing */
    static rec_line a[2000];
    const int n = read_record(p, a, 2000);
    int fault_rows = 0, zero = 0;
    for (int i = 0; i < n; i++)
        if (a[i].flags & RT_TEL_FAULT) {
            fault_rows++;
            zero += a[i].f[0] == 0 && a[i].f[1] == 0 && a[i].f[2] == 0;
        }
    CHECK(n > 1400 && (uint64_t)fault_rows == r.faults && zero == fault_rows, "%d rows, %d faulting (the report: %llu), %d with zero force", n,
          fault_rows, (unsigned long long)r.faults, zero);
    unlink(p);
    CHECK(r.faults > 200 && r.faults_unmeasurable == r.faults && r.faults_other == 0 && r.faults_proxy == 0,
          "two BVHs pressed together: %llu faults, %llu unmeasurable, %llu proxy, %llu other", (unsigned long long)r.faults,
          (unsigned long long)r.faults_unmeasurable, (unsigned long long)r.faults_proxy, (unsigned long long)r.faults_other);
    CHECK(r.max_force_n > 0.5 && r.max_force_n <= 2.0 + 1e-9 && r.min_distance_m >= 0,
          "the margin's force before they touch: max %.3f N (the default margin gives 2 N at contact)", r.max_force_n);
}

/* a block of voxels larger than a map's default capacity (262,144) is
 * applied whole: the ball deep inside it is in contact */
static void test_large_voxel_block(void)
{
    sim_report r;
    if (run_text("object cube voxels 0.01 70 70 60 at -0.35 -0.35 -0.3\nobject ball sphere 0.02 1\ntool ball\nbudget_us 200000\n"
                 "at 0 hand 0 0 0\nat 0.1 voxels cube 0 0 0 69 69 59 obstacle\nduration 1.0\n",
                 NULL, &r))
        return;
    CHECK(r.contact_s > 0.1 && r.voxel_drops == 0, "contact %.3f s, drops %llu", r.contact_s, (unsigned long long)r.voxel_drops);
}

/* events apply in file order: a voxel block and then, at the same time or
 * while the block is still being queued, the removal of its map. The run
 * goes on (the old runner queued the block's cells after the removal and
 * failed with "no object named"), the cells still unqueued are dropped
 * with their map (not counted as lost updates), and once the map is gone
 * the ball inside it is out of contact. A second map's block, queued
 * across the removal, completes. */
static void test_remove_after_voxels(void)
{
    sim_report r;
    if (run_text("object floor voxels 0.01 20 20 4 at -0.1 -0.1 -0.04\nobject ball sphere 0.02 1\ntool ball\nbudget_us 200000\n"
                 "at 0 hand 0 0 0.01\nat 1 voxels floor 0 0 0 19 19 3 obstacle\nat 1 remove floor\nduration 1.5\n",
                 NULL, &r))
        return;
    CHECK(r.contact_s == 0 && r.voxel_drops == 0 && r.faults == 0, "contact %.3f s, drops %llu, faults %llu", r.contact_s,
          (unsigned long long)r.voxel_drops, (unsigned long long)r.faults);
    /* 294,000 cells take 18 cycles to queue; the cube goes at the 5th, the
     * block for 'slab' (started at the same time) goes on to the end */
    static const char big[] = "object cube voxels 0.01 70 70 60 at -0.35 -0.35 -0.3\n"
                              "object slab voxels 0.01 70 70 60 at -0.35 -0.35 -0.3\n"
                              "object ball sphere 0.02 1\ntool ball\nbudget_us 200000\n"
                              "at 0 hand 0 0 0\nat 0.1 voxels cube 0 0 0 69 69 59 obstacle\n"
                              "at 0.1 voxels slab 0 0 0 69 69 59 obstacle\nat 0.105 remove cube\nduration 1.0\n";
    if (run_text(big, NULL, &r))
        return;
    CHECK(r.contact_s > 0.5 && r.voxel_drops == 0 && r.faults == 0, "contact %.3f s, drops %llu, faults %llu", r.contact_s,
          (unsigned long long)r.voxel_drops, (unsigned long long)r.faults);
}

/* a lower force limit: the output never passes it, and the tool sinks deeper */
static void test_limits_and_expectations(void)
{
    char err[600];
    sim_scenario *sc = parse(PRESS_SCENE "duration 2\nlimits max_force_n 2\n"
                                         "expect max_force_n <= 2\n"
                                         "expect clamped > 0\n"
                                         "expect faults != 0\n", /* fails: there are none */
                             err, sizeof err);
    CHECK(sc, "%s", err);
    if (!sc)
        return;
    sim_report r, r8;
    CHECK(sim_run(sc, NULL, &r, err, sizeof err) == 0, "%s", err);
    CHECK(r.max_force_n <= 2 + 1e-9, "max force %.4f N over a 2 N limit", r.max_force_n);
    FILE *devnull = fopen("/dev/null", "w");
    CHECK(sim_check(sc, &r, devnull) == 1, "one expectation of three must fail");
    if (devnull)
        fclose(devnull);
    sim_scenario_free(sc);
    if (run_text(PRESS_SCENE "duration 2\n", NULL, &r8))
        return;
    /* the user overpowers the device: the handle sinks deeper, but the
     * coupling pulls the tool no harder than the device can push back, so
     * the tool stays higher (no tunnelling) */
    CHECK(r.handle_end.z < r8.handle_end.z - 0.005, "handle down to %.4f at 2 N, %.4f at 8 N", r.handle_end.z, r8.handle_end.z);
    CHECK(r.tool_min.z > r8.tool_min.z, "tool down to %.4f at 2 N, %.4f at 8 N", r.tool_min.z, r8.tool_min.z);
    double v;
    CHECK(sim_report_metric(&r, "max_force_n", &v) == 0 && v == r.max_force_n, "metric by name");
    CHECK(sim_report_metric(&r, "nonsense", &v) == -1, "unknown metric");
}

/* a box tool held over a table inside the margin (5 mm, 400 N/m): at
 * rest the telemetry's distance is the geometric gap (the loop measures it
 * to 0.1%), the device's force is the margin spring's at that distance,
 * and above the margin nothing is measured (-1) */
static void test_margin_force(void)
{
    char p[64];
    snprintf(p, sizeof p, "/tmp/test_sim_%d_m.rec", (int)getpid());
    sim_report r;
    if (run_text(BOX_OVER_TABLE
                 "budget_us 200000\nhand mass_kg 0.2 stiffness_n_per_m 300 hand_damping_n_s_per_m 5\n"
                 "at 0 hand 0.01 0 0.05\nat 0.5 hand 0.01 0 0.0165\nduration 2\n",
                 p, &r))
        return;
    static rec_line a[2100];
    int n = read_record(p, a, 2100);
    CHECK(n == 2001, "%d lines", n);
    int rest = 0, dist_bad = 0, force_bad = 0;
    double worst_d = 0, worst_f = 0;
    for (int i = 0; i < n; i++) {
        double gap = a[i].z - 0.015; /* the tool's bottom over the table's top (z = 0), no rotation */
        if (a[i].t < 0.05 && a[i].dist != -1)
            dist_bad++; /* 35 mm up: beyond the margin */
        if (a[i].t < 1.5)
            continue;
        rest++;
        if (!(a[i].flags & 1) || !(a[i].dist >= 0) || fabs(a[i].dist - gap) > 1e-3 * gap + 1e-7)
            dist_bad++;
        worst_d = fmax(worst_d, fabs(a[i].dist - gap) / gap);
        double want = 400 * (0.005 - a[i].dist);
        worst_f = fmax(worst_f, fabs(a[i].f[2] - want) / want);
        force_bad += !(fabs(a[i].f[2] - want) <= 0.02 * want) || fabs(a[i].f[0]) > 0.01 * want || fabs(a[i].f[1]) > 0.01 * want;
    }
    CHECK(rest == 501 && dist_bad == 0, "%d of %d records: distance not the gap (worst %.2g) or not -1 far above", dist_bad, rest, worst_d);
    CHECK(force_bad == 0 && a[n - 1].dist > 0.001 && a[n - 1].dist < 0.004, "%d of %d records off the margin spring (worst %.2g), gap %.4f",
          force_bad, rest, worst_f, a[n - 1].dist);
    CHECK(r.faults == 0 && r.incomplete == 0, "faults %llu incomplete %llu", (unsigned long long)r.faults, (unsigned long long)r.incomplete);
    unlink(p);
}

/* the force is continuous where the query turns from the margin (distance)
 * to the penetration volume: a ball lowered slowly onto a table meets the
 * margin's full 2 N (400 N/m x 5 mm) at the surface, and the force the
 * device renders never falls by more than a little after (the old loop
 * dropped from 2 N to 0.26 N at the first overlap, and the ball fell 4.5 mm
 * into the table in 40 ms) */
static void test_margin_to_volume_continuous(void)
{
    char p[64];
    snprintf(p, sizeof p, "/tmp/test_sim_%d_c.rec", (int)getpid());
    sim_report r;
    if (run_text(BALL_OVER_TABLE "at 0 hand 0 0 0.03\nat 5 hand 0 0 0\nduration 5\n",
                 p, &r))
        return;
    static rec_line a[5100];
    int n = read_record(p, a, 5100);
    CHECK(n == 5001, "%d lines", n);
    double peak = 0, dip = 0, t_dip = 0;
    int touch = -1;
    for (int i = 0; i < n; i++) {
        peak = fmax(peak, a[i].f[2]);
        if (peak - a[i].f[2] > dip)
            dip = peak - a[i].f[2], t_dip = a[i].t;
        if (touch < 0 && a[i].penvol > 0)
            touch = i;
    }
    CHECK(peak > 1.9 && dip < 0.2, "force peak %.3f N, then a dip of %.3f N at %.3f s", peak, dip, t_dip);
    /* the overlap begins with the ball on the table, and 50 ms later it has
     * sunk less than a millimetre */
    CHECK(touch > 0 && touch + 50 < n && a[touch].z > 0.0195 && a[touch].z - a[touch + 50].z < 0.001, "overlap from z %.4f, %.4f 50 ms later",
          touch > 0 ? a[touch].z : -1, touch > 0 && touch + 50 < n ? a[touch + 50].z : -1);
    CHECK(r.faults == 0, "faults %llu", (unsigned long long)r.faults);
    unlink(p);
}

/* queries that all end at a 1 us budget (a machine far too slow for the
 * scene) in free space, 35 mm over a table: nothing is found within the
 * margin, and the proxy still follows the hand (it held for good when the
 * range came in: tool at x = 0, the handle pulled back to 0.073) */
static void test_free_space_slow_queries(void)
{
    sim_report r;
    if (run_text(BOX_OVER_TABLE
                 "budget_us 1\nat 0 hand 0 0 0.05\nat 0.5 hand 0.1 0 0.05\nduration 1\n",
                 NULL, &r))
        return;
    CHECK(r.incomplete > 900 && r.faults == 0, "incomplete %llu faults %llu", (unsigned long long)r.incomplete,
          (unsigned long long)r.faults);
    CHECK(r.tool_max.x > 0.095 && fabs(r.handle_end.x - 0.1) < 0.002, "tool to x %.4f, handle at %.4f", r.tool_max.x, r.handle_end.x);
}

/* the hand follows its waypoints: in free space the handle ends where the
 * last one is; a rotation waypoint turns the tool */
static void test_hand_script(void)
{
    sim_report r;
    if (run_text("object ball sphere 0.02 1\nobject far box 0.1 0.1 0.1 at 5 5 5\ntool ball\n"
                 "at 0 hand 0 0 0\nat 0.5 hand 0.1 -0.05 0.02 0.7071068 0 0 0.7071068\nduration 1.5\n",
                 NULL, &r))
        return;
    CHECK_NEAR(r.handle_end.x, 0.1, 0.002, "handle x");
    CHECK_NEAR(r.handle_end.z, 0.02, 0.002, "handle z");
    CHECK(r.contact_s == 0 && r.min_distance_m == -1, "contact %.3f s, distance %.3f", r.contact_s, r.min_distance_m);
    /* halfway to the waypoint the tool has turned halfway (45 of 90 degrees about z) */
    char p[64];
    snprintf(p, sizeof p, "/tmp/test_sim_%d_h.rec", (int)getpid());
    if (run_text("object ball sphere 0.02 1\nobject far box 0.1 0.1 0.1 at 5 5 5\ntool ball\n"
                 "at 0 hand 0 0 0\nat 0.5 hand 0 0 0 0.7071068 0 0 0.7071068\nduration 0.6\n",
                 p, &r))
        return;
    static rec_line a[1000];
    int n = read_record(p, a, 1000);
    CHECK(n == 601, "%d lines", n);
    if (n == 601) {
        CHECK_NEAR(a[250].q[0], cos(M_PI / 8), 1e-6, "qw at 0.25 s");
        CHECK_NEAR(a[250].q[3], sin(M_PI / 8), 1e-6, "qz at 0.25 s");
        CHECK_NEAR(a[600].q[3], sin(M_PI / 4), 1e-6, "qz at the end");
    }
    unlink(p);
}

/* every scenario shipped in sim/scenarios parses, runs and meets its own
 * expectations */
static void test_shipped_scenarios(void)
{
    static const char *names[] = {"sim/scenarios/press.sim", "sim/scenarios/obstacles.sim"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char err[600];
        sim_scenario *sc = sim_scenario_load(names[i], err, sizeof err);
        CHECK(sc, "%s", err);
        if (!sc)
            continue;
        sim_report r;
        CHECK(sim_run(sc, NULL, &r, err, sizeof err) == 0, "%s", err);
        CHECK(sim_check(sc, &r, stderr) == 0, "%s: expectations failed", names[i]);
        sim_scenario_free(sc);
    }
}

/* lockstep rules of the service itself */
static void test_step_rules(void)
{
    char err[400];
    dev_device *d = dev_null_open(err, sizeof err);
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    rt_service *s = d ? rt_service_create(&cfg, d, err, sizeof err) : NULL;
    CHECK(s, "%s", err);
    if (!s) {
        dev_close(d);
        return;
    }
    CHECK(rt_service_step(s, 5000000, err, sizeof err) == 0, "%s", err);
    CHECK(rt_service_step(s, 5000000, err, sizeof err) == -1 && strstr(err, "not after the last step"), "%s", err);
    CHECK(rt_service_step(s, 6000000, err, sizeof err) == 0, "%s", err);
    CHECK(rt_service_start(s, err, sizeof err) == -1 && strstr(err, "lockstep"), "%s", err);
    rt_status st;
    rt_service_status(s, &st);
    CHECK(st.cycles == 2 && st.telemetry_received == 2, "cycles %llu telemetry %llu", (unsigned long long)st.cycles,
          (unsigned long long)st.telemetry_received);
    rt_service_destroy(s);
    /* a service started once (and stopped) is never stepped */
    s = rt_service_create(&cfg, d, err, sizeof err);
    CHECK(s && rt_service_start(s, err, sizeof err) == 0, "%s", err);
    if (s) {
        rt_service_stop(s);
        CHECK(rt_service_step(s, 1000000, err, sizeof err) == -1 && strstr(err, "never started"), "%s", err);
        rt_service_destroy(s);
    }
    dev_close(d);
}

int main(int argc, char **argv)
{
    (void)argc;
    RUN_TEST(test_parse_errors);
    RUN_TEST(test_scenario_limits);
    RUN_TEST(test_expect_ops_and_json);
    RUN_TEST(test_run_files_and_progress);
    RUN_TEST(test_press_deterministic);
    RUN_TEST(test_ist_spheres_flat_force);
    RUN_TEST(test_events_at_their_cycle);
    RUN_TEST(test_tool_and_budget_events);
    RUN_TEST(test_object_kinds_and_run_errors);
    RUN_TEST(test_voxel_events);
    RUN_TEST(test_unmeasurable_pair_faults);
    RUN_TEST(test_large_voxel_block);
    RUN_TEST(test_remove_after_voxels);
    RUN_TEST(test_limits_and_expectations);
    RUN_TEST(test_hand_script);
    RUN_TEST(test_margin_force);
    RUN_TEST(test_margin_to_volume_continuous);
    RUN_TEST(test_free_space_slow_queries);
    RUN_TEST(test_shipped_scenarios);
    RUN_TEST(test_step_rules);
    return check_summary(argv[0]);
}
