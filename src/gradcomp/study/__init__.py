"""The study: the validated config as one typed object, with every check across keys.

- :mod:`~gradcomp.study.config`: the config validated against the workflow's JSON schema
  (types, ranges, defaults filled in), errors naming the key;
- :mod:`~gradcomp.study.build`: :func:`load_study` / :func:`build_study`, the frozen
  :class:`Study` and its data, lossless, figures and resources sections;
- :mod:`~gradcomp.study.lossy`: paper Y's section and its checks across keys;
- :mod:`~gradcomp.study.pieces`: the checked pieces the rules hand to jobs as plain params
  (compressor variants, coder specs, stream settings, L5's coders), library errors
  re-raised naming the config key.

The Snakefile builds the study once; nothing else reads the config.
"""

from gradcomp.study.build import *  # noqa: F403 (the package's API is the module's)
from gradcomp.study.build import __all__  # noqa: F401
