/* mesh_load.c - load meshes through assimp (OBJ, OFF, STL, PLY, glTF, ...).
 *
 * We use assimp rather than our own parsers: it is well kept, in Debian,
 * and reads every format users bring. We only merge the scene's meshes
 * (applying node transforms), then weld and clean like every other mesh.
 *
 * Three things keep assimp's readers from handing us a wrong mesh or
 * taking the process down on a malformed file:
 * - aiProcess_ValidateDataStructure runs before any other step. Without
 *   it, a binary PLY with a face index of 1000000 crashed (SIGSEGV) in the
 *   triangulation step, and an OFF declaring 20 faces with 12 present
 *   aborted on an ai_assert there (the missing faces are left empty).
 * - OFF and PLY headers are read here first (mesh_header_check). assimp's
 *   readers reserve what the header declares before reading: a 300-byte OFF
 *   declaring 1e9 vertices and faces took 15.6 GB and 47 s before failing.
 *   We refuse counts the file cannot hold, and for the text forms (one
 *   element a line) a body with fewer lines than declared: assimp's PLY
 *   reader repeats the last line for each missing element (an ASCII cube
 *   declaring 20 faces with 12 present loaded as 20 triangles). PLY
 *   triangle strips are refused there: assimp 5.2 keeps one triangle of
 *   each strip. OFF text goes to assimp from memory without its comments
 *   (off_strip).
 * - the counts assimp returns, before triangulation, must equal the header's
 *   (its OFF reader skips faces of 0 or more than 9 corners silently).
 * - formats whose reader fuzz_mesh made hang, crash or fill memory, with
 *   no cheap check of ours to stop it, are refused by name
 *   (refused_formats); a binary glTF's chunk lengths are checked against
 *   the file (glb_check), and glTF's JSON must be what assimp's glTF 2
 *   reader takes (gltf_json_check), else assimp would hand the file to any
 *   reader that claims its content.
 * No aiProcess_JoinIdenticalVertices: it merges vertices closer than 1e-5
 * (absolute), which broke knot1 scaled by 1e-4 (3200 vertices became 3182,
 * 2 non-manifold edges). prox_mesh_from_arrays welds exact duplicates only,
 * which is all STL's per-triangle copies and OBJ's per-corner ones need.
 */
#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <jansson.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "off_keyword.h"
#include "ply_types.h"
#include "prox_mesh.h"

/* The most of a file read to tell OFF and PLY from other formats, and to
 * find a PLY header: real ones are well below 1 KiB, a longer one is
 * refused. Text files (OFF, ASCII PLY) are then read whole, as assimp does. */
enum { MESH_HEAD_MAX = 64 * 1024 };

/* A PLY element's layout, for the body checks (ply_ascii_body,
 * ply_binary_body): its count and each property's size in bytes (a list's:
 * its items'), a list's count type (size and kind; size 0 for a scalar
 * property). */
enum { PLY_MAX_ELEMENTS = 32, PLY_MAX_PROPS = 64 };
typedef struct ply_element {
    char name[32];
    unsigned long long count;
    unsigned props;
    uint8_t size[PLY_MAX_PROPS], csize[PLY_MAX_PROPS], ckind[PLY_MAX_PROPS];
} ply_element;

/* What an OFF or PLY header declares. */
typedef struct mesh_header {
    const char *format;            /* "OFF" or "PLY"; NULL for any other file (not checked) */
    int text;                      /* one element a line: OFF and ASCII PLY */
    unsigned long long vertices;   /* declared */
    unsigned long long faces;      /* declared */
    unsigned long long lines;      /* text: the body lines the declared elements take */
    unsigned long long min_bytes;  /* the least the whole file can take */
    size_t body;                   /* offset of the body */
    int body_line;                 /* the body's first line number */
    int big_endian;                /* binary PLY */
    unsigned elements;             /* PLY: el[] */
    ply_element el[PLY_MAX_ELEMENTS];
} mesh_header;

static unsigned long long sat_add(unsigned long long a, unsigned long long b)
{
    return a > ULLONG_MAX - b ? ULLONG_MAX : a + b;
}

static unsigned long long sat_mul(unsigned long long a, unsigned long long b)
{
    return b && a > ULLONG_MAX / b ? ULLONG_MAX : a * b;
}

/* The decimal digits at p (at least one), saturating; NULL if none. */
static const char *read_count(const char *p, const char *end, unsigned long long *v)
{
    if (p >= end || *p < '0' || *p > '9')
        return NULL;
    unsigned long long x = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        x = sat_add(sat_mul(x, 10), (unsigned long long)(*p - '0'));
    *v = x;
    return p;
}

/* A text body of `lines` element lines: each is at least a character and a
 * line end (the last may lack it). Only a bound against absurd counts;
 * count_lines finds a short body. Fuller bounds (6 bytes a vertex, 8 a
 * triangle) would refuse files assimp reads: "1 0" is a face, "0" a vertex. */
static unsigned long long text_min_bytes(size_t header, unsigned long long lines)
{
    return lines ? sat_add(header, sat_mul(lines, 2) - 1) : header;
}

/* Drops '#' comments and blank lines from OFF text in place, and ends it at
 * a NUL byte as assimp would. Returns the new length; t needs n + 2 bytes.
 * assimp's OFF reader skips comments only in the header: in the body it
 * takes a comment or blank line for a face of no corners and drops it,
 * so the file's last faces are lost. CGAL writes "# 12 facets" there: 8 of
 * the 138 meshes in data/ lost 2 faces each that way (sphere966, a closed
 * sphere, loaded with 4 boundary edges). */
