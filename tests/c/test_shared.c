/*
 * test_shared.c - the queue in a shared segment across two processes
 * (DESIGN §3.9): a forked writer and this process's reader, every byte and
 * the order checked, in publish max (with spills) and publish each; a memfd
 * queue through fork + adopt; ownership (a second process taking an owned
 * side, a dead writer's committed messages then end-of-stream, a dead
 * reader failing a full writer, a re-taken reader resuming); the header
 * fuzzed, truncated and garbage segments refused; no name left behind.
 * Built with the sanitizers of tests/c/Makefile: each process is checked.
 *
 *   test_shared [messages]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "pyqueue.h"

#define SEC INT64_C(1000000000)

static char name[64];

static int shm_exists(const char *n)
{
    char path[128];
    struct stat st;
    snprintf(path, sizeof(path), "/dev/shm/%s", n);
    return stat(path, &st) == 0;
}

/* Message i: its length (1..100) and bytes follow from i. */
static uint32_t msg_len(uint64_t i) { return 1 + (uint32_t)(i * 2654435761u % 100); }
static void msg_fill(uint8_t *b, uint64_t i)
{
    uint32_t n = msg_len(i);
    for (uint32_t k = 0; k < n; k++)
        b[k] = (uint8_t)(i * 31 + k);
    if (n >= 8)
        memcpy(b, &i, 8);
}

static int write_all(pyq_queue_t *q, uint64_t n)
{
    uint8_t buf[128];
    if (pyq_queue_take(q, PYQ_SIDE_WRITER, 0) != 0)
        return 2;
    for (uint64_t i = 0; i < n; i++) {
        msg_fill(buf, i);
        if (pyq_writer_write(q, buf, msg_len(i), 30 * SEC) != 0)
            return 3;
    }
    pyq_writer_detach(q);
    return 0;
}

/* Read until end-of-stream; every message checked.  Returns the count. */
static uint64_t read_all(pyq_queue_t *q, uint64_t *bad)
{
    uint8_t got[4096], want[128];
    uint64_t i = 0;
    for (;;) {
        int64_t n = pyq_reader_read_one(q, got, sizeof(got));
        if (n == PYQ_EAGAIN) {
            int rc = pyq_reader_wait(q, 30 * SEC);
            if (rc == 0)
                return i;
            if (rc < 0) {
                (*bad)++;
                return i;
            }
            continue;
        }
        msg_fill(want, i);
        if (n != msg_len(i) || memcmp(got, want, (size_t)n) != 0)
            (*bad)++;
        i++;
    }
}

static void cfg_small(pyq_config_t *c, int publish)
{
    pyq_config_init(c);
    c->block_size = 4096;
    c->hot_blocks = 2;
    c->spill_blocks = 6;
    c->publish = publish;
}

static void test_stream(int publish, uint64_t n)
{
    pyq_config_t c;
    pyq_queue_t *q;
    uint64_t bad = 0;
    pyq_stats_t st;
    int status;

    cfg_small(&c, publish);
    snprintf(name, sizeof(name), "pyq-ctest-%d-s%d", (int)getpid(), publish);
    CHECK_EQ(pyq_queue_create_shared(name, &c, &q, NULL), 0);
    CHECK(shm_exists(name));
    pid_t pid = fork();
    if (pid == 0) {
        pyq_queue_t *cq;
        int rc = pyq_queue_attach(name, -1, &cq);
        if (rc == 0)
            rc = write_all(cq, n);
        pyq_queue_destroy(cq);
        _exit(rc ? 10 + (rc < 0 ? -rc % 80 : rc) : 0);
    }
    CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_READER, 0), 0);
    /* The reader starts once the writer has taken a spill block (its two hot
     * blocks full): a spill that does not hang on which process runs faster
     * (under TSan the writer was sometimes the slower one).  Bounded: 30 s. */
    for (int i = 0; i < 60000; i++) {
        pyq_queue_stats(q, &st);
        if (st.takes_spill > 0)
            break;
        usleep(500);
    }
    CHECK_EQ(read_all(q, &bad), n);
    CHECK_EQ(bad, 0);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pyq_queue_stats(q, &st);
    CHECK(st.takes_spill > 0); /* the held reader of a small queue made the writer spill */
    CHECK_EQ(st.messages_written, n);
    pyq_queue_destroy(q);
    CHECK(!shm_exists(name)); /* the last user removed it */
}

