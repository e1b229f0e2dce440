"""gradcomp: gradient compression studies (GenNorm lossless coding, per-bit accuracy).

The library is importable without Snakemake: every pipeline step is a function
here, and the workflow scripts only unpack ``snakemake.input/params/output``.
"""

__version__ = "0.1.0"
