/* The fastest one thread reads memory: the sum of n 64-bit words, read as four streams side by
   side (the quarters of the buffer: one stream reads about 15% slower on the Xeon of the
   eleventh session, and the decode kernels read four panels side by side), in a loop GCC
   vectorizes with nxc's flags (an integer sum may be reassociated), so that nothing but the
   loads bound it. bench/run_bench.py measures it over a buffer far larger than the last-level
   cache (the memory's bandwidth: what a decode step of a real model streams its weights at) and
   over one that fits in it (what the linear bench's weights, tens of MB, are read at when they
   stay cache-resident between calls). */
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
