"""Paper Y's stages: federated training with compressed updates, the central warm start, the
one-round paired study, the distortion study, per-bit accuracy, the tables and the verdicts'
table. Each stage is one workflow rule; it sits on ``gradcomp.wire``, ``gradcomp.compression``
and ``gradcomp.statistics``."""
