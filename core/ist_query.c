/* ist_query.c - the (IST, IST) handlers' shared per-query setup and their
 * registration in the bank: distance, tolerance, collide and contacts in
 * ist_distance.c, penetration volume in ist_penvol.c. RT safe. */
#include <float.h>

#include "ist_query.h"


/* The float prefilter of an expansion rejects a child pair only when its
 * bounding spheres are apart by more than `margin`, which exceeds the float
 * rounding of the transformed centres and squared distances many times over
 * (1e-5 of the scene's extent, against errors of a few 1e-7); what survives is
 * tested again in double exactly as before, so the answers do not change. */
void ist_fx_prepare(const prox_pairstate *p)
{
    const prox_ist *A = p->a->impl, *B = p->b->impl;
    ist_fx *f = pair_fx(p);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            f->r[3 * i + j] = (float)p->b_in_a.R.m[i][j];
    f->t[0] = (float)p->b_in_a.t.x, f->t[1] = (float)p->b_in_a.t.y, f->t[2] = (float)p->b_in_a.t.z;
    double ext = prox_v3_len(p->b_in_a.t);
    for (int k = 0; k < 2; k++) {
        const float *r = k ? B->root : A->root;
        ext += fabs(r[0]) + fabs(r[1]) + fabs(r[2]) + r[3];
    }
    f->margin = (float)(1e-5 * ext);
    /* Far (IST_FAR: the margin above 3e-3 of the objects' size), the
     * distance query's keys are computed in doubles (expand_far), whose
     * rounding is a few 1e-16 of the extent: 1e-13 of it covers that many
     * times over. The penetration volume query ignores it (objects that far
     * apart do not overlap: its roots are pruned at once). */
    f->far_margin = 1e-5 * ext > IST_FAR * ((double)A->root[3] + B->root[3]) ? fmaxf((float)(1e-13 * ext), FLT_MIN) : 0.0f;
    f->late = 0;
    f->tick = 0;
    f->record = 0;
    f->rec_margin = 0;
}

void prox_ist_register(prox_bank *bank)
{
    ist_register_distance(bank);
    ist_register_penvol(bank);
}
