/*
 * nx_threads.c -- the thread pool behind sys_parallel_for (nx_threads.h says
 * what it promises and why).  Included at the end of nx_runtime.c, so it sees
 * the runtime's state and is compiled wherever that is.
 *
 * The pool: workers are started on first need and then kept, blocked on a
 * condition variable between jobs.  A job is (task, ctx, n, grain); every
 * participating thread, the caller included, takes chunks of `grain` items
 * from one atomic counter, in increasing order, until none is left.  About
 * four chunks per thread: a busy core (the machine may be shared) then delays
 * a quarter of its share, not all of it.  After a fork the child has no
 * workers: pthread_atfork forgets them there.
 */
#include <pthread.h>
#include <stdatomic.h>

NXRT_API volatile int nxrt_par_active;
#ifdef NXRT_CHECKED
NXRT_API pthread_mutex_t nxrt_table_lock = PTHREAD_MUTEX_INITIALIZER;
NXRT_API _Thread_local int nxrt_table_held;
#endif

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    int want;                       /* threads a job uses (nxc_set_threads), >= 1 */
    int started;                    /* workers running */
    int helpers;                    /* workers the current job may take */
    int joined;                     /* workers taking part in the current job */
    int busy;                       /* of those, still running chunks */
    uint64_t job;                   /* job number: a worker runs each once */
    int in_use;                     /* a job is on (another host thread waits or runs inline) */
    nxrt_task_fn task;
    void *ctx;
    int64_t n, grain;
    _Atomic int64_t next;           /* first item of the next chunk */
    _Atomic int64_t stop_at;        /* after a fault: chunks from here on are skipped */
#ifdef NXRT_CHECKED
    const volatile int32_t *frames; /* the caller's shadow stack at the call ... */
    int32_t depth;                  /* ... and its depth */
#endif
    /* The fault of the lowest chunk that faulted (fault_begin < n). */
    int64_t fault_begin;
    int fault_site;
    const char *fault_what;
#ifdef NXRT_CHECKED
    int64_t fault_info[10];
    int32_t fault_depth;
#endif
} nxrt_pool_t;

static nxrt_pool_t nxrt_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 1};
#ifdef NXRT_CHECKED
static int32_t nxrt_fault_frames[NXRT_STACK_CAP];      /* the faulting thread's stack */
#endif
static _Thread_local int nxrt_in_task;                  /* this thread is running a task */

/* The thread count jobs use from now on: n < 1 means 1, capped at NXRT_MAX_THREADS. */
NX_EXPORT int nxc_set_threads(int n)
{
    if (n < 1)
        n = 1;
    if (n > NXRT_MAX_THREADS)
        n = NXRT_MAX_THREADS;
    pthread_mutex_lock(&nxrt_pool.mu);
    nxrt_pool.want = n;
    pthread_mutex_unlock(&nxrt_pool.mu);
    return n;
}

NX_EXPORT int nxc_threads(void) { return nxrt_pool.want; }

/* A chunk trapped on this thread: keep its fault if it is the lowest so far. */
static void nxrt_note_fault(int64_t begin)
{
    nxrt_pool_t *p = &nxrt_pool;
    pthread_mutex_lock(&p->mu);
    if (begin < p->fault_begin) {
        p->fault_begin = begin;
        p->fault_site = nx_trap_at;
        p->fault_what = nx_trap_what;
#ifdef NXRT_CHECKED
        memcpy(p->fault_info, nxrt_fault, sizeof p->fault_info);
        p->fault_depth = nxrt_stk[0] < NXRT_STACK_CAP ? nxrt_stk[0] : NXRT_STACK_CAP;
        for (int32_t k = 0; k < p->fault_depth; k++)
            nxrt_fault_frames[k] = nxrt_stk[1 + k];
#endif
        atomic_store(&p->stop_at, begin);
    }
    pthread_mutex_unlock(&p->mu);
}

/* One chunk under its own trap handler; 0 if it trapped. */
static int nxrt_run_chunk(int64_t begin, int64_t end)
{
    jmp_buf env;
    jmp_buf *saved = nx_trap_env;
    volatile int64_t b = begin;
    nx_trap_env = &env;
    if (setjmp(env)) {
        nx_trap_env = saved;
        nxrt_note_fault(b);
        return 0;
    }
#ifdef NXRT_CHECKED
    nxrt_stk[0] = nxrt_pool.depth;      /* the caller's frames, then the task's */
#endif
    nxrt_pool.task(nxrt_pool.ctx, begin, end);
    nx_trap_env = saved;
    return 1;
}

/* Take chunks until none is left or one faulted. */
static void nxrt_run_chunks(void)
{
    nxrt_pool_t *p = &nxrt_pool;
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, p->grain);
        if (b >= p->n || b >= atomic_load(&p->stop_at))
            return;
        if (!nxrt_run_chunk(b, b + p->grain < p->n ? b + p->grain : p->n))
            return;
    }
}

