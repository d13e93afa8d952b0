/* hapticd_main.c - the hapticd executable: options, scene, status lines. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dev_device.h"
#include "prox.h"
#include "prox_loader.h"
#include "rt_osc.h"
#include "rt_service.h"
#include "sim.h"

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hapticd [options]\n"
            "\n"
            "Real-time haptic collision service: a 1 kHz loop reads the device, queries the tool\n"
            "against the scene (distance / penetration volume under a time budget) and writes force.\n"
            "\n"
            "scene:\n"
            "  --demo                 built-in demo scene (procedural, no files needed) with the sim device\n"
            "  --scenario FILE        simulation in the loop: run the scenario (docs/scenarios.md) on a\n"
            "                         virtual clock as fast as the queries allow, print its report and\n"
            "                         expectations; exit 0 when all hold, 3 when one fails\n"
            "  --report-json FILE     with --scenario: the report as JSON as well\n"
            "  --load NAME=PATH       load a mesh, .ist or .vox as object NAME (repeatable)\n"
            "  --pose NAME=tx,ty,tz,qw,qx,qy,qz  place object NAME\n"
            "  --tool NAME            the object the device moves\n"
            "  --ist-spheres N        inner spheres a closed mesh gets when loaded (--load, OSC /load without\n"
            "                         a count of its own, the demo; default 500): more feel flat faces truer,\n"
            "                         cost query time\n"
            "  --load-timeout S       meshes are read in a child process (a reader that crashes or hangs\n"
            "                         costs one load, not the service); stop one after S seconds (default 60)\n"
            "  --load-memory MIB      that process's address space limit in MiB (default 4096; 0 = none)\n"
            "device:\n"
            "  --driver sim|null|osc|replay:FILE   (default sim)\n"
            "  --osc-device-port P    with --driver osc: where /device/force goes (127.0.0.1:P)\n"
            "loop:\n"
            "  --rate HZ              loop rate (default 1000)\n"
            "  --budget-us US         query budget per cycle (default 300)\n"
            "  --cpu N                pin the loop to CPU N\n"
            "  --priority P           SCHED_FIFO priority (default 80; 0 = none)\n"
            "  --cpu-latency-us US    while running, keep CPU wake-up from idle within US (PM QoS,\n"
            "                         /dev/cpu_dma_latency; default 0; -1 = leave the system's setting)\n"
            "  --duration S           stop after S seconds (default: until Ctrl-C)\n"
            "  --voxel-budget-us US   time per cycle for queued voxel-map updates at most (default 100;\n"
            "                         the rest wait for the next cycles)\n"
            "rendering and safety:\n"
            "  --stiffness K          N per m^3 of penetration volume\n"
            "  --max-force N          force limit in newtons\n"
            "  --max-torque NM        torque limit\n"
            "control and output:\n"
            "  --osc-addr A           OSC control address (default 127.0.0.1)\n"
            "  --osc-port P           OSC control port (default 57130; 0 = any free port, printed)\n"
            "  --no-osc               no OSC server\n"
            "  --record FILE          record telemetry\n"
            "  --record-dir DIR       let OSC /record/start create new files (bare names) in DIR; without\n"
            "                         it, /record/start is refused\n"
            "  --stats-json FILE      write final statistics as JSON\n"
            "  --quiet                no status lines (the port --osc-port 0 picked is still printed)\n"
            "  -h, --help\n");
}

static int parse_pose_arg(const char *s, prox_xform *out)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *p = buf; *p; p++)
        if (*p == ',')
            *p = ' ';
    return prox_parse_pose(buf, out) == 1 ? 0 : -1;
}

static int add_demo_scene(rt_service *svc, uint32_t ist_spheres, char *err, size_t errlen)
{
    struct {
        const char *name;
        prox_mesh *mesh;
        prox_vec3 at;
    } objs[] = {
        {"floor", prox_mesh_make_box(prox_v3(0.25, 0.25, 0.02)), prox_v3(0, 0, -0.08)},
        {"ball", prox_mesh_make_sphere(0.05, 3), prox_v3(0.0, 0.0, 0.0)},
        {"ring", prox_mesh_make_torus(0.08, 0.015, 48, 16), prox_v3(0.12, 0.0, -0.04)},
        {"tool", prox_mesh_make_sphere(0.02, 2), prox_v3(0, 0, 0.15)},
    };
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
        rt_object o;
        if (!objs[i].mesh || rt_object_from_mesh(objs[i].mesh, ist_spheres, &o, err, errlen) != 0)
            return -1;
        prox_xform pose = prox_xform_from_pose(objs[i].at, prox_quat_identity());
        if (rt_service_add_object(svc, objs[i].name, &o, &pose, err, errlen) != 0) {
            rt_object_free(&o);
            return -1;
        }
    }
    /* a pillar of obstacle voxels: the environment mixes meshes and maps */
    prox_voxmap_def vd = {0.01, prox_v3(-0.16, -0.03, -0.06), {6, 6, 16}, 1024};
    prox_voxmap *vm = prox_voxmap_create(&vd, err, errlen);
    if (!vm)
        return -1;
    for (int x = 0; x < 6; x++)
        for (int y = 0; y < 6; y++)
            for (int z = 0; z < 16; z++)
                prox_voxmap_set(vm, x, y, z, PROX_VOXEL_OBSTACLE);
    rt_object vo;
    rt_object_from_voxmap(vm, &vo);
    if (rt_service_add_object(svc, "pillar", &vo, NULL, err, errlen) != 0) {
        prox_voxmap_free(vm);
        return -1;
    }
    return rt_service_set_tool(svc, "tool", err, errlen);
}

