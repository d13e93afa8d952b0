/* ply_types.h - PLY's scalar property types, for the two readers that look
 * at PLY headers themselves (mesh_load.c checks a mesh header's counts
 * before assimp reads the file; voxel_io.c reads point clouds). Internal. */
#ifndef PROX_PLY_TYPES_H
#define PROX_PLY_TYPES_H

#include <stddef.h>
#include <string.h>

enum { PLY_SIGNED = 0, PLY_UNSIGNED = 1, PLY_FLOAT = 2 };

/* The PLY scalar type named by the len characters at t: 0 with its size in
 * bytes and kind (PLY_SIGNED, PLY_UNSIGNED, PLY_FLOAT), or -1 if unknown. */
static inline int ply_scalar_type(const char *t, size_t len, int *size, int *kind)
{
    static const struct {
        const char *n;
        int size, kind;
    } T[] = {{"char", 1, PLY_SIGNED},    {"int8", 1, PLY_SIGNED},    {"uchar", 1, PLY_UNSIGNED},  {"uint8", 1, PLY_UNSIGNED},
             {"short", 2, PLY_SIGNED},   {"int16", 2, PLY_SIGNED},   {"ushort", 2, PLY_UNSIGNED}, {"uint16", 2, PLY_UNSIGNED},
             {"int", 4, PLY_SIGNED},     {"int32", 4, PLY_SIGNED},   {"uint", 4, PLY_UNSIGNED},   {"uint32", 4, PLY_UNSIGNED},
             {"float", 4, PLY_FLOAT},    {"float32", 4, PLY_FLOAT},  {"double", 8, PLY_FLOAT},    {"float64", 8, PLY_FLOAT}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (strlen(T[i].n) == len && memcmp(T[i].n, t, len) == 0) {
            *size = T[i].size, *kind = T[i].kind;
            return 0;
        }
    return -1;
}

#endif
