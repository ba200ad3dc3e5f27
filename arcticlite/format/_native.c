/* Optional native kernels of Fermion's value encodings.
 *
 * Each function does in one pass, without the GIL, what the pure-numpy code of
 * arcticlite.format (_enc_bitpack, _enc_select) does in several numpy calls; the results are
 * bit-identical (tests run both and compare). The module is built by `pip install` when a C
 * compiler is present; without it arcticlite uses the numpy code (see arcticlite.format._kernels).
 *
 * The lane layout (arcticlite/format/_enc_bitpack.py): n values of w bits in L = ceil(n / 64)
 * lanes; value i = j * L + l is slot j of lane l, at bits j * w .. j * w + w - 1 of the lane;
 * word k of lane l is packed[k * L + l] (little-endian uint64); padding slots are zero.
 *
 * Floating point: built with -ffp-contract=off (no fused multiply-add), so every product and
 * quotient is rounded exactly as numpy rounds it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the native kernels assume a little-endian machine; the numpy code serves elsewhere"
#endif

/* The loops are written for the compiler to vectorize; on x86-64 each kernel is also compiled
 * for AVX2 and the CPU picks the version at load time (the baseline has no 32-bit multiply,
 * no 64-bit compare and no rounding instruction in its vector set). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define KERNEL
#endif

static int
check_width(int width)
{
    if (width < 1 || width > 64) {
        PyErr_Format(PyExc_ValueError, "bit width must be 1..64, got %d", width);
        return -1;
    }
    return 0;
}

static int
check_itemsize(int itemsize)
{
    if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8) {
        PyErr_Format(PyExc_ValueError, "item size must be 1, 2, 4 or 8 bytes, got %d", itemsize);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- frame of reference */

#define CHUNK 2048

/* Division by g = 2**tz * odd as exact division: r is a multiple of g iff its low tz bits are
 * zero and (r >> tz) * inverse(odd) modulo 2**bits is at most (2**bits - 1) / odd; that product
 * is then the quotient. Offsets of sources up to 4 bytes wide are divided in 32-bit words
 * (vector multiplies exist for those), wider ones in 64-bit words. */
typedef struct {
    int divide, tz;
    uint64_t inv, lim, low;
    uint32_t inv32, lim32, low32;
} divisor_t;

static void
make_divisor(uint64_t g, divisor_t *d)
{
    d->divide = g > 1;
    d->tz = 0;
    while (g > 1 && !(g & 1)) {
        g >>= 1;
        d->tz++;
    }
    uint64_t inv = g; /* Newton's iteration doubles the correct low bits: 3 -> 6 -> ... -> 96 */
    for (int k = 0; k < 5; k++)
        inv *= 2 - g * inv;
    d->inv = inv;
    d->lim = ~(uint64_t)0 / g;
    d->low = d->tz ? (((uint64_t)1 << d->tz) - 1) : 0;
    d->inv32 = (uint32_t)inv;
    d->lim32 = g >> 32 ? 0 : (uint32_t)(0xFFFFFFFFu / (uint32_t)g);
    d->low32 = (uint32_t)d->low;
}

/* buf[l] = ((x[start + l] - base) mod 2**(8 * itemsize)) / g for l < m; returns nonzero when
 * some offset is not a multiple of g. */
#define OFFS_LOOP(T, W, INV, LIM, LOW)                                                     \
    {                                                                                      \
        const T *x = (const T *)src + start;                                               \
        const T b = (T)base;                                                               \
        if (!d->divide) {                                                                  \
            for (Py_ssize_t l = 0; l < m; l++)                                             \
                buf[l] = (uint64_t)(T)(x[l] - b);                                          \
            return 0;                                                                      \
        }                                                                                  \
        if (d->tz >= 8 * (int)sizeof(T))                                                   \
            return 1; /* g does not divide any nonzero offset of this width: never chosen */ \
        const W inv = (W)d->INV, lim = (W)d->LIM, low = (W)d->LOW;                         \
        const int tz = d->tz;                                                              \
        W bad = 0;                                                                         \
        for (Py_ssize_t l = 0; l < m; l++) {                                               \
            W r = (W)(T)(x[l] - b);                                                        \
            W q = (W)((W)(r >> tz) * inv);                                                 \
            bad |= (r & low) | (W)(q > lim);                                               \
            buf[l] = q;                                                                    \
        }                                                                                  \
        return bad != 0;                                                                   \
    }

static inline int
offsets(const void *src, int itemsize, Py_ssize_t start, Py_ssize_t m, uint64_t base,
        const divisor_t *d, uint64_t *buf)
{
    switch (itemsize) {
    case 1: OFFS_LOOP(uint8_t, uint32_t, inv32, lim32, low32)
    case 2: OFFS_LOOP(uint16_t, uint32_t, inv32, lim32, low32)
    case 4: OFFS_LOOP(uint32_t, uint32_t, inv32, lim32, low32)
    default: OFFS_LOOP(uint64_t, uint64_t, inv, lim, low)
    }
}
#undef OFFS_LOOP

enum { LAYOUT_PACK = 0, LAYOUT_NARROW = 1, LAYOUT_SPLIT = 2 };

/* Lane layout: slot j of every lane is row x[j * L .. (j + 1) * L). */
KERNEL static int
for_pack(const void *src, int itemsize, Py_ssize_t n, uint64_t base, const divisor_t *d,
         int width, uint64_t *out)
{
    Py_ssize_t lanes = (n + 63) / 64;
    uint64_t buf[CHUNK];
    int bad = 0;
    memset(out, 0, (size_t)width * lanes * 8);
    for (Py_ssize_t j = 0; j < 64 && j * lanes < n; j++) {
        Py_ssize_t start = j * lanes;
        Py_ssize_t row = n - start < lanes ? n - start : lanes;
        int bit = (int)(j * width);
        int shift = bit & 63;
        uint64_t *w0 = out + (Py_ssize_t)(bit >> 6) * lanes;
        for (Py_ssize_t c = 0; c < row; c += CHUNK) {
            Py_ssize_t m = row - c < CHUNK ? row - c : CHUNK;
            bad |= offsets(src, itemsize, start + c, m, base, d, buf);
            uint64_t *a = w0 + c;
            if (shift + width > 64) {
                uint64_t *b = a + lanes;
                for (Py_ssize_t l = 0; l < m; l++) {
                    a[l] |= buf[l] << shift;
                    b[l] |= buf[l] >> (64 - shift);
                }
            }
            else {
                for (Py_ssize_t l = 0; l < m; l++)
                    a[l] |= buf[l] << shift;
            }
        }
    }
    return bad;
}

