"""FetchSGD's protocol (Rothchild et al. 2020, Algorithm 1): users sketch, the server sums.

Every user of the run sketches its update (d,) with the *same* hashes (one
:class:`~gradcomp.compression.sketch_hash.SketchHash`, ``rows`` x ``columns``, from a seed
the server announces once), so by linearity the weighted sum of their tables is the sketch
of the weighted sum of their updates, and the server unsketches once per round. The server
keeps two sketches, momentum ``S_u`` and error ``S_e``, and each round

1. ``S = sum_u w_u S(g_u)`` (the users' tables, weights w_u, e.g. 1/W or n_u / n);
2. momentum: ``S_u <- rho S_u + S``;
3. error feedback: ``S_e <- S_e + lr S_u``;
4. unsketch: ``D = TopK_k(U(S_e))`` (d,), the model moves by ``-D`` (or ``+D`` for an update
   that is already a descent step, such as a model difference);
5. error accumulation (``feedback``): ``"subtract"``, Algorithm 1's ``S_e <- S_e - S(D)``, or
   ``"zero"`` (default), the reference code's (``CommEfficient``, ``fed_aggregator.py``):
   the cells of ``S_e`` that the k recovered entries hash to are set to 0, because the
   subtraction diverged there; :mod:`~gradcomp.compression.count_sketch` measures both;
6. momentum masking (``mask_momentum``, default True, the reference code's): the same
   cells of ``S_u`` are set to 0 (Algorithm 1 has no such step: ``False``).

This is a library object: the federated loop of :mod:`gradcomp.lossy` aggregates
decompressed per-user updates and does not use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gradcomp.compression.count_sketch import SKETCH_FEEDBACKS
from gradcomp.compression.sketch_hash import SketchHash

__all__ = ["FetchSGDServer"]


class FetchSGDServer:
    """The aggregator of FetchSGD (module doc) for updates of d entries.

    ``rows`` x ``columns`` sketches from ``seed`` (shared with every user), ``k`` entries
    recovered per round, momentum ``rho`` in [0, 1), step ``lr``; ``feedback`` one of
    ``"zero"``, ``"subtract"``. Tables are float64 (rows, columns).
    """

    def __init__(
        self,
        d: int,
        rows: int,
        columns: int,
        k: int,
        *,
        rho: float = 0.9,
        lr: float = 1.0,
        feedback: str = "zero",
        mask_momentum: bool = True,
        seed: int = 0,
    ):
        if not 1 <= k <= d:
            raise ValueError(f"k must be in 1..d = {d}, got {k}")
        if not 0 <= rho < 1:
            raise ValueError(f"rho (momentum) must be in [0, 1), got {rho}")
        if feedback not in SKETCH_FEEDBACKS:
            raise ValueError(f"feedback must be one of {SKETCH_FEEDBACKS}, got {feedback!r}")
        self.hash = SketchHash(d, rows, columns, seed)
        self.k, self.rho, self.lr = int(k), float(rho), float(lr)
        self.feedback, self.mask_momentum = feedback, bool(mask_momentum)
        self.momentum = torch.zeros(rows, columns, dtype=torch.float64)
        self.error = torch.zeros(rows, columns, dtype=torch.float64)

    def user_sketch(self, update: torch.Tensor) -> torch.Tensor:
        """What a user sends: the table (rows, columns) of its update (d,), shared hashes."""
        return self.hash.sketch(update)

    def step(
        self, tables: Sequence[torch.Tensor], weights: Sequence[float] | None = None
    ) -> torch.Tensor:
        """One round from the users' tables (weights: default 1 / number of users); returns
        D (d,) float64, the k recovered entries of the error sketch."""
        if not tables:
            raise ValueError("step needs at least one user's table")
        if weights is None:
            weights = [1.0 / len(tables)] * len(tables)
        if len(weights) != len(tables):
            raise ValueError(f"{len(tables)} tables but {len(weights)} weights")
        total = sum(w * t.to(torch.float64) for w, t in zip(weights, tables, strict=True))
        self.momentum = self.rho * self.momentum + total
        self.error = self.error + self.lr * self.momentum
        delta = self.hash.unsketch(self.error, self.k)
        cells = self.hash.cells_of(delta.nonzero().squeeze(1))
        if self.feedback == "subtract":
            self.error = self.error - self.hash.sketch(delta)
        else:
            self.error = self.error.masked_fill(cells, 0.0)
        if self.mask_momentum:
            self.momentum = self.momentum.masked_fill(cells, 0.0)
        return delta
