"""The virtual web: a big generated web on loopback for benchmarks and tests.

``VirtualWeb`` is the web and its ground truth, ``server`` serves it as an HTTP
forward proxy on 127.0.0.1, ``python -m bench.virtualweb`` runs it (serve,
job, truth, selfbench). See bench/README.md.
"""

from bench.virtualweb.web import VirtualWeb

__all__ = ["VirtualWeb"]
