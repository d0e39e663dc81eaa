"""Print docs/API.md from the docstrings: python docs/make_api.py > docs/API.md"""
import inspect

import pyqueue
import pyqueue.lab as lab
from pyqueue import Queue, QueueConfig, Reader, Writer

HEAD = """# API reference

Every public name of `pyqueue` and `pyqueue.lab`, with its signature and the first
paragraph of its docstring (`help(name)` shows the whole). Markdown, not a Sphinx site:
the project has no public host to publish a site on, and a page in `docs/` is read where
the code is: on a clone, in the sdist, on a code browser. The page is generated from
the docstrings (`python docs/make_api.py > docs/API.md`); the test suite checks that
every public name appears here.

The experiments' output folders are described in [OUTPUT.md](OUTPUT.md); the command
line in the README and in `python -m pyqueue CMD --help`.

Every result object `pyqueue.lab.load` returns has `summary`, `status`, `params`,
`samples` (its arrays), `to_json(path)` and `to_pandas()`; so do the results the
experiment functions return, made in memory. The package is typed (`py.typed`):
`pyqueue/queue.pyi` and `pyqueue/config.pyi` give the signatures of `Queue`, `Writer`,
`Reader` and the fields of `QueueConfig` (made at import time from the C struct),
`pyqueue/_pyq.pyi` and `pyqueue/lab/_lab.pyi` the compiled extensions.
"""


def para(o):
    return (inspect.getdoc(o) or "").split("\n\n")[0].replace("\n", " ")


def sig(o):
    try:
        return str(inspect.signature(o))
    except (TypeError, ValueError):
        return ""


def members(cls, name):
    # Inherited ones too: Writer and Reader get their per-message calls from
    # their C base types (pyqueue._pyext).
    own = {}
    for klass in reversed(cls.__mro__[:-1]):
        own.update(vars(klass))
    for m, v in sorted(own.items()):
        if m.startswith("_") or not (callable(v) or isinstance(v, property)):
            continue
        f = v.fget if isinstance(v, property) else v
        text = para(f)
        yield "- `%s.%s%s`%s%s" % (name, m, "" if isinstance(v, property) else sig(f),
                                   " (property)" if isinstance(v, property) else "",
                                   " — " + text if text else "")


def main():
    out = [HEAD, "## pyqueue", ""]
    for n in pyqueue.__all__:
        o = getattr(pyqueue, n)
        if n == "__version__":
            out += ["### `pyqueue.__version__`", "",
                    "The version string (`PYQ_VERSION` of the C header).", ""]
            continue
        error = inspect.isclass(o) and issubclass(o, Exception)
        out += ["### `pyqueue.%s%s`" % (n, "" if error else sig(o)), "", para(o), ""]
        if o in (Queue, Writer, Reader, QueueConfig):
            out += list(members(o, n)) + [""]
    out += ["## pyqueue.lab", ""]
    for n in lab._EXPORTS:
        o = getattr(lab, n)
        out += ["### `pyqueue.lab.%s%s`" % (n, sig(o)), "", para(o), ""]
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    main()
