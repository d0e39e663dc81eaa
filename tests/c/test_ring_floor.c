/* test_ring_floor.c - the round-trip yardstick's ring (csrc/adapters/ring_floor.c)
 * under the sanitizers: wrap-around and full/empty on one thread, then a writer
 * and a reader thread checking FIFO order and every byte (pyq_adapter_verify). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "adapters/pyq_adapter.h"

extern const pyq_adapter_t pyq_adapter_ring_floor;

static int collect(void *ctx, const void *msg, uint32_t len)
{
    uint8_t *next = ctx;

    CHECK_EQ(len, PYQ_ADAPTER_MSG_SIZE);
    CHECK_EQ(((const uint8_t *)msg)[0], *next);
    CHECK_EQ(((const uint8_t *)msg)[len - 1], *next);
    (*next)++;
    return 0;
}

/* Just the two fields the ring reads (registry.c's pyq_adapter_params_init would
 * pull in every built-in adapter). */
static void params(pyq_adapter_params_t *p, uint32_t msg_size, uint64_t capacity_bytes)
{
    memset(p, 0, sizeof *p);
    p->msg_size = msg_size;
    p->capacity_bytes = capacity_bytes;
}

int main(int argc, char **argv)
{
    const pyq_adapter_t *a = &pyq_adapter_ring_floor;
    pyq_adapter_params_t p;
    pyq_adapter_verify_result_t r;
    uint8_t msg[PYQ_ADAPTER_MSG_SIZE], sent = 0, next = 0;
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
    void *h;

    params(&p, PYQ_ADAPTER_MSG_SIZE, 1 << 20);
    CHECK_EQ(a->create(&p, &h), 0);
    CHECK_EQ(a->capacity(h), PYQ_RING_FLOOR_SLOTS);
    a->destroy(h);

    params(&p, PYQ_ADAPTER_MSG_SIZE, 4 * 64);  /* 4 slots: several laps below */
    CHECK_EQ(a->create(&p, &h), 0);
    CHECK_EQ(a->capacity(h), 4);
    for (int lap = 0; lap < 5; lap++) {
        for (int i = 0; i < 4; i++, sent++) {
            memset(msg, sent, sizeof msg);
            CHECK_EQ(a->try_write(h, msg, sizeof msg), 0);
        }
        CHECK_EQ(a->try_write(h, msg, sizeof msg), PYQ_EAGAIN);
        CHECK_EQ(a->poll(h, 1, collect, &next), 1);
        CHECK_EQ(a->poll(h, UINT64_MAX, collect, &next), 3);
        CHECK_EQ(a->poll(h, UINT64_MAX, collect, &next), 0);
    }
    CHECK_EQ(next, sent);
    a->destroy(h);

    params(&p, PYQ_ADAPTER_MSG_SIZE, 64);      /* under 2 slots */
    CHECK_EQ(a->create(&p, &h), PYQ_EINVAL);
    params(&p, 16, 1 << 20);
    CHECK_EQ(a->create(&p, &h), PYQ_EINVAL);

    params(&p, PYQ_ADAPTER_MSG_SIZE, 1 << 20);
    CHECK_EQ(pyq_adapter_verify(a, &p, n, 0, -1, -1, &r), 0);
    CHECK_EQ(r.verified, n);
    CHECK_DONE("test_ring_floor");
}
