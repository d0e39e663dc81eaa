"""The two packages in one distribution (SPEC §1, STYLE items 14-15): ``pyqueue`` is the
queue and imports in milliseconds, with nothing of the lab and no numpy; ``pyqueue.lab``
is the instrument and may import the queue, never the reverse.  Dependencies point
one way inside ``pyqueue/`` too: no import circle, and no private name used across
modules (a helper two modules share is public in a third).

The import graph is read from the sources (ast), not from a running interpreter, so
a lazy import inside a function counts as much as one at the top of a file; imports
under ``if TYPE_CHECKING:`` do not run and do not count."""
import ast
import os
import subprocess
import sys

import pytest

import pyqueue

PKG = os.path.dirname(os.path.abspath(pyqueue.__file__))
ROOT = os.path.dirname(PKG)
# Modules moved to the lab that keep a one-line alias for one release (docs/CHANGELOG.md),
# and the CLI's door: `python -m pyqueue` runs the lab's command line.
ALIASES = {"pyqueue.threads", "pyqueue.cpu", "pyqueue.topology", "pyqueue.clock",
           "pyqueue.counters", "pyqueue.samples", "pyqueue.peers", "pyqueue.peer_table"}
DOORS = {"pyqueue.__main__"}
# Build scripts: run by setup.py before the package exists, never imported by it.
BUILD_SCRIPTS = {"pyqueue._build", "pyqueue.lab._build", "pyqueue.lab._build_peers"}


def _modules():
    """{dotted name: path} of every module under pyqueue/."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(PKG):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in filenames:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = \
                    os.path.join(dirpath, f)
    return out


MODULES = _modules()
EXTENSIONS = {"pyqueue._pyq", "pyqueue._pyext", "pyqueue.lab._lab"}


def _package(name, path):
    return name if path.endswith("__init__.py") else name.rpartition(".")[0]


def _type_checking_lines(tree):
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                lines.update(range(sub.lineno, sub.end_lineno + 1))
    return lines


def _imports(name, path):
    """[(lineno, imported module, imported name or None)] of one module's source."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    skip = _type_checking_lines(tree)
    pkg = _package(name, path)
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            for a in node.names:
                sub = mod + "." + a.name
                if sub in MODULES or sub in EXTENSIONS:
                    out.append((node.lineno, sub, None))      # a submodule
                else:
                    out.append((node.lineno, mod, a.name))    # a name in a module
    return out


def _edges():
    edges = {}
    for name, path in MODULES.items():
        if name in BUILD_SCRIPTS:
            continue
        for _, mod, _ in _imports(name, path):
            if mod in MODULES and mod != name:
                edges.setdefault(name, set()).add(mod)
    return edges


def _cycles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_in_the_package():
    assert _cycles(_edges()) == []


def test_the_circle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _is_lab(mod):
    return mod == "pyqueue.lab" or mod.startswith("pyqueue.lab.")


def test_the_queue_never_imports_the_lab():
    offenders = []
    for name, path in MODULES.items():
        if _is_lab(name) or name in ALIASES | DOORS | BUILD_SCRIPTS:
            continue
        offenders += ["%s:%d imports %s" % (name, line, mod)
                      for line, mod, _ in _imports(name, path) if _is_lab(mod)]
    assert offenders == []


def test_aliases_are_one_line_and_in_the_changelog():
    with open(os.path.join(ROOT, "docs", "CHANGELOG.md")) as f:
        changelog = f.read()
    for name in ALIASES:
        with open(MODULES[name]) as f:
            tree = ast.parse(f.read())
        body = [n for n in tree.body if not (isinstance(n, ast.Expr)
                                             and isinstance(n.value, ast.Constant))]
        assert len(body) == 1 and isinstance(body[0], ast.ImportFrom), name
        assert "`%s`" % name in changelog, name


def _owner(mod):
    """The package whose modules may import the private module ``mod``."""
    return mod.rpartition(".")[0]


