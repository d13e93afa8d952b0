/* load_gen.c - background load for the latency benchmark: a voxel stream
 * (/voxel/batch blobs) and an OSC flood (/pose messages) to hapticd.
 *   load_gen PORT SECONDS VOXELS_PER_S MSGS_PER_S MAP OBJECT
 * Sends to 127.0.0.1 only; stops by itself after SECONDS. */
#include <lo/lo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: load_gen PORT SECONDS VOXELS_PER_S MSGS_PER_S MAP OBJECT\n");
        return 2;
    }
    lo_address to = lo_address_new("127.0.0.1", argv[1]);
    double secs = atof(argv[2]), vps = atof(argv[3]), mps = atof(argv[4]);
    const char *map = argv[5], *obj = argv[6];
    enum { PER_BATCH = 1000 };
    unsigned char rec[PER_BATCH * 16];
    struct timespec t0, next;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    next = t0;
    double vox_due = 0, msg_due = 0;
    unsigned long long sent_vox = 0, sent_msg = 0, k = 0;
    for (;;) {
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        double el = (double)(next.tv_sec - t0.tv_sec) + 1e-9 * (double)(next.tv_nsec - t0.tv_nsec);
        if (el >= secs)
            break;
        vox_due += vps * 1e-3;
        msg_due += mps * 1e-3;
        while (vox_due >= PER_BATCH) {
            for (int i = 0; i < PER_BATCH; i++, k++) {
                uint32_t w[4] = {(uint32_t)(k % 6), (uint32_t)((k / 6) % 6), (uint32_t)((k / 36) % 16), (uint32_t)(k / 576) % 2 ? 0u : 1u};
                for (int j = 0; j < 4; j++)
                    for (int b = 0; b < 4; b++)
                        rec[16 * i + 4 * j + b] = (unsigned char)(w[j] >> (8 * b));
            }
            lo_blob blob = lo_blob_new(sizeof rec, rec);
            lo_send(to, "/voxel/batch", "sb", map, blob);
            lo_blob_free(blob);
            vox_due -= PER_BATCH;
            sent_vox += PER_BATCH;
        }
        while (msg_due >= 1) {
            lo_send(to, "/pose", "sfffffff", obj, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f);
            msg_due -= 1;
            sent_msg++;
        }
    }
    fprintf(stderr, "load_gen: sent %llu voxel updates and %llu messages in %.0f s\n", sent_vox, sent_msg, secs);
    lo_address_free(to);
    return 0;
}
