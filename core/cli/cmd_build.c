/* cmd_build.c - prox build MESH -o OUT.ist: build and save an inner sphere tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "geom.h"
#include "prox_ist.h"

/* surface gap (in voxel sizes) above which prox build warns of thin parts */
#define PROX_CLI_THIN_GAP_VOXELS 8.0

static const char usage[] = "usage: prox " PROX_USAGE_BUILD "\n";

int prox_cli_build(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    prox_ist_def d = prox_ist_def_default();
    int normalize = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if ((!strcmp(argv[i], "--spheres") || !strcmp(argv[i], "--voxels")) && i + 1 < argc) {
            char *end;
            long v = strtol(argv[i + 1], &end, 10);
            if (*end || v <= 0 || v > 100000000) {
                fprintf(stderr, "prox build: %s needs a positive integer, got '%s'\n", argv[i], argv[i + 1]);
                return 2;
            }
            if (!strcmp(argv[i], "--spheres"))
                d.target_spheres = (uint32_t)v;
            else
                d.voxels = (uint32_t)v;
            i++;
        } else if (!strcmp(argv[i], "--min-radius") && i + 1 < argc) {
            char *end;
            d.min_radius = strtod(argv[i + 1], &end);
            if (*end || !(d.min_radius >= 0.1 && d.min_radius <= 4)) {
                fprintf(stderr, "prox build: --min-radius needs a number of voxel sizes in [0.1, 4], got '%s'\n", argv[i + 1]);
                return 2;
            }
            i++;
        } else if (!strcmp(argv[i], "--thin-gap") && i + 1 < argc) {
            char *end;
            d.thin_gap = strtod(argv[i + 1], &end);
            if (*end || !(d.thin_gap == -1 || (d.thin_gap >= 1 && d.thin_gap <= 64))) {
                fprintf(stderr, "prox build: --thin-gap needs a number of voxel sizes in [1, 64], or -1 for none, got '%s'\n",
                        argv[i + 1]);
                return 2;
            }
            i++;
        } else if (!strcmp(argv[i], "--normalize"))
            normalize = 1;
        else if (!in && argv[i][0] != '-')
            in = argv[i];
        else {
            static const char *const valued[] = {"-o", "--spheres", "--voxels", "--min-radius", "--thin-gap", NULL};
            cli_refuse_arg("build", argv[i], valued, in, "one mesh at a time");
            fputs(usage, stderr);
            return 2;
        }
    }
    if (!in || !out) {
        fputs(!in ? "prox build: no mesh given\n" : "prox build: no output file given (-o OUT.ist)\n", stderr);
        fputs(usage, stderr);
        return 2;
    }
    char err[512];
    prox_mesh *m;
    if (prox_mesh_load_apart(&cli_loader, in, &m, err, sizeof err)) {
        fprintf(stderr, "prox: %s\n", err);
        return 1;
    }
    if (normalize)
        cli_normalize_mesh(m);
    prox_ist *t;
    if (prox_ist_build(m, &d, &t, err, sizeof err)) {
        fprintf(stderr, "prox: %s: %s\n", in, err);
        prox_mesh_free(m);
        return 1;
    }
    if (prox_ist_save(t, out, err, sizeof err)) {
        fprintf(stderr, "prox: %s\n", err);
        prox_ist_free(t);
        prox_mesh_free(m);
        return 1;
    }
    prox_ist_stats st;
    prox_ist_get_stats(t, &st);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("mesh: %s (%u triangles, volume %.6g)\n", in, m->triangle_count, m->volume);
    printf("spheres: %u (%u of them in thin parts)\n", st.spheres, st.thin_spheres);
    printf("nodes: %u\n", st.nodes);
    printf("voxel_size: %.6g (%u voxels inside)\n", st.voxel_size, st.voxels_inside);
    printf("covered_volume_fraction: %.4f (inner spheres / mesh volume)\n", st.inner_volume / st.mesh_volume);
    printf("voxel_volume_fraction: %.4f (voxel volume assigned to spheres / mesh volume)\n", st.voxel_volume / st.mesh_volume);
    printf("secondary_volume_fraction: %.4f (secondary spheres / mesh volume; radii scaled from the voxels' by %.4f)\n",
           st.secondary_volume / st.mesh_volume, cbrt(st.mesh_volume / st.voxel_volume));
    printf("surface_gap: %.6g (%.2f voxel sizes: no surface point farther from every inner sphere)\n", st.surface_gap,
           st.voxel_size > 0 ? st.surface_gap / st.voxel_size : 0.0);
    /* The libcgal-demo meshes come to 2.4-4.3 voxel sizes at the default
     * resolution. Parts thinner than about two voxels get no inner spheres
     * from the packing; the thin-part pass gives them some (at most
     * --spheres more: eight 0.012-thick fins at 2,000 spheres 33.5 -> 5.2),
     * and where it could not, the distance query tests far more leaf pairs
     * near them (README, known limitations). */
    if (st.voxel_size > 0 && st.surface_gap > PROX_CLI_THIN_GAP_VOXELS * st.voxel_size)
        fprintf(stderr,
                "prox build: warning: parts of the surface lie up to %.1f voxel sizes from every inner sphere (thin parts "
                "the thin-part pass did not fill: it adds at most --spheres spheres, none with --thin-gap -1); distance "
                "queries near them are slow: a finer grid (--voxels N, --spheres N) helps\n",
                st.surface_gap / st.voxel_size);
    printf("build_seconds: %.3f\n", st.build_seconds);
    printf("tree_bytes: %zu\n", st.memory_bytes);
    printf("peak_rss_bytes: %ld\n", ru.ru_maxrss * 1024L);
    printf("written: %s\n", out);
    prox_ist_free(t);
    prox_mesh_free(m);
    return 0;
}
