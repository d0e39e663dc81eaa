/*
 * join2_pvt.h - the two-thread start of the measured loops (the twins, the
 * bench's driver and its direct rows), which peer libraries compile too: plain
 * C that C++ reads as well, nothing of ours to link.  Never installed.
 */
#ifndef PYQ_JOIN2_PVT_H
#define PYQ_JOIN2_PVT_H

#include <pthread.h>
#include <stddef.h>

/* Run writer and reader in two new threads over arg and join both; the reader
 * starts first.  If the writer cannot start, abandon(arg) must let the reader
 * leave its start barrier and stop (it arrives for the writer and flags the
 * error): a reader spinning in a barrier never reaches a cancellation point,
 * so pthread_cancel would not end it.  0 or -errno. */
static inline int pyq_join2(void *(*writer)(void *), void *(*reader)(void *), void *arg,
                            void (*abandon)(void *arg, int rc))
{
    pthread_t wt, rt;
    int rc;

    if ((rc = pthread_create(&rt, NULL, reader, arg)) != 0)
        return -rc;
    if ((rc = pthread_create(&wt, NULL, writer, arg)) != 0) {
        abandon(arg, -rc);
        pthread_join(rt, NULL);
        return -rc;
    }
    pthread_join(wt, NULL);
    pthread_join(rt, NULL);
    return 0;
}

#endif /* PYQ_JOIN2_PVT_H */
