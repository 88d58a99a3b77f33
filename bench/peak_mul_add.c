/* The FP peak the linear kernel can reach bit-exactly: independent vector multiplies and
   independent vector adds, never fused (nxc's flags have -ffp-contract=off). Six multiply
   chains and six add chains, so that each pipe always has work (latency 3-4 cycles, two
   multiplies and two adds issued per cycle on Zen 3: 12 chains keep them busy); each step is
   one vmulps or one vaddps over a full vector (32 bytes on AVX2, 64 with AVX-512).
   m and k come from the caller so that nothing folds; m = 1 and k = 0 keep every value
   normal and constant (no subnormal slowdowns). Returns a value that depends on every chain.
   bench/run_bench.py counts lanes * 12 flops per iteration. */
#include <stdint.h>

#if defined(__AVX512F__)
#define PEAK_BYTES 64
#else
#define PEAK_BYTES 32
#endif
typedef float peak_v __attribute__((vector_size(PEAK_BYTES)));

int64_t peak_lanes(void) { return PEAK_BYTES / 4; }

float peak_mul_add(int64_t iters, float m, float k)
{
    peak_v vm, vk, x0, x1, x2, x3, x4, x5, y0, y1, y2, y3, y4, y5;
    for (int i = 0; i < PEAK_BYTES / 4; i++) {
        vm[i] = m; vk[i] = k;
        x0[i] = 1.0f + i; x1[i] = 2.0f; x2[i] = 3.0f; x3[i] = 4.0f; x4[i] = 5.0f; x5[i] = 6.0f;
        y0[i] = 1.0f; y1[i] = 2.0f + i; y2[i] = 3.0f; y3[i] = 4.0f; y4[i] = 5.0f; y5[i] = 6.0f;
    }
    for (int64_t n = 0; n < iters; n++) {
        x0 = x0 * vm; x1 = x1 * vm; x2 = x2 * vm; x3 = x3 * vm; x4 = x4 * vm; x5 = x5 * vm;
        y0 = y0 + vk; y1 = y1 + vk; y2 = y2 + vk; y3 = y3 + vk; y4 = y4 + vk; y5 = y5 + vk;
        __asm__ volatile("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3), "+x"(x4), "+x"(x5),
                              "+x"(y0), "+x"(y1), "+x"(y2), "+x"(y3), "+x"(y4), "+x"(y5));
    }
    peak_v s = x0 + x1 + x2 + x3 + x4 + x5 + y0 + y1 + y2 + y3 + y4 + y5;
    float r = 0.0f;
    for (int i = 0; i < PEAK_BYTES / 4; i++) r += s[i];
    return r;
}
