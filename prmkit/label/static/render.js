// Text with mathematics, rendered without ever parsing the text as HTML.
// Plain text goes into text nodes; each $...$, \(...\), \[...\], $$...$$ goes through
// katex.renderToString with trust:false (no \href, \url, \htmlData, \includegraphics links or
// attributes) and throwOnError:false (bad LaTeX shows as red source), and only KaTeX's own output is
// set as HTML. Without KaTeX the mathematics shows as its source text.
"use strict";
(function () {
  const DELIMS = [["$$", "$$", true], ["\\[", "\\]", true], ["\\(", "\\)", false], ["$", "$", false]];
  const OPTIONS = { throwOnError: false, trust: false, strict: "ignore", maxSize: 20, maxExpand: 300 };

  // Where the mathematics opened before `from` closes: the index of `close`, or -1. A backslash escapes the
  // character after it, so `\$` (a dollar sign in KaTeX) never closes `$...$` and `\\` (a line break) does
  // not escape what follows it; `\)` and `\]` still close, being looked for before the escape is skipped.
  function closing(text, close, from) {
    for (let j = from; j < text.length; j += text[j] === "\\" ? 2 : 1) {
      if (text.startsWith(close, j)) return j;
    }
    return -1;
  }

  // Splits text into {text} and {tex, display, source} segments, in order. Outside mathematics `\$` is a
  // literal dollar; inside it stays `\$` for KaTeX. PRM800K writes prices that way:
  //   segments("cost $\\$1.24$. Five") -> [{text: "cost "}, {tex: "\\$1.24", ...}, {text: ". Five"}]
  function segments(text) {
    const out = [];
    let buf = "", i = 0;
    while (i < text.length) {
      if (text.startsWith("\\$", i)) { buf += "$"; i += 2; continue; }
      const d = DELIMS.find(([open]) => text.startsWith(open, i));
      if (d) {
        const start = i + d[0].length, end = closing(text, d[1], start);
        if (end > start) {
          if (buf) out.push({ text: buf });
          out.push({ tex: text.slice(start, end), display: d[2], source: text.slice(i, end + d[1].length) });
          buf = ""; i = end + d[1].length; continue;
        }
      }
      buf += text[i]; i += 1;
    }
    if (buf) out.push({ text: buf });
    return out;
  }

  function renderMath(seg) {
    const span = document.createElement("span");
    span.className = seg.display ? "math display" : "math";
    if (window.katex) {
      try {
        span.innerHTML = window.katex.renderToString(seg.tex, Object.assign({ displayMode: seg.display }, OPTIONS));
        return span;
      } catch (e) { /* fall through to the source text */ }
    }
    span.textContent = seg.source;
    return span;
  }

  function renderText(el, text) {
    el.textContent = "";
    for (const seg of segments(String(text == null ? "" : text))) {
      el.appendChild(seg.text !== undefined ? document.createTextNode(seg.text) : renderMath(seg));
    }
    return el;
  }

  // segments is pure: Node loads this file too (tests/test_label_math.py), where there is no window.
  if (typeof window !== "undefined") window.prmkitRender = { segments, renderText };
  if (typeof module !== "undefined") module.exports = { segments, closing };
})();