static void *nxrt_worker(void *arg)
{
    nxrt_pool_t *p = &nxrt_pool;
    uint64_t seen = 0;
    (void)arg;
#ifdef NXRT_CHECKED
    /* A worker's own shadow stack (the main thread's may be a page shared
       with the parent process; a worker's frames reach it on a fault only). */
    nxrt_stk = (volatile int32_t *)calloc(2 + NXRT_STACK_CAP, sizeof(int32_t));
    if (nxrt_stk == NULL)
        abort();
#endif
    nxrt_in_task = 1;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->job == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        seen = p->job;
        if (p->joined >= p->helpers)
            continue;                   /* the job has its threads, or is over */
        p->joined++;
        p->busy++;
        pthread_mutex_unlock(&p->mu);
#ifdef NXRT_CHECKED
        for (int32_t k = 0; k < p->depth; k++)
            nxrt_stk[1 + k] = p->frames[1 + k];
#endif
        nxrt_run_chunks();
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_broadcast(&p->done);
    }
    return NULL;
}

/* After fork(), in the child: no worker exists there. */
static void nxrt_pool_after_fork(void)
{
    nxrt_pool_t *p = &nxrt_pool;
#ifdef NXRT_CHECKED
    pthread_mutex_init(&nxrt_table_lock, NULL);
    nxrt_table_held = 0;
#endif
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->started = p->joined = p->busy = p->in_use = 0;
}

/* Start workers until `n` run (fewer if the system refuses). Under p->mu. */
static void nxrt_pool_grow(int n)
{
    static int registered;
    nxrt_pool_t *p = &nxrt_pool;
    if (!registered) {
        pthread_atfork(NULL, NULL, nxrt_pool_after_fork);
        registered = 1;
    }
    while (p->started < n) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, (size_t)64 << 20);    /* nx recursion as deep as on the main thread */
        int rc = pthread_create(&t, &attr, nxrt_worker, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        p->started++;
    }
}

/* In order on this thread: a nested call, one thread, or the pool busy. */
static void nxrt_run_inline(nxrt_task_fn task, void *ctx, int64_t n, int64_t grain)
{
    for (int64_t b = 0; b < n; b += grain)
        task(ctx, b, b + grain < n ? b + grain : n);
}

static int64_t nxrt_grain(int64_t n, int threads)
{
    int64_t chunks = (int64_t)threads * 4;
    return threads <= 1 ? n : (n + chunks - 1) / chunks;
}

static int64_t nxrt_parallel(nxrt_task_fn task, void *ctx, int64_t n)
{
    nxrt_pool_t *p = &nxrt_pool;
    int threads, faulted = 0, site = -1;
    const char *what = "";
#ifdef NXRT_CHECKED
    int32_t depth = nxrt_cur_stk()[0];
#endif
    if (n <= 0)
        return 0;
    pthread_mutex_lock(&p->mu);
    threads = p->want < n ? p->want : (int)n;
    if (nxrt_in_task || p->in_use || threads <= 1) {
        pthread_mutex_unlock(&p->mu);
        nxrt_run_inline(task, ctx, n, nxrt_grain(n, threads));
        return 0;
    }
    nxrt_pool_grow(threads - 1);
    p->in_use = 1;
    p->task = task;
    p->ctx = ctx;
    p->n = n;
    p->grain = nxrt_grain(n, threads);
    atomic_store(&p->next, 0);
    atomic_store(&p->stop_at, INT64_MAX);
    p->fault_begin = INT64_MAX;
#ifdef NXRT_CHECKED
    /* not a task (nxrt_in_task is 0): this thread has been on the shared stack, and it
       goes on with it, now through its thread-local (nxrt_cur_stk while tasks run) */
    nxrt_stk = nxrt_stk_shared;
    p->frames = nxrt_stk;
    p->depth = depth;
#endif
    p->helpers = p->started < threads - 1 ? p->started : threads - 1;
    p->joined = 0;
    p->job++;
    nxrt_par_active = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    nxrt_in_task = 1;
    nxrt_run_chunks();
    nxrt_in_task = 0;

    pthread_mutex_lock(&p->mu);
    p->helpers = 0;                     /* a worker not awake yet must not join late */
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    nxrt_par_active = 0;
    if (p->fault_begin != INT64_MAX) {  /* this thread takes the fault over */
        faulted = 1;
        site = p->fault_site;
        what = p->fault_what;
#ifdef NXRT_CHECKED
        memcpy(nxrt_fault, p->fault_info, sizeof p->fault_info);
        for (int32_t k = 0; k < p->fault_depth; k++)
            nxrt_stk[1 + k] = nxrt_fault_frames[k];
        depth = p->fault_depth;
#endif
    }
    p->in_use = 0;
    pthread_mutex_unlock(&p->mu);
#ifdef NXRT_CHECKED
    nxrt_stk[0] = depth;
#endif
    if (faulted)
        nx_trap(site, what);
    return 0;
}

NXRT_API int64_t nxrt_sys_parallel_for(nxrt_task_fn task, void *ctx, int64_t n)
{
    return nxrt_parallel(task, ctx, n);
}

#ifdef NXRT_CHECKED
NXRT_API int64_t nxrt_chk_sys_parallel_for(nxrt_task_fn task, void *ctx, int64_t n, int site)
{
    volatile int32_t *s = nxrt_cur_stk();
    int32_t d = s[0];
    if (d > 0)
        s[d] = site;                    /* the caller's frame is at the call, as for any call */
    return nxrt_parallel(task, ctx, n);
}
#endif