/* nb low bytes of each offset: in value order (narrow) or as nb byte planes (split). */
KERNEL static int
for_bytes(const void *src, int itemsize, Py_ssize_t n, uint64_t base, const divisor_t *d,
          int nb, int split, unsigned char *out)
{
    uint64_t buf[CHUNK];
    int bad = 0;
    for (Py_ssize_t c = 0; c < n; c += CHUNK) {
        Py_ssize_t m = n - c < CHUNK ? n - c : CHUNK;
        bad |= offsets(src, itemsize, c, m, base, d, buf);
        if (split) {
            for (int k = 0; k < nb; k++) {
                unsigned char *plane = out + (Py_ssize_t)k * n + c;
                for (Py_ssize_t l = 0; l < m; l++)
                    plane[l] = (unsigned char)(buf[l] >> (8 * k));
            }
            continue;
        }
        switch (nb) {
#define NARROW(T)                                                                          \
    {                                                                                      \
        T *o = (T *)(out + c * (Py_ssize_t)sizeof(T));                                     \
        for (Py_ssize_t l = 0; l < m; l++) {                                               \
            T v = (T)buf[l];                                                               \
            memcpy(o + l, &v, sizeof(T));                                                  \
        }                                                                                  \
    }                                                                                      \
    break;
        case 1: NARROW(uint8_t)
        case 2: NARROW(uint16_t)
        case 4: NARROW(uint32_t)
        default: NARROW(uint64_t)
#undef NARROW
        }
    }
    return bad;
}

static PyObject *
native_encode_for(PyObject *self, PyObject *args)
{
    Py_buffer sbuf, obuf;
    int itemsize, layout, param;
    unsigned long long base, g;
    if (!PyArg_ParseTuple(args, "y*iKKiiw*", &sbuf, &itemsize, &base, &g, &layout, &param, &obuf))
        return NULL;
    PyObject *result = NULL;
    if (check_itemsize(itemsize) < 0)
        goto done;
    if (sbuf.len % itemsize) {
        PyErr_SetString(PyExc_ValueError, "source length is not a multiple of the item size");
        goto done;
    }
    if (g == 0) {
        PyErr_SetString(PyExc_ValueError, "the divisor must be positive");
        goto done;
    }
    {
        Py_ssize_t n = sbuf.len / itemsize, need;
        if (layout == LAYOUT_PACK) {
            if (check_width(param) < 0)
                goto done;
            need = (Py_ssize_t)param * ((n + 63) / 64) * 8;
        }
        else if (layout == LAYOUT_NARROW || layout == LAYOUT_SPLIT) {
            if (check_itemsize(param) < 0)
                goto done;
            need = (Py_ssize_t)param * n;
        }
        else {
            PyErr_Format(PyExc_ValueError, "unknown layout %d", layout);
            goto done;
        }
        if (obuf.len < need) {
            PyErr_Format(PyExc_ValueError, "output of %zd bytes is smaller than the %zd encoded "
                         "bytes", obuf.len, need);
            goto done;
        }
        if (layout == LAYOUT_PACK && ((uintptr_t)obuf.buf & 7) != 0) {
            PyErr_SetString(PyExc_ValueError, "packed output is not 8-byte aligned");
            goto done;
        }
        divisor_t d;
        make_divisor(g, &d);
        int bad;
        const void *src = sbuf.buf;
        Py_BEGIN_ALLOW_THREADS
        if (layout == LAYOUT_PACK)
            bad = for_pack(src, itemsize, n, base, &d, param, (uint64_t *)obuf.buf);
        else
            bad = for_bytes(src, itemsize, n, base, &d, param, layout == LAYOUT_SPLIT,
                            (unsigned char *)obuf.buf);
        Py_END_ALLOW_THREADS
        result = PyBool_FromLong(!bad);
    }
done:
    PyBuffer_Release(&sbuf);
    PyBuffer_Release(&obuf);
    return result;
}

/* ------------------------------------------------------------ small-range dictionaries */

/* table[(x[i] - base) mod 2**bits] = 1 for every i; returns nonzero when an offset is beyond the
 * table (the table is then partly marked). */
#define MARK_LOOP(T)                                                                       \
    {                                                                                      \
        const T *x = (const T *)src;                                                       \
        const T b = (T)base;                                                               \
        for (Py_ssize_t i = 0; i < n; i++) {                                               \
            uint64_t o = (uint64_t)(T)(x[i] - b);                                          \
            if (o >= (uint64_t)size)                                                       \
                return 1;                                                                  \
            table[o] = 1;                                                                  \
        }                                                                                  \
        return 0;                                                                          \
    }

KERNEL static int
mark_any(const void *src, Py_ssize_t n, int itemsize, uint64_t base, unsigned char *table,
         Py_ssize_t size)
{
    switch (itemsize) {
    case 1: MARK_LOOP(uint8_t)
    case 2: MARK_LOOP(uint16_t)
    case 4: MARK_LOOP(uint32_t)
    default: MARK_LOOP(uint64_t)
    }
}
#undef MARK_LOOP

/* out[i] = table[(x[i] - base) mod 2**bits]; nonzero when an offset is beyond the table. */
#define LOOKUP_LOOP(T)                                                                     \
    {                                                                                      \
        const T *x = (const T *)src;                                                       \
        const T b = (T)base;                                                               \
        uint64_t worst = 0;                                                                \
        for (Py_ssize_t i = 0; i < n; i++) {                                               \
            uint64_t o = (uint64_t)(T)(x[i] - b);                                          \
            worst = o > worst ? o : worst;                                                 \
        }                                                                                  \
        if (n && worst >= (uint64_t)size)                                                  \
            return 1;                                                                      \
        for (Py_ssize_t i = 0; i < n; i++)                                                 \
            out[i] = table[(T)(x[i] - b)];                                                 \
        return 0;                                                                          \
    }

