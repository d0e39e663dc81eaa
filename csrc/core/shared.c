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
#include <stdlib.h>
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
    return (uint8_t *)&q->rec + q->seg.ctl_off;
}

uint8_t *pyq_shm_pool(struct pyq_queue *q)
{
    return (uint8_t *)&q->rec + q->seg.pool_off;
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
    q->seg.queue_bytes = (uint32_t)PYQ_SHARED_BYTES;
    q->seg.ctl_off = round_page(PYQ_SHARED_BYTES);
    q->seg.pool_off = round_page(q->seg.ctl_off + q->ctl_bytes);
    q->seg.seg_bytes = q->seg.pool_off + round_page(q->pool_bytes);
    q->xproc = true;
    /* scan_current under max or bytes:N: a commit is the hand-over, so it wakes. */
    q->commit_hook = cfg->publish != PYQ_PUBLISH_MAX || cfg->scan_current;
    pyq_q_gate(q);
    return 0;
}

/* This process's view of a segment of seg_bytes: a private page whose end
 * holds the private part, then the segment (queue_pvt.h, "Two parts"), so
 * that q + PYQ_PRIV_BYTES is the segment's first byte.  NULL on failure. */
static struct pyq_queue *map_view(int fd, uint64_t seg_bytes)
{
    size_t pg = page_size();
    uint8_t *base;

