"""One parameter list per experiment (pyqueue/lab/common/params.py): for every
experiment, the CLI's flags, the Python keywords and the JSON params are the same
set with the same defaults -- generated from its Params, then checked here."""
import argparse
import dataclasses
import importlib
import inspect
import os
import pkgutil
import warnings

import pytest

from pyqueue import QueueConfig
from pyqueue.lab import cli, experiments
from pyqueue.lab.cli import main as cli_main
from pyqueue.lab.common.params import Params, param

# Options every command has that are not an experiment's parameters: how to run it,
# where its output goes, how it prints.
RUN_OPTIONS = {"quick", "out", "overwrite", "no_progress", "markdown", "json", "help"}
# Keywords of an experiment function that are the session's, not parameters.
RUN_KEYWORDS = {"params", "out", "overwrite", "progress"}

for _info in pkgutil.iter_modules(experiments.__path__):
    importlib.import_module("pyqueue.lab.experiments." + _info.name)


def _all_params(cls=Params):
    out = []
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("pyqueue.lab."):
            out.append(sub)
        out += _all_params(sub)
    return out


PARAMS = sorted(_all_params(), key=lambda c: c.__name__)


def _parser(command):
    mod = cli_main.commands()[command]
    p = argparse.ArgumentParser()
    mod.add_arguments(p)
    # A command's SELECTORS choose which of its experiments run (c2c --false-sharing).
    p.selectors = set(getattr(mod, "SELECTORS", ()))
    return p


def _flags(parser):
    return {a.dest for a in parser._actions
            if a.option_strings and a.help != argparse.SUPPRESS} - RUN_OPTIONS - \
        getattr(parser, "selectors", set())


def test_every_experiment_has_one():
    assert [c.__name__ for c in PARAMS], "no Params found"
    assert {c.COMMAND for c in PARAMS} <= set(cli_main.commands())


@pytest.mark.parametrize("cls", PARAMS, ids=lambda c: c.__name__)
def test_cli_flags_are_the_keywords(cls):
    assert _flags(_parser(cls.COMMAND)) >= set(cls.keywords())
    extra = _flags(_parser(cls.COMMAND)) - set(cls.keywords())
    # A command that runs two experiments (c2c, pacing) has the other's flags too.
    others = set().union(*[set(o.keywords()) for o in PARAMS
                           if o.COMMAND == cls.COMMAND and o is not cls])
    assert extra <= others


@pytest.mark.parametrize("cls", PARAMS, ids=lambda c: c.__name__)
def test_the_same_defaults_from_the_cli_and_from_python(cls):
    args = _parser(cls.COMMAND).parse_args([])
    assert cls.from_args(args) == cls() == cls.of()


@pytest.mark.parametrize("cls", PARAMS, ids=lambda c: c.__name__)
def test_json_params_are_the_fields(cls):
    j = cls().to_json()
    assert list(j) == list(cls.field_names())
    flat = {}
    for k, v in j.items():
        if isinstance(getattr(cls(), k), QueueConfig):
            flat.update(v)
        else:
            flat[k] = v
    assert set(flat) == set(cls.keywords())
    assert cls.from_json(j) == cls()


