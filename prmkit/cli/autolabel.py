"""``prmkit label auto``: step labels from Monte-Carlo rollouts, OmegaPRM's search, an LLM judge or their consensus."""

from __future__ import annotations

import json

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_settings

EPILOG = """\
examples:
  prmkit label auto samples.jsonl mc.jsonl --method mc --backend hf --model ./policy --rollouts 8
  prmkit label auto samples.jsonl mc16.jsonl --method mc --backend hf --model ./policy --rollouts 16 \
      --cache mc.jsonl.rollouts.jsonl   (reuses the first 8)
  prmkit label auto samples.jsonl omega.jsonl --method omegaprm --backend vllm --model ./policy --rollouts 16
  prmkit label auto samples.jsonl judged.jsonl --method judge --judge-model qwq --judge-base-url http://gpu:8000/v1
  prmkit label auto samples.jsonl agreed.jsonl --method consensus --backend hf --model ./policy --judge-model qwq
  prmkit label auto pool.jsonl mc.jsonl --method mc --backend lab --model quick   (the lab's generator)

Rollouts continue each step prefix with the generator backend (the flags of `prmkit generate`: --backend,
--model, --temperature, --max-new-tokens, --seed ...) and grade the final answer against the problem's.
mc writes a hard label per step (+1 when any rollout is right, Math-Shepherd) and the soft value (the
share right) beside it; train on either: `prmkit train prm --label-source rating|value`. omegaprm searches
for the first error of wrong-answer solutions in about log2(steps) probes. judge asks a served model with
ProcessBench's critique prompt; a reply it cannot read is kept in the record, never made a label.
consensus keeps the mc labels of solutions whose first error the judge puts at the same step.

Every record says which labeller, its settings and its cost (meta.autolabel). A rerun resumes: solutions
already in OUT or its partial file are skipped (a rerun with other labelling settings, another --k, into
the same OUT is refused); rollouts come from the cache (OUT.rollouts.jsonl, or --cache).
"""

SHARED = ("n", "shard", "resume", "flush_every", "progress")
"""Generation settings that ``label auto`` sets itself (``--rollouts``; its own resume, flush and bar)."""


def add_auto(sub) -> None:
    from prmkit.cli.flags import add_config_arguments
    from prmkit.generate.config import GenerateConfig
    from prmkit.label.auto.config import AutoLabelConfig

    p = sub.add_parser("auto", help="automatic step labels: Monte-Carlo rollouts, OmegaPRM, an LLM judge, consensus",
                       formatter_class=HelpFormatter, epilog=EPILOG,
                       description="Label every solution of IN step by step without people: rollouts from each "
                                   "prefix through a generator backend, an LLM judge, or both; write OUT.")
    p.add_argument("input", metavar="IN", help="solutions (prmkit JSONL, or any format --from names)")
    p.add_argument("output", metavar="OUT", help="labelled prmkit JSONL (.gz ok), written when every solution is done")
    p.add_argument("--from", dest="input_format", default="prmkit", help="format of IN (a `prmkit data convert "
                                                                         "--from` format)")
    add_settings(p)
    add_config_arguments(p, AutoLabelConfig)
    add_config_arguments(p.add_argument_group("rollout generator (as prmkit generate)"), GenerateConfig, skip=SHARED)
    p.set_defaults(func=run_auto)


def run_auto(args) -> int:
    import dataclasses

    from prmkit.config import from_args
    from prmkit.generate.config import GenerateConfig
    from prmkit.label.auto.config import AutoLabelConfig
    from prmkit.label.auto.run import label_file

    cfg = from_args(AutoLabelConfig, args)
    gen = dataclasses.replace(from_args(GenerateConfig, args), progress=False)
    summary = label_file(args.input, args.output, cfg, gen, input_format=args.input_format)
    print(json.dumps(summary))
    return 0
