"""Paper Y's stages: federated training with compressed updates (:mod:`~.federated`; the
users' local training in :mod:`~.local_training`, the uplink and the server's aggregation in
:mod:`~.uplink`), the central warm start (:mod:`~.warm_start`), the ``federated`` rule's
stage (:mod:`~.federated_stage`) and the run's files (:mod:`~.run_files`), per-bit accuracy
(:mod:`~.per_bit`), the one-round paired study (:mod:`~.one_round`), the Y5 distortion study
(:mod:`~.distortion_study`), figures Y1-Y5 (:mod:`~.figures`, with :mod:`~.facets` and
:mod:`~.styles`), Y6-Y7 (:mod:`~.figures_paired`) and Y8 (:mod:`~.figure_m`), tables T3-T4
(:mod:`~.tables`) and T5 (:mod:`~.bd_rate_table`), the verdicts (:mod:`~.verdicts`) and two runs'
verdicts side by side (:mod:`~.verdict_comparison`). The
statistics: per-trajectory means, paired differences and Holm (:mod:`~.paired`), the
two-level design over warm starts (:mod:`~.nested`), rate curves and BD-rates
(:mod:`~.rate_curves`), a reference curve read at a test's bits (:mod:`~.matched_bits`) as its
points support (:mod:`~.bracket_choice`), the
difference to an operational curve with simultaneous limits (:mod:`~.max_contrast`) and the
simulated studies that check the verdicts' procedure (:mod:`~.verdict_simulation`). Each
stage is one workflow rule."""
