"""``prmkit serve``: a local generator and/or reward model over HTTP."""

from __future__ import annotations

from prmkit.cli import HelpFormatter
from prmkit.cli.flags import add_settings

EPILOG = """\
examples:
  prmkit serve --generator ./my-model                       (OpenAI-compatible, http://127.0.0.1:8000/v1)
  prmkit serve --scorer runs/prm --port 8100                (POST /v1/score)
  prmkit serve --generator ./my-model --scorer runs/prm --host 0.0.0.0
  prmkit serve --critic runs/prm --critic-threshold 0.4     (a PRM as a ProcessBench judge on /v1/chat/completions)

Then, from any OpenAI client:
  from openai import OpenAI
  client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="none")
  client.completions.create(model="my-model", prompt="2+2?\\n", n=4, max_tokens=64, seed=0)
or `prmkit generate --backend openai --model my-model problems.jsonl out.jsonl`; and scoring:
  curl -s localhost:8100/v1/score -d '{"problem": "2+2?", "steps": ["2+2 = 4", "# Answer\\n\\n4"]}'

With --critic, /v1/chat/completions answers ProcessBench critique prompts (what
prmkit.label.auto.judge.Judge sends) with the first paragraph the PRM scores below --critic-threshold,
in \\boxed{}; any other chat message is refused (HTTP 400).

Requests that arrive together are batched into one model call (--max-batch, --max-wait-ms).
"""


def register(subparsers) -> None:
    from prmkit.cli.flags import add_config_arguments
    from prmkit.serve.app import ServeConfig

    p = subparsers.add_parser("serve", help="serve a generator (OpenAI API), a PRM/ORM and/or a PRM critic over HTTP",
                              formatter_class=HelpFormatter, epilog=EPILOG,
                              description="Serve a local causal LM on /v1/completions and /v1/chat/completions, "
                                          "a prmkit reward model on /v1/score, and/or a PRM as a critique judge "
                                          "on /v1/chat/completions (--critic), on loopback by default.")
    add_settings(p)
    add_config_arguments(p, ServeConfig)
    p.set_defaults(func=run_serve)


def run_serve(args) -> int:
    from prmkit.config import from_args
    from prmkit.serve import serve
    from prmkit.serve.app import ServeConfig

    serve(from_args(ServeConfig, args))
    return 0
