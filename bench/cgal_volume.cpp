// cgal_volume.cpp - exact intersection volume of two meshes (CGAL), the
// reference for `prox penvol`. Same normalisation as `prox --normalize`
// (unit bounding-box diagonal about the bbox centre); B is placed at each
// pose of POSES (A at the identity). Prints `value value value 1` per pose
// and `queries=N median_us=X p99_us=Y max_us=Z` on stderr, like prox.
// Bench only: never linked into hapticd.
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Polygon_mesh_processing/corefinement.h>
#include <CGAL/Polygon_mesh_processing/measure.h>
#include <CGAL/Polygon_mesh_processing/transform.h>
#include <CGAL/Surface_mesh.h>
#include <CGAL/Aff_transformation_3.h>
#include <CGAL/boost/graph/IO/polygon_mesh_io.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

typedef CGAL::Exact_predicates_inexact_constructions_kernel K;
typedef CGAL::Surface_mesh<K::Point_3> Mesh;
namespace PMP = CGAL::Polygon_mesh_processing;

static bool load(const char *path, Mesh &m)
{
    if (!CGAL::IO::read_polygon_mesh(path, m) || m.is_empty()) {
        std::fprintf(stderr, "cgal_volume: %s: cannot read\n", path);
        return false;
    }
    double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
    for (auto v : m.vertices()) {
        auto p = m.point(v);
        for (int a = 0; a < 3; a++)
            lo[a] = std::min(lo[a], p[a]), hi[a] = std::max(hi[a], p[a]);
    }
    double c[3], d = 0;
    for (int a = 0; a < 3; a++)
        c[a] = 0.5 * (lo[a] + hi[a]), d += (hi[a] - lo[a]) * (hi[a] - lo[a]);
    double s = 1.0 / std::sqrt(d);
    for (auto v : m.vertices()) {
        auto p = m.point(v);
        m.point(v) = K::Point_3(p.x() * s - c[0] * s, p.y() * s - c[1] * s, p.z() * s - c[2] * s);
    }
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        std::fprintf(stderr, "usage: cgal_volume A B POSES\n");
        return 2;
    }
    Mesh A, B;
    if (!load(argv[1], A) || !load(argv[2], B))
        return 1;
    std::ifstream in(argv[3]);
    std::string line;
    std::vector<double> us;
    while (std::getline(in, line)) {
        auto h = line.find('#');
        if (h != std::string::npos)
            line.resize(h);
        std::istringstream ss(line);
        double x[7];
        int n = 0;
        while (n < 7 && ss >> x[n])
            n++;
        if (n == 0)
            continue;
        if (n != 7) {
            std::fprintf(stderr, "cgal_volume: bad pose line\n");
            return 1;
        }
        double qn = std::sqrt(x[3] * x[3] + x[4] * x[4] + x[5] * x[5] + x[6] * x[6]);
        double w = x[3] / qn, qx = x[4] / qn, qy = x[5] / qn, qz = x[6] / qn;
        K::Aff_transformation_3 T(1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - w * qz), 2 * (qx * qz + w * qy), x[0],
                                  2 * (qx * qy + w * qz), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - w * qx), x[1],
                                  2 * (qx * qz - w * qy), 2 * (qy * qz + w * qx), 1 - 2 * (qx * qx + qy * qy), x[2]);
        Mesh a = A, b = B, out;
        PMP::transform(T, b);
        auto t0 = std::chrono::steady_clock::now();
        double vol = 0;
        bool ok = PMP::corefine_and_compute_intersection(a, b, out);
        if (ok)
            vol = PMP::volume(out);
        auto t1 = std::chrono::steady_clock::now();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        std::printf("%.17g %.17g %.17g %d\n", vol, vol, vol, ok ? 1 : 0);
        std::fflush(stdout);
    }
    std::sort(us.begin(), us.end());
    size_t n = us.size();
    if (!n)
        return 0;
    std::fprintf(stderr, "queries=%zu median_us=%.3f p99_us=%.3f max_us=%.3f\n", n, us[n / 2], us[(size_t)(0.99 * (n - 1) + 0.5)], us[n - 1]);
    return 0;
}
