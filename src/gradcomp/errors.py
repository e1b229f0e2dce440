"""The error a bad config raises, in a module of its own so that both the schema check
(:mod:`gradcomp.study.config`) and the study (:mod:`gradcomp.study` and its section modules)
raise it without importing each other; and :func:`did_you_mean`, the hint every "unknown
key" message carries (config keys, compressor entries, specs).
"""

import difflib
from collections.abc import Iterable

#: Keys one layer spells differently from another: a compressor entry lists ``rates`` (one
#: variant each), a spec (the library, the DDP hook) takes one ``rate``.
_SIBLINGS = {"rates": "rate", "rate": "rates", "Ms": "M", "m": "M"}


def did_you_mean(key: object, allowed: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the allowed key nearest to ``key``, or ``""``.

    >>> did_you_mean("rates", ["name", "rate", "M"])
    " (did you mean 'rate'?)"
    >>> did_you_mean("zzz", ["name", "rate"])
    ''
    """
    allowed = list(allowed)
    sibling = _SIBLINGS.get(str(key))
    if sibling in allowed:
        return f" (did you mean {sibling!r}?)"
    close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


class ConfigError(ValueError):
    """The config is invalid; the message lists each offending key as ``config key 'a.b': ...``."""
