/*
 * seglayout.c - the offsets of a shared segment's fields, as JSON, for the
 * hostile tests (hostile_support.py compiles it against the core's private
 * header, so the tests follow the layout instead of copying it).
 */
#include <stdio.h>

#include "core/queue_pvt.h"

#define SH(f) printf("\"%s\": %zu,\n", #f, offsetof(struct pyq_queue, f) - PYQ_PRIV_BYTES)

int main(void)
{
    printf("{\n");
    SH(rec.seg.magic); SH(rec.seg.layout); SH(rec.seg.seg_bytes); SH(rec.seg.ctl_off);
    SH(rec.seg.pool_off); SH(rec.seg.free_off); SH(rec.cfg.block_size);
    SH(rec.cfg.hot_blocks); SH(rec.cfg.spill_blocks); SH(rec.cfg.publish);
    SH(ring_tail); SH(pub_pos); SH(ws.messages); SH(ws.bytes);
    SH(wm.gen); SH(wm.s[0].seq); SH(wm.s[0].pos_run); SH(wm.s[0].run_id);
    SH(wm.s[0].free_head); SH(wm.s[0].run_hdr); SH(wm.s[0].has_blk);
    SH(free_tail[0].v); SH(free_tail[1].v); SH(rs.messages); SH(rs.bytes);
    SH(rm.gen); SH(rm.s[0].seq); SH(rm.s[0].pos_left); SH(rm.s[0].run_len);
    SH(rm.s[0].has_blk); SH(closed); SH(detached); SH(sh.owner); SH(sh.dead);
    printf("\"wslot\": %zu, \"rslot\": %zu, \"shared_bytes\": %zu, \"free_tail_stride\": %zu\n}\n",
           sizeof(struct pyq_wslot), sizeof(struct pyq_rslot), PYQ_SHARED_BYTES,
           sizeof(struct pyq_free_tail));
    return 0;
}
