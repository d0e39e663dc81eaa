"""Subcommands of ``python -m pyqueue``: one module per command (see main.py)."""
