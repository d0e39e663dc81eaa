"""Subcommands of ``python -m pyqueue``: one module per command (see __main__.py)."""
