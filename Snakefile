# gradcomp: reproduction pipeline for "DNN gradient lossless compression: Can GenNorm
# be the answer?" (paper L) and "Lossy Gradient Compression: How Much Accuracy Can One
# Bit Buy?" (paper Y). Run with: snakemake --cores N [--configfile config/paper.yaml]

import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from gradcomp.config import validate_config  # noqa: E402


# The CPU-scale defaults, found from any working directory; --configfile goes on top.
configfile: Path(workflow.basedir) / "config/config.yaml"


validate_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/lossless.smk"
include: "workflow/rules/lossy.smk"


rule all:
    input:
        all_targets(),
    default_target: True
