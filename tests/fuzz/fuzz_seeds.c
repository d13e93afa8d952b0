/* fuzz_seeds.c - make fuzz: fuzz_seeds DIR writes the fuzz targets' first
 * inputs into DIR/ist, DIR/vox, DIR/osc, DIR/mesh and DIR/cloud (the
 * scenarios' come from sim/scenarios): a small inner sphere tree, a voxel
 * map with a few cells, one OSC message per address hapticd answers plus a
 * bundle, a box and a ball as OFF meshes, a tetrahedron as PLY, STL, OBJ
 * and in the formats of format_seeds (or their magic numbers), and point
 * clouds in each form fuzz_cloud reads (the mesh and cloud inputs' first
 * byte picks the suffix). */
#include <errno.h>
#include <lo/lo.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "prox.h"

static int write_file(const char *dir, const char *name, const void *data, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size) {
        fprintf(stderr, "fuzz_seeds: cannot write %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f) ? -1 : 0;
}

static int osc_seed(const char *dir, int k, const char *path, lo_message m)
{
    unsigned char buf[2048];
    size_t size = sizeof buf;
    char name[32];
    snprintf(name, sizeof name, "m%02d", k);
    int rc = lo_message_serialise(m, path, buf, &size) ? write_file(dir, name, buf, size) : -1;
    lo_message_free(m);
    return rc;
}

/* a mesh seed: the suffix selector (fuzz_mesh: 0 off, 1 ply, 2 stl, 3 obj,
 * then the SEL_ values below),
 * then m as prox_mesh_write_off writes it */
static int mesh_seed(const char *dir, const char *name, uint8_t sel, const prox_mesh *m, char *err, size_t errlen)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.tmp", dir, name);
    static uint8_t buf[16384];
    buf[0] = sel;
    if (prox_mesh_write_off(m, path, err, errlen))
        return -1;
    FILE *f = fopen(path, "rb");
    const size_t n = f ? fread(buf + 1, 1, sizeof buf - 1, f) : 0;
    const int whole = f && feof(f);
    if (f)
        fclose(f);
    remove(path);
    if (!whole || n == 0) {
        snprintf(err, errlen, "%s: not read back whole (at most %zu bytes)", path, sizeof buf - 1);
        return -1;
    }
    return write_file(dir, name, buf, n + 1);
}

/* a mesh or cloud seed: the suffix selector (fuzz_mesh: as mesh_seed's;
 * fuzz_cloud: 0 xyz, 1 obj, 2 ply, 3 off, 4 stl; plus 5 for the class
 * unknown), then size bytes of the file */
static int suffix_seed(const char *dir, const char *name, uint8_t sel, const void *data, size_t size)
{
    uint8_t buf[2048];
    if (size + 1 > sizeof buf)
        return -1;
    buf[0] = sel;
    memcpy(buf + 1, data, size);
    return write_file(dir, name, buf, size + 1);
}

static int suffix_text(const char *dir, const char *name, uint8_t sel, const char *text)
{
    return suffix_seed(dir, name, sel, text, strlen(text));
}

/* a binary PLY of 5 vertices, byte order big or little: layout 0 float
 * x, y, z and a colour; 1 double x, y, z and one face; 2 integers of
 * several sizes, x, y, z among other properties */
static int cloud_ply_binary(const char *dir, const char *name, int layout, int big)
{
    static const char *const head[3] = {
        "property float x\nproperty float y\nproperty float z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\n",
        "property double x\nproperty double y\nproperty double z\n",
        "property int16 x\nproperty uint8 flags\nproperty int32 y\nproperty char z\nproperty uint confidence\n"};
    uint8_t buf[1024];
    size_t k = (size_t)snprintf((char *)buf, sizeof buf, "ply\nformat %s 1.0\ncomment seed\nelement vertex 5\n%s%s",
                                big ? "binary_big_endian" : "binary_little_endian", head[layout],
                                layout == 1 ? "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
                                            : "end_header\n");
    /* each value's bytes little endian first, reversed for big endian */
    const int size[3][6] = {{4, 4, 4, 1, 1, 1}, {8, 8, 8}, {2, 1, 4, 1, 4}};
    const int kinds[3][6] = {{2, 2, 2, 1, 1, 1}, {2, 2, 2}, {0, 1, 0, 0, 1}}; /* 0 int, 1 uint, 2 float */
    const int nprop = layout == 0 ? 6 : layout == 1 ? 3 : 5;
    for (int i = 0; i < 5; i++)
        for (int p = 0; p < nprop; p++) {
            const double val = (double)(p * 7 + i * 3 % 5) - 4.5 * (p < 3) + (kinds[layout][p] == 2 ? 0.25 : 0);
            uint8_t b[8];
            if (kinds[layout][p] == 2 && size[layout][p] == 4) {
                const float f = (float)val;
                memcpy(b, &f, 4);
            } else if (kinds[layout][p] == 2) {
                memcpy(b, &val, 8);
            } else {
                const int64_t v = (int64_t)val;
                memcpy(b, &v, 8);
            }
            for (int j = 0; j < size[layout][p]; j++)
                buf[k++] = big ? b[size[layout][p] - 1 - j] : b[j];
        }
    if (layout == 1) { /* the face: 3 corners */
        const uint8_t face_le[13] = {3, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0}, face_be[13] = {3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2};
        memcpy(buf + k, big ? face_be : face_le, 13);
        k += 13;
    }
    return suffix_seed(dir, name, 2, buf, k);
}

