/* voxel.c - the dynamic hierarchical voxel map: per-level hash tables.
 *
 * Level 0 holds the leaf cells; level l holds the 2x2x2 blocks of level
 * l - 1 (coordinates >> l) with per-class leaf counts; the top level is a
 * single root block covering the whole map. Every level is allocated at
 * creation, so updates never allocate: a dense array over the level's
 * blocks when that is no larger than a hash table for the capacity, else an
 * open addressing table (linear probing, backward-shift deletion, load
 * factor at most 1/2).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voxel_internal.h"

static inline uint64_t vx_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

uint32_t vx_find_hash(const vx_level *L, uint64_t key)
{
    uint32_t i = (uint32_t)vx_hash(key) & L->mask;
    for (;;) {
        uint64_t k = L->e[i].key;
        if (k == key)
            return i;
        if (k == 0)
            return UINT32_MAX;
        i = (i + 1) & L->mask;
    }
}

static uint32_t vx_insert(vx_level *L, uint64_t key)
{
    if (L->dense) {
        uint64_t k = key - 1;
        uint32_t i = (uint32_t)(k & 0xffff) + L->bdims[0] * ((uint32_t)((k >> 16) & 0xffff) + L->bdims[1] * (uint32_t)((k >> 32) & 0xffff));
        L->e[i].key = key;
        L->e[i].cnt[0] = L->e[i].cnt[1] = 0;
        L->n++;
        return i;
    }
    uint32_t i = (uint32_t)vx_hash(key) & L->mask;
    while (L->e[i].key != 0)
        i = (i + 1) & L->mask;
    L->e[i].key = key;
    L->e[i].cnt[0] = L->e[i].cnt[1] = 0;
    L->n++;
    return i;
}

static void vx_remove(vx_level *L, uint32_t i)
{
    if (L->dense) {
        L->e[i].key = 0;
        L->n--;
        return;
    }
    /* backward-shift deletion keeps probe chains intact without tombstones */
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & L->mask;
        if (L->e[j].key == 0)
            break;
        uint32_t home = (uint32_t)vx_hash(L->e[j].key) & L->mask;
        /* move e[j] to i if its home is not in (i, j] cyclically */
        int between = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!between) {
            L->e[i] = L->e[j];
            i = j;
        }
    }
    L->e[i].key = 0;
    L->n--;
}

/* touch every page now, so that the first updates do not take page faults
 * on the real-time thread */
static void prefault(void *p, size_t bytes)
{
    volatile unsigned char *b = p;
    for (size_t i = 0; i < bytes; i += 4096)
        b[i] = 0;
}

static int alloc_level(vx_level *L, uint64_t blocks, uint64_t max_entries)
{
    uint64_t cap = 16;
    while (cap < 2 * max_entries)
        cap <<= 1;
    if (blocks <= cap && blocks < (1ull << 26)) {
        /* dense: direct indexing, never full */
        L->dense = 1;
        L->e = calloc(blocks, sizeof(vx_entry));
        L->cap = (uint32_t)blocks;
        L->max_n = UINT32_MAX; /* holds every block: never full */
        L->mask = 0;
        L->n = 0;
        if (!L->e)
            return -1;
        prefault(L->e, (size_t)blocks * sizeof(vx_entry));
        return 0;
    }
    if (cap > (1ull << 26))
        return -1;
    L->e = calloc(cap, sizeof(vx_entry));
    L->cap = (uint32_t)cap;
    L->mask = (uint32_t)cap - 1;
    L->max_n = (uint32_t)(cap / 2);
    L->n = 0;
    if (!L->e)
        return -1;
    prefault(L->e, (size_t)cap * sizeof(vx_entry));
    return 0;
}

