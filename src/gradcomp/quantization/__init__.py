"""Scalar quantization: fixed grids (FP8, FP4, uniform; :mod:`~gradcomp.quantization.grids`),
the nearest-level quantizer with its one tie rule (:mod:`~gradcomp.quantization.level_quantizer`),
uniform levels from a tensor's min to max (:mod:`~gradcomp.quantization.minmax_levels`), the
fitted laws' cell moments (:mod:`~gradcomp.quantization.symmetric_law`, far tails in
:mod:`~gradcomp.quantization.tail_gamma`), Lloyd design under the |g|^M weighted distortion
(:mod:`~gradcomp.quantization.lloyd`, Newton steps in :mod:`~gradcomp.quantization.lloyd_newton`,
many designs at once in :mod:`~gradcomp.quantization.lloyd_batch`,
the authors' released variant in :mod:`~gradcomp.quantization.released_lloyd`), the
distance of a design to D(R) (:mod:`~gradcomp.quantization.rd_gap`; the entropy-constrained
design charges its indices a code's lengths, so it sits above coding, in the compression
package), Lloyd's data
counterpart (weighted k-means, :mod:`~gradcomp.quantization.kmeans`), trellis-coded
quantization (:mod:`~gradcomp.quantization.tcq`), that distortion on data
(:mod:`~gradcomp.quantization.distortion`) and the rate-distortion bound
(:mod:`~gradcomp.quantization.rate_distortion`, its points along the curve:
:mod:`~gradcomp.quantization.rd_sweep`)."""
