"""Figures for the evaluation: best-of-N curves with CI bands, reliability diagram, F1 against threshold.

Matplotlib with the Agg backend (no display needed); every ``plot_*`` function writes one PNG and returns its
path (:func:`bon_figure` returns the figure :func:`plot_bon` saves, for tests and notebooks). Legends sit
outside the axes (:func:`legend_below`), where they cover no curve.

>>> import os, tempfile
>>> res = {"ns": [1, 2, 4], "curves": {"pass": {"estimate": [.5, .7, .8], "ci_low": [.4, .6, .7],
...        "ci_high": [.6, .8, .9]}, "first_acc": {"estimate": [.5], "ci_low": [.4], "ci_high": [.6]}}}
>>> os.path.exists(plot_bon(res, os.path.join(tempfile.mkdtemp(), "bon.png")))
True
"""

from __future__ import annotations

import os
from itertools import pairwise

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

BANDS_UP_TO = 3
"""A panel showing more curves than this gets CI bands for each scorer's best-of-N curve and for majority
vote (the baseline a scorer must beat), and where it has more scorers than this, only for the best of
them at the largest N and majority vote; the other curves are lines. Nine translucent bands over one
another read as one grey smear."""
_BASELINES = {"pass": {"color": "black", "linestyle": "--", "zorder": 10},
              "maj_acc": {"color": "dimgrey", "linestyle": "-.", "zorder": 9}}
_KINDS = {"bon_acc": "best-of-N", "weighted_acc": "weighted vote"}


def _label(name: str) -> str:
    return {"pass": "pass@N (oracle)", "maj_acc": "majority vote"}.get(name, name)


def _legend_label(name: str, kind: str) -> str:
    """A curve's name in the legend: its scorer alone where the panel's title names the kind."""
    return _label(name) if name in _BASELINES or not kind else _split(name)[1]


def _split(name: str) -> tuple[str, str]:
    """``"bon_acc[prm_min]"`` -> ``("bon_acc", "prm_min")``; a name without brackets is its own kind."""
    kind, _, rest = name.partition("[")
    return kind, rest.rstrip("]") or name


def bon_panels(names: list[str]) -> list[tuple[str, list[str]]]:
    """The curves of a best-of-N figure split into panels: ``[(kind, scorer curves)]``.

    One panel while there are at most :data:`BANDS_UP_TO` scorer curves; beyond that one panel per kind
    (best-of-N, weighted vote), small multiples sharing the y axis. Baselines (pass@N, majority vote)
    are drawn in every panel and are not listed.

    >>> bon_panels(["pass", "maj_acc", "bon_acc[a]", "weighted_acc[a]"])
    [('', ['bon_acc[a]', 'weighted_acc[a]'])]
    >>> bon_panels(["bon_acc[a]", "bon_acc[b]", "weighted_acc[a]", "weighted_acc[b]"])
    [('bon_acc', ['bon_acc[a]', 'bon_acc[b]']), ('weighted_acc', ['weighted_acc[a]', 'weighted_acc[b]'])]
    """
    curves = [n for n in names if n not in _BASELINES and n != "first_acc"]
    kinds = sorted({_split(n)[0] for n in curves}, key=lambda k: (k != "bon_acc", k))
    if len(curves) <= BANDS_UP_TO or len(kinds) == 1:
        return [("" if len(kinds) != 1 else kinds[0], curves)]
    return [(k, [n for n in curves if _split(n)[0] == k]) for k in kinds]


def _banded(result: dict, panel: list[str]) -> set[str]:
    """The curves of one panel that get a CI band (see :data:`BANDS_UP_TO`): all while few are shown; else
    each scorer's best-of-N curve (the user's PRM is one of them: a weighted vote that happens to end higher
    must not take its band) and majority vote, or only the best of them and majority when they are many.

    >>> curves = {k: {"estimate": [0.5, e]} for k, e in (("bon_acc[prm]", .6), ("weighted_acc[prm]", .7),
    ...           ("pass", .9), ("maj_acc", .65))}
    >>> sorted(_banded({"curves": curves}, ["bon_acc[prm]", "weighted_acc[prm]"]))
    ['bon_acc[prm]', 'maj_acc']
    """
    shown = panel + [b for b in _BASELINES if b in result["curves"]]
    if len(shown) <= BANDS_UP_TO:
        return set(shown)
    main = [n for n in panel if n.startswith("bon_acc[")] or panel
    if len(main) > BANDS_UP_TO:
        main = [max(main, key=lambda n: result["curves"][n]["estimate"][-1])]
    return {n for n in (*main, "maj_acc") if n in result["curves"]}


