/*
 * nx_runtime.c -- the runtime's state and its out-of-line functions.
 *
 * nx_runtime.h says why the runtime is split.  This file is compiled once per
 * build configuration (checked or not, optimisation level, target) into an
 * object that every gate of that configuration links (nxc/backend/c/objects.py),
 * or included after the header by a single-file build.  Compile it with the
 * flags of the generated code (-std=c11 -fwrapv -fno-strict-aliasing
 * -ffp-contract=off -DNX_FLAGS_CHECKED), and -DNXRT_CHECKED for a checked build.
 */
#include "nx_runtime.h"

#include <stdio.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfloat-equal"
#endif

/* ---- traps ---- */
NXRT_API _Thread_local jmp_buf *nx_trap_env;
NXRT_API _Thread_local int nx_trap_at = -1;
NXRT_API _Thread_local const char *nx_trap_what = "";

NXRT_API __attribute__((noreturn, cold, noinline))
void nx_trap(int site, const char *what)
{
    nx_trap_at = site;
    nx_trap_what = what;
    if (nx_trap_env)
        longjmp(*nx_trap_env, 1);
    fprintf(stderr, "nx runtime error: %s (site %d)\n", what, site);
    abort();
}

NX_EXPORT int nxc_trap_site(void) { return nx_trap_at; }
NX_EXPORT const char *nxc_trap_kind(void) { return nx_trap_what; }

/* ---- the gate's report (nx_runtime.h) ---- */
NXRT_API int64_t nx_gate_site = -1;
NXRT_API int64_t nx_gate_captured[NXRT_CAPTURE_SLOTS];
NXRT_API uint32_t nx_gate_cap_mask;

NX_EXPORT int nxc_gate_site(void) { return (int)nx_gate_site; }
NX_EXPORT int64_t nxc_gate_captured(int slot)
{
    return (slot >= 0 && slot < NXRT_CAPTURE_SLOTS) ? nx_gate_captured[slot] : 0;
}
NX_EXPORT uint32_t nxc_gate_captured_mask(void) { return nx_gate_cap_mask; }

#ifndef NXRT_ONE_FILE
/* ---- a separately compiled gate: its modules, which main is the gate ----
   (a single-file build's own nxc_run_main calls its main directly:
   module.c.j2). More registrations than fit (a link has at most 2047
   modules: nxc/backend/c/objects.py, MAX_LINKED) are counted, never stored,
   so the loader sees the count differ and refuses the library. */
#define NXRT_MAX_MODULES 2048
static const nxrt_module *nxrt_modules[NXRT_MAX_MODULES];
static int nxrt_nmodules, nxrt_nbound;
static int64_t (*nxrt_gate_main)(void);

NXRT_API void nxrt_register_module(const nxrt_module *m)
{
    if (nxrt_nmodules < NXRT_MAX_MODULES)
        nxrt_modules[nxrt_nmodules] = m;
    nxrt_nmodules++;
}

/* How many module objects registered; how many were bound. */
NX_EXPORT int nxc_module_count(void) { return nxrt_nmodules; }
NX_EXPORT int nxc_modules_bound(void) { return nxrt_nbound; }

/* Module `id` gets site base `base` and, with `root`, its main is the gate.
   0, or -1: no module registered under that id, or `root` and it has no main. */
NX_EXPORT int nxc_module_bind(const char *id, int32_t base, int root)
{
    int k, n = nxrt_nmodules < NXRT_MAX_MODULES ? nxrt_nmodules : NXRT_MAX_MODULES;
    for (k = 0; k < n; k++) {
        const nxrt_module *m = nxrt_modules[k];
        if (strcmp(m->id, id) != 0)
            continue;
        if (root && !m->main)
            return -1;
        if (*m->site_base == 0)
            nxrt_nbound++;
        *m->site_base = base;
        if (root)
            nxrt_gate_main = m->main;
        return 0;
    }
    return -1;
}

/* Run the gate under a trap handler: 0 (*result is what main returned),
   1 (a trap: nxc_trap_site, nxc_fault_info), 2 (no gate bound). */
NX_EXPORT int nxc_run_main(int64_t *result)
{
    jmp_buf env;
    jmp_buf *saved = nx_trap_env;
    if (!nxrt_gate_main)
        return 2;
    nx_trap_env = &env;
#ifdef NXRT_CHECKED
    nxrt_stack_reset();
#endif
    if (setjmp(env)) {
        nx_trap_env = saved;
        return 1;
    }
    *result = nxrt_gate_main();
    nx_trap_env = saved;
    return 0;
}
#endif /* !NXRT_ONE_FILE */

/* ---- reading files ---- */

static FILE **nxrt_file_table(void)
{
    static FILE *files[NXRT_MAX_FILES];
    return files;
}

/* Every path sys_file_open tried, for the runner's result cache (a pass is
   cached only with the files it read: nxc/gates/inputs.py): per attempt '1'
   (opened) or '0', the path, a NUL. Past the log's size it is marked full
   (-1) and the pass is not cached. Read back by nxc_file_log. */
#define NXRT_FILE_LOG_BYTES (64 * 1024)
static char nxrt_file_log[NXRT_FILE_LOG_BYTES];
static int64_t nxrt_file_log_used;

static void nxrt_file_note(const uint8_t *path, int64_t n, int opened)
{
    if (nxrt_file_log_used < 0)
        return;
    if (n + 2 > NXRT_FILE_LOG_BYTES - nxrt_file_log_used) {
        nxrt_file_log_used = -1;
        return;
    }
    nxrt_file_log[nxrt_file_log_used++] = opened ? '1' : '0';
    memcpy(nxrt_file_log + nxrt_file_log_used, path, (size_t)n);
    nxrt_file_log_used += n;
    nxrt_file_log[nxrt_file_log_used++] = 0;
}

NX_EXPORT const char *nxc_file_log(void) { return nxrt_file_log; }
NX_EXPORT int64_t nxc_file_log_bytes(void) { return nxrt_file_log_used; }

static FILE *nxrt_file_get(int64_t h)
{
    if (h < 0 || h >= NXRT_MAX_FILES)
        return NULL;
    return nxrt_file_table()[h];
}

NXRT_API int64_t nxrt_sys_file_open(uint8_t *path, int64_t n)
{
    FILE **t = nxrt_file_table();
    char *name;
    int64_t h;
    if (path == NULL || n <= 0 || n > 4096 || memchr(path, 0, (size_t)n) != NULL)
        return NXRT_FILE_ERR_ARG;
    for (h = 0; h < NXRT_MAX_FILES && t[h] != NULL; h++)
        ;
    if (h == NXRT_MAX_FILES)
        return NXRT_FILE_ERR_TOO_MANY;
    name = (char *)malloc((size_t)n + 1);
    if (name == NULL)
        return NXRT_FILE_ERR_IO;
    memcpy(name, path, (size_t)n);
    name[n] = 0;
    t[h] = fopen(name, "rb");
    free(name);
    if (t[h] == NULL) {
        nxrt_file_note(path, n, 0);
        return NXRT_FILE_ERR_OPEN;
    }
    /* glibc opens a directory for reading; its first read fails (EISDIR) */
    if (fgetc(t[h]) == EOF && ferror(t[h])) {
        fclose(t[h]);
        t[h] = NULL;
        nxrt_file_note(path, n, 0);
        return NXRT_FILE_ERR_OPEN;
    }
    nxrt_file_note(path, n, 1);
    return h;
}

NXRT_API int64_t nxrt_sys_file_size(int64_t h)
{
    FILE *f = nxrt_file_get(h);
    long end;
    if (f == NULL)
        return NXRT_FILE_ERR_OPEN;
    if (fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) < 0)
        return NXRT_FILE_ERR_IO;
    return (int64_t)end;
}

