/* prox.h - libprox, the geometry core of hapticd: include this one header.
 *
 * libprox is one module whose API is split by topic into the prox_*.h
 * headers below; each states its thread rules. */
#ifndef PROX_H
#define PROX_H

#include "prox_math.h"
#include "prox_mesh.h"
#include "prox_engine.h"
#include "prox_bvh.h"
#include "prox_ist.h"
#include "prox_voxel.h"
#include "prox_boxes.h"
#include "prox_loader.h"

#endif
