"""The summaries and text tables of the experiments, one module per experiment that
has them; nothing here measures."""