NXRT_API int64_t nxrt_sys_file_read(int64_t h, int64_t offset, void *buf, int64_t n)
{
    FILE *f = nxrt_file_get(h);
    size_t got;
    if (f == NULL)
        return NXRT_FILE_ERR_OPEN;
    if (offset < 0 || n < 0 || (buf == NULL && n > 0))
        return NXRT_FILE_ERR_ARG;
    if (n == 0)
        return 0;
    if (fseek(f, (long)offset, SEEK_SET) != 0)
        return NXRT_FILE_ERR_IO;
    got = fread(buf, 1, (size_t)n, f);
    if (got < (size_t)n && ferror(f)) {
        clearerr(f);
        return NXRT_FILE_ERR_IO;
    }
    clearerr(f);
    return (int64_t)got;
}

NXRT_API int64_t nxrt_sys_file_close(int64_t h)
{
    FILE *f = nxrt_file_get(h);
    if (f == NULL)
        return NXRT_FILE_ERR_OPEN;
    nxrt_file_table()[h] = NULL;
    return fclose(f) == 0 ? 0 : NXRT_FILE_ERR_IO;
}

/* ---- binary16 -> float32, many at once (nx_f16_to_f32_block) ----
   The conversion is exact (every binary16 is a float32), so the hardware's (vcvtph2ps: F16C's 8
   lanes, AVX-512's 16) and the integer rule below give the same bits; only NaNs differ (the
   hardware keeps the payload), and the canonical NaN is put in their place. The intrinsics'
   GCC builtins are used directly: <immintrin.h> would add ~100 ms to every single-file build. */
static uint32_t nxrt_f16_bits(uint32_t h)
{
    uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1Fu)
        return m != 0 ? 0x7FC00000u : (sign | 0x7F800000u);
    if (e == 0) {
        int p;
        if (m == 0)
            return sign;
        p = 31 - __builtin_clz(m);                          /* m * 2^-24 = 2^(p-24) * 1.f */
        return sign | ((uint32_t)(p - 24 + 127) << 23) | ((m << (23 - p)) & 0x7FFFFFu);
    }
    return sign | ((e - 15u + 127u) << 23) | (m << 13);
}

#if defined(__AVX512F__)
#define NXRT_H2F_LANES 16
typedef short nxrt_vh __attribute__((vector_size(32)));
typedef float nxrt_vf __attribute__((vector_size(64)));
typedef uint32_t nxrt_vu __attribute__((vector_size(64)));
typedef int nxrt_vi __attribute__((vector_size(64)));
#elif defined(__F16C__) && defined(__AVX__)
#define NXRT_H2F_LANES 8
typedef short nxrt_vh __attribute__((vector_size(16)));
typedef float nxrt_vf __attribute__((vector_size(32)));
typedef uint32_t nxrt_vu __attribute__((vector_size(32)));
#endif

/* Elements [i, i + c) one chunk of NXRT_H2F_LANES (or one element), src read before dst written. */
static void nxrt_h2f_chunk(const uint16_t *src, uint32_t *dst, int64_t i, int64_t c)
{
#ifdef NXRT_H2F_LANES
    if (c == NXRT_H2F_LANES) {
        nxrt_vh h;
        nxrt_vf f;
        nxrt_vu u, nan;
        memcpy(&h, src + i, sizeof h);
#if NXRT_H2F_LANES == 16
        /* AVX-512: the NaN lanes found by one unordered compare into a mask register and
           replaced by one masked blend (two vector ops, where the integer test below takes four:
           the decode of f16 weights converts every weight here, and is bound by these ops) */
        unsigned short isnan;
        f = __builtin_ia32_vcvtph2ps512_mask(h, (nxrt_vf){0}, (unsigned short)0xFFFF, 4 /* current rounding */);
        isnan = __builtin_ia32_cmpps512_mask(f, f, 3 /* unordered */, (unsigned short)0xFFFF, 4);
        memcpy(&u, &f, sizeof u);
        nan = (nxrt_vu){0} + 0x7FC00000u;
        u = (nxrt_vu)__builtin_ia32_blendmd_512_mask((nxrt_vi)u, (nxrt_vi)nan, isnan);
#else
        f = __builtin_ia32_vcvtph2ps256(h);
        memcpy(&u, &f, sizeof u);
        nan = (nxrt_vu)((u & 0x7FFFFFFFu) > 0x7F800000u);
        u = (u & ~nan) | (0x7FC00000u & nan);
#endif
        memcpy(dst + i, &u, sizeof u);
        return;
    }
#endif
    for (int64_t k = 0; k < c; k++) {
        uint32_t v = nxrt_f16_bits(src[i + k]);
        dst[i + k] = v;
    }
}

#ifndef NXRT_H2F_LANES
#define NXRT_H2F_LANES 1
#endif

/* [lo, hi) from the front (c: chunk lanes; a short last chunk one element at a time). */
static void nxrt_h2f_forward(const uint16_t *src, uint32_t *dst, int64_t lo, int64_t hi)
{
    int64_t i = lo;
    for (; i + NXRT_H2F_LANES <= hi; i += NXRT_H2F_LANES)
        nxrt_h2f_chunk(src, dst, i, NXRT_H2F_LANES);
    for (; i < hi; i++)
        nxrt_h2f_chunk(src, dst, i, 1);
}

/* [lo, hi) from the back: the same chunks, the last (partial) one first. */
static void nxrt_h2f_backward(const uint16_t *src, uint32_t *dst, int64_t lo, int64_t hi)
{
    int64_t i = hi;
    for (; i > lo && (i - lo) % NXRT_H2F_LANES != 0; i--)
        nxrt_h2f_chunk(src, dst, i - 1, 1);
    for (; i > lo; i -= NXRT_H2F_LANES)
        nxrt_h2f_chunk(src, dst, i - NXRT_H2F_LANES, NXRT_H2F_LANES);
}

/* Apart and long (the tokens path's copy of a block of f16 weights, 4,096 halves, prefetched into
   L2 during the previous block's sums): the four quarters side by side, which keeps more reads in
   flight than one stream (2-4% of a 64-token linear call after the prefetch; the same values; the
   decode's short chunks, which it prefetches itself, stay one stream). */
#define NXRT_H2F_STREAMS_FROM 4096
static void nxrt_h2f_forward4(const uint16_t *src, uint32_t *dst, int64_t n)
{
    int64_t q = n / (4 * NXRT_H2F_LANES) * NXRT_H2F_LANES;      /* a quarter, in whole chunks */
    for (int64_t i = 0; i < q; i += NXRT_H2F_LANES) {
        nxrt_h2f_chunk(src, dst, i, NXRT_H2F_LANES);
        nxrt_h2f_chunk(src, dst, q + i, NXRT_H2F_LANES);
        nxrt_h2f_chunk(src, dst, 2 * q + i, NXRT_H2F_LANES);
        nxrt_h2f_chunk(src, dst, 3 * q + i, NXRT_H2F_LANES);
    }
    nxrt_h2f_forward(src, dst, 4 * q, n);
}

NXRT_API int64_t nxrt_nx_f16_to_f32_block(uint16_t *src, uint32_t *dst, int64_t n)
{
    uintptr_t s = (uintptr_t)src, d = (uintptr_t)dst;
    if (n <= 0)
        return 0;
    if (d + 4u * (uint64_t)n <= s || s + 2u * (uint64_t)n <= d) {
        if (n >= NXRT_H2F_STREAMS_FROM)                   /* apart: the common case */
            nxrt_h2f_forward4(src, dst, n);
        else
            nxrt_h2f_forward(src, dst, 0, n);
    } else if (d >= s) {
        /* dst[i] lies at or past src[i] and beyond every src[j < i]: from the back, each chunk
           is read before anything still unread can be written over */
        nxrt_h2f_backward(src, dst, 0, n);
    } else {
        /* dst below src: the elements from k = ceil((s - d) / 2) on write at or past the end of
           every unread src[j < i], so they go from the back; then [0, k), whose src was not
           touched (dst[k] starts at s + 2k or later), from the front: dst[0, i) ends below src[i] */
        int64_t k = (int64_t)((s - d + 1u) / 2u);
        if (k > n)
            k = n;
        nxrt_h2f_backward(src, dst, k, n);
        nxrt_h2f_forward(src, dst, 0, k);
    }
    return n;
}

