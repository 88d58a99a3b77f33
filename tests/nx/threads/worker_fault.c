/* worker_fault.c -- a fault raised on a pool worker, deterministically (tests/test_threads.py).
 *
 * Built with nxc's flags as one file (NXRT_ONE_FILE, checked): the task faults only on a
 * thread that is not the caller's (a sys_munmap of an address never mapped, the checked
 * runtime's own fault path), while on the caller it waits until a worker has faulted, so the
 * fault is certainly a worker's.  The caller must come back through its trap handler with the
 * worker's fault record and a shadow stack that starts with its own frames (the call site in
 * the caller's slot), then run a clean parallel call again: no hang, no crash.
 */
#define NXRT_ONE_FILE 1
#include "nx_runtime.h"
NXRT_SITE_TABLE(16);
#include "nx_runtime.c"

#include <stdio.h>

static pthread_t caller;
static _Atomic int worker_faulted;
static int64_t cells[64];

static void task(void *ctx, int64_t begin, int64_t end)
{
    (void)ctx;
    if (!pthread_equal(pthread_self(), caller)) {
        nxrt_enter(7);                          /* the task's own frame */
        atomic_store(&worker_faulted, 1);
        nxrt_chk_sys_munmap((void *)(uintptr_t)0x123450, 8, 9);   /* never mapped: a fault */
        return;
    }
    for (long k = 0; k < 2000000000L && !atomic_load(&worker_faulted); k++)
        ;                                       /* a few seconds at most */
    for (int64_t i = begin; i < end; i++)
        cells[i] = i;
}

static void clean(void *ctx, int64_t begin, int64_t end)
{
    (void)ctx;
    for (int64_t i = begin; i < end; i++)
        cells[i] = 2 * i;
}

int main(void)
{
    jmp_buf env;
    int64_t info[10];
    caller = pthread_self();
    nxc_set_threads(2);
    nxrt_stack_reset();
    nxrt_enter(3);                              /* the caller's frame: main */
    nx_trap_env = &env;
    if (setjmp(env) == 0) {
        nxrt_chk_sys_parallel_for(task, NULL, 64, 5);
        printf("no fault\n");
        return 1;
    }
    nxc_fault_info(info);
    printf("kind %lld site %lld depth %d frames", (long long)info[0], (long long)info[7], nxc_stack_depth());
    for (int k = 0; k < nxc_stack_depth(); k++)
        printf(" %d", nxc_stack_frame(k));
    printf(" trap %d\n", nxc_trap_site());
    nx_trap_env = &env;
    nxrt_stack_reset();
    nxrt_enter(3);
    if (setjmp(env) == 0) {
        nxrt_chk_sys_parallel_for(clean, NULL, 64, 5);
        for (int i = 0; i < 64; i++)
            if (cells[i] != 2 * i) { printf("wrong cell %d\n", i); return 1; }
        printf("clean ok\n");
        return 0;
    }
    printf("clean call trapped\n");
    return 1;
}
