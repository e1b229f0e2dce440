"""The error a bad config raises, in a module of its own so that both the schema check
(:mod:`gradcomp.config`) and the study (:mod:`gradcomp.study`, :mod:`gradcomp.study_pieces`)
raise it without importing each other."""


class ConfigError(ValueError):
    """The config is invalid; the message lists each offending key as ``config key 'a.b': ...``."""
