/*
 * join2_pvt.h - the two-thread start of every measured loop: the benchmark
 * drivers and the inline twins, which peer libraries compile too (so plain C
 * that C++ reads as well, nothing of ours to link).  Never installed.
 */
#ifndef PYQ_JOIN2_PVT_H
#define PYQ_JOIN2_PVT_H

#include <pthread.h>
#include <stddef.h>

/* Run writer and reader in two new threads over arg and join both; the reader
 * starts first, and is cancelled if the writer cannot start.  0 or -errno. */
static inline int pyq_join2(void *(*writer)(void *), void *(*reader)(void *), void *arg)
{
    pthread_t wt, rt;
    int rc;

    if ((rc = pthread_create(&rt, NULL, reader, arg)) != 0)
        return -rc;
    if ((rc = pthread_create(&wt, NULL, writer, arg)) != 0) {
        pthread_cancel(rt);
        pthread_join(rt, NULL);
        return -rc;
    }
    pthread_join(wt, NULL);
    pthread_join(rt, NULL);
    return 0;
}

#endif /* PYQ_JOIN2_PVT_H */