static size_t off_strip(char *t, size_t n)
{
    size_t w = 0, i = 0;
    int end = 0;
    while (i < n && !end) {
        size_t start = i, cut;
        while (i < n && t[i] && t[i] != '\n' && t[i] != '\r')
            i++;
        end = i >= n || !t[i];
        const char *hash = memchr(t + start, '#', i - start);
        cut = hash ? (size_t)(hash - t) : i;
        size_t k = start;
        while (k < cut && isspace((unsigned char)t[k]))
            k++;
        i++; /* past the line end (the text was read before it is written over) */
        if (k < cut) {
            memmove(t + w, t + start, cut - start);
            w += cut - start;
            t[w++] = '\n'; /* w <= i: at most the line end just passed */
        }
    }
    t[w] = 0;
    return w;
}

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && isspace((unsigned char)*p))
        p++;
    return p;
}

/* OFF's keyword, [ST][C][N][4][n]OFF (as assimp reads it), first in p
 * after white space and '#' comment lines: returns the end of it and sets
 * *has_dim (a dimension follows), or NULL. */
static const char *off_keyword(const char *p, const char *end, int *has_dim)
{
    for (;;) {
        p = skip_space(p, end);
        if (p >= end || *p != '#')
            break;
        while (p < end && *p != '\n' && *p != '\r')
            p++;
    }
    int hom;
    return off_keyword_at(p, end, &hom, has_dim);
}

/* OFF header in comment-free text: [keyword] [dimension] vertices faces
 * [edges]; the counts alone are allowed in a file named .off. Returns 0 and
 * fills h, or -1 with err: a header we cannot read is refused, since assimp
 * might read other counts from it than we did. */
static int off_header(const char *t, size_t n, mesh_header *h, const char *path, char *err, size_t errlen)
{
    const char *end = t + n, *p = t;
    int has_dim;
    const char *k = off_keyword(t, end, &has_dim);
    if (k) {
        p = k;
        unsigned long long dim;
        if ((p < end && !isspace((unsigned char)*p)) || (has_dim && !(p = read_count(skip_space(p, end), end, &dim))))
            goto bad;
    }
    if (!(p = read_count(skip_space(p, end), end, &h->vertices)) ||
        !(p = read_count(skip_space(p, end), end, &h->faces)))
        goto bad;
    unsigned long long edges;
    const char *q = read_count(skip_space(p, end), end, &edges); /* assimp reads and ignores it */
    h->format = "OFF";
    h->text = 1;
    h->lines = sat_add(h->vertices, h->faces);
    h->body = (size_t)((q ? q : p) - t);
    h->min_bytes = text_min_bytes(h->body, h->lines);
    return 0;
bad:
    snprintf(err, errlen, "%s: unreadable OFF header (want [OFF] then vertex, face and edge counts)", path);
    return -1;
}

/* Bytes of a PLY scalar type; 0 if unknown. */
static unsigned ply_type_size(const char *t, size_t len)
{
    int size, kind;
    return ply_scalar_type(t, len, &size, &kind) == 0 ? (unsigned)size : 0;
}

static int token_is(const char *t, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(t, word, len) == 0;
}

/* PLY header (the caller saw the magic): format, elements with their
 * counts and properties, end_header. Returns 0 and fills h, or -1 with err. */
