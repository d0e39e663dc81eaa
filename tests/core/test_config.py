"""QueueConfig: its fields and defaults are C's, it round-trips through a Queue,
and every bad value is refused naming the parameter."""
import pickle
import re

import numpy as np
import pytest

import pyqueue as pq
from pyqueue import config as qc
from pyqueue import cstruct
from pyqueue._pyq import ffi, lib
from pyqueue.validate import ArgumentTypeError


def _c_init():
    c = ffi.new("pyq_config_t *")
    lib.pyq_config_init(c)
    return c


def test_fields_are_pyq_config_t_in_c_order():
    c_fields = [n for n, _ in ffi.typeof("pyq_config_t").fields]
    names = list(pq.QueueConfig.FIELDS)
    assert names == [n for n in c_fields if n != "publish_bytes"]  # folded into publish
    assert names[:4] == ["block_size", "hot_blocks", "spill_blocks", "publish"]


def test_defaults_are_pyq_config_init_but_publish():
    c, cfg = _c_init(), pq.QueueConfig()
    mine = cfg.to_c()
    for name in cstruct.fields("pyq_config_t"):
        if name not in ("publish", "max_message"):
            assert getattr(mine, name) == getattr(c, name), name
    assert cfg.block_size == c.block_size
    assert cfg.spill_nontemporal is bool(c.spill_nontemporal)  # the platform's default
    # Python's one default of its own: a put is visible when it returns (queue.Queue's
    # promise); C keeps the seed's 'max'.
    assert c.publish == lib.PYQ_PUBLISH_MAX and qc.C_DEFAULTS["publish"] == "max"
    assert cfg.publish == "each" == qc.DEFAULTS["publish"] == qc.PUBLISH_DEFAULT
    # Python's own two: publish 'each', max_message 1 MiB (C: 'max', a block's worth).
    assert {k: v for k, v in qc.DEFAULTS.items() if k not in ("publish", "max_message")} == \
        {k: v for k, v in qc.C_DEFAULTS.items() if k not in ("publish", "max_message")}
    assert qc.C_DEFAULTS["max_message"] == 0 and cfg.max_message == qc.MAX_MESSAGE_DEFAULT
    with pq.Queue() as q:
        assert q.publish == "each" and q.config == cfg
    with pq.Queue(publish="max") as q:
        assert q.publish == "max"


def test_kinds_follow_the_c_types():
    for name, kind in qc.KINDS.items():
        value = getattr(pq.QueueConfig(), name)
        assert type(value) is {"publish": str, "flag": bool, "count": int}[kind], name
    flags = [n for n, k in qc.KINDS.items() if k == "flag"]
    assert {"scan_current", "mlock", "prefetch", "spill_nontemporal"} <= set(flags)
    for name in flags:  # every int32_t flag of pyq_config_t is 0/1 by default
        assert getattr(_c_init(), name) in (0, 1)


def test_publish_names_are_the_c_constants():
    assert qc.PUBLISH == {"max": lib.PYQ_PUBLISH_MAX, "each": lib.PYQ_PUBLISH_EACH,
                          "bytes": lib.PYQ_PUBLISH_BYTES}
    c = pq.QueueConfig(publish="bytes:300").to_c()
    assert (c.publish, c.publish_bytes) == (lib.PYQ_PUBLISH_BYTES, 300)
    assert pq.QueueConfig(publish="bytes:0300").publish == "bytes:300"
    with pytest.raises(ValueError, match="publish must be"):   # digits only, no sign
        pq.QueueConfig(publish="bytes:+0300")


@pytest.mark.parametrize("kw", [
    {}, dict(publish="each"), dict(publish="bytes:100", hot_blocks=8),
    dict(block_size=64, hot_blocks=1, spill_blocks=0, scan_current=True),
    dict(retry_yield_every=0, touch_after_write=False, prefetch=False),
    dict(spill_nontemporal=False, prefault=True),
])
def test_round_trip_through_a_queue(kw):
    cfg = pq.QueueConfig(**kw)
    with pq.Queue(cfg) as q:
        assert q.config == cfg
        assert isinstance(q.config, pq.QueueConfig)
        assert q.block_size == cfg.block_size and q.publish == cfg.publish
    with pq.Queue(**kw) as q:                       # the keywords, as ever
        assert q.config == cfg
    assert q.config == cfg                          # still there once closed
    assert pq.QueueConfig.from_c(cfg.to_c()) == cfg
    assert pq.QueueConfig(**cfg.as_dict()) == cfg


def test_a_config_and_overrides():
    base = pq.QueueConfig(block_size=1024, spill_blocks=16, publish="max")
    with pq.Queue(base, publish="each") as q:
        assert q.config == base.replace(publish="each")
        assert q.config.block_size == 1024
    assert base.publish == "max"                    # frozen: replace made a copy
    with pytest.raises(AttributeError, match="frozen"):
        base.block_size = 64
    assert pq.QueueConfig.of(base) is base
    assert base.pool_bytes == 1024 * (4 + 16) + 2 * (1 << 20)   # the blocks, the large region
    assert base.replace(max_message=0).pool_bytes == 1024 * (4 + 16)


def test_plain_values_hash_and_pickle():
    cfg = pq.QueueConfig(block_size=np.int64(128), scan_current=1, prefault=np.bool_(True),
                         spill_nontemporal=None)
    assert type(cfg.block_size) is int and cfg.scan_current is True and cfg.prefault is True
    assert cfg.spill_nontemporal is qc.DEFAULTS["spill_nontemporal"]
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert len({cfg, pq.QueueConfig(block_size=128, scan_current=True, prefault=True)}) == 1