def _private_attributes(name, path):
    """[(lineno, module, attr)]: ``alias._attr`` where alias names another pyqueue module."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    pkg = _package(name, path)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("pyqueue") and a.asname:
                    aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                if mod + "." + a.name in MODULES:
                    aliases[a.asname or a.name] = mod + "." + a.name
    return [(node.lineno, aliases[node.value.id], node.attr) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in aliases and node.attr.startswith("_")
            and not node.attr.startswith("__") and aliases[node.value.id] != name]


def test_no_private_name_across_modules():
    offenders = []
    for name, path in MODULES.items():
        if name in BUILD_SCRIPTS:
            continue
        offenders += ["%s:%d uses %s.%s" % (name, line, mod, attr)
                      for line, mod, attr in _private_attributes(name, path)]
        for line, mod, attr in _imports(name, path):
            if not mod.startswith("pyqueue"):
                continue
            leaf = mod.rpartition(".")[2]
            if leaf.startswith("_") and not leaf.startswith("__") \
                    and not (name + ".").startswith(_owner(mod) + "."):
                offenders.append("%s:%d imports private module %s" % (name, line, mod))
            if attr and attr.startswith("_") and not attr.startswith("__") and mod != name:
                offenders.append("%s:%d imports %s from %s" % (name, line, attr, mod))
    assert offenders == []


def _fresh(code):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None) if False else None
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)


def test_import_pyqueue_loads_no_numpy_no_lab_no_metadata():
    r = _fresh(
        "import sys, pyqueue as pq\n"
        "def bad():\n"
        "    return sorted(m for m in sys.modules if m == 'numpy' or m.startswith('numpy.')\n"
        "                  or m == 'pyqueue.lab' or m.startswith('pyqueue.lab.')\n"
        "                  or m == 'importlib.metadata')\n"
        "assert bad() == [], bad()\n"
        "with pq.Queue() as q:\n"
        "    q.writer.put(b'x'); q.writer.flush(); assert q.reader.get() == b'x'\n"
        "    q.writer.write(b'abc'); q.writer.flush(); assert q.reader.poll() == [b'abc']\n"
        "    q.stats(); q.config\n"
        "assert bad() == [], bad()\n"
        "print('ok', pq.__version__)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok ") and "unknown" not in r.stdout


def test_an_array_call_imports_numpy_then():
    r = _fresh("import sys, numpy as np, pyqueue as pq\n"
               "with pq.Queue() as q:\n"
               "    q.writer.write_batch(np.zeros((3, 8), np.uint8)); q.writer.flush()\n"
               "    out = np.empty((3, 8), np.uint8); assert q.reader.poll_into(out) == 3\n"
               "print('ok')\n")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_the_lab_still_answers_to_its_old_names():
    r = _fresh("import pyqueue.threads as t, pyqueue.peers as p, pyqueue.lab as lab\n"
               "from pyqueue.lab.runtime import threads\n"
               "assert t.ProducerThread is threads.ProducerThread\n"
               "assert callable(lab.burst_tail) and callable(p.available)\n"
               "print('ok')\n")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize("shared", [False, True])
def test_a_queue_construction_checks_its_config_once(shared):
    from pyqueue._pyq import lib
    before = lib.pyq_config_check_count()
    with pyqueue.Queue(publish="each", hot_blocks=8, spill_blocks=64, shared=shared) as q:
        assert lib.pyq_config_check_count() - before == 1
        q.config                        # read back from C: trusted, not checked again
        assert pyqueue.QueueConfig.from_c(q.config.to_c()) == q.config
        assert lib.pyq_config_check_count() - before == 1
    cfg = pyqueue.QueueConfig(hot_blocks=8)
    assert lib.pyq_config_check_count() - before == 2   # a QueueConfig is checked when made
    with pyqueue.Queue(cfg, shared=shared):
        assert lib.pyq_config_check_count() - before == 3
    with pytest.raises(ValueError, match="block_size must be a multiple of 64"):
        pyqueue.Queue(block_size=100, shared=shared)