static int ply_header(const char *head, size_t n, int whole, mesh_header *h, const char *path, int lineno, char *err,
                      size_t errlen)
{
    const char *end = head + n, *line = memchr(head, '\n', n);
    int format = 0;                        /* 1 ascii, 2 binary */
    int in_vertex = 0, in_face = 0, have_element = 0, element_lines = 0;
    unsigned long long count = 0, elements = 0, binary_bytes = 0;
    while (line && line + 1 < end) {
        const char *s = line + 1, *e = memchr(s, '\n', (size_t)(end - s));
        if (!e)
            break; /* no full line left */
        line = e;
        lineno++;
        const char *tok[6];
        size_t len[6];
        int nt = 0;
        for (const char *p = s; p < e && nt < 6;) {
            p = skip_space(p, e);
            if (p >= e)
                break;
            tok[nt] = p;
            while (p < e && !isspace((unsigned char)*p))
                p++;
            len[nt] = (size_t)(p - tok[nt]);
            nt++;
        }
        if (nt == 0 || token_is(tok[0], len[0], "comment") || token_is(tok[0], len[0], "obj_info"))
            continue;
        if (token_is(tok[0], len[0], "format") && nt >= 2) {
            format = token_is(tok[1], len[1], "ascii") ? 1
                     : token_is(tok[1], len[1], "binary_little_endian") || token_is(tok[1], len[1], "binary_big_endian")
                         ? 2
                         : 0;
            h->big_endian = token_is(tok[1], len[1], "binary_big_endian");
            if (!format)
                goto bad;
        } else if (token_is(tok[0], len[0], "element") && nt == 3) {
            /* (words after the count: unreadable, below. One glued to its
             * list property, "element face 55560595668 -st uchar int
             * vertex_indices", hung assimp's reader: found by fuzz_mesh) */
            if (read_count(tok[2], tok[2] + len[2], &count) != tok[2] + len[2])
                goto bad;
            in_vertex = token_is(tok[1], len[1], "vertex");
            in_face = token_is(tok[1], len[1], "face");
            if (in_vertex)
                h->vertices = count;
            if (in_face)
                h->faces = count;
            if (token_is(tok[1], len[1], "tristrips")) {
                /* assimp 5.2's PLY reader keeps one triangle of each strip
                 * (a strip of two triangles, or of three joined by -1
                 * restarts, loaded as one): a wrong mesh, not an error */
                snprintf(err, errlen,
                         "%s: PLY triangle strips (element tristrips, line %d) are not supported: assimp reads one "
                         "triangle of each strip; save the mesh with a face list",
                         path, lineno);
                return -1;
            }
            if (h->elements == PLY_MAX_ELEMENTS) {
                snprintf(err, errlen, "%s: more than %d PLY elements (line %d)", path, PLY_MAX_ELEMENTS, lineno);
                return -1;
            }
            ply_element *el = &h->el[h->elements++];
            snprintf(el->name, sizeof el->name, "%.*s", (int)(len[1] < sizeof el->name ? len[1] : sizeof el->name - 1), tok[1]);
            el->count = count;
            have_element = 1;
            element_lines = 0;
        } else if (token_is(tok[0], len[0], "property") && nt >= 3 && have_element) {
            unsigned bytes;
            ply_element *el = &h->el[h->elements - 1];
            if (el->props == PLY_MAX_PROPS) {
                snprintf(err, errlen, "%s: a PLY element with more than %d properties (line %d)", path, PLY_MAX_PROPS, lineno);
                return -1;
            }
            const unsigned k = el->props++;
            if (token_is(tok[1], len[1], "list") && nt >= 5) {
                int csize, ckind, isize, ikind;
                if (ply_scalar_type(tok[2], len[2], &csize, &ckind) || ckind == PLY_FLOAT ||
                    ply_scalar_type(tok[3], len[3], &isize, &ikind))
                    goto bad; /* (a float count: assimp would take it as a number of values) */
                el->size[k] = (uint8_t)isize, el->csize[k] = (uint8_t)csize, el->ckind[k] = (uint8_t)ckind;
                /* Binary has no lines to count, so a face's index list is
                 * counted at 3 indices: then a triangle mesh's size is exact
                 * and any cut is seen (one vertex short: 252 bytes of 264).
                 * It refuses a binary file with a point or line face. */
                int corners = in_face && (token_is(tok[4], len[4], "vertex_indices") ||
                                          token_is(tok[4], len[4], "vertex_index"))
                                  ? 3
                                  : 0;
                bytes = (unsigned)csize + (unsigned)corners * (unsigned)isize;
            } else if (!(bytes = ply_type_size(tok[1], len[1]))) {
                goto bad;
            } else {
                el->size[k] = (uint8_t)bytes;
            }
            binary_bytes = sat_add(binary_bytes, sat_mul(count, bytes));
            if (!element_lines) /* in ASCII each element with properties is a line */
                elements = sat_add(elements, count);
            element_lines = 1;
        } else if (token_is(tok[0], len[0], "end_header")) {
            if (!format)
                goto bad;
            h->format = "PLY";
            h->text = format == 1;
            h->lines = elements;
            h->body = (size_t)(e + 1 - head);
            h->body_line = lineno + 1;
            h->min_bytes = format == 1 ? text_min_bytes(h->body, elements) : sat_add(h->body, binary_bytes);
            return 0;
        } else if (isdigit((unsigned char)*tok[0]) || *tok[0] == '-' || *tok[0] == '.') {
            snprintf(err, errlen, "%s: PLY header without end_header (line %d holds values)", path, lineno);
            return -1;
        } else {
            /* too few words, a property before any element, or a line the
             * format does not have (assimp read on past one and, a few
             * lines later, took an ASCII face's list count of 4e9 and
             * filled 16 GB: found by fuzz_mesh) */
            goto bad;
        }
    }
    if (!whole)
        snprintf(err, errlen, "%s: PLY header without end_header in the first %d KiB", path, MESH_HEAD_MAX / 1024);
    else
        snprintf(err, errlen, "%s: PLY header without end_header", path);
    return -1;
bad:
    snprintf(err, errlen, "%s: unreadable PLY header (line %d)", path, lineno);
    return -1;
}

/* Non-blank lines in [p, end), counting no further than `want`. */
static unsigned long long count_lines(const char *p, const char *end, unsigned long long want)
{
    unsigned long long lines = 0;
    int filled = 0;
    for (; p < end && lines < want; p++) {
        if (*p == '\n' || *p == '\r') {
            lines += (unsigned long long)filled;
            filled = 0;
        } else if (!isspace((unsigned char)*p)) {
            filled = 1;
        }
    }
    return lines + (unsigned long long)filled;
}

/* A PLY body against its header. assimp's PLY reader trusts a list's
 * count: an ASCII face line "4000000000 0 1 3" made it reserve 16 GB (and
 * fill it, 15 s, where the allocation succeeded; found by fuzz_mesh), a
 * binary face's count of 100,000 in a 200-byte file took 1.3 GB and half
 * a second before "File corrupted", and an ASCII "300 0 1 3" read the next
 * lines' values as that face's corners. So, element by element:
 * - ASCII: each element a line (blank lines skipped, as count_lines
 *   does), with as many values as its properties take, each list's count
 *   a whole number;
 * - binary: each list's count at most the values the rest of the file
 *   could hold, and not negative; the elements end within the file.
 * What follows the declared elements is not read. 0, or -1 with err
 * naming the line (ASCII) or the element. */
