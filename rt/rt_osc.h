/* rt_osc.h - the OSC control server of hapticd (liblo).
 *
 * liblo's own servers bind every interface; we open our own UDP socket on
 * the address the user chose (127.0.0.1 by default), receive datagrams on
 * the OSC thread and hand each one to liblo to parse and dispatch
 * (lo_server_dispatch_data on a liblo server that never touches the
 * network). Replies go back to the sender through our socket.
 *
 * Thread rules: everything here runs on non-RT threads. rt_osc_start makes
 * the OSC thread and the builder thread (/load builds there while the OSC
 * thread goes on: osc.c, docs/osc.md); the telemetry listener runs on the
 * service's housekeeping thread. The address space is documented in
 * docs/osc.md.
 */
#ifndef RT_OSC_H
#define RT_OSC_H

#include <stddef.h>
#include <stdint.h>

#include "prox_math.h"
#include "rt_service.h"

typedef struct rt_osc rt_osc;

/* Receives /device/pose (the OSC device driver's input). Called on the OSC
 * thread. */
typedef void (*rt_osc_pose_fn)(void *user, const prox_xform *pose, uint32_t buttons);

/* Open the socket on addr:port (addr NULL = 127.0.0.1, port 0 = any free
 * port). NULL + err on failure. */
rt_osc *rt_osc_create(rt_service *svc, const char *addr, int port, char *err, size_t errlen);
int rt_osc_port(const rt_osc *o);
/* Let /record/start create new files (a bare file name, never an existing
 * file) in folder dir; NULL or "" (the default): /record/start is refused.
 * 0, or -1 with err (not a folder). */
int rt_osc_set_record_dir(rt_osc *o, const char *dir, char *err, size_t errlen);
void rt_osc_set_pose_input(rt_osc *o, rt_osc_pose_fn fn, void *user);
int rt_osc_start(rt_osc *o, char *err, size_t errlen);
/* Handle pending datagrams without a thread (tests: /load then builds on
 * the caller's thread); waits up to timeout_ms. */
int rt_osc_poll(rt_osc *o, int timeout_ms);
/* Stop the threads: a build under way finishes and answers first; the
 * messages held behind it are refused (/fail). */
void rt_osc_stop(rt_osc *o);
void rt_osc_destroy(rt_osc *o);

typedef struct rt_osc_stats {
    uint64_t received, dispatched, failed, malformed, replies, telemetry_sent;
    uint64_t reply_drops; /* replies that could not be sent (socket full) */
} rt_osc_stats;
void rt_osc_get_stats(const rt_osc *o, rt_osc_stats *out);

#define RT_OSC_MAX_SUBSCRIBERS 8
#define RT_OSC_MAX_BLOB 65000 /* bytes; larger voxel batches must be split */

#endif
