// Times tinybvh's BVH4_CPU (or BVH8_CPU) on a wavetrace ray file, three ways, for the
// comparisons in README.md ("Speed") and docs/performance.md ("Trace speed beside
// tinybvh"). Not part of the build; tinybvh is not vendored.
//
//   curl -LO https://raw.githubusercontent.com/jbikker/tinybvh/4735685f64d8b2bb0ad2c6c4643f291bf58774ad/tiny_bvh.h
//   g++ -O3 -march=native -o tinybvh_rays tinybvh_rays.cpp            (BVH4_CPU)
//   g++ -O3 -march=native -DWIDE8 -o tinybvh_rays8 tinybvh_rays.cpp   (BVH8_CPU)
//   taskset -c 1 ./tinybvh_rays MESH.obj RAYS A|B|C [REPEATS]
//
// MESH: a plain OBJ triangle soup (`v` and `f a b c` lines, as the data set's meshes once
// gunzipped). RAYS: 8 x f32 per ray (origin, direction, tmin, tmax).
//   A: the rays made into tinybvh Rays before the clock starts; only Intersect is timed
//      (what tinybvh's own speed test does).
//   B: each ray made from its record by tinybvh's Ray constructor (which clears the Ray,
//      normalizes the direction and takes its reciprocal) inside the timed loop.
//   C: each ray's fields set inside the timed loop, with only the reciprocal tinybvh needs.
// Prints the best of REPEATS (default 5) passes in Mrays/s and the number of hits.
#define TINYBVH_IMPLEMENTATION
#include "tiny_bvh.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace tinybvh;

#ifdef WIDE8
typedef BVH8_CPU Tree;
#else
typedef BVH4_CPU Tree;
#endif

int main(int argc, char** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MESH.obj RAYS A|B|C [REPEATS]\n", argv[0]);
        return 2;
    }
    const char mode = argv[3][0];
    const int repeats = argc > 4 ? atoi(argv[4]) : 5;
    FILE* f = fopen(argv[1], "r");
    if (!f) { fprintf(stderr, "%s: cannot open\n", argv[1]); return 2; }
    std::vector<bvhvec4> vertices, corners;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        float x, y, z;
        unsigned a, b, c;
        if (line[0] == 'v' && line[1] == ' ' && sscanf(line + 2, "%f %f %f", &x, &y, &z) == 3)
            vertices.push_back(bvhvec4(x, y, z, 0));
        else if (line[0] == 'f' && sscanf(line + 2, "%u %u %u", &a, &b, &c) == 3) {
            const size_t nv = vertices.size();
            if (a < 1 || b < 1 || c < 1 || a > nv || b > nv || c > nv) {
                fprintf(stderr, "%s: a face names a vertex not yet defined: %s", argv[1], line);
                return 2;
            }
            corners.push_back(vertices[a - 1]);
            corners.push_back(vertices[b - 1]);
            corners.push_back(vertices[c - 1]);
        }
    }
    fclose(f);
    Tree tree;
    tree.Build(corners.data(), (uint32_t)(corners.size() / 3));

    FILE* r = fopen(argv[2], "rb");
    if (!r) { fprintf(stderr, "%s: cannot open\n", argv[2]); return 2; }
    fseek(r, 0, SEEK_END);
    const long n = ftell(r) / 32;
    fseek(r, 0, SEEK_SET);
    std::vector<float> records(n * 8);
    if (fread(records.data(), 4, n * 8, r) != (size_t)(n * 8)) { fprintf(stderr, "short read\n"); return 2; }
    fclose(r);
    std::vector<Ray> rays(n);

    double best = 1e30;
    for (int pass = 0; pass < repeats; pass++) {
        if (mode == 'A')
            for (long i = 0; i < n; i++) {
                const float* p = &records[i * 8];
                rays[i] = Ray(bvhvec3(p[0], p[1], p[2]), bvhvec3(p[3], p[4], p[5]), p[7]);
            }
        const auto start = std::chrono::steady_clock::now();
        if (mode == 'A') {
            for (long i = 0; i < n; i++) tree.Intersect(rays[i]);
        } else if (mode == 'B') {
            for (long i = 0; i < n; i++) {
                const float* p = &records[i * 8];
                rays[i] = Ray(bvhvec3(p[0], p[1], p[2]), bvhvec3(p[3], p[4], p[5]), p[7]);
                tree.Intersect(rays[i]);
            }
        } else {
            for (long i = 0; i < n; i++) {
                const float* p = &records[i * 8];
                Ray& ray = rays[i];
                ray.O = bvhvec3(p[0], p[1], p[2]);
                ray.D = bvhvec3(p[3], p[4], p[5]);
                ray.rD = tinybvh_rcp(ray.D);
                ray.hit.t = p[7];
                ray.hit.prim = 0;
                ray.mask = RAY_MASK_INTERSECT_ALL;
                tree.Intersect(ray);
            }
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (seconds < best) best = seconds;
    }
    long hits = 0;
    for (long i = 0; i < n; i++) hits += rays[i].hit.t < 1e29f;
    printf("%s way %c: %ld rays, %ld hits, best %.3f Mrays/s\n", argv[2], mode, n, hits, n / best / 1e6);
    return 0;
}
