"""Data-parallel training with the study's compressors: a DDP communication hook that sends
each rank's update as the bytes the federated study sends. It sits on
``gradcomp.compression`` and knows nothing of ``gradcomp.lossy``.

The rate-limited loopback the benchmark measures it on is ``bench/netns.py``.
"""

from gradcomp.distributed.hook import *  # noqa: F403 (the package's API is the module's)
from gradcomp.distributed.hook import __all__  # noqa: F401
