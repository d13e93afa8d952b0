/* off_keyword.h - OFF's keyword, [ST][C][N][4][n]OFF as assimp reads it,
 * for the two readers that look at OFF headers themselves (mesh_load.c
 * checks a mesh header's counts before assimp reads the file; voxel_io.c
 * reads point clouds). Internal. */
#ifndef PROX_OFF_KEYWORD_H
#define PROX_OFF_KEYWORD_H

#include <string.h>

/* The keyword at p (before end): the end of it, or NULL. *hom says it has
 * the 4 (homogeneous vertices, x y z w), *dim the n (a dimension follows);
 * both are set either way. */
static inline const char *off_keyword_at(const char *p, const char *end, int *hom, int *dim)
{
    if (end - p >= 2 && p[0] == 'S' && p[1] == 'T')
        p += 2;
    if (p < end && *p == 'C')
        p++;
    if (p < end && *p == 'N')
        p++;
    *hom = p < end && *p == '4';
    p += *hom;
    *dim = p < end && *p == 'n';
    p += *dim;
    return end - p >= 3 && memcmp(p, "OFF", 3) == 0 ? p + 3 : NULL;
}

#endif
