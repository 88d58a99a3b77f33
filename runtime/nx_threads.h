/*
 * nx_threads.h -- the runtime's thread pool (sys_parallel_for), included by
 * nx_runtime.h; the state and the pool are in nx_threads.c, which
 * nx_runtime.c includes (so a build compiles no more files than before).
 *
 * The one way .nx code runs on several cores:
 *
 *     func rows_task(ctx: *void, begin: i64, end: i64) { ... items [begin, end) ... }
 *     sys_parallel_for(rows_task, ctx, n_items)
 *
 * runs rows_task over the items 0 .. n_items-1, split into contiguous chunks
 * that the calling thread and the pool's workers take in increasing order,
 * and returns when every chunk has run.  The contract that makes the result
 * the same bits for any thread count: the items are independent (no item
 * reads what another writes), so the chunks' order and split cannot matter.
 * The Python backend (runtime/nx_memory.py) runs the same chunks one after
 * the other, in order.  .nx has no function values: the checker accepts, as
 * the first argument of sys_parallel_for only, the name of a function
 * `(ctx: *void, begin: i64, end: i64)` with no result, and the emitters pass
 * its address (C) or the function (Python).
 *
 * Why it is shaped this way:
 *  - The thread count is the host's choice (nxc_set_threads: the Python API's
 *    threads=, `nxc run --threads`), never visible to .nx: a kernel cannot
 *    make its result depend on it.
 *  - A task may map and unmap its own scratch.  While tasks run, checked
 *    mode's region table (the live mappings, the quarantine, the arena) is
 *    read and changed under one mutex (nxrt_table_lock: only then, so a
 *    program without threads pays nothing), and the lookup caches shared by
 *    all threads (the module's site tables, nxrt_recent_tab) are not written;
 *    a thread's own site caches are locals, as before.  Unchecked mode needs
 *    nothing: calloc is thread-safe and the kept blocks are per thread.
 *  - Faults, the trap target and the shadow stack are per thread: a worker's
 *    stack starts as a copy of the caller's frames (so a fault in a task is
 *    reported with the whole .nx stack, through the sys_parallel_for call),
 *    a trap unwinds to the chunk's own handler, and the caller re-raises the
 *    fault of the lowest chunk that faulted once all chunks have stopped --
 *    the fault the Python backend's in-order run meets first.
 *  - A task that calls sys_parallel_for runs that inner loop on its own
 *    thread, in order (the pool is not re-entered).
 */
#ifndef NX_THREADS_H
#define NX_THREADS_H

/* The C type of a task (what the emitter passes: the address of the nx function). */
typedef void (*nxrt_task_fn)(void *ctx, int64_t begin, int64_t end);

/* At most this many threads (the caller and NXRT_MAX_THREADS - 1 workers). */
#ifndef NXRT_MAX_THREADS
#define NXRT_MAX_THREADS 256
#endif

NXRT_API int64_t nxrt_sys_parallel_for(nxrt_task_fn task, void *ctx, int64_t n);
#ifdef NXRT_CHECKED
NXRT_API int64_t nxrt_chk_sys_parallel_for(nxrt_task_fn task, void *ctx, int64_t n, int site);
#endif
/* Nonzero while tasks run: the region table is used under nxrt_table_lock,
   and the lookups leave the shared caches alone (nx_runtime.c). */
NXRT_STATE volatile int nxrt_par_active;

#ifdef NXRT_CHECKED
#include <pthread.h>
NXRT_STATE pthread_mutex_t nxrt_table_lock;
NXRT_STATE _Thread_local int nxrt_table_held;          /* this thread holds it */

/* Around every use of the region table while tasks run (no-ops otherwise). */
static inline void nxrt_table_enter(void)
{
    if (nxrt_par_active && !nxrt_table_held) {
        pthread_mutex_lock(&nxrt_table_lock);
        nxrt_table_held = 1;
    }
}

static inline void nxrt_table_leave(void)
{
    if (nxrt_table_held) {
        nxrt_table_held = 0;
        pthread_mutex_unlock(&nxrt_table_lock);
    }
}
#endif

#endif /* NX_THREADS_H */