static int ply_ascii_body(const char *p, const char *end, const mesh_header *h, const char *path, char *err, size_t errlen)
{
    unsigned long long lineno = (unsigned long long)h->body_line;
    for (unsigned k = 0; k < h->elements; k++) {
        const ply_element *el = &h->el[k];
        for (unsigned long long i = 0; i < el->count && el->props; i++) {
            const char *e;
            for (;; p = e + 1, lineno++) { /* the next line with a value */
                if (p >= end)
                    return 0; /* short: count_lines says so */
                e = memchr(p, '\n', (size_t)(end - p));
                e = e ? e : end;
                const char *q = p;
                while (q < e && isspace((unsigned char)*q))
                    q++;
                if (q < e)
                    break;
            }
            /* value at_value of the line is property prop's first */
            unsigned long long values = 0, want = 0, at_value = 0;
            unsigned prop = 0;
            for (const char *q = p; q < e;) {
                while (q < e && isspace((unsigned char)*q))
                    q++;
                if (q >= e)
                    break;
                const char *t = q;
                while (q < e && !isspace((unsigned char)*q))
                    q++;
                if (values == at_value && prop < el->props) {
                    unsigned long long c = 0;
                    if (el->csize[prop] && read_count(t, q, &c) != q) {
                        snprintf(err, errlen, "%s:%llu: PLY %s %llu: a list count that is not a whole number ('%.*s')", path, lineno,
                                 el->name, i, (int)(q - t < 32 ? q - t : 32), t);
                        return -1;
                    }
                    want = sat_add(want, sat_add(c, 1)); /* a scalar, or a list's count and its values */
                    at_value = want;
                    prop++;
                }
                values++;
            }
            if (prop < el->props || values != want) {
                if (prop < el->props)
                    snprintf(err, errlen, "%s:%llu: PLY %s %llu has %llu values, too few for its %u properties (one element a line)",
                             path, lineno, el->name, i, values, el->props);
                else
                    snprintf(err, errlen, "%s:%llu: PLY %s %llu has %llu values, its properties with their list counts take %llu (one "
                                          "element a line)",
                             path, lineno, el->name, i, values, want);
                return -1;
            }
            p = e + 1, lineno++;
        }
    }
    return 0;
}

/* A binary PLY list count of size bytes at p, as signed or not (kind). */
static long long ply_count_at(const unsigned char *p, int size, int kind, int big)
{
    unsigned long long u = 0;
    for (int i = 0; i < size; i++)
        u |= (unsigned long long)p[big ? i : size - 1 - i] << (8 * (size - 1 - i));
    if (kind == PLY_SIGNED && size < 8 && (u >> (8 * size - 1)) & 1)
        return (long long)u - (1ll << (8 * size));
    return (long long)u;
}

static int ply_binary_body(const unsigned char *p, const unsigned char *end, const mesh_header *h, const char *path, char *err,
                           size_t errlen)
{
    for (unsigned k = 0; k < h->elements; k++) {
        const ply_element *el = &h->el[k];
        for (unsigned long long i = 0; i < el->count && el->props; i++) /* (no properties: no bytes, however many) */
            for (unsigned q = 0; q < el->props; q++) {
                const size_t left = (size_t)(end - p);
                if (!el->csize[q]) {
                    if (left < el->size[q])
                        goto short_file;
                    p += el->size[q];
                    continue;
                }
                if (left < el->csize[q])
                    goto short_file;
                const long long c = ply_count_at(p, el->csize[q], el->ckind[q], h->big_endian);
                p += el->csize[q];
                if (c < 0 || (unsigned long long)c > (left - el->csize[q]) / el->size[q]) {
                    snprintf(err, errlen, "%s: PLY %s %llu: a list of %lld values, %s", path, el->name, i, c,
                             c < 0 ? "a negative count" : "more than the rest of the file holds");
                    return -1;
                }
                p += (size_t)c * el->size[q];
            }
    }
    return 0;
short_file:
    snprintf(err, errlen, "%s: truncated: the PLY body ends inside its elements", path);
    return -1;
}

/* Where assimp 5.2.5 takes a file for PLY (by content, whatever its name,
 * and where its PLY reader finds the magic): 'ply' in any case, first in
 * the file or after one line end, LF or CR LF (measured: "\nply" and
 * "pLy" read; two line ends, or a blank or a tab first, do not). The
 * offset of the magic, or SIZE_MAX. Checking only "ply" and "PLY" at the
 * start let "\nply" files past the header checks: fuzz_cloud found one
 * that kept assimp's PLY reader busy for over a minute. */
static size_t ply_magic(const char *t, size_t n)
{
    const size_t at = n >= 1 && t[0] == '\n' ? 1 : n >= 2 && t[0] == '\r' && t[1] == '\n' ? 2 : 0;
    return n >= at + 3 && tolower((unsigned char)t[at]) == 'p' && tolower((unsigned char)t[at + 1]) == 'l' &&
                   tolower((unsigned char)t[at + 2]) == 'y'
               ? at
               : SIZE_MAX;
}

/* Formats whose assimp 5.2.5 reader fuzz_mesh made hang, crash or take
 * gigabytes on a small malformed file, where no cheap check of ours would
 * make it safe: refused by name, every suffix assimp gives that reader.
 * assimp picks the reader by a suffix only one reader claims, whatever the
 * content. Where several readers claim it and none of them takes the
 * file, assimp asks every reader whether the content is its own (Collada
 * and Quick3D's readers by a word in the first 200 bytes, LWS's by its
 * magic number, FBX's by 'fbx' anywhere there): .xml is refused with
 * Collada, and a .gltf or .glb must be glTF 2 that assimp's glTF 2 reader
 * takes (glb_check, gltf_json_check). */
typedef struct refused_format {
    const char *suffixes; /* blank-separated, lower case, without the dot */
    const char *name;
    const char *why;      /* what its reader did */
} refused_format;

