"""The list of fit families is defined once (``gradcomp.distributions.FAMILIES``): the Lloyd
design, the Lloyd compressor, the L-figure colours and the config schema (which takes the
list from the code) all agree with it, and every family in it can be fitted and designed for."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
import yaml

from conftest import REPO
from gradcomp.compression import LLOYD_FAMILIES
from gradcomp.distributions import FAMILIES, fit
from gradcomp.plotting.palette import FAMILY_COLORS
from gradcomp.plotting.paper_l_panels import FAMILY_LABELS
from gradcomp.quantization import lloyd
from gradcomp.study.config import code_lists

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def schema_family_enums() -> dict[str, list[str]]:
    """Every ``families`` list of the schema: key path -> its items' enum."""
    found: dict[str, list[str]] = {}

    def walk(node, path):
        if isinstance(node, dict):
            if "families" in node.get("properties", {}):
                found[f"{path}.families"] = node["properties"]["families"]["items"]
            for key, sub in node.get("properties", {}).items():
                walk(sub, f"{path}.{key}" if path else key)

    walk(yaml.safe_load(SCHEMA.read_text()), "")
    return found


def test_schema_families_come_from_the_registry() -> None:
    """Planted bug: a literal list of families in the schema, a copy that could drift."""
    enums = schema_family_enums()
    assert set(enums) == {"lossless.fit.families", "lossless.coding.families"}
    for key, items in enums.items():
        assert "enum" not in items and items["enum_from"] == "families", key
    assert code_lists()["families"] == list(FAMILIES)


def test_one_definition_of_the_families() -> None:
    """The Lloyd modules use the distributions' tuple itself, not a copy (planted bug: a
    second literal list in lloyd or lloyd_quantizer); every family has an L-figure colour."""
    assert lloyd.FAMILIES is FAMILIES and LLOYD_FAMILIES is FAMILIES
    assert set(FAMILY_COLORS) == set(FAMILY_LABELS) == set(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_fits_and_designs(family: str) -> None:
    """Each name is a scipy.stats law whose fit recovers the scale of a sample drawn from it
    (to 10%), and a Lloyd quantizer can be designed for the fitted law."""
    law = getattr(scipy.stats, family)
    shape = {"gennorm": {"beta": 1.3}, "dweibull": {"c": 1.2}}.get(family, {})
    x = law(**shape, loc=0.0, scale=2.0).rvs(20_000, random_state=np.random.default_rng(1))
    result = fit(x, family, floc=0.0)
    assert result.params["scale"] == pytest.approx(2.0, rel=0.1)
    design = lloyd.lloyd_design(family, result.params, 4, 0)
    assert len(design.levels) == 4 and np.all(np.diff(design.levels) > 0)
