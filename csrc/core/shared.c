/*
 * shared.c - a queue in a shared-memory segment (DESIGN §3.9): creating it
 * (a name in /dev/shm, or a memfd), checking and mapping it in another
 * process, the table of the processes that map it, and who removes it.
 * Nothing here is on the hot path.
 *
 * Segment: [struct pyq_queue][control rings at ctl_off][pool at pool_off],
 * each part page-aligned.  The header (queue_pvt.h, pyq_seg_header) is
 * checked field by field against what the configuration in it implies, so a
 * truncated segment, another layout version or garbage is refused before any
 * other field is used.  The magic is stored last: a segment still being made
 * is not yet a pyqueue segment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/shared_pvt.h"

#define SHM_DIR "/dev/shm/"

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static uint64_t round_page(uint64_t v)
{
    uint64_t p = page_size();
    return (v + p - 1) / p * p;
}

uint8_t *pyq_shm_ctl(struct pyq_queue *q)
{
    return (uint8_t *)q + q->seg.ctl_off;
}

uint8_t *pyq_shm_pool(struct pyq_queue *q)
{
    return (uint8_t *)q + q->seg.pool_off;
}

/* The fields a segment made from cfg has: q holds them after this. */
static int expected(struct pyq_queue *q, const pyq_config_t *cfg)
{
    int rc;

    /* The one check of a new segment's cfg, or of an attached one's (untrusted). */
    if (pyq_config_check(cfg, NULL) != 0)
        return PYQ_EINVAL;
    if ((rc = pyq_q_init(q, cfg)) != 0)
        return rc;
    q->seg.ctl_off = round_page(sizeof(*q));
    q->seg.pool_off = round_page(q->seg.ctl_off + q->ctl_bytes);
    q->seg.seg_bytes = q->seg.pool_off + round_page(q->pool_bytes);
    q->xproc = true;
    /* scan_current under max or bytes:N: a commit is the hand-over, so it wakes. */
    q->commit_hook = cfg->publish != PYQ_PUBLISH_MAX || cfg->scan_current;
    pyq_q_gate(q);
    return 0;
}

static int name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n >= 1 && n <= PYQ_SHM_NAME_MAX && !strchr(name, '/') && strcmp(name, ".") != 0 &&
           strcmp(name, "..") != 0;
}

static int shm_path(char *out, size_t cap, const char *name, int slash)
{
    return snprintf(out, cap, "%s%s", slash ? "/" : SHM_DIR, name) < (int)cap ? 0 : PYQ_EINVAL;
}

static int from_errno(int e)
{
    switch (e) {
    case EEXIST: return PYQ_EEXIST;
    case ENOENT: return PYQ_ENOSEG;
    case EACCES: case EPERM: return PYQ_EPERM;
    case ENOSPC: case ENOMEM: case EFBIG: case EMFILE: case ENFILE: return PYQ_ENOMEM;
    case ENOSYS: return PYQ_ENOTSUP;
    default: return PYQ_EINVAL;
    }
}

/* Join the segment's users: a free slot, or one whose process is dead. */
static int add_user(struct pyq_queue *q, uint64_t me)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < PYQ_SHM_USERS; i++) {
            uint64_t u = pyq_load_relaxed(&q->sh.users[i]);
            if ((u == 0 || (pass && !pyq_proc_alive(u))) &&
                atomic_compare_exchange_strong_explicit(&q->sh.users[i], &u, me,
                                                        memory_order_acq_rel,
                                                        memory_order_relaxed))
                return 0;
        }
    }
    return PYQ_EOWNED;
}

/* 1 if a process other than the ones cleared already maps the segment. */
static int any_user_alive(struct pyq_queue *q)
{
    for (int i = 0; i < PYQ_SHM_USERS; i++) {
        uint64_t u = pyq_load_acquire(&q->sh.users[i]);
        if (u && pyq_proc_alive(u))
            return 1;
    }
    return 0;
}

/* Remove the segment's name if it still names this segment (not a newer one
 * made under the same name since). */
static void unlink_own(const struct pyq_queue *q)
{
    char path[sizeof(SHM_DIR) + PYQ_SHM_NAME_MAX + 1], slashed[PYQ_SHM_NAME_MAX + 2];
    struct stat st;

    if (!q->sh.name[0] || shm_path(path, sizeof(path), q->sh.name, 0) != 0 ||
        shm_path(slashed, sizeof(slashed), q->sh.name, 1) != 0)
        return;
    if (stat(path, &st) == 0 && (uint64_t)st.st_ino == q->sh.ino && (uint64_t)st.st_dev == q->sh.dev)
        shm_unlink(slashed);
}

