/* cmd_info.c - prox info MESH: what the loader found, as key: value lines. */
#include <stdio.h>

#include "cli.h"
#include "geom.h"
#include "prox.h"

int prox_cli_info(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prox info MESH\n");
        return 2;
    }
    char err[512];
    prox_mesh *m;
    if (prox_mesh_load_apart(&cli_loader, argv[1], &m, err, sizeof err)) {
        fprintf(stderr, "prox: %s\n", err);
        return 1;
    }
    printf("file: %s\n", argv[1]);
    printf("triangles: %u\n", m->triangle_count);
    printf("vertices: %u\n", m->vertex_count);
    printf("welded_vertices: %u\n", m->welded_vertices);
    printf("dropped_degenerate: %u\n", m->dropped_degenerate);
    printf("closed: %s\n", m->closed ? "yes" : "no");
    printf("boundary_edges: %u\n", m->boundary_edges);
    printf("nonmanifold_edges: %u\n", m->nonmanifold_edges);
    printf("oriented: %s\n", m->oriented ? "yes" : "no");
    printf("misoriented_edges: %u\n", m->misoriented_edges);
    printf("volume: %.10g\n", m->volume);
    printf("area: %.10g\n", m->area);
    printf("bbox_min: %.10g %.10g %.10g\n", m->bbox_min.x, m->bbox_min.y, m->bbox_min.z);
    printf("bbox_max: %.10g %.10g %.10g\n", m->bbox_max.x, m->bbox_max.y, m->bbox_max.z);
    printf("centroid: %.10g %.10g %.10g\n", m->centroid.x, m->centroid.y, m->centroid.z);
    if (!m->closed)
        printf("note: the mesh is not closed (%u boundary edges); inner sphere trees need a watertight mesh\n",
               m->boundary_edges);
    prox_mesh_free(m);
    return 0;
}
