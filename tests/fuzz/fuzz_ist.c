/* fuzz_ist.c - libFuzzer target (make fuzz): an .ist file as input. The
 * checksum is fixed up first, so that mutations reach the loader's checks
 * behind it (a file damaged after its checksum was written, or written by
 * another program); a tree that loads must then take distance, penetration
 * volume and collision queries against itself without a fault. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_query.h"
#include "prox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *b = malloc(size ? size : 1);
    if (!b)
        return 0;
    memcpy(b, data, size);
    if (size >= 12) { /* the CRC-32 of the bytes between the magic and the checksum */
        uint32_t c = (uint32_t)crc32(0L, b + 8, (uInt)(size - 12));
        memcpy(b + size - 4, &c, 4);
    }
    const char *path = fuzz_file("ist", b, size);
    free(b);
    prox_ist *t;
    char err[512];
    if (!path || prox_ist_load(path, &t, err, sizeof err) != 0)
        return 0;
    const prox_query_kind kinds[] = {PROX_QUERY_DISTANCE, PROX_QUERY_PENVOL, PROX_QUERY_COLLIDE};
    fuzz_queries(prox_ist_tree(t), prox_ist_tree(t), kinds, 3);
    prox_ist_free(t);
    return 0;
}
