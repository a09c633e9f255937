"""``prmkit generate``: sample N step-split, graded solutions per problem from any model."""

from __future__ import annotations

import json

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_settings

EPILOG = """\
examples:
  prmkit generate --backend hf --model ./my-model problems.jsonl candidates.jsonl.gz --n 64
  prmkit generate --backend hf --model ./my-model --from math math500.jsonl out.jsonl --n 16 --temperature 0.7
  prmkit generate --backend openai --model served-name --base-url http://127.0.0.1:8000/v1 problems.jsonl out.jsonl
  prmkit generate --backend vllm --model ./big-model --tensor-parallel 4 problems.jsonl out.jsonl --n 1860
  prmkit generate --backend lab-lm --model quick problems.jsonl out.jsonl --n 16
  prmkit generate --recipe recipes/generate-fewshot.yaml problems.jsonl out.jsonl --shard 0/4

Every sample is a prmkit record: steps (the paper's newline format unless --steps says otherwise), the
final answer extracted and graded against the problem's answer, the generator and its sampling settings.
A rerun resumes: samples already in OUT or its partial file (.OUT.part) are skipped, never duplicated.
Settings: defaults < --recipe file (YAML/TOML, keys = the flag names with underscores) < --set < flags.
"""


def register(subparsers) -> None:
    from prmkit.cli.flags import add_config_arguments
    from prmkit.generate.config import GenerateConfig

    p = subparsers.add_parser("generate", help="sample N solutions per problem from a model",
                              formatter_class=HelpFormatter, epilog=EPILOG,
                              description="Sample solutions of every problem of IN with a generator backend; "
                                          "write graded, step-split prmkit records to OUT.")
    p.add_argument("input", metavar="IN", help="problems: any file prmkit reads (see --from); solution files "
                                               "give their distinct problems")
    p.add_argument("output", metavar="OUT", help="prmkit JSONL (.gz ok), written when every problem is done")
    p.add_argument("--from", dest="input_format", default="prmkit",
                   help="format of IN (a `prmkit data convert --from` format: prmkit, math, gsm8k, competition, ...)")
    add_settings(p)
    add_config_arguments(p, GenerateConfig)
    p.set_defaults(func=run_generate)


def run_generate(args) -> int:
    from prmkit.config import from_args
    from prmkit.generate.config import GenerateConfig
    from prmkit.generate.run import generate_file

    summary = generate_file(args.input, args.output, from_args(GenerateConfig, args), input_format=args.input_format)
    print(json.dumps(summary))
    return 0