KERNEL static int
lookup_any(const void *src, Py_ssize_t n, int itemsize, uint64_t base, const uint32_t *table,
           Py_ssize_t size, uint32_t *out)
{
    switch (itemsize) {
    case 1: LOOKUP_LOOP(uint8_t)
    case 2: LOOKUP_LOOP(uint16_t)
    case 4: LOOKUP_LOOP(uint32_t)
    default: LOOKUP_LOOP(uint64_t)
    }
}
#undef LOOKUP_LOOP

static PyObject *
native_mark(PyObject *self, PyObject *args)
{
    Py_buffer sbuf, tbuf;
    int itemsize;
    unsigned long long base;
    if (!PyArg_ParseTuple(args, "y*iKw*", &sbuf, &itemsize, &base, &tbuf))
        return NULL;
    PyObject *result = NULL;
    if (check_itemsize(itemsize) < 0)
        goto done;
    if (sbuf.len % itemsize) {
        PyErr_SetString(PyExc_ValueError, "source length is not a multiple of the item size");
        goto done;
    }
    {
        int beyond;
        Py_BEGIN_ALLOW_THREADS
        beyond = mark_any(sbuf.buf, sbuf.len / itemsize, itemsize, base, (unsigned char *)tbuf.buf,
                          tbuf.len);
        Py_END_ALLOW_THREADS
        result = PyBool_FromLong(!beyond);
    }
done:
    PyBuffer_Release(&sbuf);
    PyBuffer_Release(&tbuf);
    return result;
}

static PyObject *
native_lookup(PyObject *self, PyObject *args)
{
    Py_buffer sbuf, tbuf, obuf;
    int itemsize;
    unsigned long long base;
    if (!PyArg_ParseTuple(args, "y*iKy*w*", &sbuf, &itemsize, &base, &tbuf, &obuf))
        return NULL;
    PyObject *result = NULL;
    if (check_itemsize(itemsize) < 0)
        goto done;
    if (sbuf.len % itemsize || tbuf.len % 4) {
        PyErr_SetString(PyExc_ValueError, "source or table length is not a whole number of items");
        goto done;
    }
    Py_ssize_t n = sbuf.len / itemsize;
    if (obuf.len < n * 4) {
        PyErr_SetString(PyExc_ValueError, "output is too small for the values");
        goto done;
    }
    if (((uintptr_t)tbuf.buf & 3) || ((uintptr_t)obuf.buf & 3)) {
        PyErr_SetString(PyExc_ValueError, "table and output must be 4-byte aligned");
        goto done;
    }
    {
        int beyond;
        Py_BEGIN_ALLOW_THREADS
        beyond = lookup_any(sbuf.buf, n, itemsize, base, (const uint32_t *)tbuf.buf, tbuf.len / 4,
                            (uint32_t *)obuf.buf);
        Py_END_ALLOW_THREADS
        result = PyBool_FromLong(!beyond);
    }
done:
    PyBuffer_Release(&sbuf);
    PyBuffer_Release(&tbuf);
    PyBuffer_Release(&obuf);
    return result;
}

/* ----------------------------------------------------------------- word factorization */

/* Few distinct words (up to SMALL_WORDS, the common case of labels): codes[i] for m words by
 * comparing each with every known word, branch-free (vectorised); returns 0 when some word is
 * not among them (codes then partial: the caller hashes that block). Slots past count repeat
 * word 0, and the comparisons run from the last slot down, so the lowest index wins. */
#define SMALL_WORDS 8
#define WORD_BLOCK 4096
KERNEL static int
small_codes(const uint64_t *src, Py_ssize_t m, int32_t *codes, const uint64_t *uniques,
            Py_ssize_t count)
{
    uint64_t u[SMALL_WORDS];
    for (int j = 0; j < SMALL_WORDS; j++)
        u[j] = uniques[j < count ? j : 0];
    int32_t missing = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t k = src[i];
        int32_t c = -1;
        for (int j = SMALL_WORDS - 1; j >= 0; j--)
            c = k == u[j] ? j : c;
        codes[i] = c;
        missing |= c; /* negative once any word was not found */
    }
    return missing >= 0;
}

/* codes[i] = the index of src[i] among the distinct words in order of first appearance;
 * uniques receives those words. Returns the number of distinct words, or -1 when there are
 * more than max_uniques (codes and uniques are then partial), -2 when memory runs out. */
static Py_ssize_t
factorize_words(const uint64_t *src, Py_ssize_t n, int32_t *codes, uint64_t *uniques,
                Py_ssize_t max_uniques)
{
    size_t cap = 1024, mask = cap - 1;
    int32_t *slots = (int32_t *)malloc(cap * sizeof(int32_t));
    if (!slots)
        return -2;
    memset(slots, 0xff, cap * sizeof(int32_t));
    Py_ssize_t count = 0;
    uint64_t last = 0;
    int32_t last_code = -1;
    for (Py_ssize_t b = 0; b < n; b += WORD_BLOCK) {
        Py_ssize_t e = n - b < WORD_BLOCK ? n : b + WORD_BLOCK;
        /* a block of known words only: no hashing (a block with a new word is hashed whole:
         * it finds the new words in order of appearance) */
        if (count > 0 && count <= SMALL_WORDS && small_codes(src + b, e - b, codes + b, uniques, count))
            continue;
        last_code = -1;
        for (Py_ssize_t i = b; i < e; i++) {
            uint64_t k = src[i];
            if (k == last && last_code >= 0) { /* runs of one value: no lookup */
                codes[i] = last_code;
                continue;
            }
            size_t h = (size_t)((k >> 3) * 0x9E3779B97F4A7C15ull >> 20) & mask;
            int32_t c;
            for (;;) {
                c = slots[h];
                if (c < 0 || uniques[c] == k)
                    break;
                h = (h + 1) & mask;
            }
            if (c < 0) {
                if (count == max_uniques) {
                    free(slots);
                    return -1;
                }
                c = (int32_t)count;
                uniques[count++] = k;
                slots[h] = c;
                if ((size_t)count * 2 > cap) { /* grow: re-insert the distinct words */
                    free(slots);
                    cap *= 4;
                    mask = cap - 1;
                    slots = (int32_t *)malloc(cap * sizeof(int32_t));
                    if (!slots)
                        return -2;
                    memset(slots, 0xff, cap * sizeof(int32_t));
                    for (Py_ssize_t u = 0; u < count; u++) {
                        size_t g = (size_t)((uniques[u] >> 3) * 0x9E3779B97F4A7C15ull >> 20) & mask;
                        while (slots[g] >= 0)
                            g = (g + 1) & mask;
                        slots[g] = (int32_t)u;
                    }
                }
            }
            codes[i] = c;
            last = k;
            last_code = c;
        }
    }
    free(slots);
    return count;
}

