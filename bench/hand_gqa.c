/* Hand-written scalar C twin of nx_src/nx_f32_gqa_attention.nx, for bench/run_bench.py.
 *
 * The same algorithm and the same float32 operation order as the .nx kernel
 * (nx_f32_attention.nx documents it; exp is the same Cephes-style code), written
 * the way a C programmer would: plain `float` temporaries, bit patterns only at
 * the int64 buffers. Compiled with the same flags as nxc's output, so its result
 * is bit-identical to the nx kernel's and the timing comparison is fair. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline float f_of(int64_t b) { uint32_t u = (uint32_t)b; float f; memcpy(&f, &u, 4); return f; }
static inline int64_t bits_of(float f) {
    if (f != f) return 0x7FC00000;
    uint32_t u; memcpy(&u, &f, 4); return (int64_t)u;
}
static inline uint32_t u_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float fu(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static float hexp(float x)
{
    if (x != x) return fu(0x7FC00000);
    if (fu(0x42B20000) < x) return fu(0x7F800000);
    if (x < fu(0xC2DC0000)) return 0.0f;
    float t = x * fu(0x3FB8AA3B);
    float tm = t + fu(0x4B400000);
    int64_t n = (int64_t)u_of(tm) - 0x4B400000;
    float nf = tm - fu(0x4B400000);
    float r = x - nf * fu(0x3F318000);
    r = r - nf * fu(0xB95E8083);
    float z = r * r;
    float p = fu(0x39506967);
    p = p * r + fu(0x3AB743CE);
    p = p * r + fu(0x3C088908);
    p = p * r + fu(0x3D2AA9C1);
    p = p * r + fu(0x3E2AAAAA);
    p = p * r + fu(0x3F000000);
    p = p * z;
    p = p + r;
    p = p + 1.0f;
    int64_t n1 = n >> 1, n2 = n - n1;
    return (p * fu((uint32_t)((n1 + 127) << 23))) * fu((uint32_t)((n2 + 127) << 23));
}

static inline float hmax(float a, float b)
{
    if (a != a || b != b) return fu(0x7FC00000);
    if (a == 0.0f && b == 0.0f) return fu(u_of(a) & u_of(b));
    return a < b ? b : a;
}

static void attention(const float *Q, const float *K, const float *V, int64_t n, int64_t hd,
                      float scale, float *out, float *score, float *prob)
{
    for (int64_t t = 0; t < n; t++) {
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t d = 0; d < hd; d++) acc = acc + Q[t * hd + d] * K[j * hd + d];
            score[j] = acc * scale;
        }
        float m = score[0];
        for (int64_t j = 1; j < n; j++) m = hmax(m, score[j]);
        float sum = 0.0f;
        for (int64_t j = 0; j < n; j++) { float e = hexp(score[j] - m); prob[j] = e; sum = sum + e; }
        for (int64_t j = 0; j < n; j++) prob[j] = prob[j] / sum;
        for (int64_t d = 0; d < hd; d++) {
            float acc = 0.0f;
            for (int64_t j = 0; j < n; j++) acc = acc + prob[j] * V[j * hd + d];
            out[t * hd + d] = acc;
        }
    }
}

/* Same contract as nx_f32_gqa_attention: int64 buffers of float32 bits. */
int64_t hand_gqa_attention(const int64_t *Q, const int64_t *K, const int64_t *V, int64_t n_tokens,
                           int64_t n_q_heads, int64_t n_kv_heads, int64_t head_dim, int64_t scale,
                           int64_t *out)
{
    if (n_kv_heads <= 0 || n_q_heads % n_kv_heads != 0) return 1;
    int64_t group = n_q_heads / n_kv_heads, qd = n_q_heads * head_dim, kvd = n_kv_heads * head_dim;
    size_t sz = (size_t)(n_tokens * head_dim);
    float *Qh = malloc(sz * 4), *Kh = malloc(sz * 4), *Vh = malloc(sz * 4), *Oh = malloc(sz * 4);
    float *sr = malloc((size_t)n_tokens * 4), *pr = malloc((size_t)n_tokens * 4);
    for (int64_t h = 0; h < n_q_heads; h++) {
        int64_t kv = h / group;
        for (int64_t t = 0; t < n_tokens; t++)
            for (int64_t d = 0; d < head_dim; d++) {
                Qh[t * head_dim + d] = f_of(Q[t * qd + h * head_dim + d]);
                Kh[t * head_dim + d] = f_of(K[t * kvd + kv * head_dim + d]);
                Vh[t * head_dim + d] = f_of(V[t * kvd + kv * head_dim + d]);
            }
        attention(Qh, Kh, Vh, n_tokens, head_dim, f_of(scale), Oh, sr, pr);
        for (int64_t t = 0; t < n_tokens; t++)
            for (int64_t d = 0; d < head_dim; d++)
                out[t * qd + h * head_dim + d] = bits_of(Oh[t * head_dim + d]);
    }
    free(Qh); free(Kh); free(Vh); free(Oh); free(sr); free(pr);
    return 0;
}
