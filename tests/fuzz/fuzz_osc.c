/* fuzz_osc.c - libFuzzer target (make fuzz): one UDP datagram to the OSC
 * server as input. A service in lockstep (null device, a ball "ball" and a
 * voxel map "map" so that names resolve) takes the commands, a cycle runs
 * after each datagram, and the replies are read and dropped. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dev_device.h"
#include "prox.h"
#include "rt_objects.h"
#include "rt_osc.h"
#include "rt_service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rt_service *svc;
static rt_osc *osc;
static int cli = -1;
static struct sockaddr_in to;
static uint64_t t_ns = 1000000;

/* at exit (libFuzzer's end of a timed run): the server's liblo socket
 * file in /tmp removed (rt_osc_destroy unlinks it) */
static void teardown(void)
{
    rt_osc_destroy(osc);
    osc = NULL;
}

static int setup(void)
{
    char err[512];
    dev_device *d = dev_null_open(err, sizeof err);
    rt_config cfg = rt_config_default();
    cfg.priority = 0;
    svc = d ? rt_service_create(&cfg, d, err, sizeof err) : NULL;
    if (!svc)
        return -1;
    prox_mesh *m = prox_mesh_make_sphere(0.02, 1);
    rt_object o;
    if (m && rt_object_from_mesh(m, RT_IST_SPHERES, &o, err, sizeof err) == 0)
        rt_service_add_object(svc, "ball", &o, NULL, err, sizeof err);
    prox_voxmap_def vd = {0.01, prox_v3(0.5, 0, 0), {16, 16, 16}, 8192};
    prox_voxmap *vm = prox_voxmap_create(&vd, err, sizeof err);
    if (vm) {
        rt_object vo;
        rt_object_from_voxmap(vm, &vo);
        rt_service_add_object(svc, "map", &vo, NULL, err, sizeof err);
    }
    rt_service_step(svc, t_ns, err, sizeof err); /* from now on commands go through the queues */
    osc = rt_osc_create(svc, "127.0.0.1", 0, err, sizeof err);
    if (osc)
        atexit(teardown);
    cli = socket(AF_INET, SOCK_DGRAM, 0);
    if (!osc || cli < 0)
        return -1;
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_port = htons((uint16_t)rt_osc_port(osc));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!svc && setup() != 0)
        return 0;
    if (!osc || size > 65000)
        return 0;
    sendto(cli, data, size, 0, (const struct sockaddr *)&to, sizeof to);
    rt_osc_poll(osc, 20);
    char err[512];
    rt_service_step(svc, t_ns += 1000000, err, sizeof err);
    static char buf[70000];
    while (recv(cli, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
    return 0;
}