prox_voxmap *prox_voxmap_create(const prox_voxmap_def *def, char *err, size_t errlen)
{
    prox_voxmap_def d = *def;
    if (!d.capacity)
        d.capacity = 1u << 18;
    if (!(d.cell > 0) || !isfinite(d.cell) || !prox_v3_isfinite(d.origin)) {
        snprintf(err, errlen, "voxel map: the cell size must be a positive number and the origin finite");
        return NULL;
    }
    for (int a = 0; a < 3; a++)
        if (d.dims[a] == 0 || d.dims[a] > 65536) {
            snprintf(err, errlen, "voxel map: dimensions must be 1..65536 cells per axis (got %u)", d.dims[a]);
            return NULL;
        }
    /* the far corner too: a cell and origin near the largest double put
     * voxels at infinity, where every test says they overlap */
    prox_vec3 far = prox_v3_add(d.origin, prox_v3(d.cell * d.dims[0], d.cell * d.dims[1], d.cell * d.dims[2]));
    if (!prox_v3_isfinite(far)) {
        snprintf(err, errlen, "voxel map: origin + cell x dims is not finite");
        return NULL;
    }
    prox_voxmap *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "voxel map: out of memory");
        return NULL;
    }
    m->def = d;
    uint32_t maxd = d.dims[0] > d.dims[1] ? d.dims[0] : d.dims[1];
    if (d.dims[2] > maxd)
        maxd = d.dims[2];
    int levels = 1;
    while ((1u << (levels - 1)) < maxd)
        levels++;
    m->levels = levels;
    for (int l = 0; l < levels; l++) {
        uint64_t blocks = 1;
        for (int a = 0; a < 3; a++) {
            m->lv[l].bdims[a] = (uint32_t)(((uint64_t)d.dims[a] + (1ull << l) - 1) >> l);
            blocks *= m->lv[l].bdims[a];
        }
        uint64_t maxe = blocks < d.capacity ? blocks : d.capacity;
        if (alloc_level(&m->lv[l], blocks, maxe) != 0) {
            snprintf(err, errlen, "voxel map: out of memory for a capacity of %u voxels", d.capacity);
            prox_voxmap_free(m);
            return NULL;
        }
    }
    m->tree.type = PROX_TREE_VOXEL;
    m->tree.impl = m;
    m->tree.root = VX_NONE;
    m->tree.com = prox_v3_add(d.origin, prox_v3(0.5 * d.cell * d.dims[0], 0.5 * d.cell * d.dims[1], 0.5 * d.cell * d.dims[2]));
    return m;
}

void prox_voxmap_free(prox_voxmap *m)
{
    if (!m)
        return;
    for (int l = 0; l < VX_MAX_LEVELS; l++)
        free(m->lv[l].e);
    free(m);
}

const prox_tree *prox_voxmap_tree(const prox_voxmap *m) { return &m->tree; }

static inline uint64_t vx_key(uint32_t x, uint32_t y, uint32_t z) { return ((uint64_t)x | (uint64_t)y << 16 | (uint64_t)z << 32) + 1; }

static void update_root(prox_voxmap *m)
{
    int top = m->levels - 1;
    uint32_t s = vx_find(&m->lv[top], vx_key(0, 0, 0));
    m->tree.root = s == UINT32_MAX ? VX_NONE : VX_ID(top, s);
}

int prox_voxmap_set(prox_voxmap *m, int32_t x, int32_t y, int32_t z, uint32_t cls)
{
    if (x < 0 || y < 0 || z < 0 || (uint32_t)x >= m->def.dims[0] || (uint32_t)y >= m->def.dims[1] ||
        (uint32_t)z >= m->def.dims[2])
        return PROX_VOXEL_OUT_OF_RANGE;
    if (cls >= PROX_VOXEL_CLASS_COUNT)
        return PROX_VOXEL_BAD_CLASS;
    vx_level *L0 = &m->lv[0];
    uint32_t s = vx_find(L0, vx_key((uint32_t)x, (uint32_t)y, (uint32_t)z));
    uint32_t old = PROX_VOXEL_FREE;
    if (s != UINT32_MAX)
        old = L0->e[s].cnt[0] ? PROX_VOXEL_OBSTACLE : PROX_VOXEL_UNKNOWN;
    if (old == cls)
        return PROX_VOXEL_OK;
    int tight = 0;
    for (int l = 0; l < m->levels; l++)
        tight |= m->lv[l].n >= m->lv[l].max_n;
    if (tight && cls != PROX_VOXEL_FREE && old == PROX_VOXEL_FREE) {
        /* room at every level that needs a new entry? check first, change after */
        for (int l = 0; l < m->levels; l++) {
            uint64_t k = vx_key((uint32_t)x >> l, (uint32_t)y >> l, (uint32_t)z >> l);
            if (vx_find(&m->lv[l], k) != UINT32_MAX)
                break;
            if (m->lv[l].n >= m->lv[l].max_n)
                return PROX_VOXEL_FULL;
        }
    }
    for (int l = 0; l < m->levels; l++) {
        vx_level *L = &m->lv[l];
        uint64_t k = vx_key((uint32_t)x >> l, (uint32_t)y >> l, (uint32_t)z >> l);
        uint32_t i = l == 0 ? s : vx_find(L, k);
        if (i == UINT32_MAX)
            i = vx_insert(L, k); /* only when adding: removal always finds its chain */
        /* counts in registers: a wide reload of two narrow stores would stall */
        uint32_t c0 = L->e[i].cnt[0] + (uint32_t)(cls == PROX_VOXEL_OBSTACLE) - (uint32_t)(old == PROX_VOXEL_OBSTACLE);
        uint32_t c1 = L->e[i].cnt[1] + (uint32_t)(cls == PROX_VOXEL_UNKNOWN) - (uint32_t)(old == PROX_VOXEL_UNKNOWN);
        L->e[i].cnt[0] = c0;
        L->e[i].cnt[1] = c1;
        if ((c0 | c1) == 0)
            vx_remove(L, i);
    }
    m->leaf_count[0] += (cls == PROX_VOXEL_OBSTACLE) - (old == PROX_VOXEL_OBSTACLE);
    m->leaf_count[1] += (cls == PROX_VOXEL_UNKNOWN) - (old == PROX_VOXEL_UNKNOWN);
    update_root(m);
    return PROX_VOXEL_OK;
}

