"""One module per experiment, named after its command (``python -m pyqueue burst-tail``
runs experiments/burst_tail.py, whose C loop is csrc/lab/burst_tail.c).  Each keeps
only its own loop; the session around it is common/session.py."""
