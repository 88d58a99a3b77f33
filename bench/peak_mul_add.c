/* The FP peak the linear kernel can reach bit-exactly: independent vector multiplies and
   independent vector adds, never fused (nxc's flags have -ffp-contract=off). Six multiply
   chains and six add chains, so that each pipe always has work (latency 3-4 cycles, two
   multiplies and two adds issued per cycle on Zen 3: 12 chains keep them busy); each step is
   one vmulps or one vaddps over a full vector (32 bytes on AVX2, 64 with AVX-512).
   m and k come from the caller so that nothing folds; m = 1 and k = 0 keep every value
   normal and constant (no subnormal slowdowns). Returns a value that depends on every chain.
   bench/run_bench.py counts lanes * 12 flops per iteration.

   peak_fma is the same twelve chains of fused multiply-adds (2 flops each): the peak of a BLAS
   such as numpy's OpenBLAS, which the bit-exact kernels may not use. On Zen 3 and Zen 4 the two
   are the same (separate add pipes); on Intel cores with AVX-512 a 512-bit multiply, add or FMA
   each take one of the same two ports, so the separate multiply and add peak is half the FMA
   one, and a BLAS at half its own peak runs as fast as a bit-exact kernel can at all.

   The asm barriers take "+v" (any vector register, zmm16-31 included): with "+x" GCC could not
   give a 64-byte vector an SSE-class register and kept all twelve chains on the stack, which
   measured the store-forwarding latency (44 GFLOP/s instead of 123 on a Xeon). */
#include <stdint.h>
#include <string.h>
#include <immintrin.h>

#if defined(__AVX512F__)
#define PEAK_BYTES 64
#else
#define PEAK_BYTES 32
#endif
typedef float peak_v __attribute__((vector_size(PEAK_BYTES)));

int64_t peak_lanes(void) { return PEAK_BYTES / 4; }

/* The twelve chains' start values, lane i of chain j: j + 1 + i. Built from a memcpy and
   vector-scalar arithmetic, never by indexing the vectors: GCC keeps an indexed vector in
   memory for the whole function, and the chains then measured the store-to-load latency. */
static peak_v peak_start(void)
{
    float lanes[PEAK_BYTES / 4];
    for (int i = 0; i < PEAK_BYTES / 4; i++) lanes[i] = 1.0f + i;
    peak_v v;
    memcpy(&v, lanes, sizeof v);
    return v;
}

float peak_mul_add(int64_t iters, float m, float k)
{
    peak_v zero = {0}, base = peak_start();
    peak_v vm = zero + m, vk = zero + k;
    peak_v x0 = base, x1 = base + 1.0f, x2 = base + 2.0f, x3 = base + 3.0f, x4 = base + 4.0f;
    peak_v x5 = base + 5.0f, y0 = base, y1 = base + 1.0f, y2 = base + 2.0f, y3 = base + 3.0f;
    peak_v y4 = base + 4.0f, y5 = base + 5.0f;
    for (int64_t n = 0; n < iters; n++) {
        x0 = x0 * vm; x1 = x1 * vm; x2 = x2 * vm; x3 = x3 * vm; x4 = x4 * vm; x5 = x5 * vm;
        y0 = y0 + vk; y1 = y1 + vk; y2 = y2 + vk; y3 = y3 + vk; y4 = y4 + vk; y5 = y5 + vk;
        __asm__ volatile("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3), "+v"(x4), "+v"(x5),
                              "+v"(y0), "+v"(y1), "+v"(y2), "+v"(y3), "+v"(y4), "+v"(y5));
    }
    peak_v s = x0 + x1 + x2 + x3 + x4 + x5 + y0 + y1 + y2 + y3 + y4 + y5;
    float lanes[PEAK_BYTES / 4];
    memcpy(lanes, &s, sizeof lanes);
    float r = 0.0f;
    for (int i = 0; i < PEAK_BYTES / 4; i++) r += lanes[i];
    return r;
}

#if defined(__AVX512F__) || defined(__FMA__)
static inline peak_v peak_fused(peak_v a, peak_v b, peak_v c)
{
#if defined(__AVX512F__)
    return (peak_v)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
    return (peak_v)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#endif
}

/* Twelve independent FMA chains: x = x * m + k. Returns 0 where the target has no FMA. */
int64_t peak_fma_available(void) { return 1; }

float peak_fma(int64_t iters, float m, float k)
{
    peak_v zero = {0}, base = peak_start();
    peak_v vm = zero + m, vk = zero + k;
    peak_v x0 = base, x1 = base + 1.0f, x2 = base + 2.0f, x3 = base + 3.0f, x4 = base + 4.0f;
    peak_v x5 = base + 5.0f, x6 = base + 6.0f, x7 = base + 7.0f, x8 = base + 8.0f;
    peak_v x9 = base + 9.0f, x10 = base + 10.0f, x11 = base + 11.0f;
    for (int64_t n = 0; n < iters; n++) {
        x0 = peak_fused(x0, vm, vk); x1 = peak_fused(x1, vm, vk); x2 = peak_fused(x2, vm, vk);
        x3 = peak_fused(x3, vm, vk); x4 = peak_fused(x4, vm, vk); x5 = peak_fused(x5, vm, vk);
        x6 = peak_fused(x6, vm, vk); x7 = peak_fused(x7, vm, vk); x8 = peak_fused(x8, vm, vk);
        x9 = peak_fused(x9, vm, vk); x10 = peak_fused(x10, vm, vk); x11 = peak_fused(x11, vm, vk);
        __asm__ volatile("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3), "+v"(x4), "+v"(x5),
                              "+v"(x6), "+v"(x7), "+v"(x8), "+v"(x9), "+v"(x10), "+v"(x11));
    }
    peak_v s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11;
    float lanes[PEAK_BYTES / 4];
    memcpy(lanes, &s, sizeof lanes);
    float r = 0.0f;
    for (int i = 0; i < PEAK_BYTES / 4; i++) r += lanes[i];
    return r;
}
#else
int64_t peak_fma_available(void) { return 0; }
float peak_fma(int64_t iters, float m, float k) { (void)iters; (void)m; (void)k; return 0.0f; }
#endif
