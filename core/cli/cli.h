/* cli.h - the prox command line tool: one function per subcommand.
 * Each cmd_*.c file implements one or more of these; prox.c dispatches. */
#ifndef PROX_CLI_H
#define PROX_CLI_H

/* argv[0] is the subcommand name. Return the process exit status. */
typedef int (*prox_cli_fn)(int argc, char **argv);

/* the commands' usage lines (prox --help and the commands' own errors) */
#define PROX_USAGE_DISTANCE                                                                                 \
    "distance A B POSES [--coherent] [--budget-us N] [--rel-err E] [--max-distance D] [--normalize] "      \
    "[--ist [--spheres N]] [--precise] [--fast] [--order auto|best|depth] [--times FILE] [--stats]"
#define PROX_USAGE_COLLIDE "collide A B POSES [--normalize] [--boxes] [--order auto|best|depth] [--times FILE] [--stats]"
#define PROX_USAGE_PENVOL                                                                                                \
    "penvol A B POSES [--budget-us N] [--coherent] [--normalize] [--spheres N] [--order auto|best|depth] [--times FILE] " \
    "[--stats]"
/* build's and voxels' (voxels' own errors print it without the description) */
#define PROX_USAGE_BUILD "build MESH -o OUT.ist [--spheres N] [--voxels N] [--min-radius VOXELS] [--thin-gap VOXELS] [--normalize]"
#define PROX_USAGE_VOXELS "voxels CLOUD -o MAP.vox --cell S [--class obstacle|unknown]"

/* On stderr, why argument arg of command cmd was not taken (the caller
 * then prints its usage): an option listed in valued (NULL-ended) given
 * last, with no value; an input after the first one, `first` ("prox build:
 * one mesh at a time ('b.off' after 'a.off')", one_input being the words
 * before the parenthesis); or an option the command does not have. Shared
 * so that build and voxels refuse alike. */
void cli_refuse_arg(const char *cmd, const char *arg, const char *const *valued, const char *first, const char *one_input);

int prox_cli_info(int argc, char **argv);     /* cmd_info.c */
int prox_cli_distance(int argc, char **argv); /* cmd_query.c */
int prox_cli_collide(int argc, char **argv);  /* cmd_query.c */
int prox_cli_penvol(int argc, char **argv);   /* cmd_query.c */
int prox_cli_build(int argc, char **argv);    /* cmd_build.c */
int prox_cli_voxels(int argc, char **argv);   /* cmd_voxels.c */
int prox_cli_demo(int argc, char **argv);     /* cmd_demo.c */

#endif