@pytest.mark.parametrize("cls", PARAMS, ids=lambda c: c.__name__)
def test_the_function_takes_the_fields_as_keywords(cls):
    fn = getattr(importlib.import_module(cls.__module__), cls.FUNCTION)
    sig = inspect.signature(fn)
    kinds = {p.kind for p in sig.parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD in kinds       # the fields, as keywords
    named = {n for n, p in sig.parameters.items()
             if p.kind != inspect.Parameter.VAR_KEYWORD and not n.startswith("_")}
    assert named <= RUN_KEYWORDS, named - RUN_KEYWORDS
    with pytest.raises(TypeError, match="unknown parameter no_such_knob; the parameters are"):
        fn(no_such_knob=1)


@pytest.mark.parametrize("cls", PARAMS, ids=lambda c: c.__name__)
def test_every_field_has_help_and_a_checked_default(cls):
    for f in dataclasses.fields(cls):
        m = f.metadata["pyq"]
        text = m["help"]() if callable(m["help"]) else m["help"]
        assert text and len(text) > 8, f.name
    cls()                       # the defaults pass their own checks


@pytest.mark.parametrize("cls", PARAMS, ids=lambda c: c.__name__)
def test_quick_is_the_cli_quick(cls):
    args = _parser(cls.COMMAND).parse_args(["--quick"])
    assert cls.from_args(args) == cls.quick()


# ---- the machinery, on a small list of its own -------------------------------------

@dataclasses.dataclass(frozen=True)
class _Demo(Params):
    EXPERIMENT = "demo"
    ALIASES = {"old_rounds": "rounds"}
    rounds: int = param(3, "rounds of the demo", lo=1, hi=10, quick=1)
    ratio: float = param(0.5, "a fraction", lo=0.0, hi=1.0)
    loud: bool = param(False, "say more", cli_aliases=("--verbose",))
    names: tuple = param(("a", "b"), "names used", kind="names", choices=("a", "b", "c"))
    cpu: int = param(-1, "a CPU", kind="cpu")
    targets: tuple = param((1e-3,), "delay targets", kind="durations", lo=0.0, lo_open=True)
    queue: QueueConfig = param(QueueConfig(hot_blocks=2), "the queue",
                               quick={"spill_blocks": 8})

    def check(self):
        if self.rounds == 7:
            raise ValueError("rounds must not be 7 here")


def _demo_args(*argv):
    p = argparse.ArgumentParser()
    _Demo.add_arguments(p)
    p.add_argument("--quick", action="store_true")
    return p.parse_args(list(argv))


def test_flags_parse_to_checked_values():
    d = _Demo.from_args(_demo_args("--rounds", "5", "--ratio", "0.25", "--loud", "--names",
                                   "c,a", "--targets", "1ms,25ms", "--hot-blocks", "8"))
    assert (d.rounds, d.ratio, d.loud, d.names) == (5, 0.25, True, ("c", "a"))
    assert d.targets == (1e-3, 25e-3) and d.queue == QueueConfig(hot_blocks=8)
    assert _Demo.from_args(_demo_args("--verbose")).loud is True      # a hidden alias
    assert _Demo.from_args(_demo_args("--no-loud")).loud is False


@pytest.mark.parametrize("argv,match", [
    (("--rounds", "11"), r"rounds must be in \[1, 10\], got 11"),
    (("--rounds", "x"), "rounds must be an integer"),
    (("--ratio", "nan"), "ratio must be a number"),
    (("--names", "a,d"), "must be one of a, b, c, got 'd'"),
    (("--names", "a,a"), "names must not repeat"),
    (("--names", "a,,b"), "an empty item"),
    (("--targets", "0"), r"targets\[0\] must be in \(0"),
    (("--rounds", "7"), "rounds must not be 7"),
    (("--block-size", "100"), "block_size must be a multiple of 64"),
])
def test_a_bad_flag_is_one_error_naming_it(argv, match):
    with pytest.raises(ValueError, match=match):
        _Demo.from_args(_demo_args(*argv))


def test_python_keywords_are_the_fields():
    assert _Demo.of(rounds=2).rounds == 2
    assert _Demo.of(hot_blocks=4).queue == QueueConfig(hot_blocks=4)   # a queue field
    assert _Demo.of(_Demo(rounds=2), ratio=1.0) == _Demo(rounds=2, ratio=1.0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert _Demo.of(old_rounds=4).rounds == 4
    assert "old_rounds is now called rounds" in str(w[0].message)
    with pytest.raises(TypeError, match="unknown parameter bogus; the parameters are rounds"):
        _Demo.of(bogus=1)
    with pytest.raises(AttributeError):
        _Demo().rounds = 4                      # frozen: checked once, then trusted


def test_quick_caps_and_json_round_trips():
    q = _Demo.quick()
    assert q.rounds == 1 and q.queue.spill_blocks == 8
    assert _Demo.from_args(_demo_args("--quick")) == q
    assert _Demo.from_json(q.to_json()) == q
    assert q.to_json()["queue"]["hot_blocks"] == 2 and q.to_json()["names"] == ["a", "b"]


@dataclasses.dataclass(frozen=True)
class _Pinned(Params):
    EXPERIMENT = "pinned"
    cpu: int = param(min(os.sched_getaffinity(0)), "a CPU, pinned", kind="cpu", lo=0)
    counts: tuple = param((100, 10), "one count, or one per size", kind="ints", lo=1,
                          quick=lambda v: tuple(min(c, 5) for c in v))
    extra: int = param(None, "None: as many as counts[0]; --quick: 0 unless given", lo=0,
                       kind="int", none_ok=True, quick=lambda v: 0 if v is None else v)


def test_a_pinned_cpu_a_bare_count_and_a_quick_function():
    with pytest.raises(ValueError, match="cpu must be a CPU id >= 0, got -1"):
        _Pinned(cpu=-1)
    assert _Pinned.of(counts=7).counts == (7,)          # as its flag's text "7" gives
    assert _Pinned.quick().counts == (5, 5) and _Pinned.quick().extra == 0
    assert _Pinned.quick(counts=(3, 9), extra=2) == _Pinned(counts=(3, 5), extra=2)
    p = argparse.ArgumentParser()
    _Pinned.add_arguments(p)
    text = " ".join(p.format_help().split())
    assert "(default: 100,10; >= 1)" in text and "(default: None; >= 0)" in text


@dataclasses.dataclass(frozen=True)
class _Pair(Params):
    EXPERIMENT = "pair"
    ALIASES = {"pair": ("writer_cpu", "reader_cpu")}
    writer_cpu: int = param(0, "a pinned CPU", kind="cpu", lo=0)
    reader_cpu: int = param(1, "another pinned CPU", kind="cpu", lo=0)
    rounds: int = param(2, "rounds of the pair", lo=1)
    cpus: tuple = param(None, "pinned CPUs", kind="cpus", lo=0, none_ok=True)


def test_a_cpu_from_zero_is_pinned():
    with pytest.raises(ValueError, match=r"writer_cpu must be a CPU id >= 0, got -1"):
        _Pair(writer_cpu=-1)
    with pytest.raises(ValueError, match=r"cpus\[1\] must be a CPU id >= 0"):
        _Pair(cpus=(0, -1))
    assert _Demo(cpu=-1).cpu == -1                      # without lo: -1 is "not pinned"


def test_an_old_keyword_split_over_two_fields():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert _Pair.of(pair=(1, 0)) == _Pair(writer_cpu=1, reader_cpu=0)
    assert "pair is now called writer_cpu and reader_cpu" in str(w[0].message)
    with pytest.raises(ValueError, match="pair must be a sequence of 2 values"):
        _Pair.of(pair=(1,))
    with pytest.raises(TypeError, match="pair and writer_cpu and reader_cpu are the same"):
        _Pair.of(pair=(1, 0), writer_cpu=1)


def test_two_lists_share_a_flag_each_with_its_default():
    p = argparse.ArgumentParser()
    _Demo.add_arguments(p)
    _Pair.add_arguments(p)                  # --rounds is _Demo's flag already: one flag
    assert _Demo.from_args(p.parse_args([])).rounds == 3
    assert _Pair.from_args(p.parse_args([])).rounds == 2
    args = p.parse_args(["--rounds", "4"])
    assert _Demo.from_args(args).rounds == _Pair.from_args(args).rounds == 4
