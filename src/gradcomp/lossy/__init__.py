"""Paper Y's stages: federated training with compressed updates (:mod:`~.federated`; the
users' local training in :mod:`~.local_training`, the uplink and the server's aggregation in
:mod:`~.uplink`), the central warm start (:mod:`~.warm_start`), the ``federated`` rule's
stage (:mod:`~.federated_stage`) and the run's files (:mod:`~.run_files`), per-bit accuracy
(:mod:`~.per_bit`), the one-round paired study (:mod:`~.one_round`), the Y5 distortion study
(:mod:`~.distortion_study`), figures Y1-Y5 (:mod:`~.figures`, with :mod:`~.facets` and
:mod:`~.styles`), Y6-Y7 (:mod:`~.figures_paired`) and Y8 (:mod:`~.figure_m`), tables T3-T4
(:mod:`~.paper_y_tables`) and T5 (:mod:`~.bd_rate_table`), the verdicts (:mod:`~.verdict_tables`)
and two runs' verdicts side by side (:mod:`~.verdict_comparison`); their statistics are
:mod:`gradcomp.statistics`. Each stage is one workflow rule."""
