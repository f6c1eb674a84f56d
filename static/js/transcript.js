// Transcripts and conversations on the review and arbitration pages (docs/reviewing.md,
// "Transcripts and conversations"). The pages' own key handlers call these:
//   e / E  open or close every step of the current output / of all outputs
//   t / T  next / previous turn of a conversation (scrolled into view and marked)
// Steps are <details data-step>: Tab reaches each one's summary, Enter or Space opens it.
(() => {
  "use strict";

  const outputsOf = (root, label) =>
    Array.from(root.querySelectorAll(label ? `[data-output-label="${label}"]` : "[data-output-label]"));

  // The output of the `index`-th column (0 = A), or the one holding the focus.
  function labelAt(root, index) {
    const focused = document.activeElement?.closest?.("[data-output-label]");
    if (focused && root.contains(focused)) return focused.dataset.outputLabel;
    const labels = [...new Set(outputsOf(root).map((el) => el.dataset.outputLabel))];
    if (!labels.length) return null;
    return labels[Math.max(0, Math.min(index ?? 0, labels.length - 1))];
  }

  // Open every step if one is closed, else close them all; returns how many steps there are.
  function toggleSteps(root, label) {
    const steps = outputsOf(root, label).flatMap((el) => Array.from(el.querySelectorAll("details[data-step]")));
    if (!steps.length) return 0;
    const open = steps.some((d) => !d.open);
    steps.forEach((d) => (d.open = open));
    // The current turn's steps in view, else the first one's.
    const current = root.querySelector(".current-turn details[data-step]");
    (current || steps[0]).closest("[data-output-label]")?.scrollIntoView({ block: "nearest" });
    window.evalsite.moreCues?.();
    return steps.length;
  }

  const turns = (root) => Array.from(root.querySelectorAll("[data-turn-row]"));

  // The turn `number` (1-based) marked current and scrolled to the top of the window.
  function showTurn(root, number) {
    const all = turns(root);
    const row = all[number - 1];
    if (!row) return null;
    all.forEach((el) => el.classList.toggle("current-turn", el === row));
    row.scrollIntoView({ block: "start" });
    return row;
  }

  // Move by `delta` turns from the current one (from none: the first or the last).
  function moveTurn(root, delta) {
    const all = turns(root);
    if (!all.length) return null;
    const at = all.findIndex((el) => el.classList.contains("current-turn"));
    const next = at < 0 ? (delta > 0 ? 0 : all.length - 1) : Math.max(0, Math.min(at + delta, all.length - 1));
    return showTurn(root, next + 1);
  }

  // The clipped reply box of output column `index` in the current turn (for `m`).
  function currentBox(root, index) {
    const turn = root.querySelector(".current-turn");
    return (turn || root).querySelector(`[data-col-output="${index}"] .output-body`);
  }

  // A key of the page, handled here when it is one of ours (null when it is not); `index` is
  // the current output's column. {done, say}: done false when the key does nothing here, and
  // `say` what to tell the reviewer either way.
  function key(root, event, index) {
    const k = event.key;
    if (k === "e" || k === "E") {
      const label = k === "E" ? null : labelAt(root, index);
      const n = toggleSteps(root, label);
      return n ? { done: true, say: "" } : { done: false, say: "No steps to open here" };
    }
    if (k === "t" || k === "T") {
      const row = moveTurn(root, k === "T" ? -1 : 1);
      if (!row) return { done: false, say: "No turns here" };
      const heading = row.querySelector("h2");
      return { done: true, say: heading ? heading.textContent.replace(/\s+/g, " ").trim() : "" };
    }
    return null;
  }

  window.evalsite = window.evalsite || {};
  window.evalsite.transcript = { toggleSteps, showTurn, moveTurn, currentBox, key, labelAt };
})();