static const refused_format refused_formats[] = {
    {"smd vta", "Valve SMD", "never returned on a 29-byte file with a NUL byte in its node list"},
    {"nff enff", "NFF", "filled memory until the kernel killed it (24 GB, 104 s) on a file declaring a polygon of 5e14 "
                        "corners"},
    {"dae zae xml", "Collada", "took 6.3 GB in 13 s on a 950-byte cube with one '&' in its index list"},
    {"q3o q3s", "Quick3D", "asked for 180 GB for the materials of a 36-byte file"},
    {"lws mot", "LightWave scene", "crashed (SIGSEGV) on a 20-byte file starting with a NUL byte"},
    {"fbx", "FBX", "overflowed its stack (SIGSEGV) on a 354-byte ASCII file whose model is connected to itself"},
    {"raw", "RAW triangle", "aborted the process (an ai_assert on its colour count) on a 51-byte file of two triangles"},
    {"ms3d", "MilkShape 3D", "crashed (SIGSEGV) on a 140-byte file of 4 vertices, no triangles and one group"},
    {"ase ask", "3ds Max ASCII scene", "crashed (SIGSEGV) on a 724-byte tetrahedron whose *TIME line was mangled"},
};

/* The refused format of suffix dot (".dae"; NULL: none), or NULL. */
static const refused_format *refused_format_of(const char *dot)
{
    if (!dot || !dot[1])
        return NULL;
    const size_t len = strlen(dot + 1);
    for (size_t i = 0; i < sizeof refused_formats / sizeof refused_formats[0]; i++)
        for (const char *s = refused_formats[i].suffixes; *s;) {
            const size_t n = strcspn(s, " ");
            if (n == len && strncasecmp(s, dot + 1, n) == 0)
                return &refused_formats[i];
            s += n + (s[n] == ' ');
        }
    return NULL;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A binary glTF's header and chunk lengths against the file (size bytes;
 * t holds its first n). assimp's glTF readers size their buffers by the
 * lengths they read, before reading: a 620-byte file whose JSON chunk
 * claimed 4,294,902,280 bytes took 4.2 GB and 7.9 s (fuzz_mesh), and its
 * glTF 1 reader does the same with its own header. 0, or -1 with err. */
static int glb_check(const unsigned char *t, size_t n, unsigned long long size, const char *path, char *err,
                     size_t errlen)
{
    if (n < 4 || memcmp(t, "glTF", 4) != 0) {
        snprintf(err, errlen, "%s: not a binary glTF file (it does not start with 'glTF')", path);
        return -1;
    }
    if (n < 20) {
        snprintf(err, errlen, "%s: truncated: %zu bytes, a binary glTF header and its JSON chunk header take 20", path,
                 n);
        return -1;
    }
    const uint32_t version = le32(t + 4), length = le32(t + 8), json = le32(t + 12);
    if (version != 2) {
        snprintf(err, errlen, "%s: binary glTF version %u: only version 2 is read (save the model as glTF 2.0)", path,
                 version);
        return -1;
    }
    if (memcmp(t + 16, "JSON", 4) != 0) {
        snprintf(err, errlen, "%s: binary glTF whose first chunk is not its JSON", path);
        return -1;
    }
    if (length > size || json > size - 20) {
        snprintf(err, errlen,
                 "%s: the binary glTF header declares %u bytes in all and %u of JSON; the file has %llu "
                 "(corrupt or truncated)",
                 path, length, json, size);
        return -1;
    }
    const unsigned long long bin = 20 + ((unsigned long long)json + 3) / 4 * 4; /* where assimp looks for BIN */
    if (bin < length) { /* a second chunk, which must be BIN (else its glTF 2 reader declines the file) */
        if (bin + 8 > length || bin + 8 > n) {
            snprintf(err, errlen, "%s: truncated: the binary glTF ends inside its second chunk's header", path);
            return -1;
        }
        if (memcmp(t + bin + 4, "BIN", 4) != 0) {
            snprintf(err, errlen, "%s: binary glTF whose second chunk is not BIN", path);
            return -1;
        }
        const uint32_t body = le32(t + bin);
        if (body > size - (bin + 8)) {
            snprintf(err, errlen,
                     "%s: the binary glTF's second chunk declares %u bytes, %llu are left in the file (corrupt or "
                     "truncated)",
                     path, body, size - (bin + 8));
            return -1;
        }
    }
    return 0;
}

/* glTF JSON (a .gltf whole, or a .glb's JSON chunk) that assimp's glTF 2
 * reader will claim: where its readers decline a .gltf or .glb, assimp
 * hands the file to whichever reader claims its content, and the FBX
 * reader claims any holding 'fbx' in its first 200 bytes (its file with a
 * model connected to itself, named .gltf, crashed prox info). So: JSON an
 * RFC 8259 parser takes (jansson; assimp parses with rapidjson, no looser:
 * no control characters in strings, known escapes, paired surrogates,
 * finite numbers, nesting bounded), then only blanks or NUL bytes to the
 * end (rapidjson stops at a NUL), an object whose asset is an object with
 * a string version starting '2' and a profile, if any, an object (glTF 1
 * files are refused: its reader is tried first and declines a 2.x file).
 * Duplicate names are refused: jansson keeps the last, rapidjson finds
 * the first, and the version checked must be the one assimp reads.
 * Numbers are read as doubles, as rapidjson reads large integers. 0, or -1
 * with err. */