/* memfd: fork inherits the mapping; the child adopts it and writes. */
static void test_memfd_fork(void)
{
    pyq_config_t c;
    pyq_queue_t *q;
    uint64_t bad = 0;
    int fd, status;

    cfg_small(&c, PYQ_PUBLISH_MAX);
    CHECK_EQ(pyq_queue_create_shared(NULL, &c, &q, &fd), 0);
    CHECK(fd >= 0);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = pyq_queue_adopt(q);
        if (rc == 0)
            rc = write_all(q, 20000);
        pyq_queue_destroy(q);
        _exit(rc ? 1 : 0);
    }
    CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_READER, 0), 0);
    CHECK_EQ(read_all(q, &bad), 20000);
    CHECK_EQ(bad, 0);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* A second mapping of the same memfd in this process. */
    pyq_queue_t *q2;
    CHECK_EQ(pyq_queue_attach(NULL, fd, &q2), 0);
    CHECK_EQ(pyq_queue_owner(q2, PYQ_SIDE_READER), getpid());
    pyq_queue_destroy(q2);
    close(fd);
    pyq_queue_destroy(q);
}

/* A writer killed mid-stream: the reader gets every message it committed
 * (even unpublished, publish max), then the end, naming it; a second live
 * taker is refused; a reader killed while the writer waits on a full queue
 * fails the writer; a re-taken reader resumes at the next message. */
static void test_dead_peers(void)
{
    pyq_config_t c;
    pyq_queue_t *q;
    uint64_t bad = 0;
    int status, pipefd[2];
    char ok;

    cfg_small(&c, PYQ_PUBLISH_MAX);
    snprintf(name, sizeof(name), "pyq-ctest-%d-dead", (int)getpid());
    CHECK_EQ(pyq_queue_create_shared(name, &c, &q, NULL), 0);
    CHECK_EQ(pipe(pipefd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        uint8_t buf[128];
        if (pyq_queue_take(q, PYQ_SIDE_WRITER, 0) != 0)
            _exit(1);
        for (uint64_t i = 0; i < 50; i++) { /* 50 small messages: less than a block */
            msg_fill(buf, i);
            pyq_writer_write(q, buf, msg_len(i), 0);
        }
        if (write(pipefd[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    CHECK_EQ(read(pipefd[0], &ok, 1), 1);
    CHECK_EQ(pyq_queue_owner(q, PYQ_SIDE_WRITER), pid);
    CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_WRITER, 0), PYQ_EOWNED);
    CHECK_EQ(pyq_reader_next_len(q), PYQ_EAGAIN); /* nothing published yet */
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK_EQ(pyq_queue_owner(q, PYQ_SIDE_WRITER), -pid);
    CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_READER, 0), 0);
    CHECK_EQ(read_all(q, &bad), 50);
    CHECK_EQ(bad, 0);
    CHECK_EQ(pyq_queue_dead_peer(q, PYQ_SIDE_WRITER), pid);
    CHECK_EQ(pyq_writer_write(q, "x", 1, 0), PYQ_ECLOSED);
    pyq_queue_destroy(q);
    CHECK(!shm_exists(name));

    /* A dead reader. */
    snprintf(name, sizeof(name), "pyq-ctest-%d-deadr", (int)getpid());
    CHECK_EQ(pyq_queue_create_shared(name, &c, &q, NULL), 0);
    pid = fork();
    if (pid == 0) {
        uint8_t got[4096];
        if (pyq_queue_take(q, PYQ_SIDE_READER, 0) != 0)
            _exit(1);
        for (int i = 0; i < 10; i++) /* consume 10, then hang */
            while (pyq_reader_read_one(q, got, sizeof(got)) < 0)
                pyq_reader_wait(q, SEC);
        if (write(pipefd[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_WRITER, 0), 0);
    uint8_t buf[128];
    uint64_t i = 0;
    for (; i < 10; i++) {
        msg_fill(buf, i);
        CHECK_EQ(pyq_writer_write(q, buf, msg_len(i), 10 * SEC), 0);
    }
    pyq_writer_flush(q);
    CHECK_EQ(read(pipefd[0], &ok, 1), 1);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    int rc;
    for (;; i++) { /* fill the queue: then the dead reader is noticed */
        msg_fill(buf, i);
        rc = pyq_writer_write(q, buf, msg_len(i), 10 * SEC);
        if (rc != 0)
            break;
    }
    CHECK_EQ(rc, PYQ_EPEER);
    uint64_t written = i;
    pyq_writer_flush(q);
    CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_READER, 0), PYQ_EPEER);
    CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_READER, PYQ_TAKE_DEAD), 0);
    CHECK_EQ(pyq_queue_dead_peer(q, PYQ_SIDE_READER), pid);
    /* Resume at message 10 (the dead reader consumed 0..9). */
    uint8_t got[4096], want[128];
    uint64_t next = 10;
    int64_t n;
    while ((n = pyq_reader_read_one(q, got, sizeof(got))) >= 0) {
        msg_fill(want, next);
        CHECK(n == msg_len(next) && memcmp(got, want, (size_t)n) == 0);
        next++;
    }
    CHECK_EQ(next, written);
    pyq_queue_destroy(q);
    CHECK(!shm_exists(name));
    close(pipefd[0]);
    close(pipefd[1]);
}