static int cloud_seeds(const char *dir)
{
    int bad = 0;
    bad |= suffix_text(dir, "plain.xyz", 0, "0 0 0\n0.05 0.02 0.01\n-0.03 0.04 0.1\n0.2 -0.1 0.05\n");
    bad |= suffix_text(dir, "header.xyz", 5,
                       "\xef\xbb\xbf" "x y z\n# scanner export\n\n1.5 2.5 -0.5 # first\n1.52e0 2.51 -0.49\n  1.6\t2.4 -0.45\n");
    bad |= suffix_text(dir, "crlf.xyz", 0, "//X Y Z\r\n0.1 0.2 0.3\r\n0.12 0.22 0.31 \r\n# end\r\n0.4 0.1 0.2\r\n");
    bad |= suffix_text(dir, "cr-alone.xyz", 0, "0 0 0\r1 1 1\r2 2 2\r");
    bad |= suffix_text(dir, "mesh.obj", 1,
                       "# an OBJ cloud\nmtllib scan.mtl\no scan\ng part\nv 0 0 0\nv 0.1 0 0 0.5 0.25 1\n\tv\t0 0.1 0\n"
                       "vn 0 0 1\nvt 0.5 0.5\nv 0.02 0.03 0.05 1.0\nusemtl none\ns off\nf 1 2 3\nf 1/1/1 2/1/1 4/1/1\n");
    bad |= suffix_text(dir, "points.obj", 6, "v -1 -1 -1\nv 1 1 1 # corner\nv 0.5 -0.5 0.25 0 0 0\n");
    bad |= suffix_text(dir, "ascii.ply", 2,
                       "ply\nformat ascii 1.0\ncomment made by hand\nelement vertex 4\nproperty float x\nproperty float y\n"
                       "property float z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\n"
                       "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
                       "0 0 0 255 0 0\n0.1 0 0 0 255 0\n0 0.1 0 0 0 255\n0.05 0.05 0.2 9 9 9\n3 0 1 2\n");
    bad |= suffix_text(dir, "camera-first.ply", 7,
                       "ply\nformat ascii 1.0\nelement camera 2\nproperty float view_px\nproperty float view_py\n"
                       "element vertex 3\nproperty double nx\nproperty double z\nproperty double y\nproperty double x\n"
                       "end_header\n1 2\n3 4\n0 0.5 0.25 -1\n1 0.5 0.3 -1.1\n0 0.6 0.2 -0.9\n");
    for (int layout = 0; layout < 3; layout++)
        for (int big = 0; big < 2; big++) {
            char name[32];
            snprintf(name, sizeof name, "binary%d-%s.ply", layout, big ? "be" : "le");
            bad |= cloud_ply_binary(dir, name, layout, big);
        }
    bad |= suffix_text(dir, "points.off", 3, "OFF\n# a cloud\n4 0 0\n0 0 0\n0.1 0 0\n0 0.1 0\n0 0 0.1\n");
    bad |= suffix_text(dir, "colours.off", 8, "COFF 3 1 0\n\n0 0 0 1 0 0 1\n0.1 0 0 0 1 0 1\n0 0.1 0 0 0 1 1\n3 0 1 2 0.5 0.5 0.5\n");
    bad |= suffix_text(dir, "hom.off", 3, "# homogeneous\n4nOFF\n3\n2 0 0\n0 0 0 2\n0.2 0.4 0.6 2\n");
    bad |= suffix_text(dir, "tri.stl", 4,
                       "solid cloud\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 0.1 0 0\nvertex 0 0.1 0\n"
                       "endloop\nendfacet\nendsolid cloud\n");
    return bad;
}

