"""Figures for the evaluation: best-of-N curves with CI bands, reliability diagram, F1 against threshold.

Matplotlib with the Agg backend (no display needed); every function writes one PNG and returns its path.

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

_STYLE = {"pass": {"color": "black", "linestyle": "--", "zorder": 10}}


def _label(name: str) -> str:
    return {"pass": "pass@N (oracle)", "maj_acc": "majority vote"}.get(name, name)


def plot_bon(result: dict, path: str | os.PathLike, title: str = "") -> str:
    """Accuracy against N (log2 axis) for every curve of an ``evaluate_pool`` result, 95% CI bands."""
    ns = result["ns"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    names = sorted((k for k in result["curves"] if k != "first_acc"), key=lambda k: (k == "pass", k))
    for name in names:  # pass@N last, so it is drawn on top
        c = result["curves"][name]
        style = _STYLE.get(name, {})
        line, = ax.plot(ns, [100 * v for v in c["estimate"]], marker="o", markersize=3, label=_label(name), **style)
        ax.fill_between(ns, [100 * v for v in c["ci_low"]], [100 * v for v in c["ci_high"]],
                        color=line.get_color(), alpha=0.15, zorder=style.get("zorder", 2) - 1)
    first = result["curves"].get("first_acc")
    if first:
        ax.axhline(100 * first["estimate"][0], color="grey", linewidth=0.8, linestyle=":", label="first sample")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) for n in ns], rotation=45 if len(ns) > 8 else 0)
    ax.set_xlabel("N (samples per problem)")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(title or "Selection accuracy against N (bands: 95% bootstrap CI over problems)", fontsize=10)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i] != _label("pass"))  # pass@N on top of the legend
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=8, loc="lower right")
    return save_figure(fig, path)


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


def save_figure(fig, path) -> str:
    """Save through a temporary name renamed into place, like every prmkit output."""
    path = str(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.part.png"
    fig.tight_layout()
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    os.replace(tmp, path)
    return path
