"""The statistics of the verdicts, knowing nothing of training (it imports no other gradcomp
package: runs, specs and labels come in as data): per-seed summaries, paired differences and
Holm's adjustment (:mod:`~.paired`), the two-level design of seeds within warm starts, TOST and
the decided interval (:mod:`~.nested`), a reference read at a test's bits (:mod:`~.matched_bits`)
as its points support (:mod:`~.bracket_choice`), the maximum-contrast test against an
operational curve (:mod:`~.max_contrast`), a test's differences to its reference by match
(:mod:`~.matched_differences`), the verdict procedure on points (:mod:`~.verdicts`), rate curves
and the Bjøntegaard delta rate (:mod:`~.rate_curves`), and the simulated studies
(:mod:`~.simulated_study`) that check the procedure's coverage and power
(:mod:`~.verdict_simulation`).
"""
