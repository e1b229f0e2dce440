"""Paper L's stages: training with gradient dumps, fits, lossless coding (whole-model coding
inside the training job too), tensor positions and tables T1-T2. Each stage is one workflow
rule of the same name; it sits on ``gradcomp.coding`` and ``gradcomp.distributions``."""
