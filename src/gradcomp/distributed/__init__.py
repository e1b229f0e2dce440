"""Data-parallel training with the study's compressors: a DDP communication hook that sends
each rank's update as the bytes the federated study sends.

- :mod:`~gradcomp.distributed.hook`: the hook and its state (``register_compression_hook``,
  ``compression_hook``, ``CompressionHookState``), which exchange a spec takes;
- :mod:`~gradcomp.distributed.exchange`: the byte exchange (every rank's bytes gathered, each
  decoded by every rank from what it knows, one status byte agreeing on failures);
- :mod:`~gradcomp.distributed.linear`: the linear exchanges (PowerSGD's factors, count
  sketches: summed by all-reduce, then decoded once).

The rate-limited loopback the benchmark measures them on is ``bench/netns.py``.
"""

from gradcomp.distributed.hook import *  # noqa: F403 (the package's API is the module's)
from gradcomp.distributed.hook import __all__  # noqa: F401
