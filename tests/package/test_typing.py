"""The type stubs (pyqueue/*.pyi, py.typed) say what the runtime does: every public
method of Queue, Writer and Reader is in the stub with its parameters, the queue's
keywords and QueueConfig's fields are the C struct's, and (where mypy is installed)
stubtest finds no difference beyond the fast-path names still to come."""
import ast
import inspect
import os
import subprocess
import sys

import pytest

import pyqueue
from pyqueue.config import KINDS

import support

PACKAGE = os.path.dirname(pyqueue.__file__)
# queue.Queue's names that SPEC-level docs give Writer/Reader (the Python fast-path
# types); allowed in the stub before the runtime has them.
FAST_PATH = {"Writer": {"put", "put_nowait", "qsize", "empty", "full"},
             "Reader": {"get", "get_nowait", "qsize", "empty", "full"}}


def _stub(name):
    with open(os.path.join(PACKAGE, name)) as f:
        return ast.parse(f.read())


def _classes(tree):
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _methods(node):
    return {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}


def test_the_package_is_marked_typed_and_has_its_stubs():
    for name in ("py.typed", "queue.pyi", "config.pyi", "_pyq.pyi"):
        assert os.path.isfile(os.path.join(PACKAGE, name)), name


@pytest.mark.parametrize("cls", [pyqueue.Queue, pyqueue.Writer, pyqueue.Reader])
def test_every_public_method_is_in_the_stub_with_its_parameters(cls):
    classes = _classes(_stub("queue.pyi"))
    methods = _methods(classes[cls.__name__])
    for base in cls.__mro__[1:]:               # what the stub's base classes define
        if base.__name__ in classes:
            methods = dict(_methods(classes[base.__name__]), **methods)
    public = {n for n, v in vars(cls).items() if not n.startswith("_")
              and (callable(v) or isinstance(v, property))}
    assert public <= set(methods), sorted(public - set(methods))
    assert set(methods) - {n for n in dir(cls)} <= FAST_PATH.get(cls.__name__, set())
    for name in public:
        value = vars(cls)[name]
        if isinstance(value, property) or name == "__init__":
            continue
        try:
            runtime = [p for p in inspect.signature(value).parameters]
        except (TypeError, ValueError):    # a C method without a text signature
            continue
        stubbed = [a.arg for a in methods[name].args.args]
        assert runtime == stubbed, (name, runtime, stubbed)


def test_queue_keywords_and_config_fields_are_the_c_structs():
    init = _methods(_classes(_stub("queue.pyi"))["Queue"])["__init__"]
    assert [a.arg for a in init.args.kwonlyargs] == list(KINDS)
    config = _classes(_stub("config.pyi"))["QueueConfig"]
    fields = [n.target.id for n in config.body if isinstance(n, ast.AnnAssign)
              and n.target.id != "FIELDS"]   # FIELDS: the tuple of the field names
    assert fields == list(KINDS)
    assert [a.arg for a in _methods(config)["__init__"].args.args[1:]] == list(KINDS)


def test_stubtest_finds_nothing_but_the_fast_path_names(tmp_path):
    pytest.importorskip("mypy")
    allow = tmp_path / "allowlist.txt"
    allow.write_text("\n".join(
        ["pyqueue.queue.%s.%s" % (cls, m) for cls, names in FAST_PATH.items() for m in names]
        # dataclass and finalizer details a stub does not spell
        + ["pyqueue.queue.Queue.__del__", "pyqueue.config.QueueConfig.__match_args__"]) + "\n")
    env = dict(support.subprocess_env(), MYPYPATH=os.path.dirname(PACKAGE))
    p = subprocess.run([sys.executable, "-m", "mypy.stubtest", "pyqueue.queue", "pyqueue.config",
                        "pyqueue._pyq", "--allowlist", str(allow), "--ignore-unused-allowlist"],
                       capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
