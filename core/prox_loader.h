/* prox_loader.h - load a mesh in a child process.
 *
 * Part of libprox (core/). assimp reads dozens of formats; the readers we
 * fuzzed crashed, hung or took gigabytes on small malformed files (the
 * worst are refused by name, docs/formats.md), and a reader we did not
 * reach could still do so. In a service that holds a haptic device, a
 * reader's crash must not take the service down. prox_mesh_load_apart runs
 * prox_mesh_load in a child process (a program started again with
 * PROX_LOADER_FLAG) under a wall-clock limit and a memory limit, and takes
 * the mesh back through a pipe. A crash, a hang or a blown limit becomes
 * one error message; the caller's process is untouched.
 *
 * A program that loads meshes apart calls prox_loader_main first thing in
 * main:
 *     if (argc > 1 && !strcmp(argv[1], PROX_LOADER_FLAG))
 *         return prox_loader_main(argc, argv);
 * and passes its own executable (on Linux "/proc/self/exe") as the loader.
 * Non-RT: starts a process and waits for it.
 */
#ifndef PROX_LOADER_H
#define PROX_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "prox_mesh.h"

#define PROX_LOADER_FLAG "--prox-loader"

typedef struct prox_loader {
    const char *exe;      /* program that answers PROX_LOADER_FLAG; NULL = load in this process */
    double seconds;       /* wall-clock limit for one load; the child is killed past it (above 0) */
    uint32_t memory_mib;  /* the child's address space limit (RLIMIT_AS, its libraries included); 0 = none.
                             Not applied in sanitizer builds (their shadow memory needs terabytes) */
} prox_loader;

/* exe NULL (load in this process), 60 s, 4096 MiB */
prox_loader prox_loader_default(void);

/* prox_mesh_load(path) in a child process started from ld->exe (or in this
 * process when ld or ld->exe is NULL). The same mesh and the same messages
 * as prox_mesh_load, and besides, with the file named: the loader could
 * not start, took longer than ld->seconds (killed), crashed (the signal,
 * and the memory limit when one was set), exited with a failure, or sent
 * a damaged reply. 0 and *out, or -1 and err; nothing is kept from a child
 * that failed. Non-RT; the calling thread waits (up to ld->seconds). */
int prox_mesh_load_apart(const prox_loader *ld, const char *path, prox_mesh **out, char *err, size_t errlen);

/* The child's side: argv is {exe, PROX_LOADER_FLAG, "mesh", path, memory_mib}.
 * Sets the memory limit, loads the mesh, writes the reply on standard
 * output (standard output is then pointed at standard error, so nothing a
 * library prints can corrupt the reply) and returns the exit status: 0
 * when the reply (a mesh or an error message) was written, 2 for a wrong
 * command line, 3 when the reply could not be written. */
int prox_loader_main(int argc, char **argv);

#endif
