/* check_telemetry.h - reading hapticd's telemetry lines (the --record and
 * sim record format: seq time_s tx ty tz qw qx qy qz fx fy fz mx my mz
 * distance_m penvol_m3 query_us flags; '#' lines are comments), for the
 * tests that run the loop (test_sim, test_rt_main). */
#ifndef CHECK_TELEMETRY_H
#define CHECK_TELEMETRY_H

#include <stdio.h>
#include <string.h>

typedef struct tel_row {
    double seq, t, p[3], q[4], f[3], m[3], distance, penvol, query_us;
    unsigned flags;
} tel_row;

/* one line's 19 fields; 0, or -1 when it does not read */
static inline int tel_parse(const char *line, tel_row *r)
{
    return sscanf(line, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %u", &r->seq, &r->t, &r->p[0],
                  &r->p[1], &r->p[2], &r->q[0], &r->q[1], &r->q[2], &r->q[3], &r->f[0], &r->f[1], &r->f[2], &r->m[0], &r->m[1],
                  &r->m[2], &r->distance, &r->penvol, &r->query_us, &r->flags) == 19
               ? 0
               : -1;
}

/* Each row of the file at path (at most max), fn called with the row and
 * its line; -1 when the file cannot be read or a line that is not a
 * comment does not read (a record is never partly wrong), else the rows. */
static inline int tel_read(const char *path, int max, void (*fn)(const tel_row *r, const char *line, int i, void *u), void *u)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        tel_row r;
        if (tel_parse(line, &r) != 0)
            bad = 1;
        else if (n < max)
            fn(&r, line, n++, u);
    }
    fclose(f);
    return bad ? -1 : n;
}

#endif
