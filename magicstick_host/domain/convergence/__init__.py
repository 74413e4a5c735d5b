"""Host convergence's pure rules (convergence.md), beside `magicstick-host converge`.

- gate.py: when convergence may run (the gate it shares with the worker);
- run.py: one run as the state keeps it, the journal records it and `status` shows it;
- display.py: which NVIDIA GPUs make a host an NVIDIA display host.

Each module is imported by its own name; this package imports none of them.
"""
