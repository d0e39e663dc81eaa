"""Experiment modules named like their function (ownership, pipeline, pacing, ...).

Importing the submodule ``pyqueue.lab.X`` binds the package attribute ``X`` to the
module, shadowing the function of the same name that ``pyqueue.lab.__getattr__``
maps lazily.  ``callable_module(__name__, fn)`` at the bottom of such a module makes
the module itself callable, so ``pyqueue.lab.X(...)`` runs the experiment whichever
way it was imported.
"""
import sys
import types


def callable_module(module_name, fn):
    class _Experiment(types.ModuleType):
        def __call__(self, *args, **kwargs):
            return fn(*args, **kwargs)

    sys.modules[module_name].__class__ = _Experiment
