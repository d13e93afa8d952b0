/* voxel_internal.h - voxel map layout, for handlers in libprox.
 *
 * Node ids for the engine: VX_ID(level, slot), the slot in that level's
 * hash table (stable while no update runs, i.e. during a query). A node at
 * level l with block coordinates (x, y, z) covers cells [x << l, (x+1) << l)
 * per axis; its box in the map frame starts at origin + (x << l) * cell.
 */
#ifndef PROX_VOXEL_INTERNAL_H
#define PROX_VOXEL_INTERNAL_H

#include "prox_voxel.h"

#define VX_MAX_LEVELS 18
#define VX_NONE 0xffffffffu
#define VX_ID(l, s) (((uint32_t)(l) << 26) | (uint32_t)(s))
#define VX_LEVEL(id) ((int)((id) >> 26))
#define VX_SLOT(id) ((id) & ((1u << 26) - 1))

typedef struct vx_entry {
    uint64_t key;    /* (x | y << 16 | z << 32) + 1; 0 = empty slot */
    uint32_t cnt[2]; /* leaves below: OBSTACLE, UNKNOWN (a leaf: exactly one is 1) */
} vx_entry;

/* A level is dense (an array over all its blocks, slot = x + nx (y + ny z))
 * when that is no larger than the hash table its capacity would need;
 * otherwise an open addressing hash table (linear probing). */
typedef struct vx_level {
    vx_entry *e;
    uint32_t cap, mask, n, max_n;
    int dense;
    uint32_t bdims[3]; /* blocks per axis at this level */
} vx_level;

struct prox_voxmap {
    prox_tree tree;
    prox_voxmap_def def;
    int levels;
    vx_level lv[VX_MAX_LEVELS];
    uint32_t leaf_count[2];
};

uint32_t vx_find_hash(const vx_level *L, uint64_t key);

/* slot of key at level L, or UINT32_MAX when absent */
static inline uint32_t vx_find(const vx_level *L, uint64_t key)
{
    if (L->dense) {
        uint64_t k = key - 1;
        uint32_t x = (uint32_t)(k & 0xffff), y = (uint32_t)((k >> 16) & 0xffff), z = (uint32_t)((k >> 32) & 0xffff);
        if (x >= L->bdims[0] || y >= L->bdims[1] || z >= L->bdims[2])
            return UINT32_MAX; /* e.g. the missing half of an odd-sized block */
        uint32_t i = x + L->bdims[0] * (y + L->bdims[1] * z);
        return L->e[i].key == key ? i : UINT32_MAX;
    }
    return vx_find_hash(L, key);
}

static inline void vx_coords(uint64_t key, uint32_t c[3])
{
    key--;
    c[0] = (uint32_t)(key & 0xffff), c[1] = (uint32_t)((key >> 16) & 0xffff), c[2] = (uint32_t)((key >> 32) & 0xffff);
}

/* leaves of the query's classes below a node entry */
static inline uint32_t vx_count_mask(const vx_entry *e, uint32_t mask)
{
    return ((mask >> PROX_VOXEL_OBSTACLE) & 1 ? e->cnt[0] : 0) + ((mask >> PROX_VOXEL_UNKNOWN) & 1 ? e->cnt[1] : 0);
}

#endif
