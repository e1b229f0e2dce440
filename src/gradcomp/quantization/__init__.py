"""Scalar quantization: fixed grids (FP8, FP4, uniform), the nearest-level quantizer, Lloyd
design under the |g|^M weighted distortion, weighted k-means, trellis-coded quantization and the
rate-distortion bound. It sits on ``gradcomp.distributions``; the entropy-constrained design
charges its indices a code's lengths, so it sits above coding, in ``gradcomp.compression``."""