static void osc_pose_to_device(void *user, const prox_xform *pose, uint32_t buttons)
{
    dev_osc_set_pose(user, pose, buttons);
}

/* Why the file at path could not be written, on stderr: errno, as fopen
 * or fclose left it ("No space left on device" is found at fclose). */
static void say_unwritable(const char *path, const char *what)
{
    fprintf(stderr, "hapticd: %s: cannot write the %s: %s\n", path, what, strerror(errno));
}

/* 0, or -1 (said on stderr) when the file cannot be written */
static int write_stats_json(const char *path, const rt_status *st)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        say_unwritable(path, "stats");
        return -1;
    }
    fprintf(f,
            "{\n  \"cycles\": %llu,\n  \"overruns\": %llu,\n  \"rate_hz\": %.3f,\n  \"realtime\": %d,\n  \"memlocked\": %d,\n"
            "  \"cpu_latency_held\": %d,\n"
            "  \"latency_us\": {\"min\": %.3f, \"avg\": %.3f, \"p50\": %.1f, \"p99\": %.1f, \"p999\": %.1f, \"max\": %.3f},\n"
            "  \"query_us\": {\"p99\": %.1f, \"max\": %.1f, \"budget\": %.1f, \"overshoot_max\": %.3f},\n"
            "  \"drops\": {\"commands\": %llu, \"voxels\": %llu, \"telemetry\": %llu},\n"
            "  \"telemetry\": {\"received\": %llu, \"gaps\": %llu},\n  \"faults\": %llu,\n  \"watchdog_fired\": %llu,\n"
            "  \"note\": \"%s\",\n",
            (unsigned long long)st->cycles, (unsigned long long)st->overruns, st->rate_hz, st->realtime, st->memlocked, st->cpu_latency_held,
            st->latency_min_us, st->latency_avg_us, st->latency_p50_us, st->latency_p99_us, st->latency_p999_us,
            st->latency_max_us, st->query_p99_us, st->query_max_us, st->budget_us, st->budget_overshoot_max_us,
            (unsigned long long)st->cmd_drops, (unsigned long long)st->voxel_drops, (unsigned long long)st->telemetry_drops,
            (unsigned long long)st->telemetry_received, (unsigned long long)st->telemetry_gaps,
            (unsigned long long)st->faults, (unsigned long long)st->watchdog_fired, st->rt_note ? st->rt_note : "");
    fprintf(f, "  \"faults_by_cause\": {");
    for (int c = RT_FAULT_NONE + 1; c < RT_FAULT_CAUSE_COUNT; c++)
        fprintf(f, "%s\"%s\": %llu", c > RT_FAULT_NONE + 1 ? ", " : "", rt_fault_name(c), (unsigned long long)st->faults_by_cause[c]);
    fprintf(f, "}\n}\n");
    if (fclose(f) != 0) {
        say_unwritable(path, "stats");
        return -1;
    }
    return 0;
}