static int gltf_json_check(const char *t, size_t n, const char *path, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(t, n, JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK | JSON_DECODE_INT_AS_REAL, &je);
    if (root) {
        size_t at = je.position; /* (with JSON_DISABLE_EOF_CHECK: the bytes the value took) */
        while (at < n && (t[at] == ' ' || t[at] == '\t' || t[at] == '\n' || t[at] == '\r'))
            at++;
        if (at < n && t[at]) {
            json_decref(root);
            snprintf(err, errlen, "%s: not glTF JSON (more text after the JSON value, byte %zu); assimp would hand it to "
                                  "whichever of its readers claims the content",
                     path, at);
            return -1;
        }
    }
    if (!root || !json_is_object(root)) {
        snprintf(err, errlen, "%s: not glTF JSON (%s, byte %zu); assimp would hand it to whichever of its readers claims "
                              "the content",
                 path, root ? "it is not a JSON object" : je.text, root ? (size_t)0 : (size_t)je.position);
        json_decref(root);
        return -1;
    }
    const json_t *asset = json_object_get(root, "asset");
    const json_t *version = json_is_object(asset) ? json_object_get(asset, "version") : NULL;
    const json_t *profile = json_is_object(asset) ? json_object_get(asset, "profile") : NULL;
    int rc = 0;
    if ((asset && !json_is_object(asset)) || (version && !json_is_string(version)) || (profile && !json_is_object(profile))) {
        snprintf(err, errlen, "%s: a glTF asset block assimp's glTF 2 reader declines (asset not an object, its version "
                              "not a string or its profile not an object)",
                 path);
        rc = -1;
    } else if (!version || json_string_value(version)[0] != '2') {
        snprintf(err, errlen, "%s: glTF version %s%.16s%s: only glTF 2.x is read (asset.version; save the model as glTF 2.0)",
                 path, version ? "'" : "", version ? json_string_value(version) : "missing", version ? "'" : "");
        rc = -1;
    }
    json_decref(root);
    return rc;
}

/* Reads an OFF or PLY header from f (size bytes, from its start) into h;
 * refuses counts the file cannot hold, and text bodies shorter than
 * declared. h->format stays NULL for other files. For OFF, *off_text gets
 * the whole file without comments (off_strip), *off_len bytes, for the
 * caller to import and free. Returns 0, or -1 with err. */
static int mesh_header_check(FILE *f, long long size, const char *path, mesh_header *h, char **off_text,
                             size_t *off_len, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    *off_text = NULL;
    const char *base = strrchr(path, '/'), *dot = strrchr(base ? base + 1 : path, '.');
    const refused_format *no = refused_format_of(dot);
    if (no) { /* before the content: assimp would pick the reader by the name */
        snprintf(err, errlen,
                 "%s: %s files are not read (assimp's %s reader %s); convert it to OFF, PLY, STL or OBJ (e.g. "
                 "with MeshLab or Blender)",
                 path, no->name, no->name, no->why);
        return -1;
    }
    size_t cap = MESH_HEAD_MAX;
    char *t = malloc(cap + 2);
    if (!t)
        goto oom;
    size_t n = fread(t, 1, cap, f);
    int whole = n < cap;
    int has_dim, rc = 0;
    const size_t ply_at = ply_magic(t, n);
    const int ply = ply_at != SIZE_MAX;
    int off = !ply && ((dot && strcasecmp(dot, ".off") == 0) || off_keyword(t, t + n, &has_dim));
    if (!ply && !off) {
        /* a .ply without the magic where we look: assimp's PLY reader
         * found one elsewhere ("\0\0\0\1\nply", 52 bytes) and then read
         * on forever (fuzz_mesh). A name assimp does not know goes to
         * whichever of its readers claims the content ("ply" or another
         * word in its first bytes), unchecked: refused unless it is OFF or
         * PLY text that passes the checks (a 26-byte file made the Quick3D
         * reader ask for 630 GB) */
        if (dot && !strcasecmp(dot, ".ply")) {
            free(t);
            snprintf(err, errlen, "%s: not a PLY file (it does not start with 'ply')", path);
            return -1;
        }
        if (!dot || !aiIsExtensionSupported(dot)) {
            free(t);
            snprintf(err, errlen, "%s: %s%s%s is not a format name assimp knows (not OFF or PLY either): name the file by its format "
                                  "(.obj, .stl, .ply, .off, .gltf, ...)",
                     path, dot ? "'" : "no suffix", dot ? dot : "", dot ? "'" : "");
            return -1;
        }
        const int glb = !strcasecmp(dot, ".glb");
        if (glb || !strcasecmp(dot, ".gltf")) {
            /* what the checks read: a .gltf whole; a .glb's JSON chunk and
             * the header of the chunk after it (its lengths are bounded by
             * the file's size, and checked by glb_check) */
            unsigned long long want = (unsigned long long)size;
            if (glb && n >= 20)
                want = 20 + ((unsigned long long)le32((const unsigned char *)t + 12) + 3) / 4 * 4 + 8;
            want = want < (unsigned long long)size ? want : (unsigned long long)size;
            if (want > n) {
                char *g = realloc(t, (size_t)want + 2);
                if (!g)
                    goto oom;
                t = g;
                n += fread(t + n, 1, (size_t)want - n, f);
            }
            rc = glb ? glb_check((const unsigned char *)t, n, (unsigned long long)size, path, err, errlen) : 0;
            const size_t json_at = glb ? 20 : 0;
            const size_t json_end = glb && rc == 0 ? 20 + (size_t)le32((const unsigned char *)t + 12) : n;
            if (rc == 0 && json_end > n) { /* the file got shorter since its size was read */
                snprintf(err, errlen, "%s: cannot read it whole", path);
                rc = -1;
            }
            if (rc == 0)
                rc = gltf_json_check(t + json_at, json_end - json_at, path, err, errlen);
        }
        free(t);
        return rc;
    }
    if (ply && (rc = ply_header(t + ply_at, n - ply_at, whole, h, path, ply_at ? 2 : 1, err, errlen)) == 0) {
        h->body += ply_at;
        h->min_bytes = sat_add(h->min_bytes, ply_at);
    }
    if (rc == 0 && (off || ply) && !whole) {
        /* the whole file, as assimp reads it: text to count its lines,
         * binary PLY to walk its lists (ply_binary_body) */
        cap = (size_t)size > n ? (size_t)size : n;
        char *g = realloc(t, cap + 2);
        if (!g)
            goto oom;
        t = g;
        n += fread(t + n, 1, cap - n, f);
    }
    unsigned long long avail = (unsigned long long)size;
    if (off) {
        n = off_strip(t, n);
        avail = n;
        rc = off_header(t, n, h, path, err, errlen);
    }
    if (rc == 0 && h->min_bytes > avail) {
        snprintf(err, errlen,
                 "%s: the %s header declares %llu vertices and %llu faces, which take at least %llu bytes%s; the file "
                 "has %llu%s (corrupt or truncated)",
                 path, h->format, h->vertices, h->faces, h->min_bytes, h->text ? "" : " (3 corners a face)", avail,
                 off ? " without comments" : "");
        rc = -1;
    }
    if (rc == 0 && ply && h->text)
        rc = ply_ascii_body(t + h->body, t + n, h, path, err, errlen);
    if (rc == 0 && ply && !h->text && h->body <= n)
        rc = ply_binary_body((const unsigned char *)t + h->body, (const unsigned char *)t + n, h, path, err, errlen);
    if (rc == 0 && h->text) {
        unsigned long long lines = count_lines(t + h->body, t + n, h->lines);
        if (lines < h->lines) {
            snprintf(err, errlen,
                     "%s: truncated: the %s header declares %llu vertices and %llu faces (%llu lines), the file has "
                     "%llu lines after it",
                     path, h->format, h->vertices, h->faces, h->lines, lines);
            rc = -1;
        }
    }
    if (rc == 0 && off && n > UINT_MAX) { /* aiImportFileFromMemory's length is unsigned */
        snprintf(err, errlen, "%s: OFF text of %zu bytes is too large (at most %u)", path, n, UINT_MAX);
        rc = -1;
    }
    if (rc == 0 && off) {
        *off_text = t;
        *off_len = n;
    } else {
        free(t);
    }
    return rc;
oom:
    free(t);
    snprintf(err, errlen, "%s: out of memory", path);
    return -1;
}

