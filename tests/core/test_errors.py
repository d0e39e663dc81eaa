"""_errors.check: the one place a C return code becomes an exception."""
import pytest

import pyqueue as pq
from pyqueue.errors import check, error_for, strerror
from pyqueue._pyq import lib

MAPPED = [(lib.PYQ_EINVAL, ValueError), (lib.PYQ_ENOMEM, MemoryError),
          (lib.PYQ_EPERM, PermissionError), (lib.PYQ_EINTR, KeyboardInterrupt),
          (lib.PYQ_EAGAIN, pq.QueueFull), (lib.PYQ_ETOOBIG, pq.MessageTooLarge),
          (lib.PYQ_ECLOSED, pq.QueueClosed), (lib.PYQ_EBADMSG, pq.VerificationError),
          (lib.PYQ_ENOTSUP, pq.UnsupportedError), (lib.PYQ_EBUSY, pq.QueueError),
          (lib.PYQ_ERANGE, pq.QueueError), (-12345, pq.QueueError)]


def test_success_passes_through():
    assert check(0, "x") == 0 and check(17) == 17


@pytest.mark.parametrize("code, cls", MAPPED)
def test_each_code_has_its_exception(code, cls):
    with pytest.raises(cls) as e:
        check(code, "doing it")
    assert type(e.value) is cls
    assert str(e.value) == "doing it: %s" % strerror(code)
    if issubclass(cls, pq.QueueError):
        assert e.value.code == code
    assert str(error_for(code)) == strerror(code)   # no "what": the C text alone


def test_verification_is_verification_error():
    with pytest.raises(pq.VerificationError, match="verification failed"):
        check(lib.PYQ_EBADMSG, "pipeline")


def test_hints():
    hints = {lib.PYQ_EBADMSG: "message 7 of 10 was lost",
             lib.PYQ_EINVAL: pq.UnsupportedError,
             lib.PYQ_ENOTSUP: (RuntimeError, "no such thing here")}
    with pytest.raises(pq.VerificationError) as e:
        check(lib.PYQ_EBADMSG, "verify", hints)
    assert str(e.value) == "message 7 of 10 was lost" and e.value.code == lib.PYQ_EBADMSG
    with pytest.raises(pq.UnsupportedError, match="^verify: ") as e:
        check(lib.PYQ_EINVAL, "verify", hints)
    assert e.value.code == lib.PYQ_EINVAL
    with pytest.raises(RuntimeError, match="^no such thing here$"):
        check(lib.PYQ_ENOTSUP, "verify", hints)
    with pytest.raises(pq.QueueFull, match="^verify: "):       # a code without a hint
        check(lib.PYQ_EAGAIN, "verify", hints)
    assert check(3, "verify", hints) == 3