static PyObject *
native_factorize(PyObject *self, PyObject *args)
{
    Py_buffer sbuf, cbuf, ubuf;
    if (!PyArg_ParseTuple(args, "y*w*w*", &sbuf, &cbuf, &ubuf))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = sbuf.len / 8;
    if (sbuf.len % 8 || cbuf.len < n * 4 || ubuf.len % 8 || ubuf.len / 8 > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "factorize takes 8-byte words, an int32 output of the "
                        "same length and a uint64 output for the distinct words");
        goto done;
    }
    if (((uintptr_t)sbuf.buf & 7) || ((uintptr_t)cbuf.buf & 3) || ((uintptr_t)ubuf.buf & 7)) {
        PyErr_SetString(PyExc_ValueError, "factorize buffers must be aligned");
        goto done;
    }
    {
        Py_ssize_t got;
        Py_BEGIN_ALLOW_THREADS
        got = factorize_words((const uint64_t *)sbuf.buf, n, (int32_t *)cbuf.buf,
                              (uint64_t *)ubuf.buf, ubuf.len / 8);
        Py_END_ALLOW_THREADS
        if (got == -2)
            PyErr_NoMemory();
        else
            result = PyLong_FromSsize_t(got);
    }
done:
    PyBuffer_Release(&sbuf);
    PyBuffer_Release(&cbuf);
    PyBuffer_Release(&ubuf);
    return result;
}

/* ------------------------------------------------------------------ pages cut by bytes */

/* Page boundaries of n dictionary codes whose values have the byte lengths lens[code]: a page
 * ends before the row that would take its bytes past page_size (a page holds at least one row)
 * or at per_page rows. cuts receives 0, ..., n; returns the number of cuts, -1 for a code
 * beyond lens. */
KERNEL static Py_ssize_t
byte_cuts(const uint32_t *codes, Py_ssize_t n, const int64_t *lens, Py_ssize_t nlens,
          int64_t page_size, Py_ssize_t per_page, int64_t *cuts)
{
    Py_ssize_t k = 0, pos = 0;
    int64_t acc = 0;
    cuts[k++] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t c = codes[i];
        if ((Py_ssize_t)c >= nlens)
            return -1;
        int64_t len = lens[c];
        if (i > pos && (i - pos >= per_page || acc + len > page_size)) {
            cuts[k++] = i;
            pos = i;
            acc = 0;
        }
        acc += len;
    }
    if (n > 0)
        cuts[k++] = n;
    return k;
}

static PyObject *
native_byte_cuts(PyObject *self, PyObject *args)
{
    Py_buffer cbuf, lbuf, obuf;
    long long page_size;
    Py_ssize_t per_page;
    if (!PyArg_ParseTuple(args, "y*y*Lnw*", &cbuf, &lbuf, &page_size, &per_page, &obuf))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = cbuf.len / 4;
    if (cbuf.len % 4 || lbuf.len % 8 || obuf.len < (n + 1) * 8 || per_page < 1) {
        PyErr_SetString(PyExc_ValueError, "byte_cuts takes uint32 codes, int64 lengths, and an "
                        "int64 output of n + 1 entries");
        goto done;
    }
    if (((uintptr_t)cbuf.buf & 3) || ((uintptr_t)lbuf.buf & 7) || ((uintptr_t)obuf.buf & 7)) {
        PyErr_SetString(PyExc_ValueError, "byte_cuts buffers must be aligned");
        goto done;
    }
    {
        Py_ssize_t k;
        Py_BEGIN_ALLOW_THREADS
        k = byte_cuts((const uint32_t *)cbuf.buf, n, (const int64_t *)lbuf.buf, lbuf.len / 8,
                      page_size, per_page, (int64_t *)obuf.buf);
        Py_END_ALLOW_THREADS
        if (k < 0)
            PyErr_SetString(PyExc_ValueError, "a code is beyond the dictionary");
        else
            result = PyLong_FromSsize_t(k);
    }
done:
    PyBuffer_Release(&cbuf);
    PyBuffer_Release(&lbuf);
    PyBuffer_Release(&obuf);
    return result;
}

/* ----------------------------------------------------------------- code counts */

/* counts[c] += occurrences of c among n uint32 codes (counts holds nlens entries, zeroed by the
 * caller); -1 for a code beyond it. Four interleaved tables for small dictionaries, so that a
 * run of one code does not wait on its own counter's last increment. */
#define COUNT_WAYS 4
KERNEL static int
count_codes(const uint32_t *codes, Py_ssize_t n, int64_t *counts, Py_ssize_t nlens)
{
    if (nlens <= 1024) {
        int64_t *t = (int64_t *)calloc((size_t)(COUNT_WAYS * nlens + 1), sizeof(int64_t));
        if (!t)
            return -2;
        Py_ssize_t i = 0;
        uint32_t bad = 0;
        for (; i + COUNT_WAYS <= n; i += COUNT_WAYS)
            for (int w = 0; w < COUNT_WAYS; w++) {
                uint32_t c = codes[i + w];
                bad |= (Py_ssize_t)c >= nlens;
                t[w * nlens + ((Py_ssize_t)c < nlens ? c : 0)]++;
            }
        for (; i < n; i++) {
            uint32_t c = codes[i];
            bad |= (Py_ssize_t)c >= nlens;
            t[(Py_ssize_t)c < nlens ? c : 0]++;
        }
        for (Py_ssize_t c = 0; c < nlens; c++)
            for (int w = 0; w < COUNT_WAYS; w++)
                counts[c] += t[w * nlens + c];
        free(t);
        return bad ? -1 : 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t c = codes[i];
        if ((Py_ssize_t)c >= nlens)
            return -1;
        counts[c]++;
    }
    return 0;
}

