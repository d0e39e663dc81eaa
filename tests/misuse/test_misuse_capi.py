"""The C API's documented codes, called through cffi: pyq_config_check checks
every flag field, a claim left open at pyq_writer_detach() is dropped (commit
says PYQ_ECLOSED, the reader never sees it), commit/abort without a claim say
PYQ_ENOCLAIM."""
import pytest

import pyqueue as pq
from pyqueue._pyq import ffi, lib

FLAGS = ["scan_current", "touch_after_write", "hugepages", "prefault", "mlock",
         "spill_nontemporal", "prefetch", "hot_nontemporal"]


@pytest.mark.parametrize("field", FLAGS)
@pytest.mark.parametrize("value", [7, -3, 2])
def test_config_check_refuses_a_flag_that_is_not_0_or_1(field, value):
    cfg = ffi.new("pyq_config_t *")
    lib.pyq_config_init(cfg)
    assert lib.pyq_config_check(cfg, ffi.NULL) == 0
    setattr(cfg, field, value)
    bad = ffi.new("const char **")
    assert lib.pyq_config_check(cfg, bad) == lib.PYQ_EINVAL
    assert ffi.string(bad[0]).decode() == field


def test_commit_after_detach_is_closed_and_never_delivered():
    with pq.Queue(publish="each", spill_blocks=4) as q:
        h = q.c_handle
        p = ffi.new("void **")
        assert lib.pyq_writer_claim(h, 8, 0, p) == 0
        ffi.memmove(p[0], b"too late", 8)
        lib.pyq_writer_detach(h)
        assert lib.pyq_writer_commit(h) == lib.PYQ_ECLOSED
        assert lib.pyq_writer_abort(h) == lib.PYQ_ENOCLAIM
        assert q.reader.poll() == []
        assert lib.pyq_reader_wait(h, 0) == 0          # end of stream, nothing after it


def test_commit_and_abort_without_a_claim():
    with pq.Queue(spill_blocks=4) as q:
        h = q.c_handle
        assert lib.pyq_writer_commit(h) == lib.PYQ_ENOCLAIM
        assert lib.pyq_writer_abort(h) == lib.PYQ_ENOCLAIM
        p = ffi.new("void **")
        assert lib.pyq_writer_claim(h, 8, 0, p) == 0
        assert lib.pyq_writer_claim(h, 8, 0, p) == lib.PYQ_EBUSY
        assert lib.pyq_writer_abort(h) == 0
