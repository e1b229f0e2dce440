"""How paper-Y variants look (``plotting.styles``), against the rules their docstrings state,
worked out by hand."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from gradcomp.plotting import styles  # noqa: E402

QUANTIZERS = {"none": "none", "float16": "float16", "uniform": "uniform", "gennorm": "lloyd"}


@pytest.fixture
def variants() -> pd.DataFrame:
    rows = [("none", 32, 0), ("float16", 16, 0)]
    rows += [("uniform", r, 0) for r in (2, 4)]
    rows += [("gennorm", r, m) for r in (2, 4) for m in (0, 2)]
    return pd.DataFrame(rows, columns=["compressor", "rate", "M"])


def light(hex_color: str, mix: float) -> str:
    """``hex_color`` moved ``mix`` of the way to white, in integer channel arithmetic."""
    rgb = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return "#" + "".join(f"{round(255 * (c + (1 - c) * mix)):02x}" for c in rgb)


def test_references_are_grey_unmarked_and_named(variants) -> None:
    """Planted bug: float16 drawn in a palette colour (is_reference forgetting float16)."""
    s = styles.variant_styles(variants, QUANTIZERS)
    assert s[("none", 32, 0)] == styles.Style("#000000", "", "-", "none")
    assert s[("float16", 16, 0)] == styles.Style("#555555", "", "-", "float16")
    assert styles.is_reference("float16") and not styles.is_reference("uniform")


def test_one_colour_per_compressor_shaded_by_M(variants) -> None:
    """Colours follow config order among the non-references (uniform first, gennorm second);
    over M the shade goes from light (smallest M: 60% towards white) to the full colour
    (planted bug: the shades reversed, or the colour indexed by rate)."""
    s = styles.variant_styles(variants, QUANTIZERS)
    blue, red = "#0077bb", "#ee7733"  # the palette's first two (Tol's vibrant blue, orange)
    assert {s[("uniform", r, 0)].color.lower() for r in (2, 4)} == {blue}  # one M: full colour
    for r in (2, 4):
        assert s[("gennorm", r, 2)].color.lower() == red
        assert s[("gennorm", r, 0)].color.lower() == light(red, 0.6)


def test_entries_of_one_curve_share_its_colour(variants) -> None:
    """With ``curves`` (name -> rate curve), a compressor joining another's curve takes that
    curve's colour and the next curve the next colour (planted bug: a colour per entry, which
    wrapped the default's 22 entries round a 12-colour palette)."""
    rows = pd.concat([variants, pd.DataFrame({"compressor": ["uniformk10"], "rate": [2],
                                               "M": [0]})])  # fmt: skip
    quantizers = {"none": "none", "uniform": "uniform", "uniformk10": "uniform",
                  "gennorm": "lloyd"}  # fmt: skip
    s = styles.variant_styles(rows, quantizers, {"uniformk10": "uniform"})
    assert s[("uniformk10", 2, 0)].color.lower() == s[("uniform", 2, 0)].color.lower()
    assert s[("uniform", 2, 0)].color.lower() == "#0077bb"
    assert s[("gennorm", 2, 2)].color.lower() == "#ee7733"


def test_marker_and_line_per_rate_and_labels(variants) -> None:
    """Every compressor draws rate 2 with circles and solid lines, rate 4 with squares and
    dashes; labels name R, and M where a compressor has several M or is a Lloyd quantizer
    (planted bug: the rate index counted per compressor, or M left out of Lloyd labels)."""
    s = styles.variant_styles(variants, QUANTIZERS)
    for name, M in (("uniform", 0), ("gennorm", 0), ("gennorm", 2)):
        assert (s[(name, 2, M)].marker, s[(name, 2, M)].linestyle) == ("o", "-")
        assert (s[(name, 4, M)].marker, s[(name, 4, M)].linestyle) == ("s", "--")
    assert s[("uniform", 4, 0)].label == "uniform R4"
    assert s[("gennorm", 2, 2)].label == "gennorm R2 M2"
    labels = [st.label for st in s.values()]
    assert len(labels) == len(set(labels)) == len(variants)
    kw = s[("gennorm", 4, 0)].line()
    assert kw["ls"] == "--" and kw["marker"] == "s" and kw["label"] == "gennorm R4 M0"