/* bring the level-0 and level-1 entries of a cell towards the cache */
static inline void vx_prefetch(const prox_voxmap *m, const prox_voxel_record *r)
{
    for (int l = 0; l < 2 && l < m->levels; l++) {
        const vx_level *L = &m->lv[l];
        uint32_t x = (uint32_t)r->x >> l, y = (uint32_t)r->y >> l, z = (uint32_t)r->z >> l;
        if (x >= L->bdims[0] || y >= L->bdims[1] || z >= L->bdims[2])
            return;
        uint32_t i = L->dense ? x + L->bdims[0] * (y + L->bdims[1] * z) : (uint32_t)vx_hash(vx_key(x, y, z)) & L->mask;
        __builtin_prefetch(&L->e[i], 1);
    }
}

uint32_t prox_voxmap_apply(prox_voxmap *m, const prox_voxel_record *r, uint32_t count, int *status)
{
    uint32_t i = 0;
    int st = PROX_VOXEL_OK;
    for (; i < count; i++) {
        if (i + 24 < count)
            vx_prefetch(m, &r[i + 24]);
        st = prox_voxmap_set(m, r[i].x, r[i].y, r[i].z, r[i].cls);
        if (st != PROX_VOXEL_OK)
            break;
    }
    if (status)
        *status = st;
    return i;
}

uint32_t prox_voxmap_get(const prox_voxmap *m, int32_t x, int32_t y, int32_t z)
{
    if (x < 0 || y < 0 || z < 0 || (uint32_t)x >= m->def.dims[0] || (uint32_t)y >= m->def.dims[1] ||
        (uint32_t)z >= m->def.dims[2])
        return PROX_VOXEL_FREE;
    uint32_t s = vx_find(&m->lv[0], vx_key((uint32_t)x, (uint32_t)y, (uint32_t)z));
    if (s == UINT32_MAX)
        return PROX_VOXEL_FREE;
    return m->lv[0].e[s].cnt[0] ? PROX_VOXEL_OBSTACLE : PROX_VOXEL_UNKNOWN;
}

int prox_voxmap_leaf_cell(const prox_voxmap *m, uint32_t leaf, int32_t *x, int32_t *y, int32_t *z)
{
    if (VX_LEVEL(leaf) != 0 || VX_SLOT(leaf) >= m->lv[0].cap || !m->lv[0].e[VX_SLOT(leaf)].key)
        return -1;
    uint32_t c[3];
    vx_coords(m->lv[0].e[VX_SLOT(leaf)].key, c);
    *x = (int32_t)c[0], *y = (int32_t)c[1], *z = (int32_t)c[2];
    return 0;
}

uint32_t prox_voxmap_count(const prox_voxmap *m, uint32_t mask)
{
    return ((mask >> PROX_VOXEL_OBSTACLE) & 1 ? m->leaf_count[0] : 0) + ((mask >> PROX_VOXEL_UNKNOWN) & 1 ? m->leaf_count[1] : 0);
}

void prox_voxmap_def_get(const prox_voxmap *m, prox_voxmap_def *out) { *out = m->def; }
uint32_t prox_voxmap_levels(const prox_voxmap *m) { return (uint32_t)m->levels; }

size_t prox_voxmap_memory_bytes(const prox_voxmap *m)
{
    size_t s = sizeof *m;
    for (int l = 0; l < m->levels; l++)
        s += (size_t)m->lv[l].cap * sizeof(vx_entry);
    return s;
}

