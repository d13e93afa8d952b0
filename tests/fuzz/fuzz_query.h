/* fuzz_query.h - what the file-reading fuzz targets share: the input
 * written to a file of their own, and queries on what they loaded. */
#ifndef FUZZ_QUERY_H
#define FUZZ_QUERY_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prox.h"

static char fuzz_file_path[64];

static void fuzz_file_remove(void)
{
    if (fuzz_file_path[0])
        unlink(fuzz_file_path);
}

/* data written to /tmp/hapticd-fuzz-PID.EXT (one file a process, reused;
 * the previous one removed when EXT changes, the last at exit); its path,
 * or NULL where it cannot be written */
static inline const char *fuzz_file(const char *ext, const void *data, size_t size)
{
    static int registered;
    char *path = fuzz_file_path;
    if (!registered)
        registered = atexit(fuzz_file_remove) == 0;
    char next[sizeof fuzz_file_path];
    snprintf(next, sizeof next, "/tmp/hapticd-fuzz-%d.%s", (int)getpid(), ext);
    if (path[0] && strcmp(path, next) != 0)
        unlink(path);
    memcpy(path, next, sizeof next);
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    const int ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok ? path : NULL;
}

/* each kind in kinds[] once on the pair (a, b), B moved by 0.3 along x:
 * only that they return matters, a fault is what the fuzzer looks for */
static inline void fuzz_queries(const prox_tree *a, const prox_tree *b, const prox_query_kind *kinds, int n)
{
    prox_bank *bank = prox_bank_create();
    if (bank)
        prox_bank_register_defaults(bank);
    prox_engine_def def = prox_engine_def_default();
    prox_engine *e = bank ? prox_engine_create(&def, bank) : NULL;
    prox_object_pair p = {a, b, prox_xform_identity(), prox_xform_identity(), NULL};
    p.pose_b.t.x = 0.3;
    for (int k = 0; e && a && b && k < n; k++) {
        prox_query q = prox_query_default(kinds[k]);
        prox_result r;
        prox_query_run(e, &q, &p, 1, &r);
    }
    prox_engine_destroy(e);
    prox_bank_destroy(bank);
}

#endif
