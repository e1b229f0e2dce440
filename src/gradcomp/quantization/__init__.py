"""Scalar quantization: fixed grids (FP8, FP4, uniform; :mod:`~gradcomp.quantization.grids`),
the nearest-level quantizer with its one tie rule (:mod:`~gradcomp.quantization.level_quantizer`),
uniform levels (:mod:`~gradcomp.quantization.uniform_levels`), the fitted laws' cell moments
(:mod:`~gradcomp.quantization.symmetric_law`), Lloyd design under the |g|^M weighted
distortion (:mod:`~gradcomp.quantization.lloyd`), that
distortion on data (:mod:`~gradcomp.quantization.distortion`) and the rate-distortion bound
(:mod:`~gradcomp.quantization.rate_distortion`)."""
