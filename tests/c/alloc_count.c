/* alloc_count.c - an LD_PRELOAD malloc interposer for tests/core/test_resources.py:
 * counts malloc / calloc / realloc / free / the aligned variants, from every
 * thread, while a window is open.  glibc only (forwards to __libc_*).
 *
 *   cc -shared -fPIC -O1 -o alloc_count.so alloc_count.c
 *   LD_PRELOAD=./alloc_count.so python ...; ctypes: pyq_alloc_window_ns(ns)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static _Atomic int counting;
static _Atomic unsigned long calls;
static _Atomic size_t first_size; /* size of the first call counted (+1), for the message */

static inline void count(size_t n)
{
    if (atomic_load_explicit(&counting, memory_order_relaxed)) {
        size_t zero = 0;
        atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
        atomic_compare_exchange_strong(&first_size, &zero, n + 1);
    }
}

void *malloc(size_t n) { count(n); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { count(a * b); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { count(n); return __libc_realloc(p, n); }
void free(void *p) { if (p) count(0); __libc_free(p); }
void *memalign(size_t al, size_t n) { count(n); return __libc_memalign(al, n); }
void *aligned_alloc(size_t al, size_t n) { count(n); return __libc_memalign(al, n); }
void *valloc(size_t n) { count(n); return __libc_memalign(4096, n); }

int posix_memalign(void **out, size_t al, size_t n)
{
    void *p;
    count(n);
    p = __libc_memalign(al, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

/* Count every allocation call made by any thread during the next ns
 * nanoseconds (the caller sleeps in C meanwhile).  Returns the count. */
unsigned long pyq_alloc_window_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    atomic_store(&calls, 0);
    atomic_store(&first_size, 0);
    atomic_store(&counting, 1);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    atomic_store(&counting, 0);
    return atomic_load(&calls);
}

/* Size of the first allocation counted in the last window, or -1 if none. */
long pyq_alloc_first_size(void)
{
    return (long)atomic_load(&first_size) - 1;
}
