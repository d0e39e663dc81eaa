"""What every experiment shares: the session skeleton, the status words, the output
folder, progress and Ctrl-C, nearest-rank statistics, placement probes, the machine
record, and the pacing rig."""
