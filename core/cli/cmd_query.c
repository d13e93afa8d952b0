/* cmd_query.c - prox distance / collide / penvol: one query per pose.
 *
 * stdout: one line per pose, `value lower upper complete` (%.17g);
 * stderr, last line: `queries=N median_us=X p99_us=Y max_us=Z` (query time
 * only, not loading or building).
 * --times FILE writes one line per query, `wall_us cpu_us`: wall-clock time
 * (what the budget is measured in) and the calling thread's CPU time, which
 * leaves out time the thread was preempted (the benchmarks run on a shared
 * machine and use the pair to tell scheduling noise from late stopping).
 * --stats prints, before the timing line, the engine's counters per query
 * (mean and max over the poses): expansions, node tests, leaf tests, queue
 * pushes; with --boxes also how many colliding poses the inner boxes
 * decided (the paper's I_CI) and how many an exact test of two leaf pieces
 * (I_CP).
 * --boxes (collide) builds inner/outer box hierarchies from convex meshes.
 * --order picks the traversal order (prox_query.order): auto (default),
 * best (smallest key first) or depth (last pushed first).
 * --fast (distance) clears prox_query.precise: inner sphere trees skip the
 * search of the answer's neighbourhood for another local minimum (on by
 * default; --precise says so explicitly).
 * Each command takes the options its usage line (cli.h) lists and refuses
 * the others by name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "geom.h"
#include "prox_boxes.h"

typedef struct query_args {
    const char *a, *b, *poses;
    const char *times; /* --times FILE, or NULL */
    int coherent, normalize, ist, stats, boxes, precise, fast;
    uint32_t order; /* prox_query_order */
    double budget_us, rel_err, max_distance;
    int spheres;
} query_args;

