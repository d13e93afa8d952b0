/* fuzz_assimp.h - for the fuzz targets whose inputs assimp reads
 * (fuzz_mesh, fuzz_cloud): leaks inside assimp are not reported. */
#ifndef HAPTICD_FUZZ_ASSIMP_H
#define HAPTICD_FUZZ_ASSIMP_H

const char *__lsan_default_suppressions(void);

/* assimp 5.2.5's ASCII STL reader leaks its mesh (2464 bytes) when it
 * throws on a number it cannot parse ("facet normal 0 0" followed by a
 * line of text), a refused file (assimp/assimp#5946), and its PLY reader
 * leaks 1368 bytes on a header cut short ("elem\x01" then another
 * header); the mesh loader reaches both the same way. The fast unwinder
 * stops in libstdc++ (operator new), so leaks are not reported where that,
 * or libassimp, allocated: only assimp allocates through operator new
 * here, prox's own readers use malloc. assimp's XGL reader leaks its
 * zlib stream (7160 bytes from inflateInit2_) on a .zgl it cannot
 * inflate ("mlY", fuzz_mesh); the unwinder stops in libz there, and with
 * fast_unwind_on_malloc=0 the frames above are libassimp's (prox's only
 * zlib use, ist_io.c, is not on the mesh path). That prox releases what
 * assimp gives it is checked by test_voxel and test_mesh under ASan. */
const char *__lsan_default_suppressions(void)
{
    return "leak:libassimp.so\nleak:libstdc++.so\nleak:inflateInit2_\n";
}

#endif
