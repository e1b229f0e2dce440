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
# A user's compressors, coders and models ("package.module:Class") import from the folder the
# workflow runs in, whether it was started as `snakemake` or `python -m snakemake`.
sys.path.insert(1, str(Path.cwd()))
from gradcomp.study import load_study  # noqa: E402


# The CPU-scale defaults, found from any working directory; --configfile goes on top.
configfile: Path(workflow.basedir) / "config/config.yaml"


# The config, validated against the schema and checked across keys, as one typed object that
# the rules read (gradcomp.study); a bad key stops the run here, before any job starts.
STUDY = load_study(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/lossless.smk"
include: "workflow/rules/lossy.smk"
include: "workflow/rules/costs.smk"
include: "workflow/rules/answers.smk"
include: "workflow/rules/figures.smk"


rule all:
    input:
        all_targets(),
    default_target: True