def test_unknown_parameters_and_wrong_config():
    with pytest.raises(TypeError, match="unknown queue parameter blocksize; the parameters are block_size"):
        pq.Queue(blocksize=4096)
    with pytest.raises(TypeError, match="publish_bytes"):
        pq.QueueConfig().replace(publish_bytes=3)
    with pytest.raises(TypeError, match="config must be a pyqueue.QueueConfig"):
        pq.Queue({"block_size": 4096})
    with pytest.raises(TypeError, match="config must be"):
        pq.Queue(4096)


# Every field with a value of the wrong type and one out of range.
BAD_TYPE = [("block_size", "4096"), ("hot_blocks", 1.5), ("spill_blocks", None),
            ("publish", 1), ("scan_current", "yes"), ("retry_yield_every", True),
            ("touch_after_write", 1.0), ("hugepages", "no"), ("prefault", None),
            ("mlock", []), ("spill_nontemporal", "on"), ("prefetch", 0.0),
            ("hot_nontemporal", "yes"), ("nontemporal_backlog_kib", 4.0),
            ("flush_hot_kib", "64"), ("flush_backlog_kib", 16.0), ("max_message", "1M"),
            ("large_bytes", 4096.0)]
BAD_VALUE = [("block_size", 100, "multiple of 64 in [64, 16777216]"),
             ("block_size", 32, "in [64, 16777216]"),
             ("block_size", 1 << 30, "in [64, 16777216]"),
             ("block_size", 1 << 40, "in [64, 16777216]"),   # beyond uint32: Python's check
             ("hot_blocks", 0, "in [1, 1073741824]"),
             ("spill_blocks", -1, "in [0, 1073741820]"),
             ("spill_blocks", 1 << 30, "in [0, 1073741820]"),
             ("publish", "sometimes", "'max', 'each' or 'bytes:N'"),
             ("publish", "bytes:0", "N in"), ("publish", "bytes:x", "N in"),
             ("publish", "each:3", "'bytes:N'"), ("publish", "bytes:%d" % (1 << 32), "N in"),
             ("retry_yield_every", -1, "in [0, 4294967295]"),
             ("retry_yield_every", 1 << 32, "in [0, 4294967295]"),
             ("nontemporal_backlog_kib", -1, "in [0, 4294967295]"),
             ("flush_hot_kib", 1 << 32, "in [0, 4294967295]"),
             ("flush_backlog_kib", -1, "in [0, 4294967295]"),
             ("scan_current", 2, "True or False"), ("mlock", 3, "True or False"),
             ("prefetch", -1, "True or False"),
             ("max_message", 1 << 31, "in [0, 1073741824]"),
             ("large_bytes", 4096, "0 or a multiple of 4096 of at least max_message"),
             ("large_bytes", 1 << 21 | 1, "0 or a multiple of 4096")]


def test_every_field_has_a_bad_case():
    assert {n for n, _ in BAD_TYPE} == set(qc.KINDS)


@pytest.mark.parametrize("name, value", BAD_TYPE)
def test_a_wrong_type_is_refused_naming_the_parameter(name, value):
    for make in (pq.QueueConfig, pq.Queue, pq.QueueConfig().replace):
        with pytest.raises(ArgumentTypeError, match=name) as e:
            make(**{name: value})
        assert isinstance(e.value, TypeError) and isinstance(e.value, ValueError)


@pytest.mark.parametrize("name, value, allowed", BAD_VALUE)
def test_a_bad_value_is_refused_naming_the_parameter_and_the_range(name, value, allowed):
    with pytest.raises(ValueError, match=name) as e:
        pq.QueueConfig(**{name: value})
    assert not isinstance(e.value, TypeError)
    assert e.value.args[0].startswith(name + " must be")
    with pytest.raises(ValueError, match=re.escape(allowed)):
        pq.Queue(**{name: value})


def test_c_decides_what_the_platform_supports():
    # pyq_config_check() names the field; the message says what it must be.
    c = _c_init()
    c.spill_nontemporal = 1
    if lib.pyq_config_check(c, ffi.NULL) == 0:
        assert pq.QueueConfig(spill_nontemporal=True).spill_nontemporal is True
    else:
        with pytest.raises(ValueError, match="spill_nontemporal must be False on this platform"):
            pq.QueueConfig(spill_nontemporal=True)


def test_stats_keys_are_pyq_stats_t():
    with pq.Queue(spill_blocks=0) as q:
        assert tuple(q.stats()) == tuple(n for n, _ in ffi.typeof("pyq_stats_t").fields)


def test_the_cli_offers_every_field_with_its_default():
    """An experiment's QueueConfig field is spelt at the CLI as the queue's own flags
    (lab/common/params.py), an old spelling hidden."""
    import argparse
    from pyqueue.lab.experiments.burst_tail import BurstTailParams
    p = argparse.ArgumentParser()
    BurstTailParams.add_arguments(p)
    base = BurstTailParams().queue
    assert BurstTailParams.from_args(p.parse_args([])).queue == base
    args = p.parse_args(["--block-size", "8192", "--publish", "each", "--scan-current",
                         "--no-touch-after-write", "--peer-retry-yield-every", "7"])
    assert BurstTailParams.from_args(args).queue == base.replace(
        block_size=8192, publish="each", scan_current=True, touch_after_write=False,
        retry_yield_every=7)
    text = p.format_help()
    for name in qc.KINDS:
        assert "--" + name.replace("_", "-") in text, name
    assert "--peer-retry-yield-every" not in text                 # hidden
    assert "default: %d" % qc.DEFAULTS["block_size"] in text
    with pytest.raises(ValueError, match="block_size must be"):
        BurstTailParams.from_args(p.parse_args(["--block-size", "100"]))