/* the options followed by a value */
static int takes_value(const char *s)
{
    static const char *const opts[] = {"--times", "--order", "--budget-us", "--rel-err", "--spheres", "--max-distance"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (!strcmp(s, opts[i]))
            return 1;
    return 0;
}

/* whether the command's usage line offers option s ("[--opt]" or
 * "[--opt VALUE"): each command takes exactly the options its usage line
 * lists, so one that would be ignored (--boxes to distance, --spheres to
 * collide) is refused instead */
static int offered(const char *usage, const char *s)
{
    size_t n = strlen(s);
    for (const char *u = strstr(usage, s); u; u = strstr(u + 1, s))
        if (u > usage && u[-1] == '[' && (u[n] == ']' || u[n] == ' '))
            return 1;
    return 0;
}

static int parse_args(int argc, char **argv, query_args *qa, const char *usage)
{
    memset(qa, 0, sizeof *qa);
    const char *pos[3];
    int np = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] == '-' && s[1] == '-' && s[2] && !offered(usage, s)) {
            /* a known option of another command, or none at all */
            if (offered(PROX_USAGE_DISTANCE, s) || offered(PROX_USAGE_COLLIDE, s) || offered(PROX_USAGE_PENVOL, s))
                fprintf(stderr, "prox %s: %s is not an option of %s\nusage: prox %s\n", argv[0], s, argv[0], usage);
            else
                fprintf(stderr, "prox %s: unknown option '%s'\nusage: prox %s\n", argv[0], s, usage);
            return -1;
        }
        if (!strcmp(s, "--coherent"))
            qa->coherent = 1;
        else if (!strcmp(s, "--normalize"))
            qa->normalize = 1;
        else if (!strcmp(s, "--ist"))
            qa->ist = 1;
        else if (!strcmp(s, "--stats"))
            qa->stats = 1;
        else if (!strcmp(s, "--boxes"))
            qa->boxes = 1;
        else if (!strcmp(s, "--precise"))
            qa->precise = 1;
        else if (!strcmp(s, "--fast"))
            qa->fast = 1;
        else if (takes_value(s) && i + 1 >= argc) {
            fprintf(stderr, "prox %s: %s needs %s\nusage: prox %s\n", argv[0], s,
                    !strcmp(s, "--times") ? "a file name" : !strcmp(s, "--order") ? "auto, best or depth" : "a value", usage);
            return -1;
        } else if (!strcmp(s, "--times"))
            qa->times = argv[++i];
        else if (!strcmp(s, "--order")) {
            const char *o = argv[++i];
            if (!strcmp(o, "auto"))
                qa->order = PROX_ORDER_AUTO;
            else if (!strcmp(o, "best"))
                qa->order = PROX_ORDER_BEST_FIRST;
            else if (!strcmp(o, "depth"))
                qa->order = PROX_ORDER_DEPTH_FIRST;
            else {
                fprintf(stderr, "prox %s: --order is auto, best or depth, got '%s'\n", argv[0], o);
                return -1;
            }
        } else if (takes_value(s)) { /* the numbers */
            char *end;
            errno = 0;
            double v = strtod(argv[++i], &end);
            if (*end || errno || !(v >= 0) || v > 1e12) {
                fprintf(stderr, "prox %s: %s needs a non-negative number, got '%s'\n", argv[0], s, argv[i]);
                return -1;
            }
            if (!strcmp(s, "--budget-us"))
                qa->budget_us = v;
            else if (!strcmp(s, "--max-distance"))
                qa->max_distance = v;
            else if (!strcmp(s, "--rel-err")) {
                if (!(v < 1)) {
                    fprintf(stderr, "prox %s: --rel-err is a fraction in [0, 1), got '%s'\n", argv[0], argv[i]);
                    return -1;
                }
                qa->rel_err = v;
            }
            else if (!strcmp(s, "--spheres")) {
                if (v > 1e8) {
                    fprintf(stderr, "prox %s: --spheres is at most 100000000, got '%s'\n", argv[0], argv[i]);
                    return -1;
                }
                qa->spheres = (int)v;
            } else {
                fprintf(stderr, "prox %s: %s is not handled\n", argv[0], s); /* a name in takes_value() missing here */
                return -1;
            }
        } else if (s[0] == '-' && s[1] == '-') {
            fprintf(stderr, "prox %s: unknown option '%s'\nusage: prox %s\n", argv[0], s, usage);
            return -1;
        } else if (np < 3)
            pos[np++] = s;
        else {
            fprintf(stderr, "prox %s: too many arguments\nusage: prox %s\n", argv[0], usage);
            return -1;
        }
    }
    if (qa->spheres && !qa->ist && !strcmp(argv[0], "distance")) {
        fprintf(stderr, "prox distance: --spheres sizes the inner sphere trees built from meshes: it needs --ist\nusage: prox %s\n",
                usage);
        return -1;
    }
    if (qa->precise && qa->fast) {
        fprintf(stderr, "prox distance: --precise and --fast exclude each other (precise is the default)\nusage: prox %s\n", usage);
        return -1;
    }
    if (np != 3) {
        fprintf(stderr, "usage: prox %s\n", usage);
        return -1;
    }
    qa->a = pos[0], qa->b = pos[1], qa->poses = pos[2];
    return 0;
}

/* Read every pose of the file; -1 with a message naming file and line. */
static int read_poses(const char *path, prox_xform **out, size_t *count)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        fprintf(stderr, "prox: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 256, n = 0;
    prox_xform *v = malloc(sizeof *v * cap);
    char line[4096];
    int lineno = 0, rc = 0, got;
    while (v && (got = prox_read_line(f, line, sizeof line)) != 0) {
        lineno++;
        if (got < 0) {
            char why[96];
            fprintf(stderr, "prox: %s:%d: %s\n", path, lineno, prox_read_line_why(got, sizeof line, why, sizeof why));
            rc = -1;
            break;
        }
        prox_xform x;
        int r = prox_parse_pose(line, &x);
        if (r < 0) {
            fprintf(stderr,
                    "prox: %s:%d: not a pose (want 'tx ty tz qw qx qy qz', finite numbers, a quaternion of norm above 1e-12;"
                    " unnormalised ones are normalised)\n",
                    path, lineno);
            rc = -1;
            break;
        }
        if (r == 0)
            continue;
        if (!prox_translation_ok(x.t)) {
            fprintf(stderr, "prox: %s:%d: a translation beyond %g (the queries' reach)\n", path, lineno, PROX_MAX_TRANSLATION);
            rc = -1;
            break;
        }
        if (n == cap) {
            prox_xform *nv = realloc(v, sizeof *v * (cap *= 2));
            if (!nv) {
                free(v);
                v = NULL;
                break;
            }
            v = nv;
        }
        v[n++] = x;
    }
    if (f != stdin)
        fclose(f);
    if (!v) {
        fprintf(stderr, "prox: %s: out of memory\n", path);
        return -1;
    }
    if (rc) {
        free(v);
        return -1;
    }
    *out = v;
    *count = n;
    return 0;
}

