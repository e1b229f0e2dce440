"""Every figure of both papers, drawn one way.

Shared: the theme and atomic PNG + PDF output (:mod:`~gradcomp.plotting.common`), colours and
marks (:mod:`~gradcomp.plotting.palette`), the measured figure standard
(:mod:`~gradcomp.plotting.standard`), what each figure is for and its title
(:mod:`~gradcomp.plotting.catalogue`), paper Y's panels, legends and series looks
(:mod:`~gradcomp.plotting.facets`, :mod:`~gradcomp.plotting.styles`), paper L's
(:mod:`~gradcomp.plotting.paper_l_panels`) and the one-round study's points
(:mod:`~gradcomp.plotting.paper_y_points`).

One module per figure group, named for the figures it holds: :mod:`~.paper_l_laws` (L1, L2),
:mod:`~.paper_l_epochs` (L3, L4), :mod:`~.paper_l_coded_size` (L5, L5b),
:mod:`~.paper_y_rounds` (Y1-Y3), :mod:`~.paper_y_distortion` (Y4, Y5),
:mod:`~.paper_y_verdicts` (Y6), :mod:`~.paper_y_rate_curves` (Y7) and :mod:`~.paper_y_m` (Y8).

Each figure ``X`` has two functions: ``figure_x`` reads the cached artifacts (the paths a
workflow script passes) and selects the rows; ``draw_x`` draws from data frames already
loaded and writes the files with :func:`~gradcomp.plotting.common.save_figure`, titled by
the catalogue's entry (:func:`~gradcomp.plotting.catalogue.question_title`). The workflow's
figure scripts only unpack Snakemake's inputs, params and outputs and call ``figure_x``; the
packages below (lossless, lossy, statistics) never import this one.
"""