/* " (unmeasurable_pair 1500, device_stale 2)": the causes of the faults
 * counted, or "" when there were none */
static void fault_causes(const rt_status *st, char *out, size_t n)
{
    size_t used = 0;
    out[0] = 0;
    for (int c = RT_FAULT_NONE + 1; c < RT_FAULT_CAUSE_COUNT && used < n; c++)
        if (st->faults_by_cause[c]) {
            int w = snprintf(out + used, n - used, "%s%s %llu", used ? ", " : " (", rt_fault_name(c),
                             (unsigned long long)st->faults_by_cause[c]);
            used += w > 0 ? (size_t)w : 0;
        }
    if (used && used + 1 < n)
        out[used] = ')', out[used + 1] = 0;
}

/* --scenario: 0 when every expectation holds, 3 when one fails, 1 on errors */
static int run_scenario(const char *path, const char *record, const char *report_json, int quiet, const prox_loader *loader)
{
    char err[600];
    sim_scenario *sc = sim_scenario_load(path, err, sizeof err);
    if (!sc) {
        fprintf(stderr, "hapticd: %s\n", err);
        return 1;
    }
    if (!quiet)
        fprintf(stderr, "hapticd: scenario %s, %.3g s on a virtual clock\n", path, sim_scenario_duration_s(sc));
    sim_options o = {record, quiet, loader};
    sim_report rep;
    if (sim_run(sc, &o, &rep, err, sizeof err) != 0) {
        fprintf(stderr, "hapticd: %s\n", err);
        sim_scenario_free(sc);
        return 1;
    }
    sim_report_print(stdout, &rep, 0);
    int failed = sim_check(sc, &rep, stdout);
    int status = failed ? 3 : 0;
    if (report_json) {
        FILE *f = fopen(report_json, "w");
        if (f) {
            sim_report_print(f, &rep, 1);
            if (fclose(f) != 0)
                f = NULL;
        }
        if (!f) {
            say_unwritable(report_json, "report");
            status = 1;
        }
    }
    if (failed)
        fprintf(stderr, "hapticd: %d of the scenario's expectations failed\n", failed);
    sim_scenario_free(sc);
    return status;
}

