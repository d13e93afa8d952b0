/* sphere.h - sphere-sphere closed forms (private, RT safe). */
#ifndef PROX_SPHERE_H
#define PROX_SPHERE_H

#include <math.h>

/* Volume of the intersection of spheres of radii r1, r2 whose centres are
 * d apart (the lens; the smaller ball when one contains the other). */
static inline double prox_lens_volume(double r1, double r2, double d)
{
    if (d >= r1 + r2)
        return 0.0;
    double rmin = r1 < r2 ? r1 : r2;
    if (d <= fabs(r1 - r2))
        return 4.0 / 3.0 * M_PI * rmin * rmin * rmin;
    double s = r1 + r2 - d, dr = r1 - r2;
    return M_PI * s * s * (d * d + 2.0 * d * (r1 + r2) - 3.0 * dr * dr) / (12.0 * d);
}

/* Distance from centre 1 to the plane of the intersection circle. */
static inline double prox_lens_plane(double r1, double r2, double d)
{
    return d > 0 ? (d * d - r2 * r2 + r1 * r1) / (2.0 * d) : 0.0;
}

#endif
