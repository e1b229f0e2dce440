"""Paper Y's stages: federated training with compressed updates (:mod:`~.federated`), the
run's files (:mod:`~.run_files`), per-bit accuracy (:mod:`~.per_bit`), the Y5 distortion
study (:mod:`~.distortion_study`), figures Y1-Y5 (:mod:`~.figures`) and table T3
(:mod:`~.tables`). Each stage is one workflow rule of the same name."""