/* ---- mapping files (sys_file_map / sys_file_unmap) ----
   Why: a model's weights are gigabytes; read()ing them copies every byte out
   of the page cache into fresh (zeroed, faulted-in) memory first. A mapping is
   the page cache's own pages, read where they lie. Read-only (PROT_READ,
   MAP_PRIVATE): a store through it is a fault in every build (checked builds
   report it located, nx_runtime.c below; unchecked C gets SIGSEGV). */
#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#include <sys/stat.h>
extern int fileno(FILE *);                  /* POSIX; hidden by strict -std=c11 */
#define NXRT_HAVE_FILE_MAP 1

static uint64_t nxrt_page(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    return pg > 0 ? (uint64_t)pg : 4096u;
}
#endif

NXRT_API uint8_t *nxrt_sys_file_map(int64_t h, int64_t offset, int64_t n)
{
#ifdef NXRT_HAVE_FILE_MAP
    FILE *f = nxrt_file_get(h);
    struct stat st;
    int64_t size;
    uint64_t pg = nxrt_page(), delta;
    void *p;
    if (f == NULL || offset < 0 || n <= 0)
        return NULL;
    /* fstat, not sys_file_size's fseek: the stream's position is not touched, so tasks on
       the thread pool may map the same handle at once */
    if (fstat(fileno(f), &st) != 0)
        return NULL;
    size = (int64_t)st.st_size;
    if (size < 0 || offset > size || n > size - offset)
        return NULL;
    delta = (uint64_t)offset % pg;          /* mmap's offset is whole pages */
    p = mmap(NULL, (size_t)(delta + (uint64_t)n), PROT_READ, MAP_PRIVATE, fileno(f), (off_t)((uint64_t)offset - delta));
    if (p == MAP_FAILED)
        return NULL;
    return (uint8_t *)p + delta;
#else
    (void)h; (void)offset; (void)n;
    return NULL;
#endif
}

/* The mapping's start is p rounded down to a page (mmap's result was a page,
   p is delta < page into it). */
NXRT_API int64_t nxrt_sys_file_unmap(uint8_t *p, int64_t n)
{
#ifdef NXRT_HAVE_FILE_MAP
    uint64_t delta;
    if (p == NULL || n <= 0)
        return 0;
    delta = (uint64_t)(uintptr_t)p % nxrt_page();
    munmap((char *)p - delta, (size_t)(delta + (uint64_t)n));
#else
    (void)p; (void)n;
#endif
    return 0;
}

#ifdef NXRT_CHECKED
/* ---- checked mode (nx_runtime.h says why it is shaped so) ---- */
NXRT_API nxrt_region *nxrt_live;          /* sorted by base */
NXRT_API int64_t nxrt_nlive, nxrt_caplive;
NXRT_API nxrt_dead_rec nxrt_dead[NXRT_QUARANTINE_COUNT];   /* FIFO ring */
NXRT_API int64_t nxrt_dead_head, nxrt_ndead;
NXRT_API uint64_t nxrt_dead_bytes;
NXRT_API nxrt_region nxrt_bufs[64];      /* numpy arrays of the current API call */
NXRT_API int64_t nxrt_nbufs;

/* The i-th newest quarantined range, as a region (for the fault path). */
static nxrt_region nxrt_dead_view;

static const nxrt_region *nxrt_dead_at(int64_t i)
{
    const nxrt_dead_rec *d = &nxrt_dead[(nxrt_dead_head - 1 - i + NXRT_QUARANTINE_COUNT) % NXRT_QUARANTINE_COUNT];
    nxrt_dead_view.base = d->base;
    nxrt_dead_view.len = d->len & ~(NXRT_DEAD_HELD | NXRT_DEAD_FILE);
    nxrt_dead_view.kind = (d->len & NXRT_DEAD_FILE) ? NXRT_K_FILE : NXRT_K_MEM;
    nxrt_dead_view.map_site = d->map_site;
    nxrt_dead_view.unmap_site = d->unmap_site;
    return &nxrt_dead_view;
}

/* Quarantine r (just unmapped); its calloc block, if it keeps one, is freed
   when the record is evicted. */
static void nxrt_dead_push(const nxrt_region *r, int held)
{
    nxrt_dead_rec *d = &nxrt_dead[nxrt_dead_head];
    d->base = r->base;
    d->len = r->len | (held ? NXRT_DEAD_HELD : 0) | (r->kind == NXRT_K_FILE ? NXRT_DEAD_FILE : 0);
    d->map_site = r->map_site;
    d->unmap_site = r->unmap_site;
    nxrt_dead_head = (nxrt_dead_head + 1) % NXRT_QUARANTINE_COUNT;
    nxrt_ndead++;
    if (held)
        nxrt_dead_bytes += r->len;
}

/* The last fault: read by nxc_fault_info(). */
NXRT_API _Thread_local int64_t nxrt_fault[10];

/* Shadow stack: [0] = depth, [1 + k] = site of frame k.  Volatile: another
   process reads it after killing this one, so no store may be merged away or
   sunk past a loop (C11 lets a compiler assume a loop without volatile
   accesses terminates, and then push and pop would cancel out). */
NXRT_API int32_t nxrt_stack_store[2 + NXRT_STACK_CAP];
NXRT_API _Thread_local volatile int32_t *nxrt_stk = nxrt_stack_store;   /* a pool worker's: its own (nx_threads.c) */
NXRT_API volatile int32_t *nxrt_stk_shared = nxrt_stack_store;        /* see nxrt_cur_stk */

/* Put the shadow stack in `page` (nbytes; shared with a parent process). */
NXRT_API int nxrt_stack_mirror(void *page, int64_t nbytes)
{
    if (page == NULL || nbytes < (int64_t)sizeof(int32_t) * (2 + NXRT_STACK_CAP))
        return -1;
    nxrt_stk = nxrt_stk_shared = (volatile int32_t *)page;
    nxrt_stk[0] = 0;
    return 0;
}

static void nxrt_record(int kind, uintptr_t a, int64_t size, const nxrt_region *r, int site)
{
    nxrt_fault[0] = kind;
    nxrt_fault[1] = (int64_t)a;
    nxrt_fault[2] = size;
    nxrt_fault[3] = r ? (int64_t)r->base : 0;
    nxrt_fault[4] = r ? (int64_t)r->len : 0;
    nxrt_fault[5] = r ? r->map_site : -1;
    nxrt_fault[6] = r ? r->unmap_site : -1;
    nxrt_fault[7] = site;
    nxrt_fault[8] = nxrt_cur_stk()[0];
    nxrt_fault[9] = r ? r->kind : NXRT_K_MEM;
}

__attribute__((noreturn, cold, noinline))
static void nxrt_fail(int kind, uintptr_t a, int64_t size, const nxrt_region *r, int site, const char *what)
{
    nxrt_record(kind, a, size, r, site);
    nxrt_table_leave();                 /* held while tasks run (nx_threads.h) */
    nx_trap(site, what);
}


__attribute__((noreturn, cold, noinline))
NXRT_API void nxrt_stack_overflow(int site)
{
    nxrt_fault[0] = NXRT_F_STACK;
    nxrt_fault[2] = NXRT_STACK_CAP;
    nxrt_fault[7] = site;
    nxrt_fault[8] = nxrt_cur_stk()[0];
    nx_trap(site, "stack overflow");
}

/* The live region holding [a, a + size), or NULL. */
static int64_t nxrt_last_live;          /* index of the region find_live found last */

