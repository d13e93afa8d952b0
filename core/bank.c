/* bank.c - the bank of handlers, by (type A, type B, query kind).
 * Handlers are copied in; replacing one at run time changes which code
 * answers the next query (Himmelstein et al.'s point: choose tests without
 * recompiling). Not RT: do not change a bank while a query runs on it. */
#include <stdlib.h>

#include "handlers.h"
#include "prox_engine.h"

struct prox_bank {
    prox_handler h[PROX_TREE_TYPE_COUNT][PROX_TREE_TYPE_COUNT][PROX_QUERY_KIND_COUNT];
    unsigned char set[PROX_TREE_TYPE_COUNT][PROX_TREE_TYPE_COUNT][PROX_QUERY_KIND_COUNT];
};

prox_bank *prox_bank_create(void) { return calloc(1, sizeof(prox_bank)); }

void prox_bank_destroy(prox_bank *bank) { free(bank); }

void prox_bank_set(prox_bank *bank, uint32_t ta, uint32_t tb, uint32_t kind, const prox_handler *h)
{
    if (!bank || ta >= PROX_TREE_TYPE_COUNT || tb >= PROX_TREE_TYPE_COUNT || kind >= PROX_QUERY_KIND_COUNT)
        return;
    if (h && h->expand) {
        bank->h[ta][tb][kind] = *h;
        bank->set[ta][tb][kind] = 1;
    } else {
        bank->set[ta][tb][kind] = 0;
    }
}

const prox_handler *prox_bank_get(const prox_bank *bank, uint32_t ta, uint32_t tb, uint32_t kind)
{
    if (!bank || ta >= PROX_TREE_TYPE_COUNT || tb >= PROX_TREE_TYPE_COUNT || kind >= PROX_QUERY_KIND_COUNT)
        return NULL;
    return bank->set[ta][tb][kind] ? &bank->h[ta][tb][kind] : NULL;
}

const prox_handler *prox_bank_find(const prox_bank *bank, uint32_t ta, uint32_t tb, uint32_t kind, int *swapped)
{
    const prox_handler *h = prox_bank_get(bank, ta, tb, kind);
    *swapped = 0;
    if (!h && ta != tb) {
        h = prox_bank_get(bank, tb, ta, kind);
        *swapped = h != NULL;
    }
    return h;
}

void prox_bank_register_defaults(prox_bank *bank)
{
    prox_bvh_register(bank);
    prox_ist_register(bank);
    prox_ist_mesh_register(bank);
    prox_voxel_register(bank);
    prox_boxes_register(bank);
}