static int attach_copy(const uint8_t *img, size_t bytes)
{
    char n2[80];
    pyq_queue_t *q;
    int rc;

    snprintf(n2, sizeof(n2), "/pyq-ctest-%d-fuzz", (int)getpid());
    int fd = shm_open(n2, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || (bytes && write(fd, img, bytes) != (ssize_t)bytes))
        return 99;
    close(fd);
    rc = pyq_queue_attach(n2 + 1, -1, &q);
    if (rc == 0) {
        /* Accepted: it must then be a working queue. */
        CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_WRITER, 0), 0);
        CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_READER, 0), 0);
        CHECK_EQ(pyq_writer_write(q, "abc", 3, 0), 0);
        pyq_writer_flush(q);
        char got[8];
        CHECK_EQ(pyq_reader_read_one(q, got, sizeof(got)), 3);
        pyq_queue_destroy(q);
    }
    shm_unlink(n2);
    return rc;
}

/* No lost wake-up: with no sleep slice, a wake-up lost between a side's last
 * look and its futex wait would hang this test (the Makefile's timeout and
 * the pytest driver catch that).  A ping-pong of two queues between two
 * processes, each pausing at random so that the other side often sleeps;
 * then a one-block queue streamed by a writer that sleeps on every full. */
static void pong(pyq_queue_t *in, pyq_queue_t *out, uint64_t rounds, unsigned seed, int first)
{
    uint8_t b[16];
    for (uint64_t i = 0; i < rounds; i++) {
        if (!first || i) {
            while (pyq_reader_read_one(in, b, sizeof(b)) < 0)
                pyq_reader_wait(in, PYQ_WAIT_FOREVER);
        }
        if (rand_r(&seed) % 4 == 0)
            usleep(rand_r(&seed) % 60);
        pyq_writer_write(out, &i, 8, PYQ_WAIT_FOREVER);
    }
}

static void test_no_lost_wakeup(uint64_t rounds)
{
    pyq_config_t c;
    pyq_queue_t *ab, *ba;
    int status;

    cfg_small(&c, PYQ_PUBLISH_EACH);
    CHECK_EQ(pyq_queue_create_shared(NULL, &c, &ab, NULL), 0);
    CHECK_EQ(pyq_queue_create_shared(NULL, &c, &ba, NULL), 0);
    pyq_queue_set_sleep_slice(ab, PYQ_WAIT_FOREVER);
    pyq_queue_set_sleep_slice(ba, PYQ_WAIT_FOREVER);
    pid_t pid = fork();
    if (pid == 0) {
        pyq_queue_adopt(ab);
        pyq_queue_adopt(ba);
        if (pyq_queue_take(ab, PYQ_SIDE_READER, 0) || pyq_queue_take(ba, PYQ_SIDE_WRITER, 0))
            _exit(1);
        pong(ab, ba, rounds, 7, 0);
        pyq_queue_destroy(ab);
        pyq_queue_destroy(ba);
        _exit(0);
    }
    CHECK_EQ(pyq_queue_take(ab, PYQ_SIDE_WRITER, 0), 0);
    CHECK_EQ(pyq_queue_take(ba, PYQ_SIDE_READER, 0), 0);
    pong(ba, ab, rounds, 11, 1);
    uint8_t b[16];
    while (pyq_reader_read_one(ba, b, sizeof(b)) < 0) /* the last answer */
        pyq_reader_wait(ba, PYQ_WAIT_FOREVER);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pyq_queue_destroy(ab);
    pyq_queue_destroy(ba);

    /* The writer's sleep: one block, a reader that pauses. */
    c.hot_blocks = 1;
    c.spill_blocks = 0;
    c.publish = PYQ_PUBLISH_MAX;
    CHECK_EQ(pyq_queue_create_shared(NULL, &c, &ab, NULL), 0);
    pyq_queue_set_sleep_slice(ab, PYQ_WAIT_FOREVER);
    pid = fork();
    if (pid == 0) {
        pyq_queue_adopt(ab);
        int rc = write_all(ab, rounds * 4);
        pyq_queue_destroy(ab);
        _exit(rc);
    }
    CHECK_EQ(pyq_queue_take(ab, PYQ_SIDE_READER, 0), 0);
    uint64_t bad = 0;
    CHECK_EQ(read_all(ab, &bad), rounds * 4);
    CHECK_EQ(bad, 0);
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pyq_queue_destroy(ab);
}

