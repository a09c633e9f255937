"""The search loop's overhead on the lab policy: of a search's wall time, what is not the models' forward passes.
Issue 35's target: at most 10% at equal generated tokens.

``prmkit search``'s own path (:func:`prmkit.search.run.search_file`: the problems file read, the ``lab-lm``
backend, the strategy, the results written) searches the lab's held-out problems with the lab preset's policy
(its base, pretrained and cached on first use, as ``prmkit lab run`` makes it) and a PRM of the same size
(a Llama-style model trained for a few steps by ``prmkit train``: its weights change which prefixes are kept, not
what a forward pass costs; the lab's own PRMs also read the base's per-token features, a second model's passes,
left out here). Every forward pass of either model is timed (the models' top-level ``forward``, on one torch
thread, so the time is the pass's own). Each strategy's row splits its wall time three ways:

- ``forward_s``: inside the models' forward passes (the generator's, the PRM's);
- ``calls_s``: inside the generator's and the PRM's calls but outside their forward passes (transformers'
  generation loop, sampling, stop checks, tokenising, padding);
- ``loop_s``: the rest, prmkit's search itself (the strategy, the trace, the grouping, reading and writing).

``overhead`` is everything but the forward passes, as a share of the wall time (the target's words, ``met``);
``loop_share`` prmkit's own loop alone (``loop_met``). ``calls_s`` is split by whose call it is: ``generator``
and ``prm`` each give their calls' seconds, the forward passes inside them, and the rest (``outside_forward_s``),
so a row says which of the two models' calls the overhead sits in. The search asks a step at a time with the policy's step
marker as its stop string, as docs/search.md tells a user to; best-of-N samples whole solutions.

    .venv/bin/python bench/bench_search_overhead.py [--preset default] [--problems 8] [--n 16]
        [--strategies beam best_of_n dvts particles] [--summary docs/results/bench-search-overhead.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGET = 0.10
WHOLE = ("best_of_n", "weighted")
"""Strategies that sample whole solutions."""


class Split:
    """Seconds inside the calls of each owner (the generator's, the PRM's), and inside the forward passes made within
    them: a pass is counted for the owner whose call is running (the two models may share a class). An owner's call
    made inside another's would count in both owners' seconds; prmkit's search never makes one (it asks the generator,
    then the PRM, in turn)."""

    def __init__(self):
        self.calls, self.forward, self.running = {}, {}, []

    def call(self, owner: str, fn):
        def timed(*args, **kwargs):
            if owner in self.running:
                return fn(*args, **kwargs)
            self.running.append(owner)
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.calls[owner] = self.calls.get(owner, 0.0) + time.perf_counter() - start
                self.running.pop()
        return timed

    def pass_(self, fn):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                owner = self.running[-1] if self.running else "none"
                self.forward[owner] = self.forward.get(owner, 0.0) + time.perf_counter() - start
        return timed

    def row(self) -> dict:
        return {owner: {"calls_s": round(self.calls.get(owner, 0.0), 3), "forward_s": round(self.forward.get(owner, 0.0), 3),
                        "outside_forward_s": round(self.calls.get(owner, 0.0) - self.forward.get(owner, 0.0), 3)}
                for owner in sorted(set(self.calls) | set(self.forward))}


@contextmanager
def split_timing(owners: dict[str, list[tuple[type, str]]], passes: list[type], split: Split):
    """``split`` counts each owner's calls (``{"generator": [(cls, name), ...], ...}``) and the forward passes of
    ``passes`` within them while the block runs."""
    wrapped = [(cls, name, split.call(owner, getattr(cls, name))) for owner, pairs in owners.items()
               for cls, name in pairs] + [(cls, "forward", split.pass_(cls.forward)) for cls in passes]
    saved = [(cls, name, getattr(cls, name)) for cls, name, _ in wrapped]
    for cls, name, fn in wrapped:
        setattr(cls, name, fn)
    try:
        yield split
    finally:
        for cls, name, fn in reversed(saved):
            setattr(cls, name, fn)


class Clock:
    """Time spent inside wrapped callables, counted once where they nest."""

    def __init__(self):
        self.seconds, self.depth = 0.0, 0

    def wrap(self, fn):
        def timed(*args, **kwargs):
            if self.depth:
                return fn(*args, **kwargs)
            self.depth += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.depth -= 1
        return timed


@contextmanager
def timing(owners: list[tuple[type, str]], clock: Clock):
    """``clock`` counts the time inside each ``owner.name`` while the block runs."""
    saved = [(owner, name, getattr(owner, name)) for owner, name in owners]
    for owner, name, fn in saved:
        setattr(owner, name, clock.wrap(fn))
    try:
        yield clock
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


def measure(strategy: str, args, problems_file: Path, prm: Path, out: Path) -> dict:
    from prmkit.generate.config import GenerateConfig
    from prmkit.lab.config import lab_format
    from prmkit.search.adapters import BackendExpander, PRMScorer
    from prmkit.search.run import SearchRunConfig, search_file

    # a step at a time, the policy stops at its step marker, as docs/search.md tells a user to set --stop (without
    # it each step's call writes the rest of the solution, paid for and thrown away); whole samples need no stop
    stop = [] if strategy in WHOLE else [lab_format().marker]
    cfg = SearchRunConfig(strategy=strategy, n=args.n, m=args.m, prm=str(prm), prm_device="cpu", chunk=args.problems,
                          generate=GenerateConfig(backend="lab-lm", model=args.preset, device="cpu", stop=stop,
                                                  temperature=1.0, max_new_tokens=args.max_new_tokens,
                                                  **({} if args.batch_size is None else {"batch_size": args.batch_size})))
    model_types = model_classes(args.preset, prm)
    forward, calls, split = Clock(), Clock(), Split()
    owners = {"generator": [(BackendExpander, "extend"), (BackendExpander, "rollout")], "prm": [(PRMScorer, "score")]}
    with timing([(t, "forward") for t in model_types], forward), \
            timing([pair for pairs in owners.values() for pair in pairs], calls), \
            split_timing(owners, model_types, split):
        start = time.perf_counter()
        summary = search_file(str(problems_file), str(out), cfg, progress=False)
        wall = time.perf_counter() - start
    tokens = sum(json.loads(line)["cost"]["generated_tokens"] for line in out.open())
    return {"strategy": strategy, "n": args.n, "m": args.m, "problems": args.problems,
            "batch_size": cfg.generate.batch_size, "generated_tokens": tokens,
            "wall_s": round(wall, 3), "forward_s": round(forward.seconds, 3),
            "calls_s": round(calls.seconds - forward.seconds, 3), "loop_s": round(wall - calls.seconds, 3),
            "overhead": round((wall - forward.seconds) / wall, 4), "loop_share": round((wall - calls.seconds) / wall, 4),
            "target": TARGET, "met": (wall - forward.seconds) / wall <= TARGET,
            "loop_met": (wall - calls.seconds) / wall <= TARGET, "searched": summary["searched"], **split.row()}


def model_classes(preset: str, prm: Path) -> list[type]:
    """The classes of the policy's and the PRM's top-level models (their ``forward`` is what a pass is)."""
    import transformers

    from prmkit.lab.config import preset as lab_preset
    from prmkit.lab.policy import policy_folder

    names = set()
    for folder in (policy_folder(lab_preset(preset)), prm / "model" if (prm / "model").exists() else prm):
        config = json.loads((Path(folder) / "config.json").read_text())
        names.update(config.get("architectures") or [])
    return [getattr(transformers, name) for name in sorted(names)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="default", help="the lab preset whose policy and problems are searched")
    ap.add_argument("--problems", type=int, default=8, help="held-out problems, searched together")
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=256, help="most tokens one generation may take (a step, or a whole solution for best-of-N: room for "
                    "the longest)")
    ap.add_argument("--batch-size", type=int, default=None,
                    help="the generator's sequences per generate call (default: prmkit generate's own)")
    ap.add_argument("--strategies", nargs="+", default=["beam", "best_of_n", "dvts", "particles"])
    ap.add_argument("--summary", type=Path, default=None, help="write every strategy's numbers here (JSON)")
    args = ap.parse_args(argv)
    import torch
    from bench_incremental_scoring import tiny_prm

    from prmkit.io import write_records
    from prmkit.lab.config import preset as lab_preset
    from prmkit.lab.domain import make_problems
    from prmkit.lab.policy import policy_folder

    torch.set_num_threads(1)
    lab = lab_preset(args.preset)
    policy_folder(lab, progress=True)  # made (and cached) before any timing
    base = json.loads((policy_folder(lab) / "config.json").read_text())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        prm = tiny_prm(tmp / "prm", base["hidden_size"], base["num_hidden_layers"])
        write_records(tmp / "problems.jsonl", make_problems(lab.domain, args.problems, seed=0))
        for strategy in args.strategies:
            rows.append(measure(strategy, args, tmp / "problems.jsonl", prm, tmp / f"{strategy}.jsonl"))
            print(json.dumps(rows[-1]), flush=True)
    if args.summary:
        from prmkit.stack import run_record

        command = " ".join(["bench/bench_search_overhead.py", *(argv if argv is not None else sys.argv[1:])])
        args.summary.write_text(json.dumps({"rows": rows, "preset": args.preset, "command": command, **run_record()},
                                           indent=1) + "\n")


if __name__ == "__main__":
    main()
