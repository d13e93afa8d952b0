/* test_rt_main.c - the hapticd executable as its users run it: its options
 * and their refusals, the demo scene on the simulated device (make run's
 * command, shortened), Ctrl-C, OSC control of the running service, another
 * program as the device (--driver osc), meshes loaded from files under a
 * replayed device, and a scenario's exit status.
 * The other tests drive the service through its C interface; this one runs
 * the program of the same build ($HAPTICD_BIN: the sanitized one under
 * ASan+UBSan, whose leak check then covers the program's exits, and under
 * TSan). Every run is bounded: a program that does not end is killed and
 * fails its test. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <lo/lo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "check_telemetry.h"
#include "prox.h"
#include "check_prox.h"

static char hapticd[1024];
static char dir[] = "/tmp/hapticd-main-XXXXXX";

/* options that keep a test run off the machine's real-time settings: no
 * SCHED_FIFO, the system's CPU wake-up latency left alone (callers add
 * --no-osc where they want no OSC server) */
#define QUIET_MACHINE "--priority", "0", "--cpu-latency-us", "-1"

/* the text of a file (its first size - 1 bytes), "" if it cannot be read */
static void read_text(const char *path, char *buf, size_t size)
{
    size_t n = 0;
    unsigned char *b = check_read_file(path, &n);
    n = b ? (n < size - 1 ? n : size - 1) : 0;
    if (n)
        memcpy(buf, b, n);
    buf[n] = 0;
    free(b);
}

/* text written to path; 1, or 0 after a failed check ("write PATH") */
static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    CHECK(ok, "write %s", path);
    return ok;
}

/* hapticd with args (NULL-terminated), stdout and stderr to files in dir;
 * its pid */
static pid_t spawn(const char *const *args, const char *tag)
{
    char out[256], err[256];
    snprintf(out, sizeof out, "%s/%s.out", dir, tag);
    snprintf(err, sizeof err, "%s/%s.err", dir, tag);
    const char *argv[64] = {hapticd};
    int n = 1;
    while (args[n - 1] && n < 63)
        argv[n] = args[n - 1], n++;
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
            _exit(125);
        if (fo > 2)
            close(fo);
        if (fe > 2)
            close(fe);
        execv(hapticd, (char *const *)argv);
        _exit(126);
    }
    CHECK(pid > 0, "fork: %s", strerror(errno));
    return pid;
}

/* the exit status of pid, or -1 when it did not exit by itself within
 * timeout_s (then it is killed) or died of a signal */