/* The header fuzzed field by field (every byte of the first 4 KiB page up
 * to the queue's dynamic state: the segment header and the config), then
 * truncated and garbage segments. */
static void test_header_fuzz(void)
{
    pyq_config_t c;
    pyq_queue_t *q;
    cfg_small(&c, PYQ_PUBLISH_MAX);
    snprintf(name, sizeof(name), "pyq-ctest-%d-img", (int)getpid());
    CHECK_EQ(pyq_queue_create_shared(name, &c, &q, NULL), 0);
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    size_t bytes = (size_t)st.st_size;
    uint8_t *img = malloc(bytes);
    int fd = open(path, O_RDONLY);
    CHECK_EQ(read(fd, img, bytes), (ssize_t)bytes);
    close(fd);
    pyq_queue_destroy(q);

    CHECK_EQ(attach_copy(img, bytes), 0); /* the copy itself is fine */
    unsigned seed = 12345, refused = 0, tried = 0;
    const uint8_t vals[] = { 0x00, 0x01, 0x7f, 0x80, 0xff };
    for (size_t off = 0; off < 128; off++) { /* the segment header and the config */
        for (size_t v = 0; v < sizeof(vals) + 2; v++) {
            uint8_t saved = img[off];
            img[off] = v < sizeof(vals) ? vals[v] : (uint8_t)(rand_r(&seed));
            if (img[off] == saved) {
                img[off] ^= 0x10;
            }
            int rc = attach_copy(img, bytes);
            CHECK(rc == 0 || rc == PYQ_EBADSEG);
            refused += rc == PYQ_EBADSEG;
            tried++;
            img[off] = saved;
        }
    }
    CHECK(refused > tried / 2);
    /* Truncated anywhere, and garbage. */
    for (size_t cut = 0; cut < bytes; cut += bytes / 7 + 1)
        CHECK_EQ(attach_copy(img, cut), PYQ_EBADSEG);
    for (size_t k = 0; k < bytes; k++)
        img[k] = (uint8_t)rand_r(&seed);
    CHECK_EQ(attach_copy(img, bytes), PYQ_EBADSEG);
    memset(img, 0, bytes);
    CHECK_EQ(attach_copy(img, bytes), PYQ_EBADSEG);
    free(img);
    pyq_queue_t *none;
    CHECK_EQ(pyq_queue_attach("pyq-ctest-no-such-queue", -1, &none), PYQ_ENOSEG);
    CHECK_EQ(pyq_queue_attach("bad/name", -1, &none), PYQ_EINVAL);
    CHECK(!shm_exists(name));
}

