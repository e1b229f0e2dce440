"""The statistics of the verdicts, knowing nothing of training: per-seed summaries and Holm's
adjustment, paired and nested (seeds within warm starts) tests, equivalence by TOST, the
decided interval, comparisons at matched bits, the maximum-contrast test, rate curves and the
Bjøntegaard delta rate, and the simulation that checks their coverage and power.
"""