static PyObject *
native_count_codes(PyObject *self, PyObject *args)
{
    Py_buffer cbuf, obuf;
    if (!PyArg_ParseTuple(args, "y*w*", &cbuf, &obuf))
        return NULL;
    PyObject *result = NULL;
    if (cbuf.len % 4 || obuf.len % 8 || ((uintptr_t)cbuf.buf & 3) || ((uintptr_t)obuf.buf & 7)) {
        PyErr_SetString(PyExc_ValueError, "count_codes takes aligned uint32 codes and an int64 output");
        goto done;
    }
    {
        int got;
        Py_BEGIN_ALLOW_THREADS
        got = count_codes((const uint32_t *)cbuf.buf, cbuf.len / 4, (int64_t *)obuf.buf, obuf.len / 8);
        Py_END_ALLOW_THREADS
        if (got == -2)
            PyErr_NoMemory();
        else if (got < 0)
            PyErr_SetString(PyExc_ValueError, "a code is beyond the dictionary");
        else
            result = Py_NewRef(Py_None);
    }
done:
    PyBuffer_Release(&cbuf);
    PyBuffer_Release(&obuf);
    return result;
}

/* ---------------------------------------------------------------------------- unpack */

/* out[i] = base + factor * value_i, in the output's unsigned width (modular). */
#define UNPACK_LOOP(T)                                                                     \
    do {                                                                                   \
        T *o = (T *)dst;                                                                   \
        const uint64_t mask = width == 64 ? ~(uint64_t)0 : (((uint64_t)1 << width) - 1);   \
        const T b = (T)base, f = (T)factor;                                                \
        for (Py_ssize_t j = 0; j < 64; j++) {                                              \
            Py_ssize_t start = j * lanes;                                                  \
            if (start >= n)                                                                \
                break;                                                                     \
            Py_ssize_t m = n - start < lanes ? n - start : lanes;                          \
            int bit = (int)(j * width);                                                    \
            const uint64_t *w0 = packed + (Py_ssize_t)(bit >> 6) * lanes;                  \
            int shift = bit & 63;                                                          \
            T *row = o + start;                                                            \
            if (shift + width > 64) {                                                      \
                const uint64_t *w1 = w0 + lanes;                                           \
                for (Py_ssize_t l = 0; l < m; l++) {                                       \
                    uint64_t v = ((w0[l] >> shift) | (w1[l] << (64 - shift))) & mask;      \
                    row[l] = (T)(b + f * (T)v);                                            \
                }                                                                          \
            }                                                                              \
            else if (factor == 1) {                                                        \
                for (Py_ssize_t l = 0; l < m; l++)                                         \
                    row[l] = (T)(b + (T)((w0[l] >> shift) & mask));                        \
            }                                                                              \
            else {                                                                         \
                for (Py_ssize_t l = 0; l < m; l++)                                         \
                    row[l] = (T)(b + f * (T)((w0[l] >> shift) & mask));                    \
            }                                                                              \
        }                                                                                  \
    } while (0)

KERNEL static void
unpack_any(const uint64_t *packed, Py_ssize_t n, Py_ssize_t lanes, int width, void *dst,
           int itemsize, uint64_t base, uint64_t factor)
{
    switch (itemsize) {
    case 1: UNPACK_LOOP(uint8_t); break;
    case 2: UNPACK_LOOP(uint16_t); break;
    case 4: UNPACK_LOOP(uint32_t); break;
    default: UNPACK_LOOP(uint64_t); break;
    }
}

static PyObject *
native_unpack(PyObject *self, PyObject *args)
{
    Py_buffer pbuf, obuf;
    Py_ssize_t n;
    int width, itemsize;
    unsigned long long base, factor;
    if (!PyArg_ParseTuple(args, "y*niw*iKK", &pbuf, &n, &width, &obuf, &itemsize, &base, &factor))
        return NULL;
    PyObject *result = NULL;
    if (check_itemsize(itemsize) < 0 || check_width(width) < 0)
        goto done;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "value count must not be negative");
        goto done;
    }
    Py_ssize_t lanes = (n + 63) / 64;
    if (pbuf.len < (Py_ssize_t)width * lanes * 8) {
        PyErr_Format(PyExc_ValueError, "packed block of %zd bytes is shorter than the %zd bytes "
                     "of %zd values of %d bits", pbuf.len, (Py_ssize_t)width * lanes * 8, n, width);
        goto done;
    }
    if (obuf.len < n * itemsize) {
        PyErr_Format(PyExc_ValueError, "output of %zd bytes cannot hold %zd values", obuf.len, n);
        goto done;
    }
    if (((uintptr_t)pbuf.buf & 7) != 0) {
        PyErr_SetString(PyExc_ValueError, "packed block is not 8-byte aligned");
        goto done;
    }
    {
        const uint64_t *packed = (const uint64_t *)pbuf.buf;
        void *dst = obuf.buf;
        Py_BEGIN_ALLOW_THREADS
        unpack_any(packed, n, lanes, width, dst, itemsize, base, factor);
        Py_END_ALLOW_THREADS
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&pbuf);
    PyBuffer_Release(&obuf);
    return result;
}

/* ---------------------------------------------------------------------------- minmax */

#define MINMAX_LOOP(T)                                                                     \
    do {                                                                                   \
        const T *x = (const T *)src;                                                       \
        T lo = x[0], hi = x[0];                                                            \
        for (Py_ssize_t i = 1; i < n; i++) {                                               \
            T v = x[i];                                                                    \
            lo = v < lo ? v : lo;                                                          \
            hi = v > hi ? v : hi;                                                          \
        }                                                                                  \
        if (is_signed) {                                                                   \
            slo = (long long)lo;                                                           \
            shi = (long long)hi;                                                           \
        }                                                                                  \
        else {                                                                             \
            ulo = (unsigned long long)lo;                                                  \
            uhi = (unsigned long long)hi;                                                  \
        }                                                                                  \
    } while (0)

