"""Every figure of both papers, drawn one way: the theme and atomic PNG + PDF output
(:mod:`~gradcomp.plotting.common`), colours and marks (:mod:`~gradcomp.plotting.palette`), the
measured figure standard and the catalogue of what each figure is for, panels and series
styles, and one module per paper's figure group that reads cached artifacts and draws.
"""