void prox_voxmap_foreach(const prox_voxmap *m, void (*fn)(int32_t, int32_t, int32_t, uint32_t, void *), void *u)
{
    const vx_level *L = &m->lv[0];
    for (uint32_t i = 0; i < L->cap; i++) {
        uint64_t k = L->e[i].key;
        if (!k)
            continue;
        k--;
        fn((int32_t)(k & 0xffff), (int32_t)((k >> 16) & 0xffff), (int32_t)((k >> 32) & 0xffff),
           L->e[i].cnt[0] ? PROX_VOXEL_OBSTACLE : PROX_VOXEL_UNKNOWN, u);
    }
}

int prox_voxmap_validate(const prox_voxmap *m, char *err, size_t errlen)
{
    /* recount every level from the leaves and compare */
    for (int l = 1; l < m->levels; l++) {
        const vx_level *P = &m->lv[l], *C = &m->lv[l - 1];
        uint64_t sum_children = 0;
        for (uint32_t i = 0; i < P->cap; i++) {
            uint64_t k = P->e[i].key;
            if (!k)
                continue;
            k--;
            uint32_t x = (uint32_t)(k & 0xffff), y = (uint32_t)((k >> 16) & 0xffff), z = (uint32_t)((k >> 32) & 0xffff);
            uint32_t c0 = 0, c1 = 0;
            for (int d = 0; d < 8; d++) {
                uint32_t s = vx_find(C, vx_key(2 * x + (d & 1), 2 * y + ((d >> 1) & 1), 2 * z + ((d >> 2) & 1)));
                if (s != UINT32_MAX) {
                    c0 += C->e[s].cnt[0];
                    c1 += C->e[s].cnt[1];
                    sum_children++;
                }
            }
            if (c0 != P->e[i].cnt[0] || c1 != P->e[i].cnt[1] || c0 + c1 == 0) {
                snprintf(err, errlen, "level %d voxel (%u %u %u): counts %u/%u, children hold %u/%u", l, x, y, z,
                         P->e[i].cnt[0], P->e[i].cnt[1], c0, c1);
                return -1;
            }
        }
        if (sum_children != C->n) {
            snprintf(err, errlen, "level %d: %u voxels but only %llu have a parent", l - 1, C->n, (unsigned long long)sum_children);
            return -1;
        }
    }
    return 0;
}

/* ---- files ---- */

/* the largest capacity a .vox file may ask for (see prox_voxmap_load) */
#define VX_FILE_MAX_CAPACITY (1 << 24)

