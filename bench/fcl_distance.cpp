// fcl_distance.cpp - the FCL peer for `prox distance` / `prox collide`.
//
// Reads meshes with assimp (as prox does), applies the same --normalize
// (unit bounding-box diagonal about the bbox centre, after prox's welding
// of exact duplicate vertices, which does not change the geometry), builds
// fcl::BVHModel<OBBRSS>, and prints the same lines as prox: stdout
// `value lower upper complete` per pose, stderr
// `queries=N median_us=X p99_us=Y max_us=Z` (steady_clock, which is
// CLOCK_MONOTONIC as prox's, around the query call only). Bench only: never
// linked into hapticd.
//
// --collide: fcl::collide with one contact, value 1 (colliding) or 0.
// --convex: fcl::Convex of the same vertices and triangles instead of the
// BVH (convex meshes only; FCL's default solver, libccd's GJK).
// --signed: with --convex, the signed distance (negative: penetration
// depth, libccd's EPA), to classify poses where answers disagree.
// --times FILE: one line per query, its time in microseconds (as prox's
// --times first column), in pose order.
#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fcl/fcl.h>

using Model = fcl::BVHModel<fcl::OBBRSSd>;

static std::shared_ptr<fcl::CollisionGeometryd> make_geometry(const std::vector<fcl::Vector3d> &v,
                                                              const std::vector<fcl::Triangle> &t, bool convex)
{
    if (convex) {
        auto faces = std::make_shared<std::vector<int>>();
        for (auto &f : t)
            faces->insert(faces->end(), {3, (int)f[0], (int)f[1], (int)f[2]});
        auto verts = std::make_shared<const std::vector<fcl::Vector3d>>(v);
        return std::make_shared<fcl::Convexd>(verts, (int)t.size(), faces);
    }
    auto m = std::make_shared<Model>();
    m->beginModel();
    m->addSubModel(v, t);
    m->endModel();
    return m;
}

static bool load(const char *path, bool normalize, std::vector<fcl::Vector3d> &v, std::vector<fcl::Triangle> &t)
{
    const aiScene *sc = aiImportFile(path, aiProcess_Triangulate | aiProcess_JoinIdenticalVertices);
    if (!sc) {
        std::fprintf(stderr, "fcl_distance: %s: %s\n", path, aiGetErrorString());
        return false;
    }
    for (unsigned i = 0; i < sc->mNumMeshes; i++) {
        const aiMesh *m = sc->mMeshes[i];
        size_t base = v.size();
        for (unsigned k = 0; k < m->mNumVertices; k++)
            v.emplace_back(m->mVertices[k].x, m->mVertices[k].y, m->mVertices[k].z);
        for (unsigned f = 0; f < m->mNumFaces; f++)
            if (m->mFaces[f].mNumIndices == 3)
                t.emplace_back(base + m->mFaces[f].mIndices[0], base + m->mFaces[f].mIndices[1], base + m->mFaces[f].mIndices[2]);
    }
    aiReleaseImport(sc);
    if (normalize && !v.empty()) {
        fcl::Vector3d lo = v[0], hi = v[0];
        for (auto &p : v) {
            lo = lo.cwiseMin(p);
            hi = hi.cwiseMax(p);
        }
        fcl::Vector3d c = (lo + hi) * 0.5;
        double s = 1.0 / (hi - lo).norm();
        // same operation order as prox_mesh_transform: s * p + (-s * c)
        fcl::Vector3d off = c * -s;
        for (auto &p : v)
            p = p * s + off;
    }
    return true;
}

int main(int argc, char **argv)
{
    bool normalize = false, collide = false, convex = false, sign = false;
    const char *times = nullptr;
    std::vector<const char *> pos;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--normalize"))
            normalize = true;
        else if (!std::strcmp(argv[i], "--collide"))
            collide = true;
        else if (!std::strcmp(argv[i], "--convex"))
            convex = true;
        else if (!std::strcmp(argv[i], "--signed"))
            sign = true;
        else if (!std::strcmp(argv[i], "--times") && i + 1 < argc)
            times = argv[++i];
        else
            pos.push_back(argv[i]);
    }
    if (pos.size() != 3 || (sign && (collide || !convex))) {
        std::fprintf(stderr, "usage: fcl_distance A B POSES [--normalize] [--collide] [--convex] [--signed] [--times FILE]\n"
                             "(--signed needs --convex and no --collide)\n");
        return 2;
    }
    std::vector<fcl::Vector3d> va, vb;
    std::vector<fcl::Triangle> ta, tb;
    if (!load(pos[0], normalize, va, ta) || !load(pos[1], normalize, vb, tb))
        return 1;
    auto ma = make_geometry(va, ta, convex), mb = make_geometry(vb, tb, convex);
    std::ifstream in(pos[2]);
    if (!in) {
        std::fprintf(stderr, "fcl_distance: %s: cannot open\n", pos[2]);
        return 1;
    }
    std::vector<double> us;
    std::string line;
    fcl::CollisionObjectd oa(ma, fcl::Transform3d::Identity());
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
            std::fprintf(stderr, "fcl_distance: bad pose line\n");
            return 1;
        }
        fcl::Quaterniond q(x[3], x[4], x[5], x[6]);
        q.normalize();
        fcl::Transform3d tf = fcl::Transform3d::Identity();
        tf.linear() = q.toRotationMatrix();
        tf.translation() = fcl::Vector3d(x[0], x[1], x[2]);
        fcl::CollisionObjectd ob(mb, tf);
        double value;
        auto t0 = std::chrono::steady_clock::now();
        if (collide) {
            fcl::CollisionRequestd req(1);
            fcl::CollisionResultd res;
            fcl::collide(&oa, &ob, req, res);
            value = res.isCollision() ? 1 : 0;
        } else {
            fcl::DistanceRequestd req(true, sign);
            fcl::DistanceResultd res;
            fcl::distance(&oa, &ob, req, res);
            value = res.min_distance < 0 && !sign ? 0 : res.min_distance;
        }
        auto t1 = std::chrono::steady_clock::now();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        std::printf("%.17g %.17g %.17g 1\n", value, value, value);
    }
    if (times) {
        FILE *f = std::fopen(times, "w");
        for (size_t i = 0; f && i < us.size(); i++)
            std::fprintf(f, "%.3f\n", us[i]);
        if (!f || std::fclose(f)) {
            std::fprintf(stderr, "fcl_distance: %s: cannot write the per-query times\n", times);
            return 1;
        }
    }
    std::sort(us.begin(), us.end());
    size_t n = us.size();
    if (!n) {
        std::fprintf(stderr, "queries=0 median_us=0 p99_us=0 max_us=0\n");
        return 0;
    }
    size_t i99 = (size_t)(0.99 * (double)(n - 1) + 0.5);
    std::fprintf(stderr, "queries=%zu median_us=%.3f p99_us=%.3f max_us=%.3f\n", n, us[n / 2], us[i99], us[n - 1]);
    return 0;
}