static const nxrt_region *nxrt_find_live(uintptr_t a, uint64_t size)
{
    int64_t lo = 0, hi = nxrt_nlive - 1, i = nxrt_last_live;
    /* Misses often come in runs on one mapping (each site of a loop nest in
       turn): first the region found last.  An index the table's shifts made
       stale names another live region or none: still a valid test. */
    if (i < nxrt_nlive && a - nxrt_live[i].base < nxrt_live[i].len && nxrt_live[i].len - (a - nxrt_live[i].base) >= size)
        return &nxrt_live[i];
    /* A miss is mostly a mapping made lately (the scratch of the call that now
       touches it first), and the arena's newest are the table's last: search
       those 8 alone when a lies above their first. */
    if (nxrt_nlive > 8 && a >= nxrt_live[nxrt_nlive - 8].base)
        lo = nxrt_nlive - 8;
    while (lo <= hi) {                       /* last region with base <= a */
        int64_t mid = lo + ((hi - lo) >> 1);      /* hi >= lo: a shift */
        if (nxrt_live[mid].base <= a) lo = mid + 1; else hi = mid - 1;
    }
    if (hi >= 0 && a - nxrt_live[hi].base < nxrt_live[hi].len && nxrt_live[hi].len - (a - nxrt_live[hi].base) >= size) {
        if (!nxrt_par_active)           /* a hint shared by threads: not written while tasks run */
            nxrt_last_live = hi;
        return &nxrt_live[hi];
    }
    for (i = nxrt_nbufs - 1; i >= 0; i--) {  /* API buffers may overlap: scan them */
        const nxrt_region *b = &nxrt_bufs[i];
        if (a - b->base < b->len && b->len - (a - b->base) >= size)
            return b;
    }
    return NULL;
}

/* Why [a, a + size) is not a valid access: the fault kind, and the mapping
   it concerns (NULL for a null or wild pointer) in *about. */
static int nxrt_classify(uintptr_t a, uint64_t size, uint64_t align, const nxrt_region **about)
{
    const nxrt_region *r = nxrt_find_live(a, size), *best = NULL;
    uint64_t best_dist = (uint64_t)1 << 16;
    int best_kind = NXRT_F_WILD;
    int64_t i;
    *about = r;
    if (r != NULL)                          /* inside, but misaligned */
        return (a & (align - 1)) ? NXRT_F_MISALIGNED : NXRT_F_NONE;
    if (a < 0x10000u || a >= (uintptr_t)0 - 0x10000u)
        return NXRT_F_NULL;
    for (i = 0; i < nxrt_ndead; i++) {      /* newest first */
        const nxrt_region *d = nxrt_dead_at(i);
        if (a - d->base < (d->len ? d->len : 1)) {
            *about = d;
            return NXRT_F_UNMAPPED;
        }
    }
    /* Not inside any mapping: the nearest one within 64 KiB, live ones first. */
    for (i = 0; i < nxrt_nlive + nxrt_nbufs; i++) {
        const nxrt_region *c = i < nxrt_nlive ? &nxrt_live[i] : &nxrt_bufs[i - nxrt_nlive];
        if (a >= c->base && a - c->base < c->len + ((uint64_t)1 << 16)) {   /* reaches past its end */
            uint64_t dist = a >= c->base + c->len ? a - (c->base + c->len) : 0;
            if (best == NULL || dist < best_dist) { best = c; best_dist = dist; best_kind = NXRT_F_OOB; }
        } else if (a < c->base && c->base - a < ((uint64_t)1 << 16) && (best == NULL || c->base - a < best_dist)) {
            best = c; best_dist = c->base - a; best_kind = NXRT_F_BEFORE;
        }
    }
    if (best == NULL)
        for (i = 0; i < nxrt_ndead; i++) {
            const nxrt_region *d = nxrt_dead_at(i);
            if (a >= d->base && a - d->base < d->len + ((uint64_t)1 << 16)) { best = d; best_kind = NXRT_F_OOB; break; }
        }
    *about = best;
    return best_kind;
}

__attribute__((noreturn, cold, noinline))
static void nxrt_explain(uintptr_t a, uint64_t size, uint64_t align, int site, const char *what)
{
    const nxrt_region *r;
    int kind = nxrt_classify(a, size, align, &r);
    if (kind == NXRT_F_NONE)                /* cannot happen: the caller saw a bad access */
        kind = NXRT_F_WILD;
    nxrt_fail(kind, a, kind == NXRT_F_MISALIGNED ? (int64_t)align : (int64_t)size, r, site, what);
}

/* Behind the locals of a function (NXRT_CHK), each module keeps a second
   cache per site (its table nxrt_sc) that lives as long as the process.  An
   entry names its mapping by id, and is valid while that id's bit in
   nxrt_alive is set: ending a mapping clears one bit instead of scanning
   thousands of sites. */
static uint8_t *nxrt_alive;             /* bit per mapping id */
static uint64_t nxrt_alive_bits, nxrt_next_id = 1;

/* Only for an id nxrt_new_id gave (not 0): its bit exists. */
static inline int nxrt_alive_bit(uint64_t id)
{
    return (nxrt_alive[id >> 3] >> (id & 7)) & 1;
}

/* nxrt_recent_tab (nx_runtime.h): an entry names a live region; ending a
   region clears the entries that can name it (those its bytes index). */
NXRT_API nxrt_recent nxrt_recent_tab[NXRT_RECENT];

static void nxrt_recent_forget(uintptr_t base, uint64_t len)
{
    uint64_t k, first = base >> NXRT_RECENT_SHIFT, last = (base + (len ? len - 1 : 0)) >> NXRT_RECENT_SHIFT;
    if (last - first >= NXRT_RECENT) {
        memset(nxrt_recent_tab, 0, sizeof nxrt_recent_tab);
        return;
    }
    for (k = first; k <= last; k++) {
        nxrt_recent *e = &nxrt_recent_tab[k % NXRT_RECENT];
        if (e->base == base && e->len != 0)
            e->len = 0;
    }
}

static inline void nxrt_set_alive(uint64_t id, int on)
{
    if (id != 0 && id < nxrt_alive_bits) {
        if (on) nxrt_alive[id >> 3] |= (uint8_t)(1u << (id & 7));
        else nxrt_alive[id >> 3] &= (uint8_t)~(1u << (id & 7));
    }
}

/* A fresh id, alive (0 if the bitmap cannot grow: then never cached globally). */
static uint64_t nxrt_new_id(void)
{
    uint64_t id = nxrt_next_id;
    if (id >= nxrt_alive_bits) {
        uint64_t bits = nxrt_alive_bits ? 2 * nxrt_alive_bits : 4096;
        uint8_t *p = (uint8_t *)realloc(nxrt_alive, (size_t)(bits / 8));
        if (p == NULL)
            return 0;
        memset(p + nxrt_alive_bits / 8, 0, (size_t)((bits - nxrt_alive_bits) / 8));
        nxrt_alive = p;
        nxrt_alive_bits = bits;
    }
    nxrt_next_id++;
    nxrt_set_alive(id, 1);
    return id;
}

/* The site's new cache entry for an access at a (g: the site's entry in its
   module's table); if the access is not valid, a trap (trap != 0) or the
   entry (0, 0), which no address hits. */
/* The rest of a lookup, out of line so that the two hits above it need no
   saved registers (measured: the prologue and epilogue were a third of a
   lookup's instructions): the table of live regions, then the caches. */
static __attribute__((noinline)) nxrt_site_cache nxrt_chk_search(uintptr_t a, uint64_t size, uint64_t align, int site,
                                                                int trap, nxrt_global_cache *g)
{
    nxrt_site_cache c;
    nxrt_recent *e = &nxrt_recent_tab[(a >> NXRT_RECENT_SHIFT) % NXRT_RECENT];
    const nxrt_region *r;
    int store = (align & NXRT_ACC_W) != 0;
    align &= ~NXRT_ACC_W;
    nxrt_table_enter();
    r = nxrt_find_live(a, size);
    if (r == NULL || (a & (align - 1)) != 0 || (store && r->kind == NXRT_K_FILE)) {
        if (trap && r != NULL && (a & (align - 1)) == 0)
            nxrt_fail(NXRT_F_READONLY, a, (int64_t)size, r, site, "invalid memory access");
        if (trap)
            nxrt_explain(a, size, align, site, "invalid memory access");
        nxrt_table_leave();
        c.base = 0;
        c.span = 0;
        return c;
    }
    c.base = r->base;
    c.span = (r->base & (align - 1)) ? 0 : ((r->len - size) >> __builtin_ctzll(align)) + 1;
    if (r->id != 0 && !nxrt_par_active) {   /* tasks running: the shared caches are read-only */
        /* The table shared by reads and stores never names a read-only
           region (only this site's own entry does: a site reads or stores). */
        if (r->kind == NXRT_K_MEM) {
            e->base = r->base;
            e->len = r->len;
            e->id = r->id;
        }
        g->base = c.base;
        g->span = c.span;
        g->id = r->id;
    }
    nxrt_table_leave();
    return c;
}

