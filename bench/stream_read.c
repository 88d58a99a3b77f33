/* The fastest one thread reads memory: the sum of n 64-bit words, read as four streams side by
   side (the quarters of the buffer: one stream reads about 15% slower on the Xeon of the
   eleventh session, and the decode kernels read four panels side by side), in a loop GCC
   vectorizes with nxc's flags (an integer sum may be reassociated), so that nothing but the
   loads bound it. bench/run_bench.py measures it over a buffer far larger than the last-level
   cache (the memory's bandwidth: what a decode step of a real model streams its weights at) and
   over one that fits in it (what the linear bench's weights, tens of MB, are read at when they
   stay cache-resident between calls).

   stream_read_one reads the buffer as one stream, with four sums so that no add chain bounds
   it. On the AMD EPYC (Zen 4) host of the eighteenth session four streams a quarter of a GiB
   apart read at 7-13 GB/s and one stream at 22-27 GB/s, while the decode kernels, which read
   their packed panels front to back, streamed 25-29 GB/s: bench/run_bench.py takes the faster
   of the two readers, so that the share of the bandwidth a decode row prints is against what
   this machine can read, whichever way suits it. */
#include <stdint.h>

uint64_t stream_read(const uint64_t *p, int64_t n)
{
    int64_t q = n / 4;
    const uint64_t *a = p, *b = p + q, *c = p + 2 * q, *d = p + 3 * q;
    uint64_t s = 0;
    for (int64_t i = 0; i < q; i++)
        s += a[i] + b[i] + c[i] + d[i];
    for (int64_t i = 4 * q; i < n; i++)
        s += p[i];
    return s;
}

uint64_t stream_read_one(const uint64_t *p, int64_t n)
{
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 8; k++) {
            s0 += p[i + k];
            s1 += p[i + 8 + k];
            s2 += p[i + 16 + k];
            s3 += p[i + 24 + k];
        }
    for (; i < n; i++)
        s0 += p[i];
    return s0 + s1 + s2 + s3;
}
