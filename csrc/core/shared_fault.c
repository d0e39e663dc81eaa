/*
 * shared_fault.c - a segment cut short under a live queue (ftruncate by a
 * process that may write it) makes the next access past its new end a SIGBUS,
 * which would kill this process.  The handler installed here when the first
 * segment is mapped turns such a fault into a corrupt queue instead, the way
 * Wayland's wl_shm does: it maps private zero pages over that segment's view
 * (every later access succeeds and reads nothing the peer wrote) and marks
 * both sides corrupt, so the calls that follow return PYQ_ECORRUPT.  A fault
 * at any other address goes to the handler that was there before (Python's
 * faulthandler, say), or to the default action.  Slow paths only.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>

#include "core/shared_pvt.h"

#define MAX_VIEWS 1024

/* The views mapped in this process: read by the handler with atomic loads
 * only (async-signal-safe), changed under `lock`. */
static struct {
    _Atomic uintptr_t start;
    _Atomic size_t len;
    struct pyq_queue *_Atomic q;
} views[MAX_VIEWS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction previous;
static int installed;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr;

    for (int i = 0; i < MAX_VIEWS; i++) {
        uintptr_t s = atomic_load_explicit(&views[i].start, memory_order_relaxed);
        size_t n = atomic_load_explicit(&views[i].len, memory_order_relaxed);
        if (s && a - s < n) {
            struct pyq_queue *q = atomic_load_explicit(&views[i].q, memory_order_relaxed);
            /* mmap is a system call, safe here in practice (wl_shm relies on
             * it too); the faulting access runs again on the zero pages. */
            mmap((void *)s, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                 -1, 0);
            q->p.corrupt |= PYQ_CORRUPT_READER | PYQ_CORRUPT_WRITER;
            return;
        }
    }
    if (previous.sa_flags & SA_SIGINFO) {
        previous.sa_sigaction(sig, si, uc);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
    } else {
        /* The default action: the access runs again and is fatal this time. */
        signal(SIGBUS, SIG_DFL);
    }
}

void pyq_shm_fault_watch(struct pyq_queue *q, void *start, size_t len)
{
    pthread_mutex_lock(&lock);
    if (!installed) {
        struct sigaction sa;
        sa.sa_sigaction = on_sigbus;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
        if (sigaction(SIGBUS, &sa, &previous) == 0)
            installed = 1;
    }
    for (int i = 0; i < MAX_VIEWS; i++) {
        if (!atomic_load_explicit(&views[i].start, memory_order_relaxed)) {
            atomic_store_explicit(&views[i].q, q, memory_order_relaxed);
            atomic_store_explicit(&views[i].len, len, memory_order_relaxed);
            /* Release: q and len are there before the handler can match start. */
            atomic_store_explicit(&views[i].start, (uintptr_t)start, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

void pyq_shm_fault_unwatch(void *start)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_VIEWS; i++)
        if (atomic_load_explicit(&views[i].start, memory_order_relaxed) == (uintptr_t)start)
            atomic_store_explicit(&views[i].start, 0, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
}