int pyq_queue_create_shared(const char *name, const pyq_config_t *cfg, pyq_queue_t **out,
                            int *fd_out)
{
    struct pyq_queue want, *q;
    char slashed[PYQ_SHM_NAME_MAX + 2];
    struct stat st;
    uint64_t me = pyq_proc_id(getpid());
    void *p;
    int fd, rc;

    *out = NULL;
    if (fd_out)
        *fd_out = -1;
    if ((rc = expected(&want, cfg)) != 0)
        return rc;
    if (name && (!name_ok(name) || shm_path(slashed, sizeof(slashed), name, 1) != 0))
        return PYQ_EINVAL;
    if (!me)
        return PYQ_EPERM;
    if (name) {
        struct statvfs vfs;
        /* The pool's pages come from /dev/shm as they are first written: a
         * segment larger than its free room would end in SIGBUS, not an error. */
        if (statvfs(SHM_DIR, &vfs) == 0 &&
            want.seg.seg_bytes > (uint64_t)vfs.f_bavail * vfs.f_frsize)
            return PYQ_ENOMEM;
        fd = shm_open(slashed, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    } else {
        fd = memfd_create("pyqueue", MFD_CLOEXEC);
    }
    if (fd < 0)
        return from_errno(errno);
    rc = 0;
    if (ftruncate(fd, (off_t)want.seg.seg_bytes) != 0 || fstat(fd, &st) != 0)
        rc = from_errno(errno);
    p = rc ? MAP_FAILED
           : mmap(NULL, want.seg.seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        if (name)
            shm_unlink(slashed);
        close(fd);
        return rc ? rc : PYQ_ENOMEM;
    }
    q = p;
    memcpy(q, &want, sizeof(want)); /* the magic is still 0 */
    q->sh.ino = (uint64_t)st.st_ino;
    q->sh.dev = (uint64_t)st.st_dev;
    if (name)
        memcpy(q->sh.name, name, strlen(name) + 1);
    pyq_store_relaxed(&q->sh.users[0], me);
    pyq_q_bind(q, PYQ_SIDE_WRITER, pyq_shm_ctl(q), pyq_shm_pool(q));
    pyq_q_bind(q, PYQ_SIDE_READER, pyq_shm_ctl(q), pyq_shm_pool(q));
    rc = pyq_pool_options(q, pyq_shm_pool(q), q->pool_bytes);
    if (rc != 0) {
        if (name)
            shm_unlink(slashed);
        munmap(p, want.seg.seg_bytes);
        close(fd);
        return rc;
    }
    /* SEG-L1: the segment is complete before anyone can call it ours; pairs
     * with SEG-L2 in map_checked. */
    pyq_store_release(&q->seg.magic, PYQ_SEG_MAGIC);
    if (name || !fd_out)
        close(fd);
    else
        *fd_out = fd;
    *out = q;
    return 0;
}

/* Map fd's segment after checking its header.  A segment whose magic is not
 * there yet may be one being made: looked at again for up to 200 ms. */
static int map_checked(int fd, struct pyq_queue **out)
{
    struct pyq_queue want;
    struct stat st;
    uint64_t seg = 0;

    for (int tries = 0;; tries++) {
        struct pyq_queue *h;
        uint64_t magic;

        if (fstat(fd, &st) != 0)
            return from_errno(errno);
        if ((uint64_t)st.st_size >= sizeof(struct pyq_queue)) {
            h = mmap(NULL, sizeof(*h), PROT_READ, MAP_SHARED, fd, 0);
            if (h == MAP_FAILED)
                return from_errno(errno);
            /* SEG-L2: pairs with SEG-L1: the header below is complete. */
            magic = pyq_load_acquire(&h->seg.magic);
            if (magic == PYQ_SEG_MAGIC) {
                int bad = h->seg.layout != PYQ_SEG_LAYOUT ||
                          h->seg.queue_bytes != sizeof(struct pyq_queue) ||
                          expected(&want, &h->cfg) != 0;
                if (!bad)
                    bad = h->seg.seg_bytes != want.seg.seg_bytes ||
                          h->seg.seg_bytes != (uint64_t)st.st_size ||
                          h->seg.ctl_off != want.seg.ctl_off || h->seg.pool_off != want.seg.pool_off ||
                          memcmp(h->seg.free_off, want.seg.free_off, sizeof(want.seg.free_off)) ||
                          h->nblocks != want.nblocks || h->max_message != want.max_message ||
                          h->ring_mask != want.ring_mask ||
                          memcmp(h->free_mask, want.free_mask, sizeof(want.free_mask)) ||
                          h->ctl_bytes != want.ctl_bytes || h->pool_bytes != want.pool_bytes ||
                          h->scan != want.scan || h->rec_mask != want.rec_mask ||
                          h->line_headers != want.line_headers || h->batch_ok != want.batch_ok ||
                          h->xproc != want.xproc || h->commit_hook != want.commit_hook ||
                          memchr(h->sh.name, 0, sizeof(h->sh.name)) == NULL;
                seg = h->seg.seg_bytes;
                munmap(h, sizeof(*h));
                if (bad)
                    return PYQ_EBADSEG;
                break;
            }
            munmap(h, sizeof(*h));
            if (magic != 0)
                return PYQ_EBADSEG;
        }
        if (tries >= 20)
            return PYQ_EBADSEG;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    void *p = mmap(NULL, seg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return from_errno(errno);
    *out = p;
    return 0;
}

int pyq_queue_attach(const char *name, int fd, pyq_queue_t **out)
{
    char slashed[PYQ_SHM_NAME_MAX + 2];
    uint64_t me = pyq_proc_id(getpid());
    struct pyq_queue *q = NULL;
    int own = 0, rc;

    *out = NULL;
    if (name) {
        if (!name_ok(name) || shm_path(slashed, sizeof(slashed), name, 1) != 0)
            return PYQ_EINVAL;
        fd = shm_open(slashed, O_RDWR | O_CLOEXEC, 0);
        if (fd < 0)
            return from_errno(errno);
        own = 1;
    } else if (fd < 0) {
        return PYQ_EINVAL;
    }
    rc = me ? map_checked(fd, &q) : PYQ_EPERM;
    if (own)
        close(fd);
    if (rc != 0)
        return rc;
    if ((rc = add_user(q, me)) != 0) {
        munmap(q, q->seg.seg_bytes);
        return rc;
    }
    if (q->cfg.mlock && mlock(pyq_shm_pool(q), q->pool_bytes) != 0) {
        pyq_shm_destroy(q);
        return PYQ_EPERM;
    }
    *out = q;
    return 0;
}

int pyq_queue_adopt(pyq_queue_t *q)
{
    uint64_t me = pyq_proc_id(getpid());
    if (!q->xproc)
        return PYQ_EINVAL;
    return me ? add_user(q, me) : PYQ_EPERM;
}

int pyq_queue_is_shared(const pyq_queue_t *q)
{
    return q->xproc ? 1 : 0;
}

void pyq_shm_destroy(struct pyq_queue *q)
{
    uint64_t me = pyq_proc_id(getpid()), bytes = q->seg.seg_bytes;

    for (int side = 0; side < 2; side++)
        pyq_queue_release(q, side);
    for (int i = 0; i < PYQ_SHM_USERS; i++) {
        uint64_t u = me;
        /* Release: our last use of the segment happens before a later user's
         * decision that it is the last. */
        if (me && atomic_compare_exchange_strong_explicit(&q->sh.users[i], &u, 0,
                                                          memory_order_release,
                                                          memory_order_relaxed))
            break;
    }
    if (!any_user_alive(q))
        unlink_own(q);
    munmap(q, bytes);
}

int pyq_queue_unlink(pyq_queue_t *q)
{
    if (!q->xproc || !q->sh.name[0])
        return PYQ_EINVAL;
    unlink_own(q);
    return 0;
}

int pyq_queue_reclaim(const char *name)
{
    char slashed[PYQ_SHM_NAME_MAX + 2];
    struct pyq_queue *q;
    int fd, rc;

    if (!name_ok(name) || shm_path(slashed, sizeof(slashed), name, 1) != 0)
        return PYQ_EINVAL;
    fd = shm_open(slashed, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return from_errno(errno);
    struct stat st;
    rc = fstat(fd, &st) != 0 || (uint64_t)st.st_size < sizeof(*q) ? PYQ_EBADSEG : 0;
    q = rc ? MAP_FAILED : mmap(NULL, sizeof(*q), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (q == MAP_FAILED)
        return rc ? rc : PYQ_EBADSEG;
    if (pyq_load_acquire(&q->seg.magic) != PYQ_SEG_MAGIC || q->seg.layout != PYQ_SEG_LAYOUT ||
        q->seg.queue_bytes != sizeof(*q)) {
        rc = PYQ_EBADSEG;
    } else if (any_user_alive(q)) {
        rc = 0;
    } else {
        shm_unlink(slashed);
        rc = 1;
    }
    munmap(q, sizeof(*q));
    return rc;
}
