"""python -m pyqueue <command>: the lab's command line, pyqueue.lab.cli.main.

The one place the queue package names the lab: run only as ``python -m pyqueue``
(or imported by name), never by ``import pyqueue``."""
import sys

from pyqueue.lab.cli.main import main, program_name  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
