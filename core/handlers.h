/* handlers.h - registration of each geometry module's handlers (private).
 * prox_bank_register_defaults calls every one of these. */
#ifndef PROX_HANDLERS_H
#define PROX_HANDLERS_H

#include "prox_engine.h"

void prox_bvh_register(prox_bank *bank); /* bvh_handlers.c: (MESH, MESH) */
void prox_ist_register(prox_bank *bank); /* ist_query.c: (IST, IST) */
void prox_ist_mesh_register(prox_bank *bank); /* ist_mesh.c: (IST, MESH), all but penetration volume */
void prox_voxel_register(prox_bank *bank); /* voxel_handlers.c: (VOXEL, IST|MESH|VOXEL) */
void prox_boxes_register(prox_bank *bank); /* boxes_query.c: (BOXES, BOXES) */

#endif
