/* test_bell.c - the waits a bell also ends (core/bell_wait.c): pyq_reader_wait_bell
 * and pyq_writer_wait_room return what they wait for without consuming or
 * writing, time out, and return PYQ_EINTR as soon as another thread rings --
 * in-process and on a shared segment (a memfd, both sides in this process). */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pyqueue.h"
#include "check.h"
#include "queue_make.h"

#define FOREVER PYQ_WAIT_FOREVER

struct later {
    pyq_queue_t *q;
    uint32_t *bell;
    int what; /* RING_READER, RING_WRITER, WRITE, DRAIN */
};

enum { RING_READER, RING_WRITER, WRITE, DRAIN };

static void sleep_ms(int ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, NULL);
}

/* After 20 ms (long enough for the waiter to be asleep), do what. */
static void *act_later(void *arg)
{
    struct later *l = arg;
    char buf[4096];

    sleep_ms(20);
    if (l->what == RING_READER)
        pyq_queue_ring(l->q, PYQ_SIDE_READER, l->bell);
    else if (l->what == RING_WRITER)
        pyq_queue_ring(l->q, PYQ_SIDE_WRITER, l->bell);
    else if (l->what == WRITE)
        pyq_writer_write(l->q, "late", 4, 0);
    else
        while (pyq_reader_read_one(l->q, buf, sizeof buf) >= 0)
            ;
    return NULL;
}

static int wait_with(pyq_queue_t *q, uint32_t *bell, int what, int reader, uint32_t len)
{
    struct later l = { q, bell, what };
    pthread_t t;
    int rc;

    pthread_create(&t, NULL, act_later, &l);
    rc = reader ? pyq_reader_wait_bell(q, FOREVER, bell)
                : pyq_writer_wait_room(q, len, FOREVER, bell);
    pthread_join(t, NULL);
    return rc;
}

static void test_reader(pyq_queue_t *q)
{
    uint32_t bell = 0;
    char buf[64];

    CHECK_EQ(pyq_reader_wait_bell(q, 0, &bell), PYQ_EAGAIN);
    CHECK_EQ(pyq_reader_wait_bell(q, 2000000, &bell), PYQ_EAGAIN);
    CHECK_EQ(wait_with(q, &bell, RING_READER, 1, 0), PYQ_EINTR);
    CHECK_EQ(bell, 1); /* stays rung until its owner zeroes it */
    CHECK_EQ(pyq_reader_wait_bell(q, FOREVER, &bell), PYQ_EINTR);
    bell = 0;
    CHECK_EQ(wait_with(q, &bell, WRITE, 1, 0), 1);
    CHECK_EQ(pyq_reader_wait_bell(q, 0, &bell), 1); /* consumed nothing */
    bell = 1;
    CHECK_EQ(pyq_reader_wait_bell(q, 0, &bell), 1); /* a message first, the bell after */
    CHECK_EQ(pyq_reader_read_one(q, buf, sizeof buf), 4);
    CHECK(memcmp(buf, "late", 4) == 0);
    CHECK_EQ(pyq_reader_wait_bell(q, 0, NULL), PYQ_EAGAIN);
}

static void test_writer(pyq_queue_t *q)
{
    uint32_t bell = 0;
    char msg[1000] = { 0 };
    uint64_t n = 0, before;
    pyq_stats_t st;

    CHECK_EQ(pyq_writer_wait_room(q, sizeof msg, 0, &bell), 1);
    while (pyq_writer_try_write(q, msg, sizeof msg) == 0)
        n++;
    CHECK(n > 0);
    pyq_queue_stats(q, &st);
    before = st.messages_written;
    CHECK_EQ(pyq_writer_wait_room(q, sizeof msg, 0, &bell), PYQ_EAGAIN);
    CHECK_EQ(pyq_writer_wait_room(q, sizeof msg, 2000000, &bell), PYQ_EAGAIN);
    CHECK_EQ(wait_with(q, &bell, RING_WRITER, 0, sizeof msg), PYQ_EINTR);
    bell = 0;
    CHECK_EQ(wait_with(q, &bell, DRAIN, 0, sizeof msg), 1);
    pyq_queue_stats(q, &st);
    CHECK_EQ(st.messages_written, before); /* wrote nothing */
    CHECK_EQ(pyq_writer_try_write(q, msg, sizeof msg), 0);
    CHECK_EQ(pyq_writer_wait_room(q, pyq_queue_max_message(q) + 1, 0, &bell), PYQ_ETOOBIG);
    pyq_writer_detach(q);
    CHECK_EQ(pyq_writer_wait_room(q, sizeof msg, 0, &bell), PYQ_ECLOSED);
    CHECK_EQ(pyq_reader_wait_bell(q, 0, &bell), 1);
    while (pyq_reader_read_one(q, msg, sizeof msg) >= 0)
        ;
    CHECK_EQ(pyq_reader_wait_bell(q, FOREVER, &bell), 0); /* the end of the stream */
}

static pyq_queue_t *make_shared(int *fd)
{
    pyq_config_t c;
    pyq_queue_t *q = NULL;

    pyq_config_init(&c);
    c.block_size = 4096;
    c.hot_blocks = 1;
    c.spill_blocks = 1;
    c.publish = PYQ_PUBLISH_EACH;
    CHECK_EQ(pyq_queue_create_shared(NULL, &c, &q, fd), 0);
    if (q) {
        CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_WRITER, 0), 0);
        CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_READER, 0), 0);
    }
    return q;
}

int main(void)
{
    pyq_queue_t *q;
    int fd = -1;
    uint32_t bell = 0;

    q = make(4096, 1, 1, PYQ_PUBLISH_EACH, 0, 0);
    test_reader(q);
    test_writer(q);
    CHECK_EQ(pyq_queue_ring(q, 7, &bell), PYQ_EINVAL);
    pyq_queue_destroy(q);

    q = make_shared(&fd);
    if (q) {
        test_reader(q);
        test_writer(q);
        pyq_queue_destroy(q);
    }
    if (fd >= 0)
        close(fd);
    CHECK_DONE("test_bell");
}