KERNEL static void
minmax_any(const void *src, Py_ssize_t n, int itemsize, int is_signed, long long *s_lo,
           long long *s_hi, unsigned long long *u_lo, unsigned long long *u_hi)
{
    long long slo = 0, shi = 0;
    unsigned long long ulo = 0, uhi = 0;
    if (is_signed) {
        switch (itemsize) {
        case 1: MINMAX_LOOP(int8_t); break;
        case 2: MINMAX_LOOP(int16_t); break;
        case 4: MINMAX_LOOP(int32_t); break;
        default: MINMAX_LOOP(int64_t); break;
        }
    }
    else {
        switch (itemsize) {
        case 1: MINMAX_LOOP(uint8_t); break;
        case 2: MINMAX_LOOP(uint16_t); break;
        case 4: MINMAX_LOOP(uint32_t); break;
        default: MINMAX_LOOP(uint64_t); break;
        }
    }
    *s_lo = slo, *s_hi = shi, *u_lo = ulo, *u_hi = uhi;
}

static PyObject *
native_minmax(PyObject *self, PyObject *args)
{
    Py_buffer sbuf;
    int itemsize, is_signed;
    if (!PyArg_ParseTuple(args, "y*ip", &sbuf, &itemsize, &is_signed))
        return NULL;
    PyObject *result = NULL;
    if (check_itemsize(itemsize) < 0)
        goto done;
    if (sbuf.len % itemsize || sbuf.len == 0) {
        PyErr_SetString(PyExc_ValueError, "minmax needs a non-empty whole number of items");
        goto done;
    }
    {
        Py_ssize_t n = sbuf.len / itemsize;
        const void *src = sbuf.buf;
        long long slo = 0, shi = 0;
        unsigned long long ulo = 0, uhi = 0;
        Py_BEGIN_ALLOW_THREADS
        minmax_any(src, n, itemsize, is_signed, &slo, &shi, &ulo, &uhi);
        Py_END_ALLOW_THREADS
        if (is_signed)
            result = Py_BuildValue("(LL)", slo, shi);
        else
            result = Py_BuildValue("(KK)", ulo, uhi);
    }
done:
    PyBuffer_Release(&sbuf);
    return result;
}

/* ---------------------------------------------------------------------- decimal split */

/* ints[i] = rint(x[i] * p) as int64 (0 where beyond 2**53 or NaN); ok[i] = whether
 * float(ints[i]) / p (as float32 for float32 input) has the bits of x[i]. Returns the
 * number of positions that are not ok.
 *
 * rint without a call into libm: below 2**52, adding and subtracting 2**52 rounds to the
 * nearest integer, ties to even, as rint does in the default rounding mode; from 2**52 on
 * every double is an integer; NaN stays NaN. The int64 of an integral double below 2**51 in
 * magnitude is the bits of (s + 1.5 * 2**52) minus those of 1.5 * 2**52 (a vector integer
 * subtract); a chunk holding larger values converts them one by one. */
