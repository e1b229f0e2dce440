"""Paper L's stages: training with gradient dumps (:mod:`~.train`, :mod:`~.dumps`), fits
(:mod:`~.fit_lossless`), lossless coding (:mod:`~.code_lossless`; whole-model coding inside the
training job for runs that dump a few tensors: :mod:`~.stream`), tensor positions
(:mod:`~.positions`), figures L1-L5 (:mod:`~.figures`, :mod:`~.plots`) and tables T1-T2
(:mod:`~.tables`). Each stage is one workflow rule of the same name."""