static inline __attribute__((always_inline)) nxrt_site_cache nxrt_chk_lookup(uintptr_t a, uint64_t size, uint64_t align,
                                                                             int site, int trap, nxrt_global_cache *g)
{
    nxrt_site_cache c;
    nxrt_recent *e;
    uint64_t wflag = align & NXRT_ACC_W;    /* a store: passed on to the search */
    align &= ~NXRT_ACC_W;
    /* An entry is only written with an id from nxrt_new_id (never 0), whose bit
       exists: the bit alone says whether it is still valid. */
    if (__builtin_expect(nxrt_par_active, 0))
        return nxrt_chk_search(a, size, align | wflag, site, trap, g);   /* tasks run: the table, under its lock */
    if (nxrt_rotr(a - g->base, (unsigned)__builtin_ctzll(align)) < g->span && nxrt_alive_bit(g->id)) {
        c.base = g->base;
        c.span = g->span;
        return c;
    }
    e = &nxrt_recent_tab[(a >> NXRT_RECENT_SHIFT) % NXRT_RECENT];
    if (a - e->base < e->len && e->len - (a - e->base) >= size && (a & (align - 1)) == 0) {
        c.base = e->base;
        c.span = (e->base & (align - 1)) ? 0 : ((e->len - size) >> __builtin_ctzll(align)) + 1;
        g->base = c.base;
        g->span = c.span;
        g->id = e->id;
        return c;
    }
    return nxrt_chk_search(a, size, align | wflag, site, trap, g);   /* six arguments: a tail call, nothing saved */
}

NXRT_API nxrt_site_cache nxrt_chk_slow(uintptr_t a, uint64_t size, uint64_t align, int site, nxrt_global_cache *g)
{
    return nxrt_chk_lookup(a, size, align, site, 1, g);
}

NXRT_API nxrt_site_cache nxrt_chk_try(uintptr_t a, uint64_t size, uint64_t align, int site, nxrt_global_cache *g)
{
    return nxrt_chk_lookup(a, size, align, site, 0, g);
}

#ifdef NXRT_ONE_FILE
NXRT_API nxrt_site_cache nxrt_chk_slow_here(uintptr_t a, uint64_t size, uint64_t align, int site)
{
    return nxrt_chk_lookup(a, size, align, site, 1, &nxrt_sc[site]);
}

NXRT_API nxrt_site_cache nxrt_chk_try_here(uintptr_t a, uint64_t size, uint64_t align, int site)
{
    return nxrt_chk_lookup(a, size, align, site, 0, &nxrt_sc[site]);
}
#endif

static int nxrt_add_live(const nxrt_region *r)
{
    int64_t i;
    if (nxrt_nlive == nxrt_caplive) {
        int64_t cap = nxrt_caplive ? 2 * nxrt_caplive : 64;
        nxrt_region *p = (nxrt_region *)realloc(nxrt_live, (size_t)cap * sizeof *p);
        if (p == NULL)
            return -1;
        nxrt_live = p;
        nxrt_caplive = cap;
    }
    i = nxrt_nlive;                         /* mostly at the end: calloc tends upward */
    if (i > 0 && nxrt_live[i - 1].base > r->base) {
        int64_t lo = 0, hi = i;
        while (lo < hi) {
            int64_t mid = lo + ((hi - lo) >> 1);      /* hi >= lo: a shift */
            if (nxrt_live[mid].base > r->base) hi = mid; else lo = mid + 1;
        }
        memmove(&nxrt_live[lo + 1], &nxrt_live[lo], (size_t)(i - lo) * sizeof *nxrt_live);
        i = lo;
    }
    nxrt_live[i] = *r;
    nxrt_nlive++;
    return 0;
}

static void nxrt_file_range_free(uintptr_t base, uint64_t len);

/* The oldest quarantined range is forgotten (its calloc block freed, a file
   mapping's reserved range given back). */
static void nxrt_quarantine_evict(void)
{
    const nxrt_dead_rec *old = &nxrt_dead[(nxrt_dead_head - nxrt_ndead + NXRT_QUARANTINE_COUNT) % NXRT_QUARANTINE_COUNT];
    if (old->len & NXRT_DEAD_FILE)
        nxrt_file_range_free(old->base, old->len & ~NXRT_DEAD_FILE);
    if (old->len & NXRT_DEAD_HELD) {
        free((char *)old->base - NXRT_REDZONE);
        nxrt_dead_bytes -= old->len & ~NXRT_DEAD_HELD;
    }
    nxrt_ndead--;
}

/* ---- the arena of small checked mappings ----
   Why: a checked build must never hand out the address of a mapping that
   ended recently (a stale pointer would then silently reach the new one), so
   calloc'd blocks sat in the quarantine, and every new mapping took fresh
   pages from the kernel (measured on the paged gate: ~160 more page faults
   than unchecked C, ~1.5 us each, more than all its checks together).  Small
   mappings are therefore carved from chunks of a reserved address range:
   addresses only ever increase (the next chunk's address is always new), so a
   stale pointer never reaches a later mapping however long ago its own ended,
   and the unmapped range costs no memory, only its record in the quarantine.
   A chunk whose mappings have all ended keeps its pages: when a new chunk is
   needed, mremap moves those pages to the next new address (no page faults,
   one syscall for NXRT_ARENA_CHUNK bytes) and the old range is reserved again
   (PROT_NONE), so nothing else is mapped there either.  The red zones are the
   gaps between mappings, never written.  Mappings above NXRT_ARENA_SMALL, and
   everything when the reservation fails, take the calloc path below. */
#if defined(__linux__) && !defined(NXRT_NO_ARENA)
#include <sys/mman.h>
#ifndef MAP_ANONYMOUS                       /* Linux values (strict -std=c11 hides them) */
#define MAP_ANONYMOUS 0x20
#endif
#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0x4000
#endif
#ifndef MAP_POPULATE
#define MAP_POPULATE 0x8000
#endif
#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE 1
#define MREMAP_FIXED 2
extern void *mremap(void *old_address, size_t old_size, size_t new_size, int flags, ...);
#endif
#define NXRT_HAVE_ARENA 1
#ifndef NXRT_ARENA_CHUNK
#define NXRT_ARENA_CHUNK ((uint64_t)64 << 10)
#endif
#ifndef NXRT_ARENA_RESERVE
#define NXRT_ARENA_RESERVE ((uint64_t)1 << 30)   /* address space per reservation (no memory; more when used up) */
#endif
#define NXRT_ARENA_SMALL (NXRT_ARENA_CHUNK / 4)

typedef struct {
    uintptr_t va;           /* where its pages are now */
    uint64_t used;          /* bytes handed out from va (all written bytes lie below) */
    int64_t live;           /* live mappings in it */
    int reused;             /* its pages held earlier mappings: zero each new one */
} nxrt_chunk;

static nxrt_chunk *nxrt_chunks;
static int64_t nxrt_nchunks, nxrt_capchunks;
static int64_t *nxrt_empty;             /* chunks with no live mapping, not the current one */
static int64_t nxrt_nempty;
static int64_t nxrt_cur_chunk = -1;
static uintptr_t nxrt_res_next, nxrt_res_end;   /* the unused part of the reservation */
static int nxrt_arena_off;              /* the reservation failed: calloc only */

/* The next never-used address range of `size` bytes (a multiple of the page
   size; reserving more if needed), or 0. */
