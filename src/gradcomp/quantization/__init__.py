"""Scalar quantization: fixed grids (FP8, FP4, uniform; :mod:`~gradcomp.quantization.grids`),
Lloyd design under the |g|^M weighted distortion (:mod:`~gradcomp.quantization.lloyd`), that
distortion on data (:mod:`~gradcomp.quantization.distortion`) and the rate-distortion bound
(:mod:`~gradcomp.quantization.rate_distortion`)."""