static int wait_exit(pid_t pid, double timeout_s)
{
    if (pid <= 0) /* (never kill(-1, ...): every process the user may signal) */
        return -1;
    int st;
    for (double waited = 0; waited < timeout_s; waited += 0.01) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (r < 0)
            return -1;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

typedef struct run_result {
    int rc;
    char out[16384], err[16384];
} run_result;

/* hapticd with args, to its end (at most timeout_s) */
static void run(const char *const *args, const char *tag, double timeout_s, run_result *r)
{
    r->rc = wait_exit(spawn(args, tag), timeout_s);
    char path[256];
    snprintf(path, sizeof path, "%s/%s.out", dir, tag);
    read_text(path, r->out, sizeof r->out);
    snprintf(path, sizeof path, "%s/%s.err", dir, tag);
    read_text(path, r->err, sizeof r->err);
}

/* wait until the file at path holds `what` (at most timeout_s); a pointer
 * to it in buf, or NULL */
static const char *wait_for_text(const char *path, const char *what, char *buf, size_t size, double timeout_s)
{
    for (double waited = 0; waited < timeout_s; waited += 0.02) {
        read_text(path, buf, size);
        const char *p = strstr(buf, what);
        if (p)
            return p;
        usleep(20000);
    }
    return NULL;
}

/* a number of the stats JSON (`"key": value`; "drops.commands" is the
 * first "commands" after "drops": {, which is where the stats file puts
 * it), NaN if absent */
static double json_number(const char *json, const char *key)
{
    char pat[64];
    const char *dot = strchr(key, '.'), *p = json;
    if (dot) {
        snprintf(pat, sizeof pat, "\"%.*s\": {", (int)(dot - key), key);
        p = strstr(json, pat);
        key = dot + 1;
    }
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    p = p ? strstr(p, pat) : NULL;
    char *end = NULL;
    const double v = p ? strtod(p + strlen(pat), &end) : NAN;
    return p && end != p + strlen(pat) ? v : NAN;
}

static void keep_row(const tel_row *r, const char *line, int i, void *u)
{
    (void)line;
    ((tel_row *)u)[i] = *r;
}

/* the telemetry file's rows (at most max); -1 when a line does not read */
static int read_telemetry(const char *path, tel_row *rows, int max) { return tel_read(path, max, keep_row, rows); }

/* a run's output and room for its telemetry rows; -1 (a failed check)
 * without memory */
static int alloc_run(run_result **r, tel_row **rows, int maxrows)
{
    *r = malloc(sizeof **r);
    *rows = malloc(sizeof **rows * (size_t)maxrows);
    CHECK(*r && *rows, "memory");
    if (*r && *rows)
        return 0;
    free(*r), free(*rows);
    return -1;
}

static double len3(const double v[3]) { return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

/* a 2 cm box (quick to build) as the OFF file dir/NAME: its path in box
 * and the --load argument naming it "box" in box_at */
static void write_small_box(const char *name, char box[300], char box_at[320])
{
    snprintf(box, 300, "%s/%s", dir, name);
    snprintf(box_at, 320, "box=%s", box);
    prox_mesh *m = prox_mesh_make_box(prox_v3(0.02, 0.02, 0.02));
    check_write_off(box, m);
    prox_mesh_free(m);
}

/* the table (a box 40 x 40 x 4 cm) and the ball (a sphere of radius 2 cm)
 * as the OFF files dir/PREFIXtable.off and dir/PREFIXball.off: their paths
 * and the --load arguments naming them "table" and "ball" */
static void write_table_and_ball(const char *prefix, char table[300], char ball[300], char table_at[320], char ball_at[320])
{
    snprintf(table, 300, "%s/%stable.off", dir, prefix);
    snprintf(ball, 300, "%s/%sball.off", dir, prefix);
    snprintf(table_at, 320, "table=%s", table);
    snprintf(ball_at, 320, "ball=%s", ball);
    prox_mesh *mt = prox_mesh_make_box(prox_v3(0.2, 0.2, 0.02)), *mb = prox_mesh_make_sphere(0.02, 2);
    check_write_off(table, mt);
    check_write_off(ball, mb);
    prox_mesh_free(mt), prox_mesh_free(mb);
}

/* the status a refused command line gets, and a part of its message */
static void expect_refused(const char *const *args, int want_rc, const char *want_err)
{
    run_result *r = malloc(sizeof *r);
    if (!r)
        return;
    run(args, "refused", 60, r);
    char line[256] = "";
    for (int i = 0; args[i] && strlen(line) < 200; i++)
        snprintf(line + strlen(line), sizeof line - strlen(line), " %s", args[i]);
    CHECK(r->rc == want_rc && strstr(r->err, want_err), "hapticd%s: exit %d (want %d), stderr: %s", line, r->rc, want_rc, r->err);
    CHECK(r->out[0] == 0, "hapticd%s: nothing on stdout, got: %s", line, r->out);
    free(r);
}

static void test_help_and_refusals(void)
{
    run_result *r = malloc(sizeof *r);
    if (!r)
        return;
    run((const char *[]){"--help", NULL}, "help", 60, r);
    CHECK(r->rc == 0 && r->err[0] == 0, "--help: exit %d, stderr: %s", r->rc, r->err);
    static const char *const named[] = {"usage: hapticd", "--demo", "--scenario", "--load NAME=PATH", "--driver sim|null|osc|replay:FILE",
                                        "--budget-us", "--ist-spheres", "--osc-port", "--record-dir", "--stats-json"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        CHECK(strstr(r->out, named[i]) != NULL, "--help names %s", named[i]);
    free(r);

    char missing_mesh[300], missing_traj[300], missing_sim[300], mesh_at[320], traj_at[320];
    snprintf(missing_mesh, sizeof missing_mesh, "%s/missing.off", dir);
    snprintf(missing_traj, sizeof missing_traj, "%s/missing.txt", dir);
    snprintf(missing_sim, sizeof missing_sim, "%s/missing.sim", dir);
    snprintf(mesh_at, sizeof mesh_at, "a=%s", missing_mesh);
    snprintf(traj_at, sizeof traj_at, "replay:%s", missing_traj);
    /* usage errors: 2, before anything is built */
    expect_refused((const char *[]){NULL}, 2, "no scene: give --demo or --load NAME=PATH");
    expect_refused((const char *[]){"--demo", "--rate", "abc", NULL}, 2, "--rate needs a number, got 'abc'");
    expect_refused((const char *[]){"--demo", "--duration", "nan", NULL}, 2, "--duration needs a number, got 'nan'");
    expect_refused((const char *[]){"--demo", "--budget-us", "1e400", NULL}, 2, "--budget-us needs a number");
    expect_refused((const char *[]){"--demo", "--max-force", "5N", NULL}, 2, "--max-force needs a number, got '5N'");
    expect_refused((const char *[]){"--demo", "--ist-spheres", "0", NULL}, 2, "--ist-spheres is a whole number from 1 to");
    expect_refused((const char *[]){"--demo", "--ist-spheres", "2.5", NULL}, 2, "--ist-spheres is a whole number from 1 to");
    expect_refused((const char *[]){"--demo", "stray", NULL}, 2, "unexpected argument 'stray'");
    expect_refused((const char *[]){"--demo", "--report-json", "r.json", NULL}, 2, "--report-json goes with --scenario");
    /* the OSC device's port without the OSC device: said, not ignored */
    expect_refused((const char *[]){"--demo", "--osc-device-port", "5000", NULL}, 2,
                   "hapticd: --osc-device-port goes with --driver osc (the driver is sim)\n");
    expect_refused((const char *[]){"--demo", "--driver", "null", "--osc-device-port", "5000", NULL}, 2,
                   "hapticd: --osc-device-port goes with --driver osc (the driver is null)\n");
    expect_refused((const char *[]){"--scenario", "sim/scenarios/press.sim", "--demo", NULL}, 2, "--scenario sets its own scene");
    expect_refused((const char *[]){"--scenario", "sim/scenarios/press.sim", "--budget-us", "100", NULL}, 2,
                   "only --record, --report-json, --quiet, --load-timeout and --load-memory go with it");
    expect_refused((const char *[]){"--load", "noequals", QUIET_MACHINE, "--no-osc", "--duration", "0.1", NULL}, 2,
                   "--load wants NAME=PATH, got 'noequals'");
    expect_refused((const char *[]){"--demo", "--pose", "ball=1,2", QUIET_MACHINE, "--no-osc", "--duration", "0.1", NULL}, 2,
                   "--pose wants NAME=tx,ty,tz,qw,qx,qy,qz, got 'ball=1,2'");
    expect_refused((const char *[]){"--demo", "--bogus", NULL}, 2, "-h, --help");
    /* every numeric option names itself when its value is not a number */
    static const char *const numeric[] = {"rate",     "budget-us", "cpu",      "priority",        "duration",       "stiffness",
                                          "max-force", "max-torque", "osc-port", "osc-device-port", "cpu-latency-us", "voxel-budget-us"};
    for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++) {
        char opt[32], want[64];
        snprintf(opt, sizeof opt, "--%s", numeric[i]);
        snprintf(want, sizeof want, "hapticd: --%s needs a number, got 'x'\n", numeric[i]);
        expect_refused((const char *[]){"--demo", opt, "x", NULL}, 2, want);
    }
    /* ports in their range, and no value an int cannot hold */
    expect_refused((const char *[]){"--demo", "--osc-port", "70000", NULL}, 2, "--osc-port is a port number from 0 to 65535, got '70000'");
    expect_refused((const char *[]){"--demo", "--osc-port", "1e10", NULL}, 2, "--osc-port is a port number from 0 to 65535, got '1e10'");
    expect_refused((const char *[]){"--demo", "--osc-port", "-1", NULL}, 2, "--osc-port is a port number from 0 to 65535, got '-1'");
    expect_refused((const char *[]){"--demo", "--osc-port", "5000.5", NULL}, 2, "--osc-port is a port number from 0 to 65535, got '5000.5'");
    expect_refused((const char *[]){"--demo", "--driver", "osc", "--osc-device-port", "0", NULL}, 2,
                   "--osc-device-port is a port number from 1 to 65535, got '0'");
    expect_refused((const char *[]){"--demo", "--cpu", "1e10", NULL}, 2, "--cpu is out of range, got '1e10'");
    expect_refused((const char *[]){"--demo", "--priority", "-3e9", NULL}, 2, "--priority is out of range, got '-3e9'");
    expect_refused((const char *[]){"--demo", "--priority", "80.5", NULL}, 2, "--priority is a whole number, got '80.5'");
    expect_refused((const char *[]){"--demo", "--cpu", "0.5", NULL}, 2, "--cpu is a whole number, got '0.5'");
    expect_refused((const char *[]){"--demo", "--cpu-latency-us", "10.5", NULL}, 2, "--cpu-latency-us is a whole number, got '10.5'");
    expect_refused((const char *[]){"--demo", "--cpu-latency-us", "-1.5", NULL}, 2, "--cpu-latency-us is a whole number, got '-1.5'");
    /* what cannot be had: 1, with its name */
    expect_refused((const char *[]){"--demo", "--driver", "nope", NULL}, 1, "unknown driver 'nope' (sim, null, osc, replay:FILE)");
    expect_refused((const char *[]){"--demo", "--driver", traj_at, NULL}, 1, missing_traj);
    expect_refused((const char *[]){"--load", mesh_at, QUIET_MACHINE, "--no-osc", "--duration", "0.1", NULL}, 1, missing_mesh);
    expect_refused((const char *[]){"--demo", "--tool", "nosuch", QUIET_MACHINE, "--no-osc", "--duration", "0.1", NULL}, 1, "nosuch");
    expect_refused((const char *[]){"--demo", "--pose", "nosuch=0,0,0,1,0,0,0", QUIET_MACHINE, "--no-osc", "--duration", "0.1", NULL}, 1,
                   "nosuch");
    expect_refused((const char *[]){"--scenario", missing_sim, NULL}, 1, missing_sim);
    /* what the running service cannot have, found after the scene is
     * built (a small box, quick to build): exit 1 and the reason, nothing
     * on stdout */
    char box[300], box_at[320], missing_dir[300], missing_file[300];
    write_small_box("small_box.off", box, box_at);
    snprintf(missing_dir, sizeof missing_dir, "%s/no/such/folder", dir);
    snprintf(missing_file, sizeof missing_file, "%s/no/such/folder/x", dir);
    char want[400];
    expect_refused((const char *[]){"--load", box_at, QUIET_MACHINE, "--osc-addr", "localhost", "--osc-port", "0", "--duration", "0.1", NULL},
                   1, "hapticd: osc: 'localhost' is not an IPv4 address\n");
    snprintf(want, sizeof want, "hapticd: record folder %s: No such file or directory\n", missing_dir);
    expect_refused((const char *[]){"--load", box_at, QUIET_MACHINE, "--osc-port", "0", "--record-dir", missing_dir, "--duration", "0.1", NULL},
                   1, want);
    snprintf(want, sizeof want, "hapticd: record folder %s: not a folder\n", box);
    expect_refused((const char *[]){"--load", box_at, QUIET_MACHINE, "--osc-port", "0", "--record-dir", box, "--duration", "0.1", NULL}, 1,
                   want);
    snprintf(want, sizeof want, "hapticd: %s: No such file or directory\n", missing_file);
    expect_refused((const char *[]){"--load", box_at, QUIET_MACHINE, "--no-osc", "--record", missing_file, "--duration", "0.1", NULL}, 1,
                   want);
    /* a stats file it cannot write: the run ends, says why, exit 1 (as
     * the scenario's --report-json does) */
    snprintf(want, sizeof want, "hapticd: %s: cannot write the stats: No such file or directory\n", missing_file);
    expect_refused((const char *[]){"--load", box_at, QUIET_MACHINE, "--no-osc", "--quiet", "--stats-json", missing_file, "--duration", "0.1",
                                    NULL},
                   1, want);
    /* one whose writes fail (a full device): said when it is closed */
    if (access("/dev/full", W_OK) == 0)
        expect_refused((const char *[]){"--load", box_at, QUIET_MACHINE, "--no-osc", "--quiet", "--stats-json", "/dev/full", "--duration",
                                        "0.1", NULL},
                       1, "hapticd: /dev/full: cannot write the stats: No space left on device\n");
    remove(box);
}

/* make run's command, 1.5 s: the demo scene on the simulated device */
static void test_demo(void)
{
    char json_path[300], rec_path[300], json[4096];
    snprintf(json_path, sizeof json_path, "%s/demo.json", dir);
    snprintf(rec_path, sizeof rec_path, "%s/demo.tel", dir);
    enum { MAXROWS = 4000 };
    run_result *r;
    tel_row *rows;
    if (alloc_run(&r, &rows, MAXROWS))
        return;
    run((const char *[]){"--demo", "--duration", "1.5", QUIET_MACHINE, "--no-osc", "--stats-json", json_path, "--record", rec_path, NULL},
        "demo", 120, r);
    CHECK(r->rc == 0, "demo: exit %d, stderr: %s", r->rc, r->err);
    /* a status line a second on stdout, the summary last on stderr */
    CHECK(strstr(r->out, "t=  1s rate=") && strstr(r->out, "force=") && !strstr(r->out, "FAULT"), "demo status lines: %s", r->out);
    CHECK(strstr(r->err, "hapticd: running at 1000 Hz, driver sim, OSC off") && strstr(r->err, " cycles, ") &&
              strstr(r->err, "faults 0\n"),
          "demo summary: %s", r->err);
    read_text(json_path, json, sizeof json);
    const double cycles = json_number(json, "cycles");
    /* 1 kHz for 1.5 s, counted from the loop's start (after the scene is
     * built); a loaded machine may miss cycles (a late cycle skips the
     * periods it overran), never add them */
    CHECK(cycles >= 750 && cycles <= 1600, "demo: %g cycles in 1.5 s at 1 kHz", cycles); /* (NaN fails) */
    CHECK(json_number(json, "faults") == 0 && json_number(json, "watchdog_fired") == 0, "demo: no fault, no watchdog: %s", json);
    CHECK(json_number(json, "drops.commands") == 0 && json_number(json, "drops.voxels") == 0 && json_number(json, "drops.telemetry") == 0,
          "demo: no drops: %s", json);
    CHECK(json_number(json, "telemetry.received") == cycles && json_number(json, "telemetry.gaps") == 0, "demo: every cycle's telemetry: %s",
          json);
    CHECK(json_number(json, "budget") == 300, "demo: the default budget: %s", json);
    /* the recording: every cycle, in order; the output within the limits
     * (8 N, 0.4 N m by default); the scripted hand reaches the ball */
    int n = read_telemetry(rec_path, rows, MAXROWS);
    CHECK(isfinite(cycles) && n == (int)cycles, "demo: %d telemetry rows for %g cycles", n, cycles);
    int order = 1, contact = 0;
    double fmax = 0, mmax = 0;
    for (int i = 0; i < n; i++) {
        order &= rows[i].seq == i && (i == 0 || rows[i].t > rows[i - 1].t);
        fmax = fmax > len3(rows[i].f) ? fmax : len3(rows[i].f);
        mmax = mmax > len3(rows[i].m) ? mmax : len3(rows[i].m);
        contact += rows[i].penvol > 0 && len3(rows[i].f) > 1;
    }
    CHECK(order, "demo: rows numbered from 0, times rising");
    /* (the file writes forces and torques to 6 significant digits: a
     * force clamped to 8 N reads back up to about 1e-5 over) */
    CHECK(fmax <= 8 * (1 + 2e-5) && mmax <= 0.4 * (1 + 2e-5), "demo: force at most %.9g N (limit 8), torque %.9g N m (limit 0.4)", fmax,
          mmax);
    CHECK(contact > 50, "demo: %d cycles pressing into the scene with more than 1 N", contact);
    CHECK(n > 0 && len3(rows[n - 1].f) == 0 && len3(rows[n - 1].m) == 0, "demo: the last cycle's output is zero (the stop)");
    free(r), free(rows);
}

/* make run's real-time settings (SCHED_FIFO 80, memory locked), pinned
 * to CPU 0, for 1 s: the loop runs real-time where the system allows it,
 * and says why not where it does not. Not the CPU wake-up latency request
 * (a setting of the whole machine, --cpu-latency-us -1); the loop sleeps
 * through most of each 1 ms period, so a second of SCHED_FIFO starves
 * nothing. */
static void test_realtime_defaults(void)
{
    char json_path[300], json[4096];
    snprintf(json_path, sizeof json_path, "%s/rtdef.json", dir);
    run_result *r = malloc(sizeof *r);
    if (!r)
        return;
    run((const char *[]){"--demo", "--duration", "1", "--cpu", "0", "--cpu-latency-us", "-1", "--no-osc", "--quiet", "--stats-json", json_path,
                         NULL},
        "rtdef", 120, r);
    CHECK(r->rc == 0, "exit %d, stderr: %s", r->rc, r->err);
    read_text(json_path, json, sizeof json);
    const double cycles = json_number(json, "cycles"), realtime = json_number(json, "realtime");
    const char *note = strstr(json, "\"note\": \"");
    CHECK(cycles >= 500 && cycles <= 1100 && json_number(json, "faults") == 0, "%g cycles in 1 s, stats %s", cycles, json);
    CHECK(realtime == 1 || (realtime == 0 && note && strstr(note, "SCHED_FIFO 80 not permitted") && strstr(r->err, "without full real-time")),
          "real-time %g, or why not: %s / %s", realtime, json, r->err);
    fprintf(stderr, "    make run's settings: real-time %g, %g cycles\n", realtime, cycles);
    free(r);
}

/* The null driver at --rate 500 with OSC on a port the system picks, not
 * quiet: the running line says the rate, the driver and the port, and the
 * loop ran at 500 Hz, not the default 1000. The voxel-map budget is a part
 * of the period: 2000 us is refused at 1 kHz (exit 1, the reason) and
 * taken at 100 Hz. */
static void test_null_driver_rate(void)
{
    char box[300], box_at[320], json_path[300], json[4096];
    write_small_box("null_box.off", box, box_at);
    snprintf(json_path, sizeof json_path, "%s/null.json", dir);
    run_result *r = malloc(sizeof *r);
    if (!r)
        return;
    const double started = check_now_s();
    run((const char *[]){"--load", box_at, "--driver", "null", "--rate", "500", "--osc-port", "0", QUIET_MACHINE, "--duration", "0.6",
                         "--stats-json", json_path, NULL},
        "null", 120, r);
    const double lived = check_now_s() - started; /* the program's life, from before its start to after its end */
    static const char running[] = "hapticd: running at 500 Hz, driver null, OSC 127.0.0.1:";
    const char *line = strstr(r->err, running);
    const int port = line ? atoi(line + strlen(running)) : 0;
    CHECK(r->rc == 0 && port > 0 && port <= 65535 && strstr(r->err, "; Ctrl-C stops\n") && strstr(r->err, "faults 0\n"),
          "null driver: exit %d, the port %d, stderr: %s", r->rc, port, r->err);
    read_text(json_path, json, sizeof json);
    /* 0.6 s at 500 Hz: 300 cycles, and up to 0.15 s more while the
     * program sees the time is up (it looks every 50 ms) and stops the
     * OSC thread (which polls for 50 ms) before the loop: at most 400. At
     * 1 kHz: 600 or more. A loaded machine (a busy CI runner, the
     * sanitizers) may take longer to stop, so the bound is 500 Hz over the
     * program's whole life where that is more than 400 (a loop at 500 Hz
     * cannot exceed it; its start and its scene make it loose); and a loop
     * kept off the CPU skips the periods it missed, counted as overruns,
     * so the lower bound counts those with the cycles */
    const double cycles = json_number(json, "cycles"), overruns = json_number(json, "overruns"), most = fmax(400, floor(500 * lived) + 1);
    fprintf(stderr, "    null driver at 500 Hz: %g cycles and %g overruns in 0.6 s (the program lived %.2f s)\n", cycles, overruns, lived);
    CHECK(cycles + overruns >= 150 && cycles <= most, "null driver at 500 Hz: %g cycles and %g overruns in 0.6 s (at most %g)", cycles,
          overruns, most);
    expect_refused((const char *[]){"--load", box_at, QUIET_MACHINE, "--no-osc", "--voxel-budget-us", "2000", "--duration", "0.2", NULL}, 1,
                   "voxel budget above 0 and below the period");
    run((const char *[]){"--load", box_at, QUIET_MACHINE, "--no-osc", "--quiet", "--rate", "100", "--voxel-budget-us", "2000", "--duration",
                         "0.2", NULL},
        "voxbud", 120, r);
    CHECK(r->rc == 0 && strstr(r->err, " cycles, ") && strstr(r->err, "faults 0\n"), "--voxel-budget-us 2000 at 100 Hz: exit %d, stderr: %s",
          r->rc, r->err);
    free(r);
    remove(box);
}

/* Ctrl-C (SIGINT) and SIGTERM end a run without --duration cleanly: the
 * summary, the stats file, exit 0. The signal goes once the program says
 * it runs (before, while it builds the scene, a signal ends it as any
 * program: nothing is sent to the device yet). */
static void test_interrupt(void)
{
    static const int sig[2] = {SIGINT, SIGTERM};
    for (int k = 0; k < 2; k++) {
        char json_path[300], err_path[300], tag[16], buf[16384], json[4096];
        snprintf(tag, sizeof tag, "sig%d", k);
        snprintf(json_path, sizeof json_path, "%s/%s.json", dir, tag);
        snprintf(err_path, sizeof err_path, "%s/%s.err", dir, tag);
        pid_t pid = spawn((const char *[]){"--demo", QUIET_MACHINE, "--no-osc", "--stats-json", json_path, NULL}, tag);
        if (pid <= 0)
            return;
        const char *said = wait_for_text(err_path, "Ctrl-C stops", buf, sizeof buf, 60);
        CHECK(said != NULL, "signal %d: the running line: %s", sig[k], buf);
        usleep(300000);
        CHECK(kill(pid, sig[k]) == 0, "signal %d sent", sig[k]); /* (pid > 0) */
        int rc = wait_exit(pid, 60);
        read_text(err_path, buf, sizeof buf);
        CHECK(rc == 0 && strstr(buf, " cycles, "), "after signal %d: exit %d, stderr: %s", sig[k], rc, buf);
        read_text(json_path, json, sizeof json);
        CHECK(json_number(json, "cycles") > 100 && json_number(json, "faults") == 0, "after signal %d: stats %s", sig[k], json);
    }
}

/* OSC replies, kept by the handlers below (liblo's arguments are 4-byte
 * aligned: read through char pointers and memcpy, never the lo_arg union,
 * whose double asks for 8: UBSan) */
typedef struct osc_seen {
    char version_name[32];
    int version[3];
    char done[64], fail[256];
    int status_got;
    double penvol; /* /status.reply's penvol_m3 */
} osc_seen;

static int on_status(const char *path, const char *types, lo_arg **argv, int argc, lo_message m, void *user)
{
    (void)path, (void)m;
    osc_seen *s = user;
    for (int i = 0; i + 1 < argc; i++)
        if (types[i] == 's' && !strcmp((const char *)argv[i], "penvol_m3") && types[i + 1] == 'd') {
            memcpy(&s->penvol, argv[i + 1], sizeof s->penvol);
            s->status_got = 1;
        }
    return 0;
}

static int on_version(const char *path, const char *types, lo_arg **argv, int argc, lo_message m, void *user)
{
    (void)path, (void)m;
    osc_seen *s = user;
    if (argc == 4 && !strcmp(types, "siii")) {
        snprintf(s->version_name, sizeof s->version_name, "%s", (const char *)argv[0]);
        for (int i = 0; i < 3; i++)
            memcpy(&s->version[i], argv[i + 1], 4);
    }
    return 0;
}

static int on_done(const char *path, const char *types, lo_arg **argv, int argc, lo_message m, void *user)
{
    (void)path, (void)m;
    osc_seen *s = user;
    if (argc >= 1 && types[0] == 's')
        snprintf(s->done, sizeof s->done, "%s", (const char *)argv[0]);
    return 0;
}

static int on_fail(const char *path, const char *types, lo_arg **argv, int argc, lo_message m, void *user)
{
    (void)path, (void)m;
    osc_seen *s = user;
    s->fail[0] = 0;
    for (int i = 0; i < argc; i++)
        if (types[i] == 's' && strlen(s->fail) < 200)
            snprintf(s->fail + strlen(s->fail), sizeof s->fail - strlen(s->fail), "%s ", (const char *)argv[i]);
    return 0;
}

/* receive on s for up to ms milliseconds, until `until` holds */
static void osc_wait(lo_server s, const char *until, int ms)
{
    for (int waited = 0; waited < ms && !until[0]; waited += 50)
        lo_server_recv_noblock(s, 50);
}

/* the running service under OSC control: the port it says it took, its
 * replies, a budget and the forces switched off, seen in its stats and
 * its recording */
static void test_osc_control(void)
{
    char json_path[300], rec_path[300], err_path[300], buf[16384], json[4096];
    snprintf(json_path, sizeof json_path, "%s/osc.json", dir);
    snprintf(rec_path, sizeof rec_path, "%s/osc.tel", dir);
    snprintf(err_path, sizeof err_path, "%s/osc.err", dir);
    pid_t pid = spawn((const char *[]){"--demo", QUIET_MACHINE, "--osc-port", "0", "--quiet", "--stats-json", json_path, "--record",
                                       rec_path, NULL},
                      "osc");
    /* --quiet keeps the status lines off, not the line naming the port */
    const char *said = wait_for_text(err_path, "OSC 127.0.0.1:", buf, sizeof buf, 60);
    int port = said ? atoi(said + strlen("OSC 127.0.0.1:")) : 0;
    CHECK(port > 0, "the port hapticd took: %s", buf);
    if (port <= 0) {
        if (pid > 0)
            kill(pid, SIGKILL);
        wait_exit(pid, 10);
        return;
    }
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    osc_seen seen;
    memset(&seen, 0, sizeof seen);
    lo_server s = lo_server_new(NULL, NULL);
    lo_address a = lo_address_new("127.0.0.1", port_s);
    CHECK(s && a, "liblo server and address");
    if (s && a) {
        lo_server_add_method(s, "/version.reply", NULL, on_version, &seen);
        lo_server_add_method(s, "/done", NULL, on_done, &seen);
        lo_server_add_method(s, "/fail", NULL, on_fail, &seen);
        lo_server_add_method(s, "/status.reply", NULL, on_status, &seen);
        lo_send_from(a, s, LO_TT_IMMEDIATE, "/version", "");
        osc_wait(s, seen.version_name, 5000);
        CHECK(!strcmp(seen.version_name, "hapticd") && seen.version[0] >= 0 && seen.version[1] >= 0 && seen.version[2] >= 0,
              "/version.reply: '%s' %d.%d.%d", seen.version_name, seen.version[0], seen.version[1], seen.version[2]);
        lo_send_from(a, s, LO_TT_IMMEDIATE, "/budget", "s", "lots");
        osc_wait(s, seen.fail, 5000);
        CHECK(strstr(seen.fail, "/budget") != NULL, "/budget with a string: /fail, got '%s'", seen.fail);
        lo_send_from(a, s, LO_TT_IMMEDIATE, "/budget", "f", 150.0f);
        osc_wait(s, seen.done, 5000);
        CHECK(!strcmp(seen.done, "/budget"), "/budget 150: /done, got '%s'", seen.done);
        /* once the demo's hand presses (from about 0.4 s into the loop),
         * /status says so; then 0.3 s of force */
        int pressing = 0, st;
        const uint64_t give_up = prox_now_ns() + 30000000000ull; /* 30 s, or the program's end */
        while (!pressing && prox_now_ns() < give_up && waitpid(pid, &st, WNOHANG) == 0) {
            seen.status_got = 0;
            lo_send_from(a, s, LO_TT_IMMEDIATE, "/status", "");
            for (int w = 0; w < 20 && !seen.status_got; w++)
                lo_server_recv_noblock(s, 50);
            pressing = seen.status_got && seen.penvol > 0;
            if (!pressing)
                usleep(50000);
        }
        CHECK(pressing, "/status: the tool pressing into the scene (penvol %g)", seen.penvol);
        usleep(300000);
        seen.done[0] = 0;
        lo_send_from(a, s, LO_TT_IMMEDIATE, "/forces", "i", 0);
        osc_wait(s, seen.done, 5000);
        CHECK(!strcmp(seen.done, "/forces"), "/forces 0: /done, got '%s'", seen.done);
        usleep(300000);
    }
    if (a)
        lo_address_free(a);
    if (s)
        lo_server_free(s);
    if (pid > 0)
        kill(pid, SIGINT);
    int rc = wait_exit(pid, 60);
    read_text(err_path, buf, sizeof buf);
    CHECK(rc == 0, "OSC run: exit %d, stderr: %s", rc, buf);
    read_text(json_path, json, sizeof json);
    CHECK(json_number(json, "budget") == 150 && json_number(json, "faults") == 0, "the budget OSC set, no fault: %s", json);
    /* the recording: force before /forces 0, none in its last 100 ms */
    enum { MAXROWS = 20000 };
    tel_row *rows = malloc(sizeof *rows * MAXROWS);
    int n = rows ? read_telemetry(rec_path, rows, MAXROWS) : -1;
    CHECK(n > 500, "%d telemetry rows", n);
    double before = 0, after = 0;
    for (int i = 0; i < n; i++) {
        if (i < n - 200)
            before = before > len3(rows[i].f) ? before : len3(rows[i].f);
        if (i >= n - 100)
            after = after > len3(rows[i].f) + len3(rows[i].m) ? after : len3(rows[i].f) + len3(rows[i].m);
    }
    CHECK(before > 0.5 && after == 0, "force up to %g N before /forces 0, %g after", before, after);
    free(rows);
}

/* the /device/force datagrams waiting on fd (the OSC device's output:
 * `/device/force ,ffffff` and six big-endian floats), read by hand: how
 * many, the newest force in last[6], the largest upward force and the
 * largest force and torque lengths (kept across calls, in up and big[2]) */
static int drain_forces(int fd, double last[6], double *up, double big[2])
{
    unsigned char buf[256];
    int got = 0;
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
        if (n == 48 && !memcmp(buf, "/device/force\0\0\0,ffffff\0", 24)) {
            for (int i = 0; i < 6; i++) {
                uint32_t u;
                float v;
                memcpy(&u, buf + 24 + 4 * i, sizeof u);
                u = ntohl(u);
                memcpy(&v, &u, sizeof v);
                last[i] = v;
            }
            *up = fmax(*up, last[2]);
            big[0] = fmax(big[0], len3(last));
            big[1] = fmax(big[1], len3(last + 3));
            got++;
        }
    return got;
}

/* One phase of test_osc_device: a pose (n floats, 8 with the buttons; no
 * pose when NULL) sent to a every 5 ms, and the forces that come drained
 * meanwhile: those of the first skip_s dropped, the rest kept (as
 * drain_forces keeps them) for keep_s, and on until more than 100 were
 * kept, 5 s at most (a loaded machine's sanitized loop may send fewer
 * than one a millisecond); how many were kept */
static int force_phase(int fd, lo_address a, const float *pose, int n, double skip_s, double keep_s, double last[6], double *up,
                       double big[2])
{
    double skip[6], skip_up = 0, skip_big[2] = {0, 0};
    int got = 0;
    const double t0 = check_now_s();
    for (double t = 0; t < skip_s + keep_s || (got <= 100 && t < skip_s + 5); t = check_now_s() - t0) {
        if (pose) {
            lo_message m = lo_message_new();
            for (int i = 0; i < n; i++)
                lo_message_add_float(m, pose[i]);
            lo_send_message(a, "/device/pose", m);
            lo_message_free(m);
        }
        usleep(5000);
        if (t >= skip_s)
            got += drain_forces(fd, last, up, big);
        else
            drain_forces(fd, skip, &skip_up, skip_big);
    }
    return got;
}

/* --driver osc: another program is the device. Its poses come in as OSC
 * /device/pose on hapticd's port, the forces go out as /device/force to
 * --osc-device-port. The ball held above the table gets no force, held
 * 1 cm into it is pushed up; when the poses stop, the device is stale:
 * the output goes to zero and the faults say device_stale. */
static void test_osc_device(void)
{
    char table[300], ball[300], table_at[320], ball_at[320], json_path[300], err_path[300], buf[16384], json[4096];
    write_table_and_ball("dev_", table, ball, table_at, ball_at);
    snprintf(json_path, sizeof json_path, "%s/dev.json", dir);
    snprintf(err_path, sizeof err_path, "%s/dev.err", dir);
    /* where the forces come: a socket of ours on a free port */
    int ffd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in me;
    memset(&me, 0, sizeof me);
    me.sin_family = AF_INET;
    me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof me;
    CHECK(ffd >= 0 && bind(ffd, (struct sockaddr *)&me, sizeof me) == 0 && getsockname(ffd, (struct sockaddr *)&me, &sl) == 0,
          "a socket for the forces: %s", strerror(errno));
    char fport[16];
    snprintf(fport, sizeof fport, "%d", ntohs(me.sin_port));
    pid_t pid = spawn((const char *[]){"--load", table_at, "--load", ball_at, "--tool", "ball", "--pose", "table=0,0,-0.02,1,0,0,0",
                                       "--ist-spheres", "300", "--driver", "osc", "--osc-device-port", fport, "--osc-port", "0", "--quiet",
                                       QUIET_MACHINE, "--stats-json", json_path, NULL},
                      "dev");
    const char *said = wait_for_text(err_path, "OSC 127.0.0.1:", buf, sizeof buf, 60);
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", said ? atoi(said + strlen("OSC 127.0.0.1:")) : 0);
    lo_address a = said ? lo_address_new("127.0.0.1", port_s) : NULL;
    CHECK(a != NULL, "the port hapticd took: %s", buf);
    /* per phase: datagrams, the newest force, the largest upward force,
     * the largest force and torque */
    double last[3][6] = {{0}}, up[3] = {0, 0, 0}, big[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    int got[3] = {0, 0, 0};
    if (a) {
        /* 18 cm above the table for 0.4 s, then 1 cm into it for 0.8 s
         * (with buttons: the optional eighth argument), a pose every 5 ms;
         * the forces of each phase's last 0.3 s kept (the loop ramps the
         * output up over 0.5 s after a fault: the device is stale until
         * its first pose, and a pose late under a loaded machine's
         * sanitizers faults a cycle); then no more poses: stale (20 ms by
         * default), the forces after 0.3 s kept for 0.2 s */
        static const float above[7] = {0, 0, 0.2f, 1, 0, 0, 0}, into[8] = {0, 0, -0.01f, 1, 0, 0, 0, 5};
        got[0] = force_phase(ffd, a, above, 7, 0.1, 0.3, last[0], &up[0], big[0]);
        got[1] = force_phase(ffd, a, into, 8, 0.5, 0.3, last[1], &up[1], big[1]);
        got[2] = force_phase(ffd, a, NULL, 0, 0.3, 0.2, last[2], &up[2], big[2]);
        lo_address_free(a);
    }
    if (pid > 0)
        kill(pid, SIGINT);
    int rc = wait_exit(pid, 60);
    close(ffd);
    read_text(err_path, buf, sizeof buf);
    CHECK(rc == 0, "--driver osc: exit %d, stderr: %s", rc, buf);
    CHECK(got[0] > 100 && big[0][0] == 0 && big[0][1] == 0, "above the table: %d force datagrams kept, the largest force %g N, torque %g N m",
          got[0], big[0][0], big[0][1]);
    /* (pushed up within about 25 degrees, as test_files_replay says why;
     * floats: the 8 N limit to within their rounding) */
    CHECK(got[1] > 100 && up[1] > 0.5 && big[1][0] <= 8 * (1 + 1e-6) && last[1][2] >= 0.9 * len3(last[1]),
          "1 cm into the table: %d force datagrams kept, up to %g N up and %g N in all, the last (%g, %g, %g) N", got[1], up[1],
          big[1][0], last[1][0], last[1][1], last[1][2]);
    CHECK(got[2] > 100 && big[2][0] == 0 && big[2][1] == 0, "no poses: %d datagrams kept, the largest force %g N, torque %g N m", got[2],
          big[2][0], big[2][1]);
    fprintf(stderr,
            "    --driver osc: force up to %.3g N above the table, %.3g N up in it (the last (%.3g, %.3g, %.3g) N), %.3g N stale; "
            "%d, %d and %d datagrams kept\n",
            big[0][0], up[1], last[1][0], last[1][1], last[1][2], big[2][0], got[0], got[1], got[2]);
    read_text(json_path, json, sizeof json);
    CHECK(json_number(json, "faults_by_cause.device_stale") > 0 && json_number(json, "faults_by_cause.unmeasurable_pair") == 0,
          "the stale device's faults counted by cause: %s", json);
}

/* meshes from files, a replayed device: free above the table, pushed back
 * up once the trajectory goes into it */
static void test_files_replay(void)
{
    char table[300], ball[300], traj[300], json_path[300], rec_path[300], table_at[320], ball_at[320], replay[320], json[4096];
    write_table_and_ball("", table, ball, table_at, ball_at);
    snprintf(traj, sizeof traj, "%s/traj.txt", dir);
    snprintf(json_path, sizeof json_path, "%s/files.json", dir);
    snprintf(rec_path, sizeof rec_path, "%s/files.tel", dir);
    snprintf(replay, sizeof replay, "replay:%s", traj);
    /* the table's top at z = 0; the device 18 cm above it until 0.4 s,
     * then 1 cm into it from 0.7 s */
    if (!write_text(traj, "# t tx ty tz qw qx qy qz\n0 0 0 0.2 1 0 0 0\n0.4 0 0 0.2 1 0 0 0\n0.7 0 0 -0.01 1 0 0 0\n"))
        return;
    enum { MAXROWS = 4000 };
    run_result *r;
    tel_row *rows;
    if (alloc_run(&r, &rows, MAXROWS))
        return;
    run((const char *[]){"--load", table_at, "--load", ball_at, "--tool", "ball", "--pose", "table=0,0,-0.02,1,0,0,0", "--driver",
                         replay, "--ist-spheres", "300", "--duration", "1.2", QUIET_MACHINE, "--no-osc", "--quiet", "--stats-json",
                         json_path, "--record", rec_path, NULL},
        "files", 120, r);
    CHECK(r->rc == 0 && !strstr(r->err, "loading"), "files: exit %d, stderr (quiet: the summary only): %s", r->rc, r->err);
    read_text(json_path, json, sizeof json);
    CHECK(json_number(json, "faults") == 0 && json_number(json, "faults_by_cause.unmeasurable_pair") == 0, "files: no fault: %s", json);
    int n = read_telemetry(rec_path, rows, MAXROWS);
    CHECK(n > 600, "files: %d telemetry rows (1.2 s at 1 kHz)", n);
    int free_ok = 1, free_rows = 0, pressed = 0, late = 0;
    double zmin = 1;
    for (int i = 0; i < n; i++) {
        if (rows[i].t < 0.3) { /* 18 cm above: beyond the margin, no force */
            free_rows++;
            free_ok &= rows[i].distance == -1 && rows[i].penvol == 0 && len3(rows[i].f) < 1e-3;
        }
        if (rows[i].t > 0.9 && i < n - 1) { /* pushed up, within the limit (the last cycle: below) */
            late++;
            /* (upwards within about 25 degrees: the spheres of 300-sphere
             * trees leave the ball about 3.5 mm off the device's line, at
             * 0.25 of the force sideways; more spheres, less) */
            pressed += rows[i].f[2] > 0.5 && len3(rows[i].f) <= 8 * (1 + 2e-5) && rows[i].f[2] >= 0.9 * len3(rows[i].f);
            zmin = zmin < rows[i].p[2] ? zmin : rows[i].p[2];
        }
    }
    CHECK(free_rows > 100 && free_ok, "files: %d rows above the table, all free of contact and force", free_rows);
    CHECK(late > 100 && pressed == late, "files: %d of %d late rows pushed up (fz > 0.5 N, at most 8)", pressed, late);
    /* the 2 cm ball's centre held near the top (z = 0), not through it */
    CHECK(zmin > -0.01 && zmin < 0.03, "files: the ball's centre at %g m at the lowest", zmin);
    /* the stop leaves the device pressed on with nothing */
    CHECK(n > 0 && len3(rows[n - 1].f) == 0 && len3(rows[n - 1].m) == 0, "files: the last cycle's output is zero");
    free(r), free(rows);
}

/* meshes that are not closed load as mesh BVHs. Beside the demo's tool
 * (an inner sphere tree) one is measured against the tree's surface: the
 * run starts and ends normally. Two of them (a plane and an open cup
 * as the tool) are measured until they overlap, where a BVH has no
 * volume: those cycles fault, output zero, and the stats and the summary
 * count them as unmeasurable_pair */
static void test_open_meshes(void)
{
    char plane[300], cup[300], traj[300], json_path[300], plane_at[320], cup_at[320], replay[320], json[4096];
    snprintf(plane, sizeof plane, "%s/plane.off", dir);
    snprintf(cup, sizeof cup, "%s/cup.off", dir);
    snprintf(traj, sizeof traj, "%s/open_traj.txt", dir);
    snprintf(json_path, sizeof json_path, "%s/open.json", dir);
    snprintf(plane_at, sizeof plane_at, "table=%s", plane);
    snprintf(cup_at, sizeof cup_at, "cup=%s", cup);
    snprintf(replay, sizeof replay, "replay:%s", traj);
    const char *const files[3][2] = {
        {plane, "OFF\n4 2 0\n-0.2 -0.2 0\n0.2 -0.2 0\n0.2 0.2 0\n-0.2 0.2 0\n3 0 1 2\n3 0 2 3\n"},
        /* an octahedron of 2 cm less one face */
        {cup, "OFF\n6 7 0\n0.02 0 0\n-0.02 0 0\n0 0.02 0\n0 -0.02 0\n0 0 0.02\n0 0 -0.02\n"
              "3 0 2 4\n3 2 1 4\n3 1 3 4\n3 3 0 4\n3 2 0 5\n3 1 2 5\n3 3 1 5\n"},
        /* 20 cm above the plane, then 1 cm through it from 0.7 s */
        {traj, "0 0 0 0.2 1 0 0 0\n0.4 0 0 0.2 1 0 0 0\n0.7 0 0 -0.01 1 0 0 0\n"},
    };
    for (int i = 0; i < 3; i++)
        if (!write_text(files[i][0], files[i][1]))
            return;
    run_result *r = malloc(sizeof *r);
    if (!r)
        return;
    run((const char *[]){"--demo", "--load", plane_at, QUIET_MACHINE, "--no-osc", "--duration", "0.5", NULL}, "open demo", 60, r);
    CHECK(r->rc == 0 && !strstr(r->err, "cannot measure"), "the demo's sphere tree tool beside an open plane runs: exit %d, %s", r->rc,
          r->err);
    run((const char *[]){"--load", plane_at, "--load", cup_at, "--tool", "cup", "--driver", replay, "--duration", "1.2", QUIET_MACHINE,
                         "--no-osc", "--stats-json", json_path, NULL},
        "open", 120, r);
    read_text(json_path, json, sizeof json);
    const double faults = json_number(json, "faults"), unmeasurable = json_number(json, "faults_by_cause.unmeasurable_pair");
    CHECK(r->rc == 0 && faults > 100 && unmeasurable == faults && json_number(json, "faults_by_cause.query") == 0 &&
              json_number(json, "faults_by_cause.device_stale") == 0,
          "open meshes through each other: exit %d, %g faults, %g unmeasurable: %s", r->rc, faults, unmeasurable, json);
    char want[64];
    snprintf(want, sizeof want, "faults %.0f (unmeasurable_pair %.0f)", faults, unmeasurable);
    CHECK(strstr(r->err, want), "the summary counts them by cause ('%s'): %s", want, r->err);
    CHECK(strstr(r->out, "t=  1s ") && strstr(r->out, " FAULT faults+") && strstr(r->out, " (unmeasurable_pair)\n"),
          "the status line says the faults since the last and their cause: %s", r->out);
    free(r);
}

/* a scenario's expectations decide the exit status (0 held, 3 failed) */
static void test_scenario_status(void)
{
    char json_path[300], sim_path[300], json[8192];
    snprintf(json_path, sizeof json_path, "%s/press.json", dir);
    snprintf(sim_path, sizeof sim_path, "%s/strict.sim", dir);
    run_result *r = malloc(sizeof *r);
    if (!r)
        return;
    run((const char *[]){"--scenario", "sim/scenarios/press.sim", "--quiet", "--report-json", json_path, NULL}, "press", 300, r);
    CHECK(r->rc == 0 && strstr(r->out, "expect") && !strstr(r->out, "FAIL"), "press.sim: exit %d, stdout: %s, stderr: %s", r->rc, r->out,
          r->err);
    read_text(json_path, json, sizeof json);
    CHECK(strstr(json, "\"contact_s\"") != NULL, "press.sim's JSON report: %s", json);
    /* the same press, held to a force no contact can keep under */
    write_text(sim_path, "rate 1000\nduration 0.6\nobject table box 0.25 0.25 0.02 at 0 0 -0.02\nobject ball sphere 0.02 2\ntool ball\n"
                         "at 0.0 hand 0 0 0.06\nat 0.4 hand 0 0 -0.01\nexpect faults == 0\nexpect max_force_n <= 0.001\n");
    run((const char *[]){"--scenario", sim_path, "--quiet", NULL}, "strict", 300, r);
    CHECK(r->rc == 3 && strstr(r->err, "1 of the scenario's expectations failed"), "strict.sim: exit %d, stderr: %s", r->rc, r->err);
    /* without --quiet it says what it runs; a JSON report it cannot write
     * (a full device) is an error, exit 1, though the expectations held */
    if (access("/dev/full", W_OK) == 0) {
        write_text(sim_path, "rate 1000\nduration 0.2\nobject table box 0.25 0.25 0.02 at 0 0 -0.02\nobject ball sphere 0.02 2\ntool ball\n"
                             "at 0.0 hand 0 0 0.06\nexpect faults == 0\n");
        run((const char *[]){"--scenario", sim_path, "--report-json", "/dev/full", NULL}, "fullrep", 300, r);
        char said[400];
        snprintf(said, sizeof said, "hapticd: scenario %s, 0.2 s on a virtual clock\n", sim_path);
        CHECK(r->rc == 1 && strstr(r->err, said) && strstr(r->err, "hapticd: /dev/full: cannot write the report: No space left on device\n") && strstr(r->out, "expect") &&
                  !strstr(r->out, "FAIL"),
              "--report-json /dev/full: exit %d, stdout: %s, stderr: %s", r->rc, r->out, r->err);
    }
    /* a scenario that reads but whose scene cannot be built (a mesh file
     * missing, named relative to the scenario's folder): exit 1, the
     * scenario's line and the file's path named, no report */
    write_text(sim_path, "rate 1000\nduration 0.2\nobject table file missing.off\nobject ball sphere 0.02 2\ntool ball\n"
                         "at 0.0 hand 0 0 0.06\nexpect faults == 0\n");
    run((const char *[]){"--scenario", sim_path, "--quiet", NULL}, "unbuilt", 300, r);
    char want[400];
    snprintf(want, sizeof want, "hapticd: %s:3: object table: %s/missing.off: No such file or directory\n", sim_path, dir);
    CHECK(r->rc == 1 && strstr(r->err, want) && r->out[0] == 0, "a scene that cannot be built: exit %d, stdout '%s', stderr: %s", r->rc,
          r->out, r->err);
    free(r);
}

/* hapticd reads meshes in a child process of its own (--load, OSC /load,
 * scenario files): a reader past --load-timeout or --load-memory fails
 * that one load with a message saying so, and the service goes on */
static void test_loads_apart(void)
{
    expect_refused((const char *[]){"--demo", "--load-timeout", "0", NULL}, 2,
                   "hapticd: --load-timeout is a number of seconds above 0 and at most 3600, got '0'");
    expect_refused((const char *[]){"--demo", "--load-timeout", "soon", NULL}, 2, "--load-timeout is a number of seconds");
    expect_refused((const char *[]){"--demo", "--load-memory", "1.5", NULL}, 2,
                   "hapticd: --load-memory is a whole number of MiB from 0 (no limit) to 1048576, got '1.5'");
    expect_refused((const char *[]){"--demo", "--load-memory", "-1", NULL}, 2, "--load-memory is a whole number of MiB");
    char box[300], box_at[320], big[300], big_at[320], sim_path[300], err_path[300], buf[16384];
    write_small_box("apart_box.off", box, box_at);
    run_result *r = malloc(sizeof *r);
    if (!r)
        return;
    /* a mesh read apart loads as it did in the process */
    run((const char *[]){"--demo", "--load", box_at, "--pose", "box=0.5,0,0,1,0,0,0", "--load-memory", "256", QUIET_MACHINE,
                         "--no-osc", "--duration", "0.2", NULL},
        "apart", 60, r);
    CHECK(r->rc == 0 && strstr(r->err, "loading box from"), "a load through the child: exit %d, stderr: %s", r->rc, r->err);
    /* the time limit: a start alone takes longer than 1 ms */
    run((const char *[]){"--demo", "--load", box_at, "--load-timeout", "0.001", QUIET_MACHINE, "--no-osc", "--duration", "0.2",
                         NULL},
        "late", 60, r);
    char want[400];
    snprintf(want, sizeof want, "hapticd: %s: the mesh loader took longer than 0.001 s and was stopped; nothing was loaded\n", box);
    CHECK(r->rc == 1 && strstr(r->err, want), "--load-timeout 0.001: exit %d, stderr: %s", r->rc, r->err);
    /* scenarios read their mesh files the same way */
    snprintf(sim_path, sizeof sim_path, "%s/apart.sim", dir);
    write_text(sim_path, "rate 1000\nduration 0.2\nobject table file apart_box.off\nobject ball sphere 0.02 2\ntool ball\n"
                         "at 0.0 hand 0 0 0.06\n");
    run((const char *[]){"--scenario", sim_path, "--quiet", "--load-timeout", "0.001", NULL}, "late sim", 120, r);
    CHECK(r->rc == 1 && strstr(r->err, "object table: ") && strstr(r->err, "the mesh loader took longer than 0.001 s"),
          "a scenario's file past --load-timeout: exit %d, stderr: %s", r->rc, r->err);
    run((const char *[]){"--scenario", sim_path, "--quiet", "--load-timeout", "60", NULL}, "sim", 120, r);
    CHECK(r->rc == 0, "the same scenario in time: exit %d, stderr: %s", r->rc, r->err);
    free(r);
    if (getenv("HAPTICD_SANITIZED")) { /* (no memory limit in sanitizer builds) */
        fprintf(stderr, "    (memory limit: skipped, sanitizer build)\n");
        return;
    }
    /* the memory limit: a 172,800-triangle mesh in 24 MiB fails over OSC,
     * the service answers on, and a small mesh loads after it */
    snprintf(big, sizeof big, "%s/apart_big.off", dir);
    snprintf(big_at, sizeof big_at, "big=%s", big);
    prox_mesh *m = prox_mesh_make_tiled_box(prox_v3(0.1, 0.1, 0.1), 120);
    check_write_off(big, m);
    prox_mesh_free(m);
    snprintf(err_path, sizeof err_path, "%s/apart_osc.err", dir);
    pid_t pid = spawn((const char *[]){"--demo", QUIET_MACHINE, "--osc-port", "0", "--quiet", "--load-memory", "24", NULL},
                      "apart_osc");
    const char *said = wait_for_text(err_path, "OSC 127.0.0.1:", buf, sizeof buf, 60);
    const int port = said ? atoi(said + strlen("OSC 127.0.0.1:")) : 0;
    CHECK(port > 0, "the port hapticd took: %s", buf);
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    osc_seen seen;
    memset(&seen, 0, sizeof seen);
    lo_server s = port > 0 ? lo_server_new(NULL, NULL) : NULL;
    lo_address a = port > 0 ? lo_address_new("127.0.0.1", port_s) : NULL;
    if (s && a) {
        lo_server_add_method(s, "/done", NULL, on_done, &seen);
        lo_server_add_method(s, "/fail", NULL, on_fail, &seen);
        lo_send_from(a, s, LO_TT_IMMEDIATE, "/load", "ss", "big", big);
        osc_wait(s, seen.fail, 60000);
        CHECK(strstr(seen.fail, "/load") && strstr(seen.fail, "the mesh loader may use at most 24 MiB of address space"),
              "/load past the memory limit: /fail, got '%s'", seen.fail);
        lo_send_from(a, s, LO_TT_IMMEDIATE, "/load", "ssfffffff", "box", box, 0.5f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f);
        osc_wait(s, seen.done, 60000);
        CHECK(!strcmp(seen.done, "/load"), "/load of a small mesh after it: /done, got '%s' (fail '%s')", seen.done, seen.fail);
    }
    if (a)
        lo_address_free(a);
    if (s)
        lo_server_free(s);
    if (pid > 0)
        kill(pid, SIGINT);
    const int rc = wait_exit(pid, 60);
    read_text(err_path, buf, sizeof buf);
    CHECK(rc == 0, "the service after a failed load: exit %d, stderr: %s", rc, buf);
}

int main(int argc, char **argv)
{
    (void)argc;
    check_find_tool(argv[0], "HAPTICD_BIN", "hapticd", hapticd, sizeof hapticd);
    if (access(hapticd, X_OK) != 0 || !mkdtemp(dir)) {
        fprintf(stderr, "hapticd not found at %s (build it first) or no temporary folder: %s\n", hapticd, strerror(errno));
        return 1;
    }
    RUN_TEST(test_help_and_refusals);
    RUN_TEST(test_demo);
    RUN_TEST(test_realtime_defaults);
    RUN_TEST(test_null_driver_rate);
    RUN_TEST(test_interrupt);
    RUN_TEST(test_osc_control);
    RUN_TEST(test_osc_device);
    RUN_TEST(test_files_replay);
    RUN_TEST(test_open_meshes);
    RUN_TEST(test_scenario_status);
    RUN_TEST(test_loads_apart);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_summary(argv[0]);
}