def bon_figure(result: dict, title: str = ""):
    """The figure :func:`plot_bon` saves: accuracy against N, one panel per kind of curve when there are
    many (:func:`bon_panels`), a colour per scorer shared by the panels, the legend below the axes."""
    ns, curves = result["ns"], result["curves"]
    panels = bon_panels(list(curves))
    scorers = list(dict.fromkeys(_split(n)[1] for _, names in panels for n in names))
    cmap = plt.get_cmap("tab10" if len(scorers) <= 10 else "tab20")
    colour = {s: cmap(i % cmap.N) for i, s in enumerate(scorers)}
    fig, axes = plt.subplots(1, len(panels), figsize=(7 if len(panels) == 1 else 5.5 * len(panels), 4.5),
                             sharey=True, squeeze=False, layout="constrained")
    legend: dict[str, object] = {}
    for ax, (kind, names) in zip(axes[0], panels):
        banded, shown = _banded(result, names), names + [b for b in _BASELINES if b in curves]
        for name in shown:  # baselines last, so they are on top
            c, style = curves[name], _BASELINES.get(name, {})
            scorer = _split(name)[1]
            if not style:
                style = {"color": colour[scorer], "linestyle": ":" if not kind and name.startswith("weighted") else "-"}
            line, = ax.plot(ns, [100 * v for v in c["estimate"]], marker="o", markersize=3, linewidth=1.4, **style)
            if name in banded:
                ax.fill_between(ns, [100 * v for v in c["ci_low"]], [100 * v for v in c["ci_high"]],
                                color=line.get_color(), alpha=0.15, linewidth=0, zorder=style.get("zorder", 2) - 1)
            legend.setdefault(_legend_label(name, kind), line)
        if "first_acc" in curves:
            legend.setdefault("first sample", ax.axhline(100 * curves["first_acc"]["estimate"][0], color="grey",
                                                         linewidth=0.8, linestyle=":"))
        _bon_axes(ax, ns, kind, banded, len(shown))
    axes[0][0].set_ylabel("accuracy (%)")
    fig.suptitle(title or "Selection accuracy against N", fontsize=10)
    order = sorted(legend, key=lambda k: (k != _label("pass"), k != _label("maj_acc"), k != "first sample"))
    legend_below(fig, [legend[k] for k in order], order)
    return fig


def _bon_axes(ax, ns: list[int], kind: str, banded: set[str], n_shown: int) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) for n in ns], rotation=45 if len(ns) > 8 else 0)
    ax.minorticks_off()
    ax.set_xlabel("N (samples per problem)")
    if len(banded) >= n_shown:
        note = "bands: 95% bootstrap CI over problems"
    else:
        note = "95% CI bands only for " + " and ".join(sorted(_legend_label(n, kind) for n in banded))
    ax.set_title(f"{_KINDS.get(kind, kind)} ({note})" if kind else note, fontsize=8)
    ax.grid(alpha=0.3)


def legend_below(fig, handles: list, labels: list[str], ncol: int | None = None):
    """A figure legend under the axes, where it covers no curve (the figure needs ``layout="constrained"``)."""
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol or min(len(labels), 4), fontsize=8,
                      frameon=False)


def plot_bon(result: dict, path: str | os.PathLike, title: str = "") -> str:
    """Accuracy against N (log2 axis) for every curve of an ``evaluate_pool`` result, 95% CI bands
    (:func:`bon_figure`), saved as a PNG at ``path``."""
    return save_figure(bon_figure(result, title), path)


def plot_reliability(calibration: dict, path: str | os.PathLike) -> str:
    """Reliability diagram: accuracy against confidence per bin, bar widths = bins, counts annotated."""
    edges, conf, acc, count = (calibration[k] for k in ("bin_edges", "confidence", "accuracy", "count"))
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    centres = [(a + b) / 2 for a, b in pairwise(edges)]
    width = edges[1] - edges[0]
    shown = [i for i, n in enumerate(count) if n > 0]
    ax.bar([centres[i] for i in shown], [acc[i] for i in shown], width=width * 0.9, alpha=0.7, label="accuracy")
    ax.plot([0, 1], [0, 1], color="black", linestyle="--", linewidth=0.8, label="perfect calibration")
    ax.scatter([conf[i] for i in shown], [acc[i] for i in shown], color="C3", s=12, zorder=3, label="mean confidence")
    for i in shown:
        ax.annotate(str(count[i]), (centres[i], acc[i]), fontsize=6, ha="center", va="bottom")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("predicted P(step correct)")
    ax.set_ylabel("fraction of steps correct")
    ax.set_title(f"Reliability (ECE {calibration['ece']:.3f})", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    return save_figure(fig, path)


def plot_f1_threshold(curve: dict, threshold: float, path: str | os.PathLike) -> str:
    """Mean dev F1 over subsets against the threshold, with the chosen threshold marked."""
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.plot(curve["threshold"], [100 * v for v in curve["mean_f1"]], linewidth=1)
    ax.axvline(threshold, color="C3", linestyle="--", linewidth=0.8, label=f"chosen t = {threshold:.4g}")
    ax.set_xlabel("threshold (first step scoring below it = predicted error)")
    ax.set_ylabel("mean dev F1 (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def plot_rl(records: list[dict], path: str | os.PathLike) -> str:
    """An RL run's evaluations (``prmkit rl``): proxy reward and gold against the optimiser step, and against
    sqrt(KL) to the initial policy (the x axis of Gao, Schulman and Hilton's over-optimisation curves)."""
    steps = [r["step"] for r in records]
    root_kl = [max(r["kl"], 0.0) ** 0.5 for r in records]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
    for ax, x, label in ((axes[0], steps, "optimiser step"), (axes[1], root_kl, "sqrt(KL(policy || initial)), nats")):
        ax.plot(x, [r["proxy"] for r in records], marker="o", markersize=3, label="proxy (the reward)")
        gold = [(xi, r["gold"]) for xi, r in zip(x, records) if r.get("gold") is not None]
        if gold:
            ax.plot(*zip(*gold), marker="s", markersize=3, label="gold (answer graded right)")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("held-out mean")
    handles, labels = axes[0].get_legend_handles_labels()
    legend_below(fig, handles, labels)
    return save_figure(fig, path)


def save_figure(fig, path) -> str:
    """Save through a temporary name renamed into place, like every prmkit output."""
    path = str(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.part.png"
    if fig.get_layout_engine() is None:  # figures made with layout="constrained" lay themselves out
        fig.tight_layout()
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    os.replace(tmp, path)
    return path