static uintptr_t nxrt_arena_fresh_range(uint64_t size)
{
    uintptr_t va;
    if (nxrt_res_end - nxrt_res_next < size) {
        /* The rest of the old reservation stays reserved (PROT_NONE): unused. */
        uint64_t want = size > NXRT_ARENA_RESERVE ? size : NXRT_ARENA_RESERVE;
        void *p = mmap(NULL, (size_t)want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return 0;
        nxrt_res_next = (uintptr_t)p;
        nxrt_res_end = nxrt_res_next + want;
    }
    va = nxrt_res_next;
    nxrt_res_next += size;
    return va;
}

/* Give a range's pages back to the kernel and keep the range reserved, so
   that no later mapping of anyone lands there (one call). */
static void nxrt_arena_release(uintptr_t va, uint64_t size)
{
    mmap((void *)va, (size_t)size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

/* A chunk to carve from at a new address: an empty one's pages moved there, or
   fresh pages; -1 if neither can be had. */
static int64_t nxrt_arena_chunk(void)
{
    uintptr_t va;
    int64_t c;
    if (nxrt_nchunks == nxrt_capchunks) {
        int64_t cap = nxrt_capchunks ? 2 * nxrt_capchunks : 64;
        nxrt_chunk *p = (nxrt_chunk *)realloc(nxrt_chunks, (size_t)cap * sizeof *p);
        int64_t *q = (int64_t *)realloc(nxrt_empty, (size_t)cap * sizeof *q);
        if (p != NULL)
            nxrt_chunks = p;
        if (q != NULL)
            nxrt_empty = q;
        if (p == NULL || q == NULL)
            return -1;
        nxrt_capchunks = cap;
    }
    va = nxrt_arena_fresh_range(NXRT_ARENA_CHUNK);
    if (va == 0)
        return -1;
    while (nxrt_nempty > 0) {               /* reuse the pages of an empty chunk */
        nxrt_chunk *e = &nxrt_chunks[nxrt_empty[--nxrt_nempty]];
        if (mremap((void *)e->va, (size_t)NXRT_ARENA_CHUNK, (size_t)NXRT_ARENA_CHUNK, MREMAP_MAYMOVE | MREMAP_FIXED,
                   (void *)va) == MAP_FAILED)
            continue;                       /* (e.g. the map-count limit): forget that chunk */
        /* Its old range stays ours, so no later mmap of anyone lands there. */
        nxrt_arena_release(e->va, NXRT_ARENA_CHUNK);
        e->va = va;
        e->used = 0;
        e->reused = 1;
        return e - nxrt_chunks;
    }
    /* Fresh pages, populated in the same call: the chunk is filled before the
       next is taken, and faulting its pages in one call is cheaper than one
       fault each (measured: the paged gate's main() 700 -> 650 us CPU). */
    if (mmap((void *)va, (size_t)NXRT_ARENA_CHUNK, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE, -1, 0) == MAP_FAILED)
        return -1;
    c = nxrt_nchunks++;
    nxrt_chunks[c].va = va;
    nxrt_chunks[c].used = 0;
    nxrt_chunks[c].live = 0;
    nxrt_chunks[c].reused = 0;              /* fresh pages are zero */
    return c;
}

/* Room for nbytes (<= NXRT_ARENA_SMALL) with NXRT_REDZONE of gap on each side,
   as the calloc path spaces them: the mapping's address, *chunk set; or NULL. */
static char *nxrt_arena_take(int64_t nbytes, int32_t *chunk)
{
    uint64_t slot = (uint64_t)2 * NXRT_REDZONE + (((uint64_t)nbytes + 15u) & ~(uint64_t)15u) + 16u;
    nxrt_chunk *c;
    char *p;
    if (nxrt_arena_off)
        return NULL;
    if (nxrt_cur_chunk < 0 || nxrt_chunks[nxrt_cur_chunk].used + slot > NXRT_ARENA_CHUNK) {
        int64_t old = nxrt_cur_chunk, k = nxrt_arena_chunk();
        if (k < 0) {
            nxrt_arena_off = 1;
            return NULL;
        }
        if (old >= 0 && nxrt_chunks[old].live == 0)
            nxrt_empty[nxrt_nempty++] = old;
        nxrt_cur_chunk = k;
    }
    c = &nxrt_chunks[nxrt_cur_chunk];
    p = (char *)(c->va + c->used + NXRT_REDZONE);
    c->used += slot;
    c->live++;
    if (c->reused)                          /* sys_mmap memory is zeroed (as calloc, only the bytes asked for) */
        memset(p, 0, (size_t)nbytes);
    *chunk = (int32_t)nxrt_cur_chunk;
    return p;
}

/* A mapping in chunk k ended. */
static void nxrt_arena_drop(int32_t k)
{
    if (--nxrt_chunks[k].live == 0 && k != nxrt_cur_chunk)
        nxrt_empty[nxrt_nempty++] = k;
}

/* ---- big checked mappings: a range of their own, pages kept for the next ----
   Why: a kernel that maps and unmaps the same scratch per call (the attention
   kernels, once per head) paid a page fault per page of every new mapping
   in checked C, while unchecked C reuses its released blocks (nx_runtime.h,
   "kept blocks"): measured, GQA n=256 checked/unchecked 1.40.  A mapping above
   NXRT_ARENA_SMALL gets a never-used range of its own from the reservation
   (red zones inside it, never written); when it ends its address is dead for
   good, but its pages are kept (a few, NXRT_BIG_KEEP_BYTES at most) and a
   later mapping of about the same size gets them moved (mremap) to its own
   new range, zeroed, with the old range reserved again.  A stale pointer
   therefore never reaches a later mapping, as in the chunks above. */
#define NXRT_BIG_KEEP 8
#ifndef NXRT_BIG_KEEP_BYTES
#define NXRT_BIG_KEEP_BYTES ((uint64_t)64 << 20)
#endif
#ifndef NXRT_BIG_MAX
#define NXRT_BIG_MAX ((int64_t)1 << 30)            /* larger ones take the calloc path */
#endif
#define NXRT_CHUNK_BIG (-2)                        /* nxrt_region.chunk of a big mapping */

static struct { uintptr_t va; uint64_t size; } nxrt_big_kept[NXRT_BIG_KEEP];
static int nxrt_nbig_kept;
static uint64_t nxrt_big_kept_bytes;

static uint64_t nxrt_big_size(uint64_t nbytes)
{
    return (nbytes + 2 * (uint64_t)NXRT_REDZONE + 4095u) & ~(uint64_t)4095u;
}

static void nxrt_big_forget(int i)
{
    nxrt_big_kept_bytes -= nxrt_big_kept[i].size;
    nxrt_big_kept[i] = nxrt_big_kept[--nxrt_nbig_kept];
}

/* A big mapping's address (NXRT_REDZONE into its own new range), zeroed, or NULL. */
static char *nxrt_big_take(int64_t nbytes)
{
    uint64_t size = nxrt_big_size((uint64_t)nbytes);
    uintptr_t va;
    int i;
    if (nxrt_arena_off)
        return NULL;
    va = nxrt_arena_fresh_range(size);
    if (va == 0)
        return NULL;
    for (i = 0; i < nxrt_nbig_kept; i++) {
        uintptr_t old = nxrt_big_kept[i].va;
        uint64_t have = nxrt_big_kept[i].size;
        if (have < size || have > 2 * size)
            continue;
        /* Shrinking moves `size` bytes and frees the rest of the old pages. */
        if (mremap((void *)old, (size_t)have, (size_t)size, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)va) == MAP_FAILED)
            continue;
        nxrt_arena_release(old, have);
        nxrt_big_forget(i);
        memset((char *)va + NXRT_REDZONE, 0, (size_t)nbytes);   /* as fresh sys_mmap memory */
        return (char *)va + NXRT_REDZONE;
    }
    if (mmap((void *)va, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
            == MAP_FAILED)
        return NULL;                        /* the range stays reserved, unused */
    return (char *)va + NXRT_REDZONE;
}

/* A big mapping ended: keep its pages for the next (the oldest kept go first). */
static void nxrt_big_drop(uintptr_t base, uint64_t nbytes)
{
    uintptr_t va = base - NXRT_REDZONE;
    uint64_t size = nxrt_big_size(nbytes);
    if (size > NXRT_BIG_KEEP_BYTES / 2) {
        nxrt_arena_release(va, size);
        return;
    }
    while (nxrt_nbig_kept > 0 && (nxrt_nbig_kept == NXRT_BIG_KEEP || nxrt_big_kept_bytes + size > NXRT_BIG_KEEP_BYTES)) {
        nxrt_arena_release(nxrt_big_kept[0].va, nxrt_big_kept[0].size);
        nxrt_big_forget(0);
    }
    nxrt_big_kept[nxrt_nbig_kept].va = va;
    nxrt_big_kept[nxrt_nbig_kept].size = size;
    nxrt_nbig_kept++;
    nxrt_big_kept_bytes += size;
}
#endif

/* sys_mmap, checked: zeroed, 16-byte aligned, with red zones, registered. */
static void *nxrt_chk_mmap_locked(int64_t nbytes, int site)
{
    nxrt_region r;
    char *block = NULL;
    if (nbytes <= 0 || nbytes > NXRT_MMAP_MAX_BYTES)
        return NULL;
    r.chunk = -1;
    r.kind = NXRT_K_MEM;
#ifdef NXRT_HAVE_ARENA
    if (nbytes <= (int64_t)NXRT_ARENA_SMALL)
        r.base = (uintptr_t)nxrt_arena_take(nbytes, &r.chunk);
    else if (nbytes <= NXRT_BIG_MAX && (r.base = (uintptr_t)nxrt_big_take(nbytes)) != 0)
        r.chunk = NXRT_CHUNK_BIG;
    else
#endif
        r.base = 0;
    if (r.base == 0) {
        block = (char *)nxrt_sys_mmap(nbytes + 2 * NXRT_REDZONE);
        if (block == NULL)
            return NULL;
        r.base = (uintptr_t)(block + NXRT_REDZONE);
    }
    r.len = (uint64_t)nbytes;
    r.block = block;
    r.map_site = site;
    r.unmap_site = -1;
    r.id = nxrt_new_id();
    if (nxrt_add_live(&r) != 0) {
#ifdef NXRT_HAVE_ARENA
        if (r.chunk >= 0)
            nxrt_arena_drop(r.chunk);
        else if (r.chunk == NXRT_CHUNK_BIG)
            nxrt_big_drop(r.base, r.len);
#endif
        free(block);
        return NULL;
    }
    return (void *)r.base;
}

/* A fault of sys_munmap (kind NXRT_K_MEM) or sys_file_unmap (NXRT_K_FILE):
   the record says which call it was (nxrt_fault[9], bit 1). */
__attribute__((noreturn, cold, noinline))
static void nxrt_fail_unmap(int fault, uintptr_t a, const nxrt_region *r, int site, int call)
{
    const char *what = call == NXRT_K_FILE ? "sys_file_unmap" : "sys_munmap";
    nxrt_record(fault, a, 0, r, site);
    nxrt_fault[9] |= call == NXRT_K_FILE ? 2 : 0;
    nxrt_table_leave();                 /* held while tasks run (nx_threads.h) */
    nx_trap(site, what);
}

/* The live region starting at p, removed from the table, in *r; faults if p
   is not the start of a live mapping made by the call that ends `call`'s. */
static void nxrt_take_live(uintptr_t a, int site, int call, nxrt_region *r)
{
    int64_t lo = 0, hi = nxrt_nlive - 1, i;
    while (lo <= hi) {
        int64_t mid = lo + ((hi - lo) >> 1);      /* hi >= lo: a shift */
        if (nxrt_live[mid].base <= a) lo = mid + 1; else hi = mid - 1;
    }
    if (hi < 0 || nxrt_live[hi].base != a) {
        if (hi >= 0 && a - nxrt_live[hi].base < nxrt_live[hi].len)
            nxrt_fail_unmap(NXRT_F_MUNMAP_INSIDE, a, &nxrt_live[hi], site, call);
        for (i = 0; i < nxrt_ndead; i++) {
            const nxrt_region *d = nxrt_dead_at(i);
            if (d->base == a)
                nxrt_fail_unmap(NXRT_F_MUNMAP_TWICE, a, d, site, call);
        }
        nxrt_fail_unmap(NXRT_F_MUNMAP_UNKNOWN, a, NULL, site, call);
    }
    if (nxrt_live[hi].kind != call)
        nxrt_fail_unmap(NXRT_F_UNMAP_KIND, a, &nxrt_live[hi], site, call);
    *r = nxrt_live[hi];
    memmove(&nxrt_live[hi], &nxrt_live[hi + 1], (size_t)(nxrt_nlive - hi - 1) * sizeof *nxrt_live);
    nxrt_nlive--;
    nxrt_set_alive(r->id, 0);
    nxrt_recent_forget(r->base, r->len);
    r->unmap_site = site;
}

/* sys_munmap, checked: the range goes to the quarantine (see above). */
static int64_t nxrt_chk_munmap_locked(void *p, int64_t nbytes, int site)
{
    nxrt_region r;
    (void)nbytes;
    if (p == NULL)
        return 0;
    nxrt_take_live((uintptr_t)p, site, NXRT_K_MEM, &r);
#ifdef NXRT_HAVE_ARENA
    if (r.chunk >= 0 || r.chunk == NXRT_CHUNK_BIG) {
        /* Its address is never handed out again: the record alone is kept (it
           holds no memory, so it counts nothing against the byte budget). */
        if (r.chunk >= 0)
            nxrt_arena_drop(r.chunk);
        else
            nxrt_big_drop(r.base, r.len);
        if (nxrt_ndead == NXRT_QUARANTINE_COUNT)
            nxrt_quarantine_evict();
        nxrt_dead_push(&r, 0);
        return 0;
    }
#endif
    /* Quarantine: evict the oldest while over budget. */
    while (nxrt_ndead > 0 && (nxrt_ndead == NXRT_QUARANTINE_COUNT || nxrt_dead_bytes + r.len > NXRT_QUARANTINE_BYTES))
        nxrt_quarantine_evict();
    if (r.len > NXRT_QUARANTINE_BYTES) {
        free(r.block);                      /* too big to keep: forgotten */
        return 0;
    }
    memset(r.block, 0x5A, (size_t)r.len + 2 * NXRT_REDZONE);   /* stale reads see garbage, not old data */
    nxrt_dead_push(&r, 1);
    return 0;
}

/* The two that change the table: under its lock while tasks run (nx_threads.h;
   a fault inside releases it, in nxrt_fail). */
NXRT_API void *nxrt_chk_sys_mmap(int64_t nbytes, int site)
{
    void *p;
    nxrt_table_enter();
    p = nxrt_chk_mmap_locked(nbytes, site);
    nxrt_table_leave();
    return p;
}

NXRT_API int64_t nxrt_chk_sys_munmap(void *p, int64_t nbytes, int site)
{
    int64_t rc;
    nxrt_table_enter();
    rc = nxrt_chk_munmap_locked(p, nbytes, site);
    nxrt_table_leave();
    return rc;
}

/* The externs that take a buffer, checked: its n bytes must lie inside one
   live mapping (one that is not read-only, if `store`: the extern writes
   there), else the fault is reported at the call's site as `what`. */
static void nxrt_chk_range(const void *buf, int64_t n, int site, const char *what, int store)
{
    const nxrt_region *r = NULL;
    nxrt_table_enter();
    if (n > 0 && (r = nxrt_find_live((uintptr_t)buf, (uint64_t)n)) == NULL)
        nxrt_explain((uintptr_t)buf, (uint64_t)n, 1, site, what);
    if (n > 0 && store && r->kind == NXRT_K_FILE)
        nxrt_fail(NXRT_F_READONLY, (uintptr_t)buf, n, r, site, what);
    nxrt_table_leave();
}

/* A file mapping's pages, once it ends: the range stays reserved (PROT_NONE,
   no memory), as the arena's do, so that no later mapping of anyone lands
   where a stale pointer into the file points; given back when its record
   leaves the quarantine (nxrt_file_range_free). */
static void nxrt_file_range_hold(uintptr_t base, uint64_t len)
{
#if defined(NXRT_HAVE_FILE_MAP) && defined(__linux__)
    uint64_t pg = nxrt_page(), delta = base % pg;
    if (mmap((void *)(base - delta), (size_t)(delta + len), PROT_NONE,
             MAP_PRIVATE | 0x20 /* MAP_ANONYMOUS */ | 0x4000 /* MAP_NORESERVE */ | MAP_FIXED, -1, 0) != MAP_FAILED)
        return;
#endif
    nxrt_sys_file_unmap((uint8_t *)base, (int64_t)len);
}

static void nxrt_file_range_free(uintptr_t base, uint64_t len)
{
    nxrt_sys_file_unmap((uint8_t *)base, (int64_t)len);   /* the reservation, page-rounded the same way */
}

/* sys_file_map, checked: a region no store may reach (NXRT_K_FILE). */
NXRT_API uint8_t *nxrt_chk_sys_file_map(int64_t h, int64_t offset, int64_t n, int site)
{
    nxrt_region r;
    uint8_t *p = nxrt_sys_file_map(h, offset, n);
    if (p == NULL)
        return NULL;
    r.base = (uintptr_t)p;
    r.len = (uint64_t)n;
    r.block = NULL;
    r.chunk = -1;
    r.map_site = site;
    r.unmap_site = -1;
    r.kind = NXRT_K_FILE;
    nxrt_table_enter();
    r.id = nxrt_new_id();
    if (nxrt_add_live(&r) != 0) {
        nxrt_table_leave();
        nxrt_sys_file_unmap(p, n);
        return NULL;
    }
    nxrt_table_leave();
    return p;
}

/* sys_file_unmap, checked: p must be what sys_file_map returned (and n its
   length: the record's is used); the range is quarantined as sys_munmap's. */
NXRT_API int64_t nxrt_chk_sys_file_unmap(uint8_t *p, int64_t n, int site)
{
    nxrt_region r;
    (void)n;
    if (p == NULL)
        return 0;
    nxrt_table_enter();
    nxrt_take_live((uintptr_t)p, site, NXRT_K_FILE, &r);
    nxrt_file_range_hold(r.base, r.len);
    if (nxrt_ndead == NXRT_QUARANTINE_COUNT)
        nxrt_quarantine_evict();
    nxrt_dead_push(&r, 0);
    nxrt_table_leave();
    return 0;
}

/* sys_write, checked (the standard streams; other fds are refused anyway). */
NXRT_API int64_t nxrt_chk_sys_write(int64_t fd, void *buf, int64_t n, int site)
{
    if (fd == 1 || fd == 2)
        nxrt_chk_range(buf, n, site, "sys_write", 0);
    return nxrt_sys_write(fd, buf, n);
}

/* The file externs, checked: the path is read from, and the buffer written
   into, memory that must lie inside one mapping. */
NXRT_API int64_t nxrt_chk_sys_file_open(uint8_t *path, int64_t n, int site)
{
    nxrt_chk_range(path, n, site, "sys_file_open", 0);
    return nxrt_sys_file_open(path, n);
}

NXRT_API int64_t nxrt_chk_sys_file_read(int64_t h, int64_t offset, void *buf, int64_t n, int site)
{
    nxrt_chk_range(buf, n, site, "sys_file_read", 1);
    return nxrt_sys_file_read(h, offset, buf, n);
}

NXRT_API int64_t nxrt_chk_nx_f16_to_f32_block(uint16_t *src, uint32_t *dst, int64_t n, int site)
{
    if (n > 0) {
        /* n past what any mapping can hold: the checks below fail on the clamped size */
        int64_t m = n > ((int64_t)1 << 60) ? ((int64_t)1 << 60) : n;
        nxrt_chk_range(src, 2 * m, site, "nx_f16_to_f32_block", 0);
        nxrt_chk_range(dst, 4 * m, site, "nx_f16_to_f32_block", 1);
    }
    return nxrt_nx_f16_to_f32_block(src, dst, n);
}

/* The Python API: the numpy arrays of one call (argument k: map_site -2-k). */
NXRT_API int nxrt_buf_register(void *p, int64_t nbytes, int arg)
{
    nxrt_region *b;
    if (nxrt_nbufs >= (int64_t)(sizeof nxrt_bufs / sizeof nxrt_bufs[0]))
        return -1;
    b = &nxrt_bufs[nxrt_nbufs++];
    b->base = (uintptr_t)p;
    b->len = (uint64_t)nbytes;
    b->block = NULL;
    b->chunk = -1;
    b->kind = NXRT_K_MEM;
    b->map_site = -2 - arg;
    b->unmap_site = -1;
    b->id = nxrt_new_id();
    return 0;
}

/* After the call: no site cache may keep pointing into the arrays. */
NXRT_API void nxrt_buf_clear(void)
{
    int64_t i;
    for (i = 0; i < nxrt_nbufs; i++)
        nxrt_set_alive(nxrt_bufs[i].id, 0);
    memset(nxrt_recent_tab, 0, sizeof nxrt_recent_tab);
    nxrt_nbufs = 0;
}

/* 0 if [a, a + size) is a valid access, else the fault kind (recorded as a
   fault at site -1: the Python API reading a field or an array). */
NXRT_API int nxrt_probe(uintptr_t a, int64_t size, int64_t align)
{
    const nxrt_region *r;
    int kind = nxrt_classify(a, (uint64_t)size, (uint64_t)align, &r);
    if (kind != NXRT_F_NONE)
        nxrt_record(kind, a, kind == NXRT_F_MISALIGNED ? align : size, r, -1);
    return kind;
}

/* ---- entry points (checked): the last fault, the shadow stack, the Python API's buffers ---- */
NX_EXPORT int nxc_checked(void) { return 1; }
NX_EXPORT void nxc_fault_info(int64_t *out) { memcpy(out, nxrt_fault, sizeof nxrt_fault); }
NX_EXPORT int nxc_stack_depth(void) { return nxrt_cur_stk()[0]; }
NX_EXPORT int nxc_stack_frame(int k)
{
    volatile int32_t *s = nxrt_cur_stk();
    return (k >= 0 && k < s[0] && k < NXRT_STACK_CAP) ? s[1 + k] : -1;
}
NX_EXPORT int nxc_stack_mirror(void *page, int64_t nbytes) { return nxrt_stack_mirror(page, nbytes); }
NX_EXPORT int64_t nxc_stack_bytes(void) { return (int64_t)sizeof(int32_t) * (2 + NXRT_STACK_CAP); }
NX_EXPORT int nxc_buf_register(void *p, int64_t nbytes, int arg) { return nxrt_buf_register(p, nbytes, arg); }
NX_EXPORT void nxc_buf_clear(void) { nxrt_buf_clear(); }
NX_EXPORT int nxc_probe(void *p, int64_t size, int64_t align) { return nxrt_probe((uintptr_t)p, size, align); }
#else
/* ---- entry points (unchecked): the same names, doing nothing ---- */
NX_EXPORT int nxc_checked(void) { return 0; }
NX_EXPORT void nxc_fault_info(int64_t *out) { memset(out, 0, 10 * sizeof(int64_t)); }
NX_EXPORT int nxc_stack_depth(void) { return 0; }
NX_EXPORT int nxc_stack_frame(int k) { (void)k; return -1; }
NX_EXPORT int nxc_stack_mirror(void *page, int64_t nbytes) { (void)page; (void)nbytes; return -1; }
NX_EXPORT int64_t nxc_stack_bytes(void) { return 0; }
NX_EXPORT int nxc_buf_register(void *p, int64_t nbytes, int arg) { (void)p; (void)nbytes; (void)arg; return 0; }
NX_EXPORT void nxc_buf_clear(void) { }
NX_EXPORT int nxc_probe(void *p, int64_t size, int64_t align) { (void)p; (void)size; (void)align; return 0; }
#endif /* NXRT_CHECKED */

/* ---- the thread pool (sys_parallel_for) ---- */
#include "nx_threads.c"

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
