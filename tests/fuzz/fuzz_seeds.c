/* fuzz_seeds.c - make fuzz: fuzz_seeds DIR writes the fuzz targets' first
 * inputs into DIR/ist, DIR/vox, DIR/osc and DIR/mesh (the scenarios' come from
 * sim/scenarios): a small inner sphere tree, a voxel map with a few cells,
 * one OSC message per address hapticd answers plus a bundle, and a box
 * and a ball as OFF meshes. */
#include <errno.h>
#include <lo/lo.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "prox.h"

static int write_file(const char *dir, const char *name, const void *data, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size) {
        fprintf(stderr, "fuzz_seeds: cannot write %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f) ? -1 : 0;
}

static int osc_seed(const char *dir, int k, const char *path, lo_message m)
{
    unsigned char buf[2048];
    size_t size = sizeof buf;
    char name[32];
    snprintf(name, sizeof name, "m%02d", k);
    int rc = lo_message_serialise(m, path, buf, &size) ? write_file(dir, name, buf, size) : -1;
    lo_message_free(m);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    char d[4][512], err[512];
    const char *sub[4] = {"ist", "vox", "osc", "mesh"};
    if (mkdir(argv[1], 0755) && errno != EEXIST)
        return 1;
    for (int i = 0; i < 4; i++) {
        snprintf(d[i], sizeof d[i], "%s/%s", argv[1], sub[i]);
        if (mkdir(d[i], 0755) && errno != EEXIST) {
            fprintf(stderr, "fuzz_seeds: %s: %s\n", d[i], strerror(errno));
            return 1;
        }
    }
    /* a ball of 80 triangles, 24 inner spheres */
    prox_mesh *m = prox_mesh_make_sphere(0.05, 1);
    prox_ist_def def = prox_ist_def_default();
    def.target_spheres = 24;
    prox_ist *t;
    char path[600];
    snprintf(path, sizeof path, "%s/ball.ist", d[0]);
    if (!m || prox_ist_build(m, &def, &t, err, sizeof err) || prox_ist_save(t, path, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_ist_free(t);
    snprintf(path, sizeof path, "%s/ball.off", d[3]);
    if (prox_mesh_write_off(m, path, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_mesh_free(m);
    m = prox_mesh_make_box(prox_v3(0.1, 0.2, 0.05));
    snprintf(path, sizeof path, "%s/box.off", d[3]);
    if (!m || prox_mesh_write_off(m, path, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_mesh_free(m);
    prox_voxmap_def vd = {0.01, prox_v3(0, 0, 0), {8, 8, 8}, 256};
    prox_voxmap *vm = prox_voxmap_create(&vd, err, sizeof err);
    snprintf(path, sizeof path, "%s/map.vox", d[1]);
    for (int i = 0; vm && i < 6; i++)
        prox_voxmap_set(vm, i, i % 3, 2, 1 + i % 2);
    if (!vm || prox_voxmap_save(vm, path, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_voxmap_free(vm);
    int k = 0, bad = 0;
    bad |= osc_seed(d[2], k++, "/version", lo_message_new());
    bad |= osc_seed(d[2], k++, "/status", lo_message_new());
    lo_message p = lo_message_new();
    lo_message_add_string(p, "ball");
    for (int i = 0; i < 7; i++)
        lo_message_add_float(p, i == 3 ? 1.0f : 0.0f);
    bad |= osc_seed(d[2], k++, "/pose", p);
    lo_message tool = lo_message_new();
    lo_message_add_string(tool, "ball");
    bad |= osc_seed(d[2], k++, "/tool", tool);
    lo_message bud = lo_message_new();
    lo_message_add_double(bud, 200.0);
    bad |= osc_seed(d[2], k++, "/budget", bud);
    lo_message gains = lo_message_new();
    const float gv[7] = {2e6f, 0.005f, 400, 2, 800, 4, 1};
    for (int i = 0; i < 7; i++)
        lo_message_add_float(gains, gv[i]);
    bad |= osc_seed(d[2], k++, "/gains", gains);
    lo_message lim = lo_message_new();
    const float lv[6] = {8, 1, 0.5f, 0.5f, 50, 20};
    for (int i = 0; i < 6; i++)
        lo_message_add_float(lim, lv[i]);
    bad |= osc_seed(d[2], k++, "/limits", lim);
    lo_message fo = lo_message_new();
    lo_message_add_int32(fo, 1);
    bad |= osc_seed(d[2], k++, "/forces", fo);
    lo_message vs = lo_message_new();
    lo_message_add_string(vs, "map");
    for (int i = 0; i < 4; i++)
        lo_message_add_int32(vs, i == 3 ? 1 : i);
    bad |= osc_seed(d[2], k++, "/voxel/set", vs);
    int32_t rec[8] = {1, 2, 3, 1, 4, 5, 6, 2};
    lo_blob blob = lo_blob_new(sizeof rec, rec);
    lo_message vb = lo_message_new();
    lo_message_add_string(vb, "map");
    lo_message_add_blob(vb, blob);
    bad |= osc_seed(d[2], k++, "/voxel/batch", vb);
    lo_blob_free(blob);
    lo_message rm = lo_message_new();
    lo_message_add_string(rm, "ball");
    bad |= osc_seed(d[2], k++, "/remove", rm);
    lo_message ts = lo_message_new();
    lo_message_add_int32(ts, 10);
    bad |= osc_seed(d[2], k++, "/telemetry/subscribe", ts);
    lo_message dp = lo_message_new();
    for (int i = 0; i < 7; i++)
        lo_message_add_float(dp, i == 3 ? 1.0f : 0.0f);
    bad |= osc_seed(d[2], k++, "/device/pose", dp);
    /* a bundle: a budget and a pose, tagged "immediately" */
    lo_timetag now = {0, 1};
    lo_bundle b = lo_bundle_new(now);
    lo_message b1 = lo_message_new(), b2 = lo_message_new();
    lo_message_add_float(b1, 150.0f);
    lo_message_add_string(b2, "ball");
    for (int i = 0; i < 7; i++)
        lo_message_add_float(b2, i == 3 ? 1.0f : 0.0f);
    lo_bundle_add_message(b, "/budget", b1);
    lo_bundle_add_message(b, "/pose", b2);
    unsigned char buf[2048];
    size_t size = sizeof buf;
    bad |= lo_bundle_serialise(b, buf, &size) ? write_file(d[2], "bundle", buf, size) : -1;
    lo_bundle_free_recursive(b);
    return bad ? 1 : 0;
}