/* A leftover whose users all died is reclaimed; one in use is not. */
static void test_reclaim(void)
{
    pyq_config_t c;
    pyq_queue_t *q;
    int status;

    cfg_small(&c, PYQ_PUBLISH_MAX);
    snprintf(name, sizeof(name), "pyq-ctest-%d-stale", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        _exit(pyq_queue_create_shared(name, &c, &q, NULL) == 0 ? 0 : 1); /* never destroyed */
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(shm_exists(name));
    CHECK_EQ(pyq_queue_reclaim(name), 1);
    CHECK(!shm_exists(name));
    CHECK_EQ(pyq_queue_create_shared(name, &c, &q, NULL), 0);
    pyq_queue_t *q2;
    CHECK_EQ(pyq_queue_create_shared(name, &c, &q2, NULL), PYQ_EEXIST);
    CHECK_EQ(pyq_queue_reclaim(name), 0);
    pyq_queue_destroy(q);
    CHECK(!shm_exists(name));
}

/* Where /dev/shm has no O_TMPFILE (forced here): a creation is named at once,
 * marked "being made" and locked by its creator until complete; reclaim
 * removes one whose creator died, and leaves a live one and a file of zeros. */
extern int pyq_shm_no_tmpfile;

static int make_file(const char *n, const void *head, size_t len, size_t size)
{
    char path[128];
    snprintf(path, sizeof(path), "/dev/shm/%s", n);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || (len && write(fd, head, len) != (ssize_t)len) || ftruncate(fd, (off_t)size))
        return -1;
    return fd;
}

static void test_fallback_creation(void)
{
    pyq_config_t c;
    pyq_queue_t *q, *q2;
    char n2[80];
    uint64_t mark = UINT64_C(0x3174696e69517950); /* "PyQinit1" */
    int fd, status, pipefd[2];
    char ok;

    cfg_small(&c, PYQ_PUBLISH_EACH);
    pyq_shm_no_tmpfile = 1;
    snprintf(name, sizeof(name), "pyq-ctest-%d-named", (int)getpid());
    CHECK_EQ(pyq_queue_create_shared(name, &c, &q, NULL), 0);
    CHECK(shm_exists(name));
    CHECK_EQ(pyq_queue_create_shared(name, &c, &q2, NULL), PYQ_EEXIST);
    CHECK_EQ(pyq_queue_attach(name, -1, &q2), 0);
    CHECK_EQ(pyq_queue_take(q, PYQ_SIDE_WRITER, 0), 0);
    CHECK_EQ(pyq_queue_take(q2, PYQ_SIDE_READER, 0), 0);
    CHECK_EQ(pyq_writer_write(q, "abc", 3, 0), 0);
    char got[8];
    CHECK_EQ(pyq_reader_read_one(q2, got, sizeof(got)), 3);
    pyq_queue_destroy(q2);
    pyq_queue_destroy(q);
    CHECK(!shm_exists(name));
    pyq_shm_no_tmpfile = 0;

    /* A creator that died marked "being made": removed. */
    snprintf(n2, sizeof(n2), "pyq-ctest-%d-made", (int)getpid());
    fd = make_file(n2, &mark, sizeof(mark), 65536);
    CHECK(fd >= 0);
    close(fd);
    CHECK_EQ(pyq_queue_reclaim(n2), 1);
    CHECK(!shm_exists(n2));
    /* One whose creator lives (its init lock held): left. */
    fd = make_file(n2, &mark, sizeof(mark), 65536);
    CHECK(fd >= 0);
    CHECK_EQ(pipe(pipefd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
        if (fcntl(fd, F_OFD_SETLK, &fl) != 0 || write(pipefd[1], "x", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(fd); /* the child's description holds the lock */
    CHECK_EQ(read(pipefd[0], &ok, 1), 1);
    CHECK_EQ(pyq_queue_reclaim(n2), 0);
    CHECK(shm_exists(n2));
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK_EQ(pyq_queue_reclaim(n2), 1);
    /* Zeros under the prefix are nobody's creation: left alone. */
    fd = make_file(n2, NULL, 0, 8192);
    CHECK(fd >= 0);
    close(fd);
    CHECK_EQ(pyq_queue_reclaim(n2), PYQ_EBADSEG);
    CHECK(shm_exists(n2));
    shm_unlink(n2);
    close(pipefd[0]);
    close(pipefd[1]);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
    const char *only = argc > 2 ? argv[2] : "";
#define RUN(t, call) do { if (!*only || strcmp(only, t) == 0) { call; } } while (0)
    RUN("max", test_stream(PYQ_PUBLISH_MAX, n));
    RUN("each", test_stream(PYQ_PUBLISH_EACH, n));
    RUN("memfd", test_memfd_fork());
    RUN("dead", test_dead_peers());
    RUN("fuzz", test_header_fuzz());
    RUN("wakeup", test_no_lost_wakeup(n / 20));
    RUN("reclaim", test_reclaim());
    RUN("fallback", test_fallback_creation());
    CHECK_DONE("test_shared");
}