/* fuzz_mesh's selectors past the first four, in its suffix[] order */
enum { SEL_GLTF = 4, SEL_GLB, SEL_DAE, SEL_3DS, SEL_X, SEL_FBX, SEL_MS3D, SEL_LWO, SEL_BLEND, SEL_3MF, SEL_ASE, SEL_MD2,
       SEL_MD3, SEL_MDL, SEL_IFC, SEL_AC, SEL_NFF, SEL_RAW, SEL_SMD, SEL_XGL, SEL_AMF, SEL_IRRMESH };

/* the seeds' tetrahedron: corners and outward triangles */
static const float tet_v[4][3] = {{0, 0, 0}, {0.1f, 0, 0}, {0, 0.1f, 0}, {0, 0, 0.1f}};
static const uint16_t tet_t[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};

/* little-endian writers into buf at *k */
static void put_u16(uint8_t *buf, size_t *k, unsigned x)
{
    buf[(*k)++] = (uint8_t)x, buf[(*k)++] = (uint8_t)(x >> 8);
}

static void put_u32(uint8_t *buf, size_t *k, uint32_t x)
{
    for (int i = 0; i < 4; i++)
        buf[(*k)++] = (uint8_t)(x >> (8 * i));
}

static void put_f32(uint8_t *buf, size_t *k, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put_u32(buf, k, u);
}

/* the glTF buffer: 12 uint16 indices, then 4 float positions (72 bytes) */
static size_t tet_gltf_buffer(uint8_t *buf)
{
    size_t k = 0;
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < 3; c++)
            put_u16(buf, &k, tet_t[i][c]);
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < 3; c++)
            put_f32(buf, &k, tet_v[i][c]);
    return k;
}

static const char gltf_head[] =
    "{\"asset\":{\"version\":\"2.0\"},\"scene\":0,\"scenes\":[{\"nodes\":[0]}],\"nodes\":[{\"mesh\":0,\"translation\":[0,0,0.5]}],"
    "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":1},\"indices\":0}]}],"
    "\"accessors\":[{\"bufferView\":0,\"componentType\":5123,\"count\":12,\"type\":\"SCALAR\"},"
    "{\"bufferView\":1,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\",\"min\":[0,0,0],\"max\":[0.1,0.1,0.1]}],"
    "\"bufferViews\":[{\"buffer\":0,\"byteOffset\":0,\"byteLength\":24,\"target\":34963},"
    "{\"buffer\":0,\"byteOffset\":24,\"byteLength\":48,\"target\":34962}],";

/* glTF 2.0 text, the buffer as a base64 data URI */
static int gltf_seed(const char *dir)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint8_t bin[72];
    const size_t nb = tet_gltf_buffer(bin);
    char text[1536], enc[100];
    size_t e = 0;
    for (size_t i = 0; i < nb; i += 3) { /* 72 bytes: no padding */
        const uint32_t v = (uint32_t)bin[i] << 16 | (uint32_t)bin[i + 1] << 8 | bin[i + 2];
        for (int s = 18; s >= 0; s -= 6)
            enc[e++] = b64[(v >> s) & 63];
    }
    enc[e] = 0;
    snprintf(text, sizeof text, "%s\"buffers\":[{\"byteLength\":%zu,\"uri\":\"data:application/octet-stream;base64,%s\"}]}",
             gltf_head, nb, enc);
    return suffix_text(dir, "tet.gltf", SEL_GLTF, text);
}

/* binary glTF: header, JSON chunk (padded with blanks), BIN chunk */
static int glb_seed(const char *dir)
{
    char json[1024];
    int nj = snprintf(json, sizeof json, "%s\"buffers\":[{\"byteLength\":72}]}", gltf_head);
    while (nj % 4)
        json[nj++] = ' ';
    uint8_t buf[1536], bin[72];
    const size_t nb = tet_gltf_buffer(bin);
    size_t k = 0;
    memcpy(buf, "glTF", 4), k = 4;
    put_u32(buf, &k, 2);
    put_u32(buf, &k, (uint32_t)(12 + 8 + (size_t)nj + 8 + nb));
    put_u32(buf, &k, (uint32_t)nj);
    memcpy(buf + k, "JSON", 4), k += 4;
    memcpy(buf + k, json, (size_t)nj), k += (size_t)nj;
    put_u32(buf, &k, (uint32_t)nb);
    memcpy(buf + k, "BIN", 4), k += 4;
    memcpy(buf + k, bin, nb), k += nb;
    return suffix_seed(dir, "tet.glb", SEL_GLB, buf, k);
}

/* 3DS: main chunk, editor, an object with a triangle mesh (vertex and
 * face lists); a chunk is its id, its length with the 6-byte head, its
 * data */