typedef struct load_acc {
    prox_vec3 *v;
    uint32_t (*t)[3];
    size_t nv, nt, cv, ct;
    int failed;
} load_acc;

static void acc_node(load_acc *acc, const struct aiScene *sc, const struct aiNode *node, struct aiMatrix4x4 parent)
{
    struct aiMatrix4x4 m = parent;
    aiMultiplyMatrix4(&m, &node->mTransformation);
    for (unsigned i = 0; i < node->mNumMeshes && !acc->failed; i++) {
        const struct aiMesh *mesh = sc->mMeshes[node->mMeshes[i]];
        if (!(mesh->mPrimitiveTypes & aiPrimitiveType_TRIANGLE))
            continue;
        if (acc->nv + mesh->mNumVertices > UINT32_MAX || acc->nt + mesh->mNumFaces > UINT32_MAX) {
            acc->failed = 1;
            return;
        }
        size_t base = acc->nv;
        if (acc->nv + mesh->mNumVertices > acc->cv) {
            acc->cv = 2 * (acc->nv + mesh->mNumVertices);
            void *n = realloc(acc->v, sizeof *acc->v * acc->cv);
            if (!n) {
                acc->failed = 1;
                return;
            }
            acc->v = n;
        }
        for (unsigned k = 0; k < mesh->mNumVertices; k++) {
            struct aiVector3D p = mesh->mVertices[k];
            aiTransformVecByMatrix4(&p, &m);
            acc->v[acc->nv++] = prox_v3(p.x, p.y, p.z);
        }
        if (acc->nt + mesh->mNumFaces > acc->ct) {
            acc->ct = 2 * (acc->nt + mesh->mNumFaces);
            void *n = realloc(acc->t, sizeof *acc->t * acc->ct);
            if (!n) {
                acc->failed = 1;
                return;
            }
            acc->t = n;
        }
        for (unsigned f = 0; f < mesh->mNumFaces; f++) {
            const struct aiFace *face = &mesh->mFaces[f];
            if (face->mNumIndices != 3)
                continue;
            for (int k = 0; k < 3; k++)
                acc->t[acc->nt][k] = (uint32_t)(base + face->mIndices[k]);
            acc->nt++;
        }
    }
    for (unsigned c = 0; c < node->mNumChildren && !acc->failed; c++)
        acc_node(acc, sc, node->mChildren[c], m);
}

/* Keeps only the vertices the triangles use, in their order; returns how
 * many, or -1 out of memory. assimp's JoinIdenticalVertices dropped the
 * others, and a stray one still widens the bbox (cube-ouvert.off's
 * unused vertex moved bbox_max from 1 1 1 to 1 2 1) and --normalize. */
static long long drop_unused_vertices(prox_vec3 *v, size_t nv, uint32_t (*t)[3], size_t nt)
{
    for (size_t i = 0; i < nt; i++)
        for (int k = 0; k < 3; k++)
            if (t[i][k] >= nv)
                return (long long)nv; /* prox_mesh_from_arrays refuses it */
    uint32_t *map = malloc(sizeof *map * (nv ? nv : 1));
    if (!map)
        return -1;
    memset(map, 0xff, sizeof *map * nv);
    for (size_t i = 0; i < nt; i++)
        for (int k = 0; k < 3; k++)
            map[t[i][k]] = 0;
    size_t n = 0;
    for (size_t i = 0; i < nv; i++)
        if (map[i] != UINT32_MAX) {
            map[i] = (uint32_t)n;
            v[n++] = v[i];
        }
    for (size_t i = 0; i < nt; i++)
        for (int k = 0; k < 3; k++)
            t[i][k] = map[t[i][k]];
    free(map);
    return (long long)n;
}

/* The file at path, checked: it exists, is no folder, not empty, and an
 * OFF or PLY header in it passes mesh_header_check (*off_text as there).
 * 0, or -1 with err. */
