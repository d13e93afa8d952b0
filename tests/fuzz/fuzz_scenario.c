/* fuzz_scenario.c - libFuzzer target (make fuzz): a scenario's text
 * (docs/scenarios.md) as input, parsed (meshes it names are looked for in
 * a folder that does not exist). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prox.h"
#include "sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char err[512];
    sim_scenario *sc = sim_scenario_parse(text, "fuzz", "/nonexistent", err, sizeof err);
    if (sc)
        sim_scenario_free(sc);
    free(text);
    return 0;
}