static int tds_seed(const char *dir)
{
    uint8_t buf[512];
    size_t k = 0, at[4];
    const unsigned id[4] = {0x4d4d, 0x3d3d, 0x4000, 0x4100};
    for (int c = 0; c < 4; c++) {
        at[c] = k;
        put_u16(buf, &k, id[c]);
        put_u32(buf, &k, 0); /* length, set below */
        if (id[c] == 0x4000)
            memcpy(buf + k, "tet", 4), k += 4;
    }
    put_u16(buf, &k, 0x4110);
    put_u32(buf, &k, 6 + 2 + 4 * 12);
    put_u16(buf, &k, 4);
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < 3; c++)
            put_f32(buf, &k, tet_v[i][c]);
    put_u16(buf, &k, 0x4120);
    put_u32(buf, &k, 6 + 2 + 4 * 8);
    put_u16(buf, &k, 4);
    for (int i = 0; i < 4; i++) {
        for (int c = 0; c < 3; c++)
            put_u16(buf, &k, tet_t[i][c]);
        put_u16(buf, &k, 7); /* edge flags */
    }
    for (int c = 0; c < 4; c++) {
        size_t p = at[c] + 2;
        put_u32(buf, &p, (uint32_t)(k - at[c]));
    }
    return suffix_seed(dir, "tet.3ds", SEL_3DS, buf, k);
}

/* MilkShape 3D: header, vertices, triangles, one group, no materials,
 * the animation fields, no joints */
static int ms3d_seed(const char *dir)
{
    uint8_t buf[512];
    size_t k = 0;
    memcpy(buf, "MS3D000000", 10), k = 10;
    put_u32(buf, &k, 4);
    put_u16(buf, &k, 4);
    for (int i = 0; i < 4; i++) {
        buf[k++] = 0;
        for (int c = 0; c < 3; c++)
            put_f32(buf, &k, tet_v[i][c]);
        buf[k++] = 0xff; /* no bone */
        buf[k++] = 1;
    }
    put_u16(buf, &k, 4);
    for (int i = 0; i < 4; i++) {
        put_u16(buf, &k, 0);
        for (int c = 0; c < 3; c++)
            put_u16(buf, &k, tet_t[i][c]);
        for (int c = 0; c < 15; c++) /* normals, s, t */
            put_f32(buf, &k, c == 2 || c == 5 || c == 8 ? 1.0f : 0.0f);
        buf[k++] = 1, buf[k++] = 0; /* smoothing group, group */
    }
    put_u16(buf, &k, 1);
    buf[k++] = 0;
    memset(buf + k, 0, 32), memcpy(buf + k, "tet", 3), k += 32;
    put_u16(buf, &k, 4);
    for (unsigned i = 0; i < 4; i++)
        put_u16(buf, &k, i);
    buf[k++] = 0xff; /* no material */
    put_u16(buf, &k, 0);
    put_f32(buf, &k, 24.0f);
    put_f32(buf, &k, 0.0f);
    put_u32(buf, &k, 1);
    put_u16(buf, &k, 0);
    return suffix_seed(dir, "tet.ms3d", SEL_MS3D, buf, k);
}

/* the other formats: text tetrahedra, and the magic of the binary ones
 * this file does not write whole (the fuzzer grows the rest) */