int prox_voxmap_load(const char *path, prox_voxmap **out, char *err, size_t errlen)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[512];
    int lineno = 0, version = 0;
    prox_voxmap_def d;
    memset(&d, 0, sizeof d);
    int have = 0;
    prox_voxmap *m = NULL;
    uint32_t n = 0;
    int got;
    while ((got = prox_read_line(f, line, sizeof line)) != 0) {
        lineno++;
        if (got < 0) {
            char why[96];
            snprintf(err, errlen, "%s:%d: %s", path, lineno, prox_read_line_why(got, sizeof line, why, sizeof why));
            goto fail;
        }
        char *h = strchr(line, '#');
        if (h)
            *h = 0;
        char word[32];
        if (sscanf(line, "%31s", word) != 1)
            continue;
        if (!version) {
            if (strcmp(word, "hapticd-voxmap") || sscanf(line, "%*s %d", &version) != 1 || version != 1) {
                snprintf(err, errlen, "%s:%d: not a voxel map (want 'hapticd-voxmap 1' first)", path, lineno);
                goto fail;
            }
            continue;
        }
        char extra[2];
        int is_header = !strcmp(word, "cell") || !strcmp(word, "origin") || !strcmp(word, "dims") || !strcmp(word, "capacity");
        if (is_header && m) {
            snprintf(err, errlen, "%s:%d: header line '%s' after the voxels (the header comes first)", path, lineno, word);
            goto fail;
        }
        if (!strcmp(word, "cell")) {
            if (sscanf(line, "%*s %lf %1s", &d.cell, extra) != 1 || !(d.cell > 0))
                goto bad_header;
            have |= 1;
        } else if (!strcmp(word, "origin")) {
            if (sscanf(line, "%*s %lf %lf %lf %1s", &d.origin.x, &d.origin.y, &d.origin.z, extra) != 3)
                goto bad_header;
            have |= 2;
        } else if (!strcmp(word, "dims")) {
            long long v[3];
            if (sscanf(line, "%*s %lld %lld %lld %1s", &v[0], &v[1], &v[2], extra) != 3)
                goto bad_header;
            for (int a = 0; a < 3; a++) {
                if (v[a] < 1 || v[a] > 65536) {
                    snprintf(err, errlen, "%s:%d: dimensions must be 1..65536 cells per axis (got %lld)", path, lineno, v[a]);
                    goto fail;
                }
                d.dims[a] = (uint32_t)v[a];
            }
            have |= 4;
        } else if (!strcmp(word, "capacity")) {
            /* every level of the map is allocated (and touched) for the
             * capacity up front: a file may not ask for more than
             * VX_FILE_MAX_CAPACITY (a 100-byte file once made the loader
             * take 8.7 GB) */
            long long c;
            if (sscanf(line, "%*s %lld %1s", &c, extra) != 1)
                goto bad_header;
            if (c < 1 || c > VX_FILE_MAX_CAPACITY) {
                snprintf(err, errlen, "%s:%d: capacity must be 1..%d voxels (got %lld)", path, lineno, VX_FILE_MAX_CAPACITY, c);
                goto fail;
            }
            d.capacity = (uint32_t)c;
        } else {
            if (have != 7) {
                snprintf(err, errlen, "%s:%d: voxels before the header is complete (cell, origin, dims)", path, lineno);
                goto fail;
            }
            if (!m) {
                m = prox_voxmap_create(&d, err, errlen);
                if (!m)
                    goto create_failed;
            }
            long x, y, z, c;
            if (sscanf(line, "%ld %ld %ld %ld %1s", &x, &y, &z, &c, extra) != 4) {
                snprintf(err, errlen, "%s:%d: want 'x y z class'", path, lineno);
                goto fail;
            }
            if (c != PROX_VOXEL_OBSTACLE && c != PROX_VOXEL_UNKNOWN) {
                snprintf(err, errlen, "%s:%d: unknown class %ld (1 obstacle, 2 unknown)", path, lineno, c);
                goto fail;
            }
            if (x < INT32_MIN || x > INT32_MAX || y < INT32_MIN || y > INT32_MAX || z < INT32_MIN || z > INT32_MAX) {
                snprintf(err, errlen, "%s:%d: cell (%ld %ld %ld) out of range", path, lineno, x, y, z);
                goto fail;
            }
            int st = prox_voxmap_set(m, (int32_t)x, (int32_t)y, (int32_t)z, (uint32_t)c);
            if (st == PROX_VOXEL_OUT_OF_RANGE) {
                snprintf(err, errlen, "%s:%d: cell (%ld %ld %ld) outside the map's %u x %u x %u cells", path, lineno, x, y, z,
                         d.dims[0], d.dims[1], d.dims[2]);
                goto fail;
            }
            if (st == PROX_VOXEL_FULL) {
                snprintf(err, errlen, "%s:%d: the map is full after %u voxel lines (its capacity %u is what it holds at least; raise it)",
                         path, lineno, n, m->def.capacity);
                goto fail;
            }
            n++;
        }
    }
    if (!version) {
        snprintf(err, errlen, "%s: empty file, not a voxel map", path);
        goto fail;
    }
    if (have != 7) {
        snprintf(err, errlen, "%s: truncated voxel map (header needs cell, origin and dims)", path);
        goto fail;
    }
    if (!m && !(m = prox_voxmap_create(&d, err, errlen)))
        goto create_failed;
    fclose(f);
    *out = m;
    return 0;
create_failed: {
    char why[256];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
    goto fail;
}
bad_header:
    snprintf(err, errlen, "%s:%d: malformed header line (want 'cell S', 'origin X Y Z', 'dims NX NY NZ', 'capacity N')", path,
             lineno);
fail:
    fclose(f);
    prox_voxmap_free(m);
    return -1;
}

static void save_one(int32_t x, int32_t y, int32_t z, uint32_t c, void *u) { fprintf(u, "%d %d %d %u\n", x, y, z, c); }

int prox_voxmap_save(const prox_voxmap *m, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f, "hapticd-voxmap 1\ncell %.17g\norigin %.17g %.17g %.17g\ndims %u %u %u\ncapacity %u\n", m->def.cell,
            m->def.origin.x, m->def.origin.y, m->def.origin.z, m->def.dims[0], m->def.dims[1], m->def.dims[2], m->def.capacity);
    prox_voxmap_foreach(m, save_one, f);
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: write failed", path);
        return -1;
    }
    return 0;
}
