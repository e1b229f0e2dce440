"""The uplink's byte format: one user's compressed update as one ``bytes`` object, which a
receiver decodes from those bytes and what it knew before the first round (docs/wire.md).

Floors, bottom up: the fields and their errors (:mod:`gradcomp.coding.fields`) and the
compressor kinds (:mod:`gradcomp.compression`, each class with its header code
``wire_code``) sit below this package and never import it; here
:mod:`~gradcomp.wire.records` (the header, the framed records, the agreed-fact checks, the
:class:`~gradcomp.wire.records.UpdateLayout` and :data:`~gradcomp.wire.records.KIND_CODES`,
read from the kinds' classes), the kinds' layouts on it: :mod:`~gradcomp.wire.pipeline` (a
quantizer pipeline), :mod:`~gradcomp.wire.low_rank` (PowerSGD), :mod:`~gradcomp.wire.sketch`
(a count sketch), :mod:`~gradcomp.wire.user_receiver` (a user's class, its own format); then
:mod:`~gradcomp.wire.update` (the API: ``encode_update``, ``make_receiver``, dispatching to
the layouts) and :mod:`~gradcomp.wire.users` (every user's compressor of a run, seeded apart,
and the server's receivers). The DDP hook's byte exchange is
:mod:`gradcomp.distributed.exchange`.

This package's names are :mod:`~gradcomp.wire.update`'s.
"""

from gradcomp.wire.update import *  # noqa: F403 (the package's API is the module's)
from gradcomp.wire.update import __all__  # noqa: F401
