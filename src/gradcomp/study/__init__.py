"""The study: the validated config as one typed object, with every check across keys.

- :mod:`~gradcomp.study.config`: the config validated against the workflow's JSON schema
  (types, ranges, defaults filled in), errors naming the key;
- :mod:`~gradcomp.study.build`: :func:`load_study` / :func:`build_study`, the frozen
  :class:`Study` with its data, figures and resources sections;
- :mod:`~gradcomp.study.lossless`: paper L's section (training, fits, the checked coders,
  L5's coders, the streamed coding);
- :mod:`~gradcomp.study.lossy`: paper Y's section, the compressor entries expanded into
  checked variants (errors naming the config key) and the checks across its keys;
- :mod:`~gradcomp.study.questions`: the primary questions and how they are decided;
- :mod:`~gradcomp.study.frozen`: read-only sections, and :func:`plain` values as params.

The Snakefile builds the study once; nothing else reads the config.
"""

from gradcomp.study.build import *  # noqa: F403 (the package's API is the module's)
from gradcomp.study.build import __all__  # noqa: F401