    if (seg_bytes > SIZE_MAX - pg)
        return NULL;
    base = mmap(NULL, pg + seg_bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    if (mmap(base + pg, seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED) {
        munmap(base, pg + seg_bytes);
        return NULL;
    }
    /* Cut short later, the segment is a corrupt queue, not a SIGBUS. */
    pyq_shm_fault_watch((struct pyq_queue *)(void *)(base + pg - PYQ_PRIV_BYTES), base + pg,
                        seg_bytes);
    return (struct pyq_queue *)(void *)(base + pg - PYQ_PRIV_BYTES);
}

static void unmap_view(struct pyq_queue *q)
{
    size_t pg = page_size();
    pyq_shm_fault_unwatch((uint8_t *)q + PYQ_PRIV_BYTES);
    munmap((uint8_t *)q + PYQ_PRIV_BYTES - pg, pg + q->seg.seg_bytes);
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
    case ENOSPC: case ENOMEM: case EFBIG: return PYQ_ENOMEM;
    case EMFILE: case ENFILE: return PYQ_EMFILE;
    case ENOSYS: return PYQ_ENOTSUP;
    default: return PYQ_EINVAL;
    }
}

/* Join the segment's users: a read lock on PYQ_LOCK_USERS of this handle's
 * description.  Refused only while a last user removes the segment (its write
 * lock): then the segment is going, looked at again for up to 100 ms. */
static int join_users(struct pyq_queue *q)
{
    for (int tries = 0;; tries++) {
        if (pyq_shm_lock(q, PYQ_LOCK_USERS, 0) == 0)
            return 0;
        if (tries >= 10)
            return PYQ_ENOSEG;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

#define HANDOFF_MAX_NS (3600 * UINT64_C(1000000000)) /* a deadline further ahead is forged */

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* one clock for every process, namespaces too */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A handle in flight to another process that has not attached yet, with its
 * deadline ahead (h: the segment's shared part, mapped or read). */
static int handoff_pending(const struct pyq_queue *h)
{
    uint64_t n = pyq_load_acquire(&((struct pyq_queue *)h)->sh.handoffs);
    uint64_t until = pyq_load_relaxed(&((struct pyq_queue *)h)->sh.handoff_deadline);
    uint64_t now = realtime_ns();
    return n > 0 && until > now && until - now <= HANDOFF_MAX_NS;
}

int pyq_queue_handoff(pyq_queue_t *q, int64_t within_ns)
{
    uint64_t until, cur;

    if (!q->xproc || within_ns <= 0)
        return PYQ_EINVAL;
    until = realtime_ns() + ((uint64_t)within_ns < HANDOFF_MAX_NS ? (uint64_t)within_ns
                                                                   : HANDOFF_MAX_NS);
    cur = pyq_load_relaxed(&q->sh.handoff_deadline);
    while (cur < until && !atomic_compare_exchange_weak_explicit(
                              &q->sh.handoff_deadline, &cur, until, memory_order_relaxed,
                              memory_order_relaxed))
        ;
    /* Release: the deadline is there before a last user can see the count. */
    atomic_fetch_add_explicit(&q->sh.handoffs, 1, memory_order_release);
    return 0;
}

int pyq_queue_handoff_done(pyq_queue_t *q)
{
    uint64_t n;

    if (!q->xproc)
        return PYQ_EINVAL;
    n = pyq_load_relaxed(&q->sh.handoffs);
    while (n > 0 && !atomic_compare_exchange_weak_explicit(&q->sh.handoffs, &n, n - 1,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed))
        ;
    return 0;
}

/* Remove the segment's name if it still names this segment (not a newer one
 * made under the same name since). */
static void unlink_own(const struct pyq_queue *q)
{
    char path[sizeof(SHM_DIR) + PYQ_SHM_NAME_MAX + 1], slashed[PYQ_SHM_NAME_MAX + 2];
    struct stat st;

    if (!q->p.name[0] || shm_path(path, sizeof(path), q->p.name, 0) != 0 ||
        shm_path(slashed, sizeof(slashed), q->p.name, 1) != 0)
        return;
    if (stat(path, &st) == 0 && (uint64_t)st.st_ino == q->p.ino && (uint64_t)st.st_dev == q->p.dev)
        shm_unlink(slashed);
}

/* The new segment's first page from want (both parts: the shared one is
 * the segment's initial state), this process's own part (its description fd,
 * a user of the segment), the pool's options; the magic last. */
static int init_segment(struct pyq_queue *q, const struct pyq_queue *want, const char *name,
                        const struct stat *st, int fd)
{
    memcpy(q, want, sizeof(*q));
    q->rec.seg = want->seg;
    atomic_init(&q->rec.seg.magic, PYQ_SEG_INIT); /* not a queue yet: being made */
    q->rec.cfg = want->cfg;
    atomic_init(&q->seg.magic, PYQ_SEG_MAGIC);
    q->p.fd = fd;
    q->p.pid = getpid();
    q->p.ino = (uint64_t)st->st_ino;
    q->p.dev = (uint64_t)st->st_dev;
    if (name)
        memcpy(q->p.name, name, strlen(name) + 1);
    pyq_q_bind(q, PYQ_SIDE_WRITER, pyq_shm_ctl(q), pyq_shm_pool(q));
    pyq_q_bind(q, PYQ_SIDE_READER, pyq_shm_ctl(q), pyq_shm_pool(q));
    if (pyq_shm_lock(q, PYQ_LOCK_USERS, 0) != 0)
        return PYQ_EINVAL;
    return pyq_pool_options(q, pyq_shm_pool(q), q->pool_bytes);
}

/* A new description of the file fd refers to (its locks its own), or -1. */
static int reopen(int fd)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    return open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
}

/* A new file for a segment to be called path.  Nameless (O_TMPFILE) until it
 * is complete (name_file): a creator killed before that leaves nothing behind,
 * and the name never points to half a queue; *named = 0.  Where /dev/shm has
 * no O_TMPFILE the file gets its name at once, exclusively, and its creator
 * holds PYQ_LOCK_INIT until the magic is in -- pyq_queue_reclaim() removes
 * one whose creator died -- *named = 1.  -1 with errno on failure. */
/* 1: make files as where /dev/shm has no O_TMPFILE (tests/c/test_shared.c). */
PYQ_PRIVATE int pyq_shm_no_tmpfile;

static int new_file(const char *path, int *named)
{
    int fd = pyq_shm_no_tmpfile ? (errno = EOPNOTSUPP, -1)
                                : open(SHM_DIR, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    struct stat st;

    *named = 0;
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    *named = 1;
    for (int tries = 0; tries < 3; tries++) {
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = PYQ_LOCK_INIT,
                            .l_len = 1 };
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
        if (fd < 0)
            return -1;
        /* A cleaner that looked at the empty file first removes it: a new one.
         * The mark says "being made" from the first byte on, so that a cleaner
         * tells a dead creation from any other file of zeros. */
        const uint64_t mark = PYQ_SEG_INIT;
        if (fcntl(fd, F_OFD_SETLK, &fl) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0 &&
            pwrite(fd, &mark, sizeof(mark), 0) == (ssize_t)sizeof(mark))
            return fd;
        close(fd);
    }
    errno = EAGAIN;
    return -1;
}

/* The complete segment gets its name: 0, or PYQ_EEXIST when the name was
 * taken meanwhile (the segment then goes with its descriptor). */
static int name_file(int fd, const char *path, int named)
{
    char self[64];

    if (named) {
        struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = PYQ_LOCK_INIT,
                            .l_len = 1 };
        fcntl(fd, F_OFD_SETLK, &fl);
        return 0;
    }
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 ||
        linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0) /* no /proc: needs privilege */
        return 0;
    return from_errno(errno);
}

int pyq_queue_create_shared(const char *name, const pyq_config_t *cfg, pyq_queue_t **out,
                            int *fd_out)
{
    struct pyq_queue *want, *q = NULL;
    char path[sizeof(SHM_DIR) + PYQ_SHM_NAME_MAX + 1];
    struct stat st;
    int fd, mine = -1, named = 0, rc;

    *out = NULL;
    if (fd_out)
        *fd_out = -1;
    want = aligned_alloc(PYQ_PAGE, sizeof(*want));
    if (!want)
        return PYQ_ENOMEM;
    if ((rc = expected(want, cfg)) != 0)
        goto out;
    rc = PYQ_EINVAL;
    if (name && (!name_ok(name) || shm_path(path, sizeof(path), name, 0) != 0))
        goto out;
    if (name) {
        struct statvfs vfs;
        /* The name is taken for good only by name_file(): this spares the
         * work when it is taken already. */
        rc = PYQ_EEXIST;
        if (lstat(path, &st) == 0)
            goto out;
        rc = PYQ_ENOMEM;
        if (statvfs(SHM_DIR, &vfs) == 0 &&
            want->seg.seg_bytes > (uint64_t)vfs.f_bavail * vfs.f_frsize)
            goto out;
        fd = mine = new_file(path, &named);
    } else {
        fd = memfd_create("pyqueue", MFD_CLOEXEC);
        /* The caller's descriptor goes to other processes: this handle's
         * locks live on a description of its own. */
        if (fd >= 0 && (mine = reopen(fd)) < 0) {
            rc = from_errno(errno);
            close(fd);
            goto out;
        }
    }
    if (fd < 0) {
        rc = from_errno(errno);
        goto out;
    }
    rc = 0;
    /* 0600 whatever the umask: the owner reads and writes, nobody else. */
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)want->seg.seg_bytes) != 0 ||
        fstat(fd, &st) != 0)
        rc = from_errno(errno);
    /* Room reserved now: a tmpfs that fills later would otherwise fail a
     * first write into the pool with SIGBUS, in whichever process made it. */
    if (rc == 0 && (errno = posix_fallocate(fd, 0, (off_t)want->seg.seg_bytes)) != 0)
        rc = errno == ENOSPC || errno == EFBIG ? PYQ_ENOMEM : from_errno(errno);
    if (rc == 0 && !(q = map_view(fd, want->seg.seg_bytes)))
        rc = PYQ_ENOMEM;
    if (rc == 0 && (rc = init_segment(q, want, name, &st, mine)) != 0)
        unmap_view(q);
    if (rc == 0) {
        /* SEG-L1: the segment is complete before anyone can call it ours;
         * pairs with SEG-L2 in read_record. */
        pyq_store_release(&q->rec.seg.magic, PYQ_SEG_MAGIC);
        if (name && (rc = name_file(fd, path, named)) != 0)
            unmap_view(q);
    }
    if (rc != 0) {
        if (named)
            unlink(path);
        if (mine != fd)
            close(mine);
        close(fd);
        goto out;
    }
    if (fd != mine) {
        if (fd_out)
            *fd_out = fd;
        else
            close(fd);
    }
    *out = q;
