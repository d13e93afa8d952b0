/* prox.c - the prox command line tool: dispatch to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "geom.h"

static const struct {
    const char *name;
    prox_cli_fn fn;
    const char *usage;
} commands[] = {
    {"info", prox_cli_info, "info MESH                      mesh statistics: closed, oriented, volume, bbox"},
    {"distance", prox_cli_distance, PROX_USAGE_DISTANCE},
    {"collide", prox_cli_collide, PROX_USAGE_COLLIDE},
    {"penvol", prox_cli_penvol, PROX_USAGE_PENVOL},
    {"build", prox_cli_build, PROX_USAGE_BUILD},
    {"voxels", prox_cli_voxels, PROX_USAGE_VOXELS "   point cloud (.xyz, .ply, .obj, .off, other assimp formats) -> voxel map"},
    {NULL, NULL, NULL},
};

void cli_refuse_arg(const char *cmd, const char *arg, const char *const *valued, const char *first, const char *one_input)
{
    for (; *valued; valued++)
        if (!strcmp(arg, *valued)) {
            fprintf(stderr, "prox %s: %s needs a value\n", cmd, arg);
            return;
        }
    if (arg[0] != '-')
        fprintf(stderr, "prox %s: %s ('%s' after '%s')\n", cmd, one_input, arg, first);
    else
        fprintf(stderr, "prox %s: unknown option '%s'\n", cmd, arg);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: prox COMMAND ARGS...\n\ncommands:\n");
    for (int i = 0; commands[i].name; i++)
        fprintf(f, "  %s\n", commands[i].usage);
    fprintf(f, "\nPOSES files hold one pose of B per line: tx ty tz qw qx qy qz (# comments).\n");
    fprintf(f, "Geometry arguments: meshes (assimp formats; --ist builds inner sphere trees, --boxes inner/outer box\n"
               "hierarchies of convex meshes), .ist files, .vox voxel maps.\n");
}

int main(int argc, char **argv)
{
    /* this program started again to read one mesh (prox_mesh_load_apart) */
    if (argc > 1 && !strcmp(argv[1], PROX_LOADER_FLAG))
        return prox_loader_main(argc, argv);
    cli_loader = prox_loader_default();
    cli_loader.exe = "/proc/self/exe";
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; commands[i].name; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "prox: unknown command '%s' (prox --help lists them)\n", argv[1]);
    return 2;
}
