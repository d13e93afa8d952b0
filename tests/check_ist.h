/* check_ist.h - for the tests of inner sphere trees (test_ist,
 * test_ist_build): a build with the settings they vary, and saved trees
 * patched byte by byte to check what loading refuses (where a .ist file's
 * fields lie, and its checksum redone after a patch). Include after
 * check.h and prox_ist.h. */
#ifndef CHECK_IST_H
#define CHECK_IST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <zlib.h>

/* m's tree (NULL if the build failed, a failed check) with these fields of
 * prox_ist_def (0: the default; thin_gap below 0: no thin-part pass) and
 * no progress output */
static inline prox_ist *check_ist_build(const prox_mesh *m, uint32_t spheres, uint32_t voxels, double min_radius, double thin_gap)
{
    prox_ist_def d = prox_ist_def_default();
    d.target_spheres = spheres;
    d.voxels = voxels;
    d.min_radius = min_radius;
    d.thin_gap = thin_gap;
    d.progress = 0;
    prox_ist *t = NULL;
    char err[256];
    int rc = prox_ist_build(m, &d, &t, err, sizeof err);
    CHECK(rc == 0, "build: %s", err);
    return t;
}

/* Byte offsets in a .ist file (the layout core/ist_io.c describes): the
 * 8-byte magic; 8 uint32 (version, endian tag, node count, sphere count,
 * vertex count, triangle count, root id, root leaf count); 4 floats of the
 * root sphere; 9 doubles (root volume, mesh volume, voxel size, voxel
 * volume, surface gap, build seconds, centre of mass); a uint32; then the
 * node records. */
#define IST_FILE_U32_AT(i) ((size_t)(8 + 4 * (i)))
#define IST_FILE_ROOT_R_AT ((size_t)(8 + 8 * 4 + 12))
#define IST_FILE_DOUBLE_AT(i) ((size_t)(8 + 8 * 4 + 16 + 8 * (i)))
#define IST_FILE_NODES_AT ((size_t)(8 + 8 * 4 + 16 + 9 * 8 + 4))

/* the checksum of the .ist image b of n bytes set: its last 4 bytes, the
 * CRC-32 of all but the magic and themselves */
static inline void check_ist_set_crc(unsigned char *b, size_t n)
{
    uint32_t crc = (uint32_t)crc32(0L, b + 8, (uInt)(n - 12));
    memcpy(b + n - 4, &crc, 4);
}

/* the .ist image b of n bytes with its checksum set, written to path; 1
 * when all of it was written and the file closed */
static inline int check_ist_write(const char *path, unsigned char *b, size_t n)
{
    check_ist_set_crc(b, n);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(b, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok;
}

#endif