out:
    free(want);
    return rc;
}

/* fd's segment record (its first bytes) into *rec and the configuration it
 * implies into want, checked: 0, or PYQ_EBADSEG.  Read, not mapped, so a
 * file cut short meanwhile is an error, not a SIGBUS.  A segment whose magic
 * is not there yet may be one being made: looked at again for up to 200 ms. */
static int read_record(int fd, struct pyq_queue *want, uint64_t *size)
{
    struct pyq_queue *h = want; /* its shared part holds the record read */
    struct stat st;

    for (int tries = 0;; tries++) {
        ssize_t n;
        uint64_t magic;

        if (fstat(fd, &st) != 0)
            return from_errno(errno);
        if (!S_ISREG(st.st_mode))
            return PYQ_EBADSEG;
        n = pread(fd, &h->rec, sizeof(h->rec), 0);
        if (n == (ssize_t)sizeof(h->rec)) {
            /* SEG-L2: pairs with SEG-L1 (the file's page cache is the
             * segment; the read is ordered after it by the system call). */
            magic = pyq_load_relaxed(&h->rec.seg.magic);
            if (magic == PYQ_SEG_MAGIC) {
                struct pyq_seg_header got = h->rec.seg;
                pyq_config_t cfg = h->rec.cfg;
                if (got.layout != PYQ_SEG_LAYOUT || got.queue_bytes != PYQ_SHARED_BYTES ||
                    expected(want, &cfg) != 0)
                    return PYQ_EBADSEG;
                if (got.seg_bytes != want->seg.seg_bytes ||
                    got.seg_bytes != (uint64_t)st.st_size || got.ctl_off != want->seg.ctl_off ||
                    got.pool_off != want->seg.pool_off ||
                    memcmp(got.free_off, want->seg.free_off, sizeof(got.free_off)))
                    return PYQ_EBADSEG;
                *size = got.seg_bytes;
                return 0;
            }
            if (magic != 0 && magic != PYQ_SEG_INIT)
                return PYQ_EBADSEG;
        } else if (n < 0) {
            return from_errno(errno);
        }
        if (tries >= 20)
            return PYQ_EBADSEG;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

/* The segment as a trust boundary (DESIGN §3.9): this uid's, and by name not
 * open to others, unless the caller said otherwise. */
static int trusted(int fd, int named, int flags)
{
    struct stat st;

    if (fstat(fd, &st) != 0)
        return from_errno(errno);
    if (!S_ISREG(st.st_mode))
        return PYQ_EBADSEG;
    if (flags & PYQ_ATTACH_TRUST_OTHERS)
        return 0;
    if (st.st_uid != geteuid() || (named && (st.st_mode & 07777 & ~(mode_t)0600)))
        return PYQ_EUNTRUSTED;
    return 0;
}

int pyq_queue_attach(const char *name, int fd, pyq_queue_t **out)
{
    return pyq_queue_attach_flags(name, fd, 0, out);
}

int pyq_queue_attach_flags(const char *name, int fd, int flags, pyq_queue_t **out)
{
    char slashed[PYQ_SHM_NAME_MAX + 2];
    uint64_t bytes = 0;
    struct pyq_queue *q = NULL, *want;
    struct stat st;
    int rc;

    *out = NULL;
    if (name) {
        if (!name_ok(name) || shm_path(slashed, sizeof(slashed), name, 1) != 0)
            return PYQ_EINVAL;
        /* Not through a link, and a FIFO of that name must not block us. */
        fd = shm_open(slashed, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
        if (fd < 0)
            return errno == ELOOP ? PYQ_EBADSEG : from_errno(errno);
    } else if (fd < 0) {
        return PYQ_EINVAL;
    } else if ((fd = reopen(fd)) < 0) {
        /* The caller's descriptor may be another handle's: ours is new. */
        return from_errno(errno);
    }
    want = aligned_alloc(PYQ_PAGE, sizeof(*want));
    rc = !want ? PYQ_ENOMEM : trusted(fd, name != NULL, flags);
    if (rc == 0)
        rc = read_record(fd, want, &bytes);
    if (rc == 0 && fstat(fd, &st) != 0)
        rc = from_errno(errno);
    if (rc == 0 && !(q = map_view(fd, bytes)))
        rc = PYQ_ENOMEM;
    if (rc == 0) {
        /* From here on this process's geometry is want's, never the segment's. */
        memcpy(q, want, PYQ_PRIV_BYTES);
        memset(&q->p, 0, sizeof(q->p));
        q->p.fd = fd;
        q->p.pid = getpid();
        q->p.ino = (uint64_t)st.st_ino;
        q->p.dev = (uint64_t)st.st_dev;
        if (name)
            memcpy(q->p.name, name, strlen(name) + 1);
        pyq_q_bind(q, PYQ_SIDE_WRITER, pyq_shm_ctl(q), pyq_shm_pool(q));
        pyq_q_bind(q, PYQ_SIDE_READER, pyq_shm_ctl(q), pyq_shm_pool(q));
        if ((rc = join_users(q)) != 0)
            unmap_view(q);
    }
    free(want);
    if (rc != 0) {
        close(fd);
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
    if (!q->xproc)
        return PYQ_EINVAL;
    return pyq_shm_own_fd(q);
}

int pyq_queue_is_shared(const pyq_queue_t *q)
{
    return q->xproc ? 1 : 0;
}

void pyq_shm_destroy(struct pyq_queue *q)
{
    /* A fork() child that never took a description of its own holds its
     * parent's: it leaves the locks alone (its copy of the descriptor goes). */
    if (q->p.pid == getpid()) {
        for (int side = 0; side < 2; side++)
            pyq_queue_release(q, side);
        /* The last user: its read lock becomes a write lock only when no
         * other description holds one, and while it is held nobody joins.
         * A handle in flight to a process that has not attached yet keeps
         * the name until its deadline (then pyq_queue_reclaim removes it). */
        if (pyq_shm_lock(q, PYQ_LOCK_USERS, 1) == 0 && !handoff_pending(q))
            unlink_own(q);
    }
    close(q->p.fd); /* the description's locks go with it */
    unmap_view(q);
}

int pyq_queue_leave(pyq_queue_t *q)
{
    int last;

    if (!q->xproc || q->p.pid != getpid())
        return PYQ_EINVAL;
    /* As pyq_queue_destroy() decides, without unmapping: threads of this
     * process may still be inside calls on it. */
    last = pyq_shm_lock(q, PYQ_LOCK_USERS, 1) == 0 && !handoff_pending(q);
    if (last)
        unlink_own(q);
    pyq_shm_lock(q, PYQ_LOCK_USERS, 0); /* a user still, until the process ends */
    return last;
}

int pyq_queue_unlink(pyq_queue_t *q)
{
    if (!q->xproc || !q->p.name[0])
        return PYQ_EINVAL;
    unlink_own(q);
    return 0;
}

/* What pyq_queue_reclaim() found under a name. */
enum { NOT_OURS, A_QUEUE, A_CREATION };

/* Read-only look at fd: a pyqueue segment of this layout, a creation that
 * never got its magic (under the project's prefix, PYQ_SHM_PREFIX: an empty
 * file, or one marked PYQ_SEG_INIT), or something else.  Read, never mapped: a
 * file cut short meanwhile is a short read, not a SIGBUS. */
static int look(int fd, const char *name, struct stat *st)
{
    struct pyq_seg_header h;
    ssize_t n;

    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))
        return NOT_OURS;
    n = pread(fd, &h, sizeof(h), 0);
    if (n == (ssize_t)sizeof(h) && pyq_load_relaxed(&h.magic) == PYQ_SEG_MAGIC)
        return h.layout == PYQ_SEG_LAYOUT && h.queue_bytes == PYQ_SHARED_BYTES ? A_QUEUE
                                                                              : NOT_OURS;
    if (strncmp(name, PYQ_SHM_PREFIX, strlen(PYQ_SHM_PREFIX)) != 0)
        return NOT_OURS;
    if (n == 0 || (n >= (ssize_t)sizeof(uint64_t) && pyq_load_relaxed(&h.magic) == PYQ_SEG_INIT))
        return A_CREATION;
    return NOT_OURS;
}

int pyq_queue_reclaim(const char *name)
{
    char slashed[PYQ_SHM_NAME_MAX + 2];
    struct flock init = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = PYQ_LOCK_INIT,
                          .l_len = 1 };
    struct stat st, st2;
    int fd, rc, what, rw = -1;

    if (!name_ok(name) || shm_path(slashed, sizeof(slashed), name, 1) != 0)
        return PYQ_EINVAL;
    /* Read-only, not through a link, never waiting on a FIFO. */
    fd = shm_open(slashed, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
    if (fd < 0)
        return errno == ELOOP ? PYQ_EBADSEG : from_errno(errno);
    what = look(fd, name, &st);
    rc = what == NOT_OURS ? PYQ_EBADSEG : 0;
    /* A creation's file: its creator holds PYQ_LOCK_INIT until it is done;
     * the read lock taken here keeps one that has not locked it yet from
     * going on with a file about to go (it makes a new one). */
    if (what == A_CREATION && (fcntl(fd, F_OFD_SETLK, &init) != 0 || look(fd, name, &st) != A_CREATION))
        what = NOT_OURS, rc = 0;
    /* A handle in flight keeps a queue until its deadline. */
    if (what == A_QUEUE) {
        struct pyq_queue *h = aligned_alloc(PYQ_PAGE, sizeof(*h));
        if (!h || pread(fd, (uint8_t *)h + PYQ_PRIV_BYTES, PYQ_SHARED_BYTES, 0) !=
                      (ssize_t)PYQ_SHARED_BYTES || handoff_pending(h))
            what = NOT_OURS, rc = 0;
        free(h);
    }
    /* In use while any description holds a lock on it. */
    if (what != NOT_OURS && !pyq_shm_lock_held(fd, PYQ_LOCK_USERS) &&
        !pyq_shm_lock_held(fd, PYQ_LOCK_SIDE(0)) && !pyq_shm_lock_held(fd, PYQ_LOCK_SIDE(1)) &&
        (what == A_CREATION || !pyq_shm_lock_held(fd, PYQ_LOCK_INIT))) {
        /* Removed under the users' write lock, so nobody joins meanwhile. */
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = PYQ_LOCK_USERS,
                            .l_len = 1 };
        rw = shm_open(slashed, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
        if (rw >= 0 && fstat(rw, &st2) == 0 && st2.st_ino == st.st_ino &&
            st2.st_dev == st.st_dev && fcntl(rw, F_OFD_SETLK, &fl) == 0) {
            shm_unlink(slashed);
            rc = 1;
        }
    }
    if (rw >= 0)
        close(rw);
    close(fd);
    return rc;
}
