# gradcomp: reproduction pipeline for "DNN gradient lossless compression: Can GenNorm
# be the answer?" (paper L) and "Lossy Gradient Compression: How Much Accuracy Can One
# Bit Buy?" (paper Y). Run with: snakemake --cores N [--configfile config/paper.yaml]

import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

# The library lives in src/: importable here, and in every job's script too, whether the
# job runs in this venv, in a conda env (--sdm conda) or on a cluster node (Snakemake puts
# this process's sys.path folders on the script's path).
sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from gradcomp.config import validate_config  # noqa: E402


# The CPU-scale defaults, found from any working directory; --configfile goes on top.
configfile: Path(workflow.basedir) / "config/config.yaml"


validate_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/lossless.smk"
include: "workflow/rules/lossy.smk"
include: "workflow/rules/costs.smk"


rule all:
    input:
        all_targets(),
    default_target: True
