# The pipeline for Snakemake, built from dvc.yaml at parse time (see sweetflow/dag.py): this file
# only wires rules. Each rule's threads and resources are its stage's `meta.resources` in dvc.yaml;
# executors and the site (partitions, account) belong in workflow/profiles/.
from pathlib import Path

from sweetflow.dag import is_directory_out, load_stages, snakemake_inputs
from sweetflow.rl.methods import registry

# Every policy's knobs by its method, before any rule runs: a stage reads only those every method spells.
registry.load(Path(workflow.basedir) / "params.yaml")
STAGES = load_stages(workflow.basedir)
PRODUCED = {out for stage in STAGES for out in stage.outs}


rule all:
    input:
        sorted(PRODUCED),
    default_target: True


for stage in STAGES:

    rule:
        name:
            stage.rule_name
        input:
            snakemake_inputs(stage, PRODUCED),
        output:
            [directory(out) if is_directory_out(out) else out for out in stage.outs],
        params:
            # Listed so that a change of the stage's params.yaml values reruns it, as in DVC.
            values=stage.params,
            cmd=stage.cmd,
        threads: stage.resources.cpus
        resources:
            **stage.resources.snakemake(),
        log:
            f"logs/{stage.rule_name}.log",
        conda:
            "workflow/envs/sweetflow.yaml"
        shell:
            "({params.cmd}) > {log} 2>&1"