int main(int argc, char **argv)
{
    /* this program started again to read one mesh (prox_mesh_load_apart) */
    if (argc > 1 && !strcmp(argv[1], PROX_LOADER_FLAG))
        return prox_loader_main(argc, argv);
    rt_config cfg = rt_config_default();
    cfg.loader.exe = "/proc/self/exe";
    const char *driver = "sim", *osc_addr = "127.0.0.1", *record = NULL, *stats_json = NULL, *tool = NULL, *record_dir = NULL;
    const char *scenario = NULL, *report_json = NULL;
    int osc_port = 57130, no_osc = 0, demo = 0, quiet = 0, osc_dev_port = 57131, odp_given = 0;
    double duration = 0;
    const char *loads[64], *poses[64];
    int nloads = 0, nposes = 0;
    enum { O_DEMO = 256, O_LOAD, O_POSE, O_TOOL, O_DRIVER, O_RATE, O_BUDGET, O_CPU, O_PRIO, O_DUR, O_STIFF, O_MAXF, O_MAXT,
           O_OSCA, O_OSCP, O_NOOSC, O_REC, O_JSON, O_QUIET, O_ODP, O_CPULAT, O_RECDIR, O_VOXBUD, O_SCEN, O_REPJ, O_ISTSPH,
           O_LDTIME, O_LDMEM };
    static const struct option opts[] = {{"demo", no_argument, 0, O_DEMO}, {"load", required_argument, 0, O_LOAD},
                                         {"pose", required_argument, 0, O_POSE}, {"tool", required_argument, 0, O_TOOL},
                                         {"driver", required_argument, 0, O_DRIVER}, {"rate", required_argument, 0, O_RATE},
                                         {"budget-us", required_argument, 0, O_BUDGET}, {"cpu", required_argument, 0, O_CPU},
                                         {"priority", required_argument, 0, O_PRIO}, {"duration", required_argument, 0, O_DUR},
                                         {"stiffness", required_argument, 0, O_STIFF}, {"max-force", required_argument, 0, O_MAXF},
                                         {"max-torque", required_argument, 0, O_MAXT}, {"osc-addr", required_argument, 0, O_OSCA},
                                         {"osc-port", required_argument, 0, O_OSCP}, {"no-osc", no_argument, 0, O_NOOSC},
                                         {"record", required_argument, 0, O_REC}, {"stats-json", required_argument, 0, O_JSON},
                                         {"quiet", no_argument, 0, O_QUIET}, {"osc-device-port", required_argument, 0, O_ODP},
                                         {"cpu-latency-us", required_argument, 0, O_CPULAT}, {"record-dir", required_argument, 0, O_RECDIR},
                                         {"voxel-budget-us", required_argument, 0, O_VOXBUD}, {"scenario", required_argument, 0, O_SCEN},
                                         {"report-json", required_argument, 0, O_REPJ}, {"ist-spheres", required_argument, 0, O_ISTSPH},
                                         {"load-timeout", required_argument, 0, O_LDTIME},
                                         {"load-memory", required_argument, 0, O_LDMEM}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c, live_opts = 0; /* options a scenario does not take (it sets its own) */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        live_opts += c != O_SCEN && c != O_REPJ && c != O_REC && c != O_QUIET && c != O_LDTIME && c != O_LDMEM && c != 'h';
        char *end = NULL;
        double v = optarg ? strtod(optarg, &end) : 0;
        int numeric_bad = optarg && (end == optarg || *end || !isfinite(v));
        switch (c) {
        case O_DEMO: demo = 1; break;
        case O_LOAD:
            if (nloads < 64)
                loads[nloads++] = optarg;
            break;
        case O_POSE:
            if (nposes < 64)
                poses[nposes++] = optarg;
            break;
        case O_TOOL: tool = optarg; break;
        case O_DRIVER: driver = optarg; break;
        case O_OSCA: osc_addr = optarg; break;
        case O_NOOSC: no_osc = 1; break;
        case O_REC: record = optarg; break;
        case O_RECDIR: record_dir = optarg; break;
        case O_JSON: stats_json = optarg; break;
        case O_QUIET: quiet = 1; break;
        case O_SCEN: scenario = optarg; break;
        case O_REPJ: report_json = optarg; break;
        case 'h': usage(stdout); return 0;
        case O_ISTSPH:
            if (numeric_bad || !(v >= 1 && v <= RT_IST_SPHERES_MAX) || v != (double)(uint32_t)v) {
                fprintf(stderr, "hapticd: --ist-spheres is a whole number from 1 to %u, got '%s'\n", RT_IST_SPHERES_MAX, optarg);
                return 2;
            }
            cfg.ist_spheres = (uint32_t)v;
            break;
        case O_LDTIME:
            if (numeric_bad || !(v > 0 && v <= RT_LOAD_SECONDS_MAX)) {
                fprintf(stderr, "hapticd: --load-timeout is a number of seconds above 0 and at most %g, got '%s'\n",
                        RT_LOAD_SECONDS_MAX, optarg);
                return 2;
            }
            cfg.loader.seconds = v;
            break;
        case O_LDMEM:
            if (numeric_bad || !(v >= 0 && v <= 1048576) || v != floor(v)) {
                fprintf(stderr, "hapticd: --load-memory is a whole number of MiB from 0 (no limit) to 1048576, got '%s'\n",
                        optarg);
                return 2;
            }
            cfg.loader.memory_mib = (uint32_t)v;
            break;
        default:
            if (c >= O_RATE && c <= O_VOXBUD && c != O_OSCA && c != O_NOOSC && c != O_REC && c != O_JSON && c != O_QUIET &&
                c != O_RECDIR) {
                if (numeric_bad) {
                    fprintf(stderr, "hapticd: --%s needs a number, got '%s'\n", opts[c - O_DEMO].name, optarg);
                    return 2;
                }
                /* the options kept as an int: a port in its range, and no
                 * value an int cannot hold (converting one is undefined) */
                if ((c == O_OSCP || c == O_ODP) && !(v >= (c == O_OSCP ? 0 : 1) && v <= 65535 && v == floor(v))) {
                    fprintf(stderr, "hapticd: --%s is a port number from %d to 65535, got '%s'\n", opts[c - O_DEMO].name,
                            c == O_OSCP ? 0 : 1, optarg);
                    return 2;
                }
                /* --cpu-latency-us is clamped below (so not range-checked
                 * here); a fraction of any of the three was truncated */
                const int ranged = c == O_CPU || c == O_PRIO, in_int = !ranged || (v >= INT_MIN && v <= INT_MAX);
                if ((ranged || c == O_CPULAT) && !(in_int && v == floor(v))) {
                    fprintf(stderr, "hapticd: --%s is %s, got '%s'\n", opts[c - O_DEMO].name, in_int ? "a whole number" : "out of range",
                            optarg);
                    return 2;
                }
                if (c == O_RATE) cfg.rate_hz = v;
                else if (c == O_BUDGET) cfg.budget_us = v;
                else if (c == O_CPU) cfg.cpu = (int)v;
                else if (c == O_PRIO) cfg.priority = (int)v;
                else if (c == O_DUR) duration = v;
                else if (c == O_STIFF) cfg.gains.stiffness_n_per_m3 = v;
                else if (c == O_MAXF) cfg.limits.max_force_n = v;
                else if (c == O_MAXT) cfg.limits.max_torque_nm = v;
                else if (c == O_OSCP) osc_port = (int)v;
                else if (c == O_ODP) osc_dev_port = (int)v, odp_given = 1;
                else if (c == O_CPULAT) cfg.cpu_latency_us = v < -1 ? -2 : v > 1e6 ? 1000000 : (int)v;
                else if (c == O_VOXBUD) cfg.voxel_budget_us = v;
                break;
            }
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hapticd: unexpected argument '%s' (hapticd --help)\n", argv[optind]);
        return 2;
    }
    if (scenario) {
        if (live_opts) {
            fprintf(stderr, "hapticd: --scenario sets its own scene, device, rate, budget, gains, limits and inner sphere count "
                            "(ist_spheres): only --record, --report-json, --quiet, --load-timeout and --load-memory go with it\n");
            return 2;
        }
        return run_scenario(scenario, record, report_json, quiet, &cfg.loader);
    }
    if (report_json) {
        fprintf(stderr, "hapticd: --report-json goes with --scenario\n");
        return 2;
    }
    if (odp_given && strcmp(driver, "osc")) {
        fprintf(stderr, "hapticd: --osc-device-port goes with --driver osc (the driver is %s)\n", driver);
        return 2;
    }
    if (!demo && nloads == 0) {
        fprintf(stderr, "hapticd: no scene: give --demo or --load NAME=PATH (hapticd --help)\n");
        return 2;
    }
    char err[512];
    dev_device *dev = NULL;
    if (!strcmp(driver, "sim"))
        dev = dev_sim_open(NULL, err, sizeof err);
    else if (!strcmp(driver, "null"))
        dev = dev_null_open(err, sizeof err);
    else if (!strcmp(driver, "osc"))
        dev = dev_osc_open("127.0.0.1", osc_dev_port, err, sizeof err);
    else if (!strncmp(driver, "replay:", 7))
        dev = dev_replay_open(driver + 7, err, sizeof err);
    else
        snprintf(err, sizeof err, "unknown driver '%s' (sim, null, osc, replay:FILE)", driver);
    if (!dev) {
        fprintf(stderr, "hapticd: %s\n", err);
        return 1;
    }
    rt_service *svc = rt_service_create(&cfg, dev, err, sizeof err);
    if (!svc) {
        fprintf(stderr, "hapticd: %s\n", err);
        dev_close(dev);
        return 1;
    }
    int status = 0;
    if (demo && add_demo_scene(svc, cfg.ist_spheres, err, sizeof err) != 0) {
        fprintf(stderr, "hapticd: demo scene: %s\n", err);
        status = 1;
    }
    for (int i = 0; i < nloads && !status; i++) {
        char name[RT_NAME_MAX + 1];
        const char *eq = strchr(loads[i], '=');
        if (!eq || eq == loads[i] || (size_t)(eq - loads[i]) >= sizeof name - 1) {
            fprintf(stderr, "hapticd: --load wants NAME=PATH, got '%s'\n", loads[i]);
            status = 2;
            break;
        }
        memcpy(name, loads[i], (size_t)(eq - loads[i]));
        name[eq - loads[i]] = 0;
        if (!quiet)
            fprintf(stderr, "hapticd: loading %s from %s\n", name, eq + 1);
        if (rt_service_load_object(svc, name, eq + 1, NULL, 0, err, sizeof err) != 0) {
            fprintf(stderr, "hapticd: %s\n", err);
            status = 1;
        }
    }
    for (int i = 0; i < nposes && !status; i++) {
        char name[RT_NAME_MAX + 1];
        const char *eq = strchr(poses[i], '=');
        prox_xform x;
        if (!eq || (size_t)(eq - poses[i]) >= sizeof name - 1 || parse_pose_arg(eq + 1, &x)) {
            fprintf(stderr, "hapticd: --pose wants NAME=tx,ty,tz,qw,qx,qy,qz, got '%s'\n", poses[i]);
            status = 2;
            break;
        }
        memcpy(name, poses[i], (size_t)(eq - poses[i]));
        name[eq - poses[i]] = 0;
        if (rt_service_set_pose(svc, name, &x, err, sizeof err)) {
            fprintf(stderr, "hapticd: %s\n", err);
            status = 1;
        }
    }
    if (!status && tool && rt_service_set_tool(svc, tool, err, sizeof err)) {
        fprintf(stderr, "hapticd: %s\n", err);
        status = 1;
    }
    rt_osc *osc = NULL;
    if (!status && !no_osc) {
        osc = rt_osc_create(svc, osc_addr, osc_port, err, sizeof err);
        if (!osc) {
            fprintf(stderr, "hapticd: %s\n", err);
            status = 1;
        } else {
            if (!strcmp(driver, "osc"))
                rt_osc_set_pose_input(osc, osc_pose_to_device, dev);
            if (record_dir && rt_osc_set_record_dir(osc, record_dir, err, sizeof err)) {
                fprintf(stderr, "hapticd: %s\n", err);
                status = 1;
            }
        }
    }
    if (!status && record && rt_service_record_start(svc, record, err, sizeof err)) {
        fprintf(stderr, "hapticd: %s\n", err);
        status = 1;
    }
    /* --duration and the status lines' times count from the loop's start
     * (taken after it, 9 of 1.5 s's cycles had run before the clock) */
    const uint64_t t0 = prox_now_ns();
    if (!status && rt_service_start(svc, err, sizeof err)) {
        fprintf(stderr, "hapticd: %s\n", err);
        status = 1;
    }
    if (!status && osc && rt_osc_start(osc, err, sizeof err)) {
        fprintf(stderr, "hapticd: %s\n", err);
        status = 1;
    }
    if (!status) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        if (!quiet && osc)
            fprintf(stderr, "hapticd: running at %.0f Hz, driver %s, OSC %s:%d; Ctrl-C stops\n", cfg.rate_hz, driver, osc_addr,
                    rt_osc_port(osc));
        else if (!quiet)
            fprintf(stderr, "hapticd: running at %.0f Hz, driver %s, OSC off; Ctrl-C stops\n", cfg.rate_hz, driver);
        else if (osc && osc_port == 0) /* a port the system picked: said even when quiet, or no one could reach it */
            fprintf(stderr, "hapticd: OSC %s:%d\n", osc_addr, rt_osc_port(osc));
        double next_line = 1.0;
        uint64_t faults_seen = 0;
        /* --duration's end to the nanosecond, not at the next 50 ms look:
         * the loop ran up to 50 ms (50 cycles) past it, and on a loaded
         * machine make test's 1.5 s demo counted 1636 cycles */
        const uint64_t end_ns = duration > 0 && duration < 1e9 ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX; /* (31 years: forever) */
        while (!interrupted) {
            uint64_t wake = prox_now_ns() + 50 * 1000 * 1000; /* (Ctrl-C, the status lines) */
            wake = wake < end_ns ? wake : end_ns;
            const struct timespec ts = {(time_t)(wake / 1000000000u), (long)(wake % 1000000000u)};
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !interrupted)
                ;
            double el = 1e-9 * (double)(prox_now_ns() - t0);
            if (el >= next_line) {
                next_line += 1.0;
                rt_status st;
                rt_service_status(svc, &st);
                if (!quiet) {
                    char dist[32]; /* the loop measures distance within the margin only (-1: nothing that close) */
                    if (st.distance_m >= 0)
                        snprintf(dist, sizeof dist, "%8.5fm", st.distance_m);
                    else
                        snprintf(dist, sizeof dist, "%9s", ">margin");
                    /* FAULT: the last cycle faulted; then the faults since the
                     * last line and the latest one's cause */
                    char faults[80] = "";
                    if (st.faults > faults_seen)
                        snprintf(faults, sizeof faults, "%s faults+%llu (%s)", st.fault ? " FAULT" : "",
                                 (unsigned long long)(st.faults - faults_seen), rt_fault_name(st.last_fault_cause));
                    else if (st.fault)
                        snprintf(faults, sizeof faults, " FAULT");
                    faults_seen = st.faults;
                    printf("t=%3.0fs rate=%7.1fHz wake p99=%4.0fus max=%6.1fus overruns=%llu query p99=%4.0fus "
                           "dist=%s penvol=%.3gm3 force=%6.3fN%s\n",
                           el, st.rate_hz, st.latency_p99_us, st.latency_max_us, (unsigned long long)st.overruns,
                           st.query_p99_us, dist, st.penvol_m3, prox_v3_len(st.force_n), faults);
                    fflush(stdout);
                }
            }
            if (prox_now_ns() >= end_ns)
                break;
        }
        /* the loop first, at the end of --duration: the OSC thread's join
         * waits out its poll (3 s with OSC: 3017 cycles); commands it
         * still takes apply at once on the stopped service */
        rt_service_stop(svc);
        rt_osc_stop(osc);
        rt_status st;
        rt_service_status(svc, &st);
        char causes[512];
        fault_causes(&st, causes, sizeof causes);
        fprintf(stderr,
                "hapticd: %llu cycles, %llu overruns, wake-up latency min %.1f avg %.1f p99 %.0f max %.1f us, query p99 %.0f us "
                "(budget %.0f us, worst overshoot %.1f us), drops: %llu cmd %llu voxel %llu telemetry, faults %llu%s\n",
                (unsigned long long)st.cycles, (unsigned long long)st.overruns, st.latency_min_us, st.latency_avg_us,
                st.latency_p99_us, st.latency_max_us, st.query_p99_us, st.budget_us, st.budget_overshoot_max_us,
                (unsigned long long)st.cmd_drops, (unsigned long long)st.voxel_drops, (unsigned long long)st.telemetry_drops,
                (unsigned long long)st.faults, causes);
        if (stats_json && write_stats_json(stats_json, &st))
            status = 1;
    }
    rt_osc_destroy(osc);
    rt_service_destroy(svc);
    dev_close(dev);
    return status;
}
