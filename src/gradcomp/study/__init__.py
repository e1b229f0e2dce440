"""The study: the validated config as one typed object, with every check across keys (the
config validated against the workflow's schema, the sections of both papers, the primary
questions). The Snakefile builds the study once; nothing else reads the config.
"""

from gradcomp.study.build import *  # noqa: F403 (the package's API is the module's)
from gradcomp.study.build import __all__  # noqa: F401