#define TWO52 4503599627370496.0
#define MAGIC 6755399441055744.0 /* 1.5 * 2**52 */
#define DECIMAL_LOOP(F, U)                                                                 \
    do {                                                                                   \
        const F *x = (const F *)src;                                                       \
        double sv[CHUNK];                                                                  \
        for (Py_ssize_t c = 0; c < n; c += CHUNK) {                                        \
            Py_ssize_t m = n - c < CHUNK ? n - c : CHUNK;                                  \
            const F *xc = x + c;                                                           \
            unsigned char *okc = ok + c;                                                   \
            int big = 0;                                                                   \
            for (Py_ssize_t l = 0; l < m; l++) {                                           \
                F xv = xc[l];                                                              \
                double t = (double)xv * p;                                                 \
                double a = fabs(t);                                                        \
                double r = copysign((a + TWO52) - TWO52, t);                               \
                double s = a < TWO52 ? r : t;                                              \
                int valid = fabs(s) <= 9007199254740992.0;                                 \
                s = valid ? s + 0.0 : 0.0; /* + 0.0: the integer 0 decodes to +0.0 */      \
                big |= fabs(s) >= 2251799813685248.0; /* 2**51 */                          \
                F dec = (F)(s / p);                                                        \
                U da, xa;                                                                  \
                memcpy(&da, &dec, sizeof(U));                                              \
                memcpy(&xa, &xv, sizeof(U));                                               \
                unsigned char good = (unsigned char)(valid & (da == xa));                  \
                okc[l] = good;                                                             \
                bad += !good;                                                              \
                sv[l] = s;                                                                 \
            }                                                                              \
            int64_t *ic = ints + c;                                                        \
            if (big) {                                                                     \
                for (Py_ssize_t l = 0; l < m; l++)                                         \
                    ic[l] = (int64_t)sv[l];                                                \
            }                                                                              \
            else {                                                                         \
                const double magic = MAGIC;                                                \
                int64_t mbits;                                                             \
                memcpy(&mbits, &magic, 8);                                                 \
                for (Py_ssize_t l = 0; l < m; l++) {                                       \
                    double y = sv[l] + MAGIC;                                              \
                    int64_t yb;                                                            \
                    memcpy(&yb, &y, 8);                                                    \
                    ic[l] = yb - mbits;                                                    \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    } while (0)

KERNEL static Py_ssize_t
decimal_any(const void *src, Py_ssize_t n, int itemsize, double p, int64_t *ints,
            unsigned char *ok)
{
    Py_ssize_t bad = 0;
    if (itemsize == 8)
        DECIMAL_LOOP(double, uint64_t);
    else
        DECIMAL_LOOP(float, uint32_t);
    return bad;
}

static PyObject *
native_decimal_split(PyObject *self, PyObject *args)
{
    Py_buffer sbuf, ibuf, kbuf;
    int itemsize;
    double p;
    if (!PyArg_ParseTuple(args, "y*idw*w*", &sbuf, &itemsize, &p, &ibuf, &kbuf))
        return NULL;
    PyObject *result = NULL;
    if (itemsize != 4 && itemsize != 8) {
        PyErr_Format(PyExc_ValueError, "decimal split takes float32 or float64, got %d bytes",
                     itemsize);
        goto done;
    }
    if (sbuf.len % itemsize) {
        PyErr_SetString(PyExc_ValueError, "source length is not a multiple of the item size");
        goto done;
    }
    {
        Py_ssize_t n = sbuf.len / itemsize;
        if (ibuf.len < n * 8 || kbuf.len < n) {
            PyErr_SetString(PyExc_ValueError, "outputs are too small for the values");
            goto done;
        }
        const void *src = sbuf.buf;
        int64_t *ints = (int64_t *)ibuf.buf;
        unsigned char *ok = (unsigned char *)kbuf.buf;
        Py_ssize_t bad;
        Py_BEGIN_ALLOW_THREADS
        bad = decimal_any(src, n, itemsize, p, ints, ok);
        Py_END_ALLOW_THREADS
        result = PyLong_FromSsize_t(bad);
    }
done:
    PyBuffer_Release(&sbuf);
    PyBuffer_Release(&ibuf);
    PyBuffer_Release(&kbuf);
    return result;
}

/* ----------------------------------------------------------------------- decode_fixed */

/* A FIXED blob (arcticlite/format/_encodings.py) decoded straight into its output, for the
 * encodings that need no codec: plain, constant, bit-packed, narrow, byte planes and delta over
 * any of these. Returns 1 when decoded; 0 when the blob is of another encoding or is not
 * exactly as the Python decoder requires it -- which then decodes it, or says what is wrong.
 * Values are handled as unsigned integers of the output's width (floats as their bits), as the
 * Python decoder does; sums and products wrap. */
enum { ENC_PLAIN = 0, ENC_CONSTANT = 1, ENC_BITPACK = 2, ENC_NARROW = 3, ENC_DELTA = 4,
       ENC_SPLIT = 12 };
#define FOR_HDR_SIZE 24   /* <BB6xQQ: id, width, base, factor */
#define DELTA_HDR_SIZE 16 /* <B7xQ: id, first value */
#define MAX_NESTING 8

static uint64_t
read_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#define FILL_LOOP(T)                                                                       \
    do {                                                                                   \
        T *d = (T *)dst;                                                                   \
        for (Py_ssize_t i = 0; i < n; i++)                                                 \
            d[i] = (T)v;                                                                   \
    } while (0)

static void
fill_any(void *dst, Py_ssize_t n, int itemsize, uint64_t v)
{
    switch (itemsize) {
    case 1: memset(dst, (int)(v & 0xff), (size_t)n); break;
    case 2: FILL_LOOP(uint16_t); break;
    case 4: FILL_LOOP(uint32_t); break;
    default: FILL_LOOP(uint64_t); break;
    }
}

/* narrow: value i is the little-endian unsigned integer of `width` bytes at src + i * width
 * (planes: byte k of value i at src + k * n + i); out = value * factor + base */
#define NARROW_LOOP(S, T)                                                                  \
    do {                                                                                   \
        T *d = (T *)dst;                                                                   \
        if (planes && sizeof(S) > 1) {                                                     \
            for (Py_ssize_t i = 0; i < n; i++) {                                           \
                uint64_t a = 0;                                                            \
                for (size_t k = 0; k < sizeof(S); k++)                                     \
                    a |= (uint64_t)src[k * n + i] << (8 * k);                              \
                d[i] = (T)(a * factor + base);                                             \
            }                                                                              \
        }                                                                                  \
        else {                                                                             \
            for (Py_ssize_t i = 0; i < n; i++) {                                           \
                S a;                                                                       \
                memcpy(&a, src + i * sizeof(S), sizeof(S));                                \
                d[i] = (T)((uint64_t)a * factor + base);                                   \
            }                                                                              \
        }                                                                                  \
    } while (0)

#define NARROW_OUT(S)                                                                      \
    do {                                                                                   \
        switch (itemsize) {                                                                \
        case 1: NARROW_LOOP(S, uint8_t); break;                                            \
        case 2: NARROW_LOOP(S, uint16_t); break;                                           \
        case 4: NARROW_LOOP(S, uint32_t); break;                                           \
        default: NARROW_LOOP(S, uint64_t); break;                                          \
        }                                                                                  \
    } while (0)

KERNEL static void
narrow_any(const unsigned char *src, Py_ssize_t n, int width, int planes, void *dst,
           int itemsize, uint64_t base, uint64_t factor)
{
    switch (width) {
    case 1: NARROW_OUT(uint8_t); break;
    case 2: NARROW_OUT(uint16_t); break;
    case 4: NARROW_OUT(uint32_t); break;
    default: NARROW_OUT(uint64_t); break;
    }
}

#define PREFIX_LOOP(T)                                                                     \
    do {                                                                                   \
        T *d = (T *)dst;                                                                   \
        for (Py_ssize_t i = 1; i < n; i++)                                                 \
            d[i] = (T)(d[i] + d[i - 1]);                                                   \
    } while (0)

static void
prefix_sum_any(void *dst, Py_ssize_t n, int itemsize)
{
    switch (itemsize) {
    case 1: PREFIX_LOOP(uint8_t); break;
    case 2: PREFIX_LOOP(uint16_t); break;
    case 4: PREFIX_LOOP(uint32_t); break;
    default: PREFIX_LOOP(uint64_t); break;
    }
}

/* 1: decoded; 0: not handled here; -1: out of memory (runs without the GIL) */
static int
decode_fixed_any(const unsigned char *blob, Py_ssize_t len, void *dst, int itemsize,
                 Py_ssize_t n, int depth)
{
    if (depth > MAX_NESTING || len < 1)
        return 0;
    int eid = blob[0];
    if (eid == ENC_PLAIN) {
        if (len != 1 + n * itemsize)
            return 0;
        memcpy(dst, blob + 1, (size_t)(n * itemsize));
        return 1;
    }
    if (eid == ENC_CONSTANT) {
        if (len != 1 + itemsize)
            return 0;
        uint64_t v = 0;
        memcpy(&v, blob + 1, (size_t)itemsize);
        fill_any(dst, n, itemsize, v);
        return 1;
    }
    if (eid == ENC_BITPACK || eid == ENC_NARROW || eid == ENC_SPLIT) {
        if (len < FOR_HDR_SIZE)
            return 0;
        int width = blob[1];
        uint64_t base = read_u64(blob + 8), factor = read_u64(blob + 16);
        const unsigned char *payload = blob + FOR_HDR_SIZE;
        if (eid == ENC_BITPACK) {
            if (width > 64)
                return 0;
            Py_ssize_t lanes = (n + 63) / 64;
            if (len != FOR_HDR_SIZE + 8 * (Py_ssize_t)width * lanes)
                return 0;
            if (width == 0) {
                fill_any(dst, n, itemsize, base);
                return 1;
            }
            if (n == 0)
                return 1;
            if (((uintptr_t)payload & 7) == 0) {
                unpack_any((const uint64_t *)payload, n, lanes, width, dst, itemsize, base, factor);
                return 1;
            }
            size_t bytes = (size_t)(8 * (Py_ssize_t)width * lanes);
            uint64_t *copy = (uint64_t *)PyMem_RawMalloc(bytes);
            if (copy == NULL)
                return -1;
            memcpy(copy, payload, bytes);
            unpack_any(copy, n, lanes, width, dst, itemsize, base, factor);
            PyMem_RawFree(copy);
            return 1;
        }
        if (width != 1 && width != 2 && width != 4 && width != 8)
            return 0;
        if (len != FOR_HDR_SIZE + n * width)
            return 0;
        narrow_any(payload, n, width, eid == ENC_SPLIT, dst, itemsize, base, factor);
        return 1;
    }
    if (eid == ENC_DELTA) {
        if (len < DELTA_HDR_SIZE || n < 1)
            return 0;
        uint64_t first = read_u64(blob + 8);
        int got = decode_fixed_any(blob + DELTA_HDR_SIZE, len - DELTA_HDR_SIZE,
                                   (unsigned char *)dst + itemsize, itemsize, n - 1, depth + 1);
        if (got != 1)
            return got;
        memcpy(dst, &first, (size_t)itemsize); /* the low bytes: little-endian truncation */
        prefix_sum_any(dst, n, itemsize);
        return 1;
    }
    return 0;
}

static PyObject *
native_decode_fixed(PyObject *self, PyObject *args)
{
    Py_buffer bbuf, obuf;
    Py_ssize_t n;
    int itemsize;
    if (!PyArg_ParseTuple(args, "y*w*in", &bbuf, &obuf, &itemsize, &n))
        return NULL;
    PyObject *result = NULL;
    if (check_itemsize(itemsize) < 0)
        goto done;
    if (n < 0 || obuf.len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "output of %zd bytes is not %zd values of %d bytes",
                     obuf.len, n, itemsize);
        goto done;
    }
    {
        int got;
        Py_BEGIN_ALLOW_THREADS
        got = decode_fixed_any((const unsigned char *)bbuf.buf, bbuf.len, obuf.buf, itemsize, n, 0);
        Py_END_ALLOW_THREADS
        if (got < 0)
            PyErr_NoMemory();
        else
            result = PyBool_FromLong(got);
    }
done:
    PyBuffer_Release(&bbuf);
    PyBuffer_Release(&obuf);
    return result;
}

static PyMethodDef native_methods[] = {
    {"decode_fixed", native_decode_fixed, METH_VARARGS,
     "decode_fixed(blob, out, itemsize, n) -> bool: a plain, constant, bit-packed, narrow, "
     "byte-plane or delta blob of n values decoded into out; False (out unspecified) for "
     "another encoding or a blob the Python decoder would refuse."},
    {"encode_for", native_encode_for, METH_VARARGS,
     "encode_for(src, itemsize, base, g, layout, param, out) -> bool: the offsets "
     "((src - base) mod 2**(8*itemsize)) / g, lane-packed at param bits (layout 0), or their "
     "param low bytes in value order (1) or as byte planes (2); False when an offset is not a "
     "multiple of g (out is then undefined)."},
    {"unpack", native_unpack, METH_VARARGS,
     "unpack(packed, n, width, out, itemsize, base, factor): out[i] = base + factor * "
     "value_i in out's unsigned width of itemsize bytes."},
    {"mark", native_mark, METH_VARARGS,
     "mark(src, itemsize, base, table) -> bool: table[(src - base) mod 2**(8*itemsize)] = 1; "
     "False when an offset is beyond the table."},
    {"lookup", native_lookup, METH_VARARGS,
     "lookup(src, itemsize, base, table_u32, out_u32) -> bool: out = table[src - base]; False "
     "(out untouched) when an offset is beyond the table."},
    {"factorize", native_factorize, METH_VARARGS,
     "factorize(words, codes_i32, uniques_u64) -> count: codes of 8-byte words by first "
     "appearance; -1 when there are more distinct words than uniques holds."},
    {"byte_cuts", native_byte_cuts, METH_VARARGS,
     "byte_cuts(codes_u32, lens_i64, page_size, per_page, cuts_i64) -> count: page boundaries "
     "of dictionary codes by their values' bytes."},
    {"count_codes", native_count_codes, METH_VARARGS,
     "count_codes(codes_u32, counts_i64): counts[c] += occurrences of c (ValueError for a "
     "code beyond counts)."},
    {"minmax", native_minmax, METH_VARARGS,
     "minmax(src, itemsize, signed) -> (min, max) of a non-empty integer buffer."},
    {"decimal_split", native_decimal_split, METH_VARARGS,
     "decimal_split(src, itemsize, p, ints_out, ok_out) -> number of values that do not "
     "round-trip through rint(x * p) / p."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "_native",
    "Optional native kernels of Fermion's value encodings (bit-identical to the numpy code).",
    -1, native_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModule_Create(&native_module);
}
