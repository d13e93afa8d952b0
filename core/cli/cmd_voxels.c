/* cmd_voxels.c - prox voxels CLOUD -o MAP.vox --cell S [--class obstacle|unknown]:
 * quantise a point cloud into a voxel map file and print its statistics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "prox_voxel.h"

#define VOXELS_USAGE "usage: prox " PROX_USAGE_VOXELS "\n"

int prox_cli_voxels(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    double cell = 0;
    uint32_t cls = PROX_VOXEL_OBSTACLE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--cell") && i + 1 < argc) {
            char *end;
            cell = strtod(argv[++i], &end);
            if (*end || !(cell > 0) || !isfinite(cell)) {
                fprintf(stderr, "prox voxels: --cell needs a positive number (metres), got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--class") && i + 1 < argc) {
            i++;
            if (!strcmp(argv[i], "obstacle"))
                cls = PROX_VOXEL_OBSTACLE;
            else if (!strcmp(argv[i], "unknown"))
                cls = PROX_VOXEL_UNKNOWN;
            else {
                fprintf(stderr, "prox voxels: --class is obstacle or unknown, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!in && argv[i][0] != '-')
            in = argv[i];
        else {
            static const char *const valued[] = {"-o", "--cell", "--class", NULL};
            cli_refuse_arg("voxels", argv[i], valued, in, "a second input");
            fprintf(stderr, VOXELS_USAGE);
            return 2;
        }
    }
    if (!in || !out || cell <= 0) {
        fputs(!in ? "prox voxels: no cloud given\n"
                  : !out ? "prox voxels: no output file given (-o MAP.vox)\n" : "prox voxels: no cell size given (--cell S)\n",
              stderr);
        fprintf(stderr, VOXELS_USAGE);
        return 2;
    }
    char err[512];
    uint64_t t0 = prox_now_ns();
    prox_voxmap *m;
    if (prox_voxmap_from_cloud(in, cell, cls, &m, err, sizeof err) != 0) {
        fprintf(stderr, "prox: %s\n", err);
        return 1;
    }
    uint64_t t1 = prox_now_ns();
    if (prox_voxmap_save(m, out, err, sizeof err) != 0) {
        fprintf(stderr, "prox: %s\n", err);
        prox_voxmap_free(m);
        return 1;
    }
    prox_voxmap_def d;
    prox_voxmap_def_get(m, &d);
    uint32_t n = prox_voxmap_count(m, PROX_CLASS_ALL);
    double total = (double)d.dims[0] * d.dims[1] * d.dims[2];
    printf("cloud: %s\n", in);
    printf("cell: %.6g\n", d.cell);
    printf("origin: %.6g %.6g %.6g\n", d.origin.x, d.origin.y, d.origin.z);
    printf("dims: %u %u %u\n", d.dims[0], d.dims[1], d.dims[2]);
    printf("voxels: %u (%s), %.3f%% of the grid\n", n, cls == PROX_VOXEL_OBSTACLE ? "obstacle" : "unknown", 100.0 * n / total);
    printf("levels: %u\n", prox_voxmap_levels(m));
    printf("memory_bytes: %zu\n", prox_voxmap_memory_bytes(m));
    printf("convert_seconds: %.4f\n", 1e-9 * (double)(t1 - t0));
    printf("written: %s\n", out);
    prox_voxmap_free(m);
    return 0;
}