static int open_checked(const char *path, mesh_header *hdr, char **off_text, size_t *off_len, char *err, size_t errlen)
{
    *off_text = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: is a directory, not a mesh file", path);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    if (st.st_size == 0) {
        fclose(f);
        snprintf(err, errlen, "%s: file is empty", path);
        return -1;
    }
    int rc = mesh_header_check(f, (long long)st.st_size, path, hdr, off_text, off_len, err, errlen);
    fclose(f);
    return rc;
}

int prox_mesh_check_header(const char *path, char *err, size_t errlen)
{
    mesh_header hdr;
    char *off_text;
    size_t off_len = 0;
    int rc = open_checked(path, &hdr, &off_text, &off_len, err, errlen);
    free(off_text);
    return rc;
}

int prox_mesh_load(const char *path, prox_mesh **out, char *err, size_t errlen)
{
    *out = NULL;
    mesh_header hdr;
    char *off_text;
    size_t off_len = 0;
    if (open_checked(path, &hdr, &off_text, &off_len, err, errlen) != 0)
        return -1;
    /* Validation only: the face count is compared before triangulation. */
    const struct aiScene *sc = off_text ? aiImportFileFromMemory(off_text, (unsigned)off_len,
                                                                 aiProcess_ValidateDataStructure, "off")
                                        : aiImportFile(path, aiProcess_ValidateDataStructure);
    free(off_text);
    if (!sc) {
        const char *msg = aiGetErrorString();
        snprintf(err, errlen, "%s: not a readable mesh (%s)", path, msg && *msg ? msg : "unknown format");
        return -1;
    }
    if (!sc->mRootNode || sc->mNumMeshes == 0) {
        aiReleaseImport(sc);
        snprintf(err, errlen, "%s: the file holds no mesh", path);
        return -1;
    }
    if (hdr.format) {
        unsigned long long nv = 0, nf = 0;
        for (unsigned i = 0; i < sc->mNumMeshes; i++) {
            nv += sc->mMeshes[i]->mNumVertices;
            nf += sc->mMeshes[i]->mNumFaces;
        }
        if (nv != hdr.vertices || nf != hdr.faces) {
            aiReleaseImport(sc);
            snprintf(err, errlen,
                     "%s: the %s header declares %llu vertices and %llu faces but assimp read %llu and %llu: the file "
                     "is damaged%s",
                     path, hdr.format, hdr.vertices, hdr.faces, nv, nf,
                     hdr.format[0] == 'O' ? ", or has faces of more than 9 corners, which assimp's OFF reader skips"
                                          : "");
            return -1;
        }
    }
    /* aiProcess_Triangulate aborts (ai_assert "numOut != pMesh->mNumFaces")
     * on a mesh flagged as holding polygons that holds none: a face of no
     * corners is flagged so, and validation let one through (a binary PLY
     * cube with a face's corner count set to 0, found by mutating files). */
    for (unsigned i = 0; i < sc->mNumMeshes; i++) {
        const struct aiMesh *mesh = sc->mMeshes[i];
        int polygons = 0;
        for (unsigned k = 0; k < mesh->mNumFaces; k++) {
            if (mesh->mFaces[k].mNumIndices == 0) {
                aiReleaseImport(sc);
                snprintf(err, errlen, "%s: not a readable mesh (face %u has no corners)", path, k + 1);
                return -1;
            }
            polygons |= mesh->mFaces[k].mNumIndices > 3;
        }
        if ((mesh->mPrimitiveTypes & aiPrimitiveType_POLYGON) && !polygons) {
            aiReleaseImport(sc);
            snprintf(err, errlen, "%s: not a readable mesh (mesh %u is flagged as holding polygons and holds none)",
                     path, i + 1);
            return -1;
        }
    }
    /* On failure assimp releases the scene itself. */
    sc = aiApplyPostProcessing(sc, aiProcess_Triangulate);
    if (!sc) {
        const char *msg = aiGetErrorString();
        snprintf(err, errlen, "%s: not a readable mesh (%s)", path, msg && *msg ? msg : "triangulation failed");
        return -1;
    }
    load_acc acc = {0};
    struct aiMatrix4x4 id;
    aiIdentityMatrix4(&id);
    acc_node(&acc, sc, sc->mRootNode, id);
    aiReleaseImport(sc);
    if (acc.failed) {
        free(acc.v);
        free(acc.t);
        snprintf(err, errlen, "%s: out of memory or too large", path);
        return -1;
    }
    if (acc.nt == 0) {
        free(acc.v);
        free(acc.t);
        snprintf(err, errlen, "%s: the mesh has no triangles", path);
        return -1;
    }
    long long used = drop_unused_vertices(acc.v, acc.nv, acc.t, acc.nt);
    if (used < 0) {
        free(acc.v);
        free(acc.t);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    prox_mesh *m = prox_mesh_from_arrays(acc.v, (uint32_t)used, (const uint32_t(*)[3])acc.t, (uint32_t)acc.nt);
    if (!m) /* refused arrays, or out of memory: which */
        snprintf(err, errlen, "%s: %s", path,
                 prox_mesh_arrays_ok(acc.v, (uint32_t)used, (const uint32_t(*)[3])acc.t, (uint32_t)acc.nt) == 0
                     ? "out of memory"
                     : "invalid mesh data (non-finite coordinates or bad indices)");
    free(acc.v);
    free(acc.t);
    if (!m)
        return -1;
    if (m->triangle_count == 0) {
        prox_mesh_free(m);
        snprintf(err, errlen, "%s: every triangle is degenerate", path);
        return -1;
    }
    *out = m;
    return 0;
}