def test_y5_colours_are_the_default_configs_compressor_colours() -> None:
    """Y5's quantizers take the colour their compressor has in the default config's other
    paper-Y figures (planted bug: Y5 on seaborn's own palette, uniform blue there and orange
    elsewhere)."""
    import yaml

    from conftest import REPO
    from gradcomp.compression.entries import entry_kind
    from gradcomp.plotting.palette import DISTORTION_STUDY_COLORS

    lossy = yaml.safe_load((REPO / "config/config.yaml").read_text())["lossy"]
    kinds = {e["name"]: entry_kind(e) for e in lossy["compressors"]}
    curves = {e["name"]: e.get("curve", e["name"]) for e in lossy["compressors"]}
    rows = pd.DataFrame([(n, 1, 0) for n in kinds], columns=["compressor", "rate", "M"])
    s = styles.variant_styles(rows, kinds, curves)
    same = {"uniform": "uniform", "lloyd gennorm (same M)": "gennorm",
            "k-means (same M)": "kmeans", "lloyd gauss (M0)": "gauss",
            "gaussian channel": "channel", "ecsq gennorm (same M)": "ecsq"}  # fmt: skip
    for label, name in same.items():
        assert DISTORTION_STUDY_COLORS[label].lower() == s[(name, 1, 0)].color.lower(), label


def test_every_y5_quantizer_has_its_colour() -> None:
    from gradcomp.lossy.distortion_study import study_quantizers
    from gradcomp.plotting.palette import DISTORTION_STUDY_COLORS

    assert set(study_quantizers(2, 2.0)) == set(DISTORTION_STUDY_COLORS)


def _luminance(hex_color: str) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0 black, 1 white)."""
    channels = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_default_curves_take_distinct_colours_none_of_them_the_faintest() -> None:
    """The default config's rate curves each get a colour of their own, and none gets the
    palette's faintest on white by WCAG contrast (planted bug, the last release's: 12 curves on
    a 12-colour list, PowerSGD drawn in light sand, contrast 1.6:1)."""
    import yaml

    from conftest import REPO
    from gradcomp.compression.entries import entry_kind
    from gradcomp.plotting.palette import SERIES

    lossy = yaml.safe_load((REPO / "config/config.yaml").read_text())["lossy"]
    kinds = {e["name"]: entry_kind(e) for e in lossy["compressors"]}
    curves = {e["name"]: e.get("curve", e["name"]) for e in lossy["compressors"]}
    rows = pd.DataFrame([(n, 1, 0) for n in kinds], columns=["compressor", "rate", "M"])
    s = styles.variant_styles(rows, kinds, curves)
    colour = {curves[n]: s[(n, 1, 0)].color.lower() for n in kinds
              if not styles.is_reference(kinds[n])}  # fmt: skip
    assert len(set(colour.values())) == len(colour) >= 12
    faintest = max(SERIES, key=_luminance).lower()
    assert 1.05 / (_luminance(faintest) + 0.05) < 2  # the sand: what the test guards against
    assert faintest not in colour.values(), [c for c, v in colour.items() if v == faintest]


def test_labels_are_readers_names_from_the_specs(variants) -> None:
    """With the variants' specs every label is a reader's name (gradcomp.names.variant), never
    the config's name; a curve's name leaves its rate out, and its kept set where asked; the
    authors' survivors fit is told apart from the default fit (planted bugs, the last
    release's: rows named ``uniformk20 R2``, ``signef R1``)."""
    from gradcomp.study.lossy import compressor_variants

    lossy = {"topk": 0.452, "compressors": [
        {"name": "none", "quantizer": "none"},
        {"name": "float16", "quantizer": "float16"},
        {"name": "uniform", "quantizer": "uniform", "rates": [2, 4]},
        {"name": "gennorm", "quantizer": "lloyd", "family": "gennorm", "rates": [2, 4],
         "M": [0, 2]},
        {"name": "paper", "quantizer": "lloyd", "family": "gennorm", "lloyd_fit": "survivors",
         "rates": [4], "M": [2]},
    ]}  # fmt: skip
    specs = {v.label: v.spec.plain() for v in compressor_variants(lossy)}
    s = styles.variant_styles(variants, QUANTIZERS, specs=specs)
    assert s[("none", 32, 0)].label == "float32, top-K 45.2%"
    assert s[("uniform", 4, 0)].label == "uniform, 4 bits, top-K 45.2%"
    assert s[("gennorm", 2, 2)].label == "GenNorm Lloyd M=2, 2 bits, top-K 45.2%"
    assert styles.curve_name("gennorm", 2, specs) == "GenNorm Lloyd M=2, top-K 45.2%"
    assert styles.curve_name("gennorm", None, specs, kept=False) == "GenNorm Lloyd"
    assert styles.reader_name("paper", 4, 2, specs) == (
        "GenNorm Lloyd M=2, 4 bits, top-K 45.2%, law fitted to the kept values"
    )
