# Both papers' questions answered in one table (gradcomp.answers): results/tables/answers.md,
# the README's table made from this run's tables.

ANSWERS = ["results/tables/answers.md"]


localrules:
    table_answers,


rule table_answers:
    input:
        t1="results/tables/T1.tsv",
        t2="results/tables/T2.tsv",
        verdicts="results/tables/verdicts.tsv",
        t5="results/tables/T5.tsv",
        t6="results/tables/T6.tsv",
    output:
        md=report("results/tables/answers.md", caption="../report/answers.rst", category="Answers"),
    params:
        docs="../../docs/",  # the glossary as linked from results/tables
    log:
        "results/logs/tables/answers.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        "../../envs/gradcomp.yaml"
    script:
        "../scripts/table_answers.py"