static int format_seeds(const char *dir)
{
    int bad = gltf_seed(dir) | glb_seed(dir) | tds_seed(dir) | ms3d_seed(dir);
    bad |= suffix_text(
        dir, "tet.dae", SEL_DAE,
        "<?xml version=\"1.0\"?>\n<COLLADA xmlns=\"http://www.collada.org/2005/11/COLLADASchema\" version=\"1.4.1\">\n"
        "<asset><unit meter=\"1\"/><up_axis>Z_UP</up_axis></asset>\n<library_geometries><geometry id=\"g\"><mesh>\n"
        "<source id=\"p\"><float_array id=\"pa\" count=\"12\">0 0 0 0.1 0 0 0 0.1 0 0 0 0.1</float_array>\n"
        "<technique_common><accessor source=\"#pa\" count=\"4\" stride=\"3\"><param name=\"X\" type=\"float\"/>"
        "<param name=\"Y\" type=\"float\"/><param name=\"Z\" type=\"float\"/></accessor></technique_common></source>\n"
        "<vertices id=\"v\"><input semantic=\"POSITION\" source=\"#p\"/></vertices>\n"
        "<triangles count=\"4\"><input semantic=\"VERTEX\" source=\"#v\" offset=\"0\"/><p>0 2 1 0 1 3 0 3 2 1 2 3</p></triangles>\n"
        "</mesh></geometry></library_geometries>\n<library_visual_scenes><visual_scene id=\"s\"><node id=\"n\">"
        "<matrix>1 0 0 0 0 1 0 0 0 0 1 0.5 0 0 0 1</matrix><instance_geometry url=\"#g\"/></node></visual_scene>"
        "</library_visual_scenes>\n<scene><instance_visual_scene url=\"#s\"/></scene>\n</COLLADA>\n");
    bad |= suffix_text(dir, "tet.x", SEL_X,
                       "xof 0303txt 0032\nMesh tet {\n4;\n0.0;0.0;0.0;,\n0.1;0.0;0.0;,\n0.0;0.1;0.0;,\n0.0;0.0;0.1;;\n"
                       "4;\n3;0,2,1;,\n3;0,1,3;,\n3;0,3,2;,\n3;1,2,3;;\n}\n");
    bad |= suffix_text(dir, "tet.ase", SEL_ASE,
                       "*3DSMAX_ASCIIEXPORT 200\n*GEOMOBJECT {\n *NODE_NAME \"tet\"\n *MESH {\n  *TIMEVALUE 0\n"
                       "  *MESH_NUMVERTEX 4\n  *MESH_NUMFACES 4\n  *MESH_VERTEX_LIST {\n   *MESH_VERTEX 0 0 0 0\n"
                       "   *MESH_VERTEX 1 0.1 0 0\n   *MESH_VERTEX 2 0 0.1 0\n   *MESH_VERTEX 3 0 0 0.1\n  }\n"
                       "  *MESH_FACE_LIST {\n   *MESH_FACE 0: A: 0 B: 2 C: 1 AB: 1 BC: 1 CA: 1\n"
                       "   *MESH_FACE 1: A: 0 B: 1 C: 3 AB: 1 BC: 1 CA: 1\n   *MESH_FACE 2: A: 0 B: 3 C: 2 AB: 1 BC: 1 CA: 1\n"
                       "   *MESH_FACE 3: A: 1 B: 2 C: 3 AB: 1 BC: 1 CA: 1\n  }\n }\n}\n");
    bad |= suffix_text(dir, "tet.ac", SEL_AC,
                       "AC3Db\nMATERIAL \"m\" rgb 1 1 1  amb 0.2 0.2 0.2  emis 0 0 0  spec 0.5 0.5 0.5  shi 10  trans 0\n"
                       "OBJECT world\nkids 1\nOBJECT poly\nname \"tet\"\nloc 0 0 0.5\nnumvert 4\n0 0 0\n0.1 0 0\n0 0.1 0\n"
                       "0 0 0.1\nnumsurf 4\nSURF 0x10\nmat 0\nrefs 3\n0 0 0\n2 0 0\n1 0 0\nSURF 0x10\nmat 0\nrefs 3\n"
                       "0 0 0\n1 0 0\n3 0 0\nSURF 0x10\nmat 0\nrefs 3\n0 0 0\n3 0 0\n2 0 0\nSURF 0x10\nmat 0\nrefs 3\n"
                       "1 0 0\n2 0 0\n3 0 0\nkids 0\n");
    bad |= suffix_text(dir, "tet.nff", SEL_NFF,
                       "f 1 0 0 1 0 0 0 0\np 3\n0 0 0\n0 0.1 0\n0.1 0 0\np 3\n0 0 0\n0.1 0 0\n0 0 0.1\np 3\n0 0 0\n0 0 0.1\n"
                       "0 0.1 0\npp 3\n0.1 0 0 1 1 1\n0 0.1 0 1 1 1\n0 0 0.1 1 1 1\ns 0 0 1 0.05\n");
    bad |= suffix_text(dir, "tet.raw", SEL_RAW,
                       "tet\n0 0 0 0 0.1 0 0.1 0 0\n0 0 0 0.1 0 0 0 0 0.1\n0 0 0 0 0 0.1 0 0.1 0\n"
                       "1 1 1 0.1 0 0 0 0.1 0 0 0 0.1\n");
    bad |= suffix_text(dir, "tet.smd", SEL_SMD,
                       "version 1\nnodes\n0 \"root\" -1\nend\nskeleton\ntime 0\n0 0 0 0 0 0 0\nend\ntriangles\nm\n"
                       "0 0 0 0 0 0 -1 0 0\n0 0 0.1 0 0 0 -1 0 1\n0 0.1 0 0 0 0 -1 1 0\nm\n"
                       "0 0 0 0 0 -1 0 0 0\n0 0.1 0 0 0 -1 0 0 1\n0 0 0 0.1 0 -1 0 1 0\nend\n");
    bad |= suffix_text(dir, "tet.xgl", SEL_XGL,
                       "<WORLD><MESH ID=\"0\"><MAT ID=\"0\"><AMB>0.5,0.5,0.5</AMB><DIFF>0.5,0.5,0.5</DIFF></MAT><P ID=\"0\">0,0,0</P><P ID=\"1\">0.1,0,0</P><P ID=\"2\">0,0.1,0</P>"
                       "<P ID=\"3\">0,0,0.1</P><F><MATREF>0</MATREF><FV1><PREF>0</PREF></FV1><FV2><PREF>2</PREF></FV2><FV3><PREF>1</PREF></FV3></F>"
                       "<F><MATREF>0</MATREF><FV1><PREF>0</PREF></FV1><FV2><PREF>1</PREF></FV2><FV3><PREF>3</PREF></FV3></F>"
                       "<F><MATREF>0</MATREF><FV1><PREF>0</PREF></FV1><FV2><PREF>3</PREF></FV2><FV3><PREF>2</PREF></FV3></F>"
                       "<F><MATREF>0</MATREF><FV1><PREF>1</PREF></FV1><FV2><PREF>2</PREF></FV2><FV3><PREF>3</PREF></FV3></F></MESH>"
                       "<OBJECT><TRANSFORM><POSITION>0,0,0.5</POSITION></TRANSFORM><MESHREF>0</MESHREF></OBJECT></WORLD>\n");
    bad |= suffix_text(dir, "tet.amf", SEL_AMF,
                       "<?xml version=\"1.0\"?>\n<amf unit=\"meter\"><object id=\"0\"><mesh><vertices>"
                       "<vertex><coordinates><x>0</x><y>0</y><z>0</z></coordinates></vertex>"
                       "<vertex><coordinates><x>0.1</x><y>0</y><z>0</z></coordinates></vertex>"
                       "<vertex><coordinates><x>0</x><y>0.1</y><z>0</z></coordinates></vertex>"
                       "<vertex><coordinates><x>0</x><y>0</y><z>0.1</z></coordinates></vertex></vertices><volume>"
                       "<triangle><v1>0</v1><v2>2</v2><v3>1</v3></triangle><triangle><v1>0</v1><v2>1</v2><v3>3</v3></triangle>"
                       "<triangle><v1>0</v1><v2>3</v2><v3>2</v3></triangle><triangle><v1>1</v1><v2>2</v2><v3>3</v3></triangle>"
                       "</volume></mesh></object></amf>\n");
    bad |= suffix_text(dir, "tet.irrmesh", SEL_IRRMESH,
                       "<?xml version=\"1.0\"?>\n<mesh xmlns=\"http://irrlicht.sourceforge.net/IRRMESH_09_2007\" version=\"1.0\">\n"
                       "<buffer><material></material><vertices type=\"standard\" vertexCount=\"4\">\n"
                       "0 0 0 0 0 1 ffffffff 0 0\n0.1 0 0 0 0 1 ffffffff 0 0\n0 0.1 0 0 0 1 ffffffff 0 0\n"
                       "0 0 0.1 0 0 1 ffffffff 0 0\n</vertices>\n<indices indexCount=\"12\">0 2 1 0 1 3 0 3 2 1 2 3</indices>\n"
                       "</buffer>\n</mesh>\n");
    bad |= suffix_text(dir, "tet.ifc", SEL_IFC,
                       "ISO-10303-21;\nHEADER;\nFILE_DESCRIPTION(('ViewDefinition [CoordinationView]'),'2;1');\n"
                       "FILE_NAME('tet.ifc','2026-01-01T00:00:00',(''),(''),'','','');\nFILE_SCHEMA(('IFC2X3'));\nENDSEC;\n"
                       "DATA;\n#1=IFCCARTESIANPOINT((0.,0.,0.));\n#2=IFCCARTESIANPOINT((0.1,0.,0.));\n"
                       "#3=IFCCARTESIANPOINT((0.,0.1,0.));\n#4=IFCPOLYLOOP((#1,#3,#2));\n#5=IFCFACEOUTERBOUND(#4,.T.);\n"
                       "#6=IFCFACE((#5));\n#7=IFCCLOSEDSHELL((#6));\n#8=IFCFACETEDBREP(#7);\nENDSEC;\nEND-ISO-10303-21;\n");
    /* binary FBX, LWO2, Blender, Quake models, 3MF (a zip): the magic */
    static const uint8_t fbx[] = "Kaydara FBX Binary  \0\x1a\0\xe8\x1c\0\0";
    bad |= suffix_seed(dir, "magic.fbx", SEL_FBX, fbx, sizeof fbx - 1);
    bad |= suffix_text(dir, "ascii.fbx", SEL_FBX,
                       "; FBX 7.4.0 project file\nFBXHeaderExtension:  {\n\tFBXHeaderVersion: 1003\n\tFBXVersion: 7400\n}\n"
                       "Objects:  {\n\tGeometry: 1, \"Geometry::tet\", \"Mesh\" {\n\t\tVertices: *12 {\n"
                       "\t\t\ta: 0,0,0,0.1,0,0,0,0.1,0,0,0,0.1\n\t\t}\n\t\tPolygonVertexIndex: *12 {\n"
                       "\t\t\ta: 0,2,-2,0,1,-4,0,3,-3,1,2,-4\n\t\t}\n\t}\n\tModel: 2, \"Model::tet\", \"Mesh\" {\n\t}\n}\n"
                       "Connections:  {\n\tC: \"OO\",1,2\n\tC: \"OO\",2,0\n}\n");
    static const uint8_t lwo[] = "FORM\0\0\0\x3cLWO2PNTS\0\0\0\x30"
                                 "\0\0\0\0\0\0\0\0\0\0\0\0\x3d\xcc\xcc\xcd\0\0\0\0\0\0\0\0\0\0\0\0\x3d\xcc\xcc\xcd"
                                 "\0\0\0\0\0\0\0\0\0\0\0\0\x3d\xcc\xcc\xcd";
    bad |= suffix_seed(dir, "pnts.lwo", SEL_LWO, lwo, sizeof lwo - 1);
    bad |= suffix_text(dir, "magic.blend", SEL_BLEND, "BLENDER-v279REND\x10\0\0\0");
    static const uint8_t zip[] = "PK\x03\x04\x14\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x13\0\0\0[Content_Types].xml";
    bad |= suffix_seed(dir, "magic.3mf", SEL_3MF, zip, sizeof zip - 1);
    bad |= suffix_text(dir, "magic.md2", SEL_MD2, "IDP2\x08");
    bad |= suffix_text(dir, "magic.md3", SEL_MD3, "IDP3\x0f");
    bad |= suffix_text(dir, "magic.mdl", SEL_MDL, "IDPO\x06");
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    char d[5][512], err[512];
    const char *sub[5] = {"ist", "vox", "osc", "mesh", "cloud"};
    if (mkdir(argv[1], 0755) && errno != EEXIST)
        return 1;
    for (int i = 0; i < 5; i++) {
        snprintf(d[i], sizeof d[i], "%s/%s", argv[1], sub[i]);
        if (mkdir(d[i], 0755) && errno != EEXIST) {
            fprintf(stderr, "fuzz_seeds: %s: %s\n", d[i], strerror(errno));
            return 1;
        }
    }
    /* a ball of 80 triangles, 24 inner spheres */
    prox_mesh *m = prox_mesh_make_sphere(0.05, 1);
    prox_ist_def def = prox_ist_def_default();
    def.target_spheres = 24;
    prox_ist *t;
    char path[600];
    snprintf(path, sizeof path, "%s/ball.ist", d[0]);
    if (!m || prox_ist_build(m, &def, &t, err, sizeof err) || prox_ist_save(t, path, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_ist_free(t);
    if (mesh_seed(d[3], "ball.off", 0, m, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_mesh_free(m);
    m = prox_mesh_make_box(prox_v3(0.1, 0.2, 0.05));
    if (!m || mesh_seed(d[3], "box.off", 0, m, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_mesh_free(m);
    static const char ply_tet[] = "ply\nformat ascii 1.0\ncomment a tetrahedron\nelement vertex 4\nproperty float x\n"
                                  "property float y\nproperty float z\nelement face 4\nproperty list uchar int vertex_indices\n"
                                  "end_header\n0 0 0\n0.1 0 0\n0 0.1 0\n0 0 0.1\n3 0 2 1\n3 0 1 3\n3 0 3 2\n3 1 2 3\n";
    char ply_lf[sizeof ply_tet + 1]; /* after a line end, where assimp finds the magic too */
    snprintf(ply_lf, sizeof ply_lf, "\n%s", ply_tet);
    static const char stl_tet[] = "solid tet\nfacet normal 0 0 -1\nouter loop\nvertex 0 0 0\nvertex 0 0.1 0\nvertex 0.1 0 0\nendloop\n"
                                  "endfacet\nfacet normal 0 -1 0\nouter loop\nvertex 0 0 0\nvertex 0.1 0 0\nvertex 0 0 0.1\nendloop\n"
                                  "endfacet\nfacet normal -1 0 0\nouter loop\nvertex 0 0 0\nvertex 0 0 0.1\nvertex 0 0.1 0\nendloop\n"
                                  "endfacet\nfacet normal 1 1 1\nouter loop\nvertex 0.1 0 0\nvertex 0 0.1 0\nvertex 0 0 0.1\nendloop\n"
                                  "endfacet\nendsolid tet\n";
    static const char obj_tet[] = "# a tetrahedron\no tet\nv 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nvn 0 0 -1\nvt 0 0\n"
                                  "f 1 3 2\nf 1/1/1 2/1/1 4/1/1\nf 1//1 4//1 3//1\nf 2 3 4\n";
    if (suffix_text(d[3], "tet.ply", 1, ply_tet) || suffix_text(d[3], "tet-lf.ply", 1, ply_lf) ||
        suffix_text(d[3], "tet.stl", 2, stl_tet) || suffix_text(d[3], "tet.obj", 3, obj_tet))
        return 1;
    prox_voxmap_def vd = {0.01, prox_v3(0, 0, 0), {8, 8, 8}, 256};
    prox_voxmap *vm = prox_voxmap_create(&vd, err, sizeof err);
    snprintf(path, sizeof path, "%s/map.vox", d[1]);
    for (int i = 0; vm && i < 6; i++)
        prox_voxmap_set(vm, i, i % 3, 2, 1 + i % 2);
    if (!vm || prox_voxmap_save(vm, path, err, sizeof err)) {
        fprintf(stderr, "fuzz_seeds: %s\n", err);
        return 1;
    }
    prox_voxmap_free(vm);
    int k = 0, bad = 0;
    bad |= osc_seed(d[2], k++, "/version", lo_message_new());
    bad |= osc_seed(d[2], k++, "/status", lo_message_new());
    lo_message p = lo_message_new();
    lo_message_add_string(p, "ball");
    for (int i = 0; i < 7; i++)
        lo_message_add_float(p, i == 3 ? 1.0f : 0.0f);
    bad |= osc_seed(d[2], k++, "/pose", p);
    lo_message tool = lo_message_new();
    lo_message_add_string(tool, "ball");
    bad |= osc_seed(d[2], k++, "/tool", tool);
    lo_message bud = lo_message_new();
    lo_message_add_double(bud, 200.0);
    bad |= osc_seed(d[2], k++, "/budget", bud);
    lo_message gains = lo_message_new();
    const float gv[7] = {2e6f, 0.005f, 400, 2, 800, 4, 1};
    for (int i = 0; i < 7; i++)
        lo_message_add_float(gains, gv[i]);
    bad |= osc_seed(d[2], k++, "/gains", gains);
    lo_message lim = lo_message_new();
    const float lv[6] = {8, 1, 0.5f, 0.5f, 50, 20};
    for (int i = 0; i < 6; i++)
        lo_message_add_float(lim, lv[i]);
    bad |= osc_seed(d[2], k++, "/limits", lim);
    lo_message fo = lo_message_new();
    lo_message_add_int32(fo, 1);
    bad |= osc_seed(d[2], k++, "/forces", fo);
    lo_message vs = lo_message_new();
    lo_message_add_string(vs, "map");
    for (int i = 0; i < 4; i++)
        lo_message_add_int32(vs, i == 3 ? 1 : i);
    bad |= osc_seed(d[2], k++, "/voxel/set", vs);
    int32_t rec[8] = {1, 2, 3, 1, 4, 5, 6, 2};
    lo_blob blob = lo_blob_new(sizeof rec, rec);
    lo_message vb = lo_message_new();
    lo_message_add_string(vb, "map");
    lo_message_add_blob(vb, blob);
    bad |= osc_seed(d[2], k++, "/voxel/batch", vb);
    lo_blob_free(blob);
    lo_message rm = lo_message_new();
    lo_message_add_string(rm, "ball");
    bad |= osc_seed(d[2], k++, "/remove", rm);
    lo_message ts = lo_message_new();
    lo_message_add_int32(ts, 10);
    bad |= osc_seed(d[2], k++, "/telemetry/subscribe", ts);
    lo_message dp = lo_message_new();
    for (int i = 0; i < 7; i++)
        lo_message_add_float(dp, i == 3 ? 1.0f : 0.0f);
    bad |= osc_seed(d[2], k++, "/device/pose", dp);
    /* a bundle: a budget and a pose, tagged "immediately" */
    lo_timetag now = {0, 1};
    lo_bundle b = lo_bundle_new(now);
    lo_message b1 = lo_message_new(), b2 = lo_message_new();
    lo_message_add_float(b1, 150.0f);
    lo_message_add_string(b2, "ball");
    for (int i = 0; i < 7; i++)
        lo_message_add_float(b2, i == 3 ? 1.0f : 0.0f);
    lo_bundle_add_message(b, "/budget", b1);
    lo_bundle_add_message(b, "/pose", b2);
    unsigned char buf[2048];
    size_t size = sizeof buf;
    bad |= lo_bundle_serialise(b, buf, &size) ? write_file(d[2], "bundle", buf, size) : -1;
    lo_bundle_free_recursive(b);
    bad |= cloud_seeds(d[4]);
    bad |= format_seeds(d[3]);
    return bad ? 1 : 0;
}