static void print_timing(double *us, size_t n)
{
    if (n == 0) {
        fprintf(stderr, "queries=0 median_us=0 p99_us=0 max_us=0\n");
        return;
    }
    qsort(us, n, sizeof *us, prox_cmp_double);
    size_t i99 = (size_t)(0.99 * (double)(n - 1) + 0.5);
    fprintf(stderr, "queries=%zu median_us=%.3f p99_us=%.3f max_us=%.3f\n", n, us[n / 2], us[i99], us[n - 1]);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int run_queries(int argc, char **argv, prox_query_kind kind, const char *usage)
{
    query_args qa;
    if (parse_args(argc, argv, &qa, usage))
        return 2;
    prox_xform *poses;
    size_t n;
    if (read_poses(qa.poses, &poses, &n))
        return 1;
    char err[512];
    cli_geom_opts go = {qa.normalize, qa.ist || kind == PROX_QUERY_PENVOL, qa.spheres, qa.boxes};
    cli_geom A, B;
    if (cli_geom_load(qa.a, &go, &A, err, sizeof err)) {
        fprintf(stderr, "prox: %s\n", err);
        free(poses);
        return 1;
    }
    /* (an inner sphere tree against a mesh BVH: its surface BVH; without
     * it the pair's answers are incomplete, lower bound 0) */
    if (cli_geom_load(qa.b, &go, &B, err, sizeof err) || prox_ist_prepare_pair(A.tree, B.tree, err, sizeof err)) {
        fprintf(stderr, "prox: %s\n", err);
        cli_geom_free(&A);
        if (B.tree)
            cli_geom_free(&B);
        free(poses);
        return 1;
    }
    if ((qa.precise || qa.fast) && (A.tree->type != PROX_TREE_IST || B.tree->type != PROX_TREE_IST)) {
        fprintf(stderr, "prox %s: %s needs inner sphere trees on both sides (--ist, or .ist files)\nusage: prox %s\n", argv[0],
                qa.fast ? "--fast" : "--precise", usage);
        cli_geom_free(&A);
        cli_geom_free(&B);
        free(poses);
        return 2;
    }
    prox_bank *bank = prox_bank_create();
    prox_bank_register_defaults(bank);
    prox_engine_def def = prox_engine_def_default();
    def.queue_capacity = 1u << 20;
    prox_engine *e = prox_engine_create(&def, bank);
    double *us = malloc(sizeof *us * (n ? n : 1));
    double *cpu_us = qa.times ? malloc(sizeof *cpu_us * (n ? n : 1)) : NULL;
    prox_cache cache;
    memset(&cache, 0, sizeof cache);
    prox_front_entry *front = NULL;
    int status = 0;
    if (!bank || !e || !us || (qa.times && !cpu_us))
        goto oom;
    /* --coherent distance and penvol: the cache also keeps the last front
     * (mesh distance starts from its traversal cut, inner-sphere penvol
     * replays its contact list); two halves of 256k pairs, a larger front
     * falls back to starting at the roots */
    if (qa.coherent && (kind == PROX_QUERY_DISTANCE || kind == PROX_QUERY_PENVOL)) {
        cache.front_capacity = 1u << 19;
        front = cache.front = calloc(cache.front_capacity, sizeof *front);
        if (!front)
            goto oom;
    }
    size_t answered = 0; /* queries whose answer was printed: the timing line counts them */
    uint64_t sum[4] = {0, 0, 0, 0}, mx[4] = {0, 0, 0, 0}, hits[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        prox_query q = prox_query_default(kind);
        q.rel_err = qa.rel_err;
        q.max_distance = qa.max_distance;
        q.use_cache = qa.coherent;
        q.order = qa.order;
        q.precise = !qa.fast;
        prox_object_pair p = {A.tree, B.tree, prox_xform_identity(), poses[i], qa.coherent ? &cache : NULL};
        prox_result r;
        uint64_t c0 = qa.times ? thread_cpu_ns() : 0;
        uint64_t t0 = prox_now_ns();
        if (qa.budget_us > 0) {
            q.deadline_ns = t0 + (uint64_t)(qa.budget_us * 1000.0);
            q.check_every = 1; /* as the service does: a clock read per expansion */
        }
        int rc = prox_query_run(e, &q, &p, 1, &r);
        uint64_t t1 = prox_now_ns();
        us[i] = (double)(t1 - t0) * 1e-3;
        if (qa.times)
            cpu_us[i] = (double)(thread_cpu_ns() - c0) * 1e-3;
        if (rc != 0 || (r.flags & PROX_RESULT_NO_HANDLER)) {
            fprintf(stderr, "prox: no %s query between these geometry types\n", argv[0]);
            status = 1;
            break;
        }
        printf("%.17g %.17g %.17g %d\n", r.value, r.lower, r.upper, r.complete);
        answered++;
        if (qa.boxes && (r.flags & PROX_RESULT_OVERLAP))
            hits[(r.leaf_a & PROX_BOXES_INNER) ? 0 : 1]++;
        const uint64_t cnt[4] = {r.expansions, r.node_tests, r.leaf_tests, r.queue_pushes};
        for (int k = 0; k < 4; k++) {
            sum[k] += cnt[k];
            mx[k] = cnt[k] > mx[k] ? cnt[k] : mx[k];
        }
    }
    if (qa.stats && !status && n > 0) {
        const char *name[4] = {"expansions", "node_tests", "leaf_tests", "queue_pushes"};
        for (int k = 0; k < 4; k++)
            fprintf(stderr, "%s%s=%.1f/%llu", k ? " " : "per query (mean/max): ", name[k], (double)sum[k] / (double)n,
                    (unsigned long long)mx[k]);
        if (qa.boxes)
            fprintf(stderr, "; collisions by inner boxes=%llu by leaf tests=%llu", (unsigned long long)hits[0],
                    (unsigned long long)hits[1]);
        fputc('\n', stderr);
    }
    if (qa.times && !status) {
        /* before print_timing, which sorts us */
        FILE *tf = fopen(qa.times, "w");
        if (!tf) {
            fprintf(stderr, "prox: %s: %s (per-query times not written)\n", qa.times, strerror(errno));
            status = 1;
        } else {
            for (size_t i = 0; i < n; i++)
                fprintf(tf, "%.3f %.3f\n", us[i], cpu_us[i]);
            if (fclose(tf)) {
                fprintf(stderr, "prox: %s: %s (per-query times not written)\n", qa.times, strerror(errno));
                status = 1;
            }
        }
    }
    /* (the queries answered: all of them where only the times file failed) */
    print_timing(us, answered);
done: /* (out of memory too: everything freed, as a library user's program would) */
    free(cpu_us);
    free(front);
    free(us);
    free(poses);
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
    cli_geom_free(&A);
    cli_geom_free(&B);
    return status;
oom:
    fprintf(stderr, "prox: out of memory\n");
    status = 1;
    goto done;
}

int prox_cli_distance(int argc, char **argv)
{
    return run_queries(argc, argv, PROX_QUERY_DISTANCE, PROX_USAGE_DISTANCE);
}

int prox_cli_penvol(int argc, char **argv)
{
    return run_queries(argc, argv, PROX_QUERY_PENVOL, PROX_USAGE_PENVOL);
}

int prox_cli_collide(int argc, char **argv)
{
    return run_queries(argc, argv, PROX_QUERY_COLLIDE, PROX_USAGE_COLLIDE);
}
