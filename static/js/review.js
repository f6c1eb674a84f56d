// Review page: keyboard-only scoring, idempotent submit key, lease heartbeat.
// No inline scripts (CSP); the page opts in by containing #review.
(() => {
  "use strict";

  let row = 0;
  let col = 0;
  let startedAt = Date.now();
  let heartbeatTimer = null;
  let currentItem = "";
  // Choices made with a key on this item, newest last, so `u` can put the last one back:
  // {r, c, name, value} with the value the question had before (null: none).
  let undoStack = [];

  const review = () => document.getElementById("review");
  const form = () => document.getElementById("review-form");
  // The questions in page order: a conversation's per-turn scores sit in its turn blocks
  // (inputs of the form, outside it), before the answer grid beside them.
  const rows = () => (form() ? Array.from(review().querySelectorAll("fieldset[data-row]")) : []);
  const cells = (fieldset) => Array.from(fieldset.querySelectorAll("[data-cell]"));

  function randomKey() {
    // crypto.getRandomValues works on plain http too (randomUUID needs a secure context).
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function setStatus(text) {
    const el = review()?.querySelector("[data-status]");
    if (el) el.textContent = text;
  }

  // Said next to the highlighted cell (the status line may be out of view) and in the status.
  function refuse(cell, text) {
    setStatus(text);
    window.evalsite.refuse(cell, text);
  }

  // The highlighted cell is the one the digits score.
  function highlight(r, c) {
    const all = rows();
    if (!all.length) return null;
    row = Math.max(0, Math.min(r, all.length - 1));
    const rowCells = cells(all[row]);
    col = Math.max(0, Math.min(c, rowCells.length - 1));
    document.querySelectorAll("#review [data-cell].focused").forEach((el) => el.classList.remove("focused"));
    const cell = rowCells[col];
    cell?.classList.add("focused");
    // A turn's score: its turn block is the current turn (`m`, `t` go on from there).
    const turn = all[row].dataset.turn;
    if (turn) {
      document.querySelectorAll("#review [data-turn-row]").forEach((el) => {
        el.classList.toggle("current-turn", el.dataset.turnRow === turn);
      });
    }
    return cell;
  }

  function focusCell(r, c, scroll = true) {
    const before = rows()[row]?.dataset.turn;
    const cell = highlight(r, c);
    if (!cell) return;
    cell.focus({ preventScroll: !scroll });
    if (!scroll) return;
    // Into a new turn's score: its block from the top (the user's message, the replies),
    // then the question itself in view.
    const turn = rows()[row]?.dataset.turn;
    if (turn && turn !== before) cell.closest("[data-turn-row]")?.scrollIntoView({ block: "start" });
    cell.scrollIntoView({ block: "nearest" });
  }

  function advance() {
    const all = rows();
    const rowCells = cells(all[row]);
    if (col + 1 < rowCells.length) focusCell(row, col + 1);
    else if (row + 1 < all.length) focusCell(row + 1, 0);
  }

  function pick(digit) {
    const fieldset = rows()[row];
    if (!fieldset) return;
    const cell = cells(fieldset)[col];
    const radios = Array.from(cell.querySelectorAll("input[type=radio]"));
    let target;
    if (fieldset.dataset.kind === "choice") target = radios[digit - 1];
    else target = radios.find((r) => r.value === String(digit));
    if (!target) {
      refuse(cell, `${digit} is not a choice here`);
      return;
    }
    remember(cell);
    target.checked = true;
    answered(cell);
    advance();
  }

  function remember(cell) {
    const checked = cell.querySelector("input[type=radio]:checked");
    const name = cell.querySelector("input[type=radio]")?.name;
    if (!name) return;
    undoStack.push({ r: row, c: col, name, value: checked ? checked.value : null });
    if (undoStack.length > 100) undoStack.shift();
  }

  // `u`: the last choice made with a key is put back as it was, and its question highlighted.
  function undoLast() {
    const last = undoStack.pop();
    if (!last) {
      setStatus("Nothing to undo.");
      return;
    }
    // A conversation's turn scores sit outside the form (form="review-form"): by name, page-wide.
    const radios = Array.from(review().querySelectorAll("input[type=radio]")).filter((r) => r.name === last.name);
    radios.forEach((r) => (r.checked = last.value !== null && r.value === last.value));
    focusCell(last.r, last.c);
    // As a click would: the draft copy follows.
    (radios.find((r) => r.checked) || radios[0])?.dispatchEvent(new Event("change", { bubbles: true }));
    setStatus("Undone: that question is as it was before.");
  }

  function answered(cell) {
    // As a click would: site.js keeps the answers as a draft.
    cell.querySelector("input:checked")?.dispatchEvent(new Event("change", { bubbles: true }));
    cell.classList.remove("has-error");
    cell.removeAttribute("aria-invalid");
    cell.querySelectorAll("[data-error]").forEach((el) => el.remove());
  }

  function pickNA() {
    const fieldset = rows()[row];
    const cell = fieldset && cells(fieldset)[col];
    const na = cell?.querySelector("input[value=na]");
    if (!na) {
      refuse(cell, "N/A is not a choice here");
      return;
    }
    remember(cell);
    na.checked = true;
    answered(cell);
    advance();
  }

  function submit() {
    const f = form();
    if (f) f.requestSubmit();
  }

  function onKey(event) {
    if (!review()) return;
    const target = event.target;
    const dialog = document.getElementById("shortcuts");
    if (dialog?.open) {
      if (event.key === "?") {
        event.preventDefault();
        dialog.close();
      }
      return;
    }
    const typing = target.matches?.("textarea, select, input:not([type=radio]):not([type=checkbox]):not([type=hidden])");
    if (typing) {
      if (event.key === "Escape") {
        target.blur();
        focusCell(row, col);
      } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && target.closest("#review-form")) {
        event.preventDefault();
        submit();
      } else if (event.key === "Enter" && target.matches("[data-skip-reason]")) {
        // `s`, an arrow to the reason, Enter: skips (a select does not submit its form on Enter;
        // with no reason chosen the browser says it is required).
        event.preventDefault();
        target.form.requestSubmit();
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "?") {
      event.preventDefault();
      window.evalsite.toggleShortcuts();
      return;
    }
    if (!form()) return;
    const key = event.key;
    // A focused output pane or task box scrolls with the arrow keys, as any scrollable box does.
    if (target.matches?.(".output-body, [data-scrollbox]") && key.startsWith("Arrow")) return;
    if (/^[0-9]$/.test(key)) {
      event.preventDefault();
      pick(Number(key));
    } else if (key === "x") {
      event.preventDefault();
      pickNA();
    } else if (key === "u") {
      event.preventDefault();
      undoLast();
    } else if (key === "ArrowDown" || key === "j") {
      event.preventDefault();
      focusCell(row + 1, col);
    } else if (key === "ArrowUp" || key === "k") {
      event.preventDefault();
      focusCell(row - 1, col);
    } else if (key === "ArrowRight" || key === "l") {
      event.preventDefault();
      focusCell(row, col + 1);
    } else if (key === "ArrowLeft" || key === "h") {
      event.preventDefault();
      focusCell(row, col - 1);
    } else if (key === "m") {
      // "More" on the current output (a focused box: that one), as its button does; in a
      // conversation, its reply to the current turn.
      event.preventDefault();
      const box = target.matches?.(".output-body, [data-scrollbox]")
        ? target
        : window.evalsite.transcript.currentBox(review(), col);
      window.evalsite.toggleMore(box);
    } else if ("eEtT".includes(key) && key.length === 1) {
      // Steps of a transcript (e: the current output's, E: all) and a conversation's turns.
      event.preventDefault();
      const done = window.evalsite.transcript.key(review(), event, col);
      const fieldset = rows()[row];
      if (!done.done) refuse(fieldset && cells(fieldset)[col], done.say);
      else if (done.say) setStatus(done.say);
    } else if (key === "c") {
      event.preventDefault();
      review().querySelector("[data-comment]")?.focus();
    } else if (key === "f") {
      event.preventDefault();
      const flags = review().querySelector("details.flags");
      if (flags) {
        flags.open = true;
        flags.querySelector("input")?.focus();
      }
    } else if (key === "i") {
      event.preventDefault();
      const instructions = review().querySelector("details.instructions");
      if (instructions) {
        // Read, not focused: the digits keep scoring the highlighted question.
        instructions.open = !instructions.open;
        if (instructions.open) instructions.scrollIntoView({ block: "nearest" });
        else focusCell(row, col);
      }
    } else if (key === "s") {
      event.preventDefault();
      const skip = review().querySelector("details.skip");
      if (skip) {
        skip.open = true;
        skip.querySelector("[data-skip-reason]")?.focus();
      }
    } else if (key === "r") {
      // "This answer reveals the model": open the report, the cursor in its note (Enter sends).
      event.preventDefault();
      const report = review().querySelector("details.report-identity");
      if (report) {
        report.open = true;
        report.querySelector("[data-report-note]")?.focus();
      }
    } else if (key === "Escape") {
      // Back to the grid from a flag (`f`), an output or a summary, as from the comment.
      focusCell(row, col);
    } else if (key === "Enter") {
      // Buttons, links and <summary> keep their own Enter.
      if (target.matches?.("button, a, summary")) return;
      event.preventDefault();
      submit();
    }
  }

  function heartbeat() {
    const el = review();
    const url = el?.dataset.heartbeatUrl;
    if (!url) return;
    fetch(url, {
      method: "POST",
      headers: { "X-CSRFToken": window.evalsite.csrfToken(), Accept: "application/json" },
      credentials: "same-origin",
    })
      .then((r) => r.json().then((body) => ({ status: r.status, body })))
      .then(({ status, body }) => {
        if (status === 401) window.evalsite.showProblem(body.message, { login: true });
        else if (status >= 400) setStatus(body.message || "Your time on this item ran out.");
      })
      .catch(() => setStatus("Connection lost; your answers stay on this page."));
  }

  function startHeartbeat() {
    // After settling: htmx keeps the old element's attributes on #review until then.
    const el = review();
    clearInterval(heartbeatTimer);
    heartbeatTimer = null;
    if (el?.dataset.heartbeatUrl) {
      heartbeatTimer = setInterval(heartbeat, Number(el.dataset.heartbeatMs) || 60000);
    }
  }

  function init() {
    const el = review();
    if (!el) return;
    const keyInput = el.querySelector("[data-submit-key]");
    if (keyInput && !keyInput.dataset.clientKey) {
      keyInput.value = randomKey();
      keyInput.dataset.clientKey = "1";
    }
    // Time spent counts from the first view of this item, not from a validation re-render.
    const action = form()?.getAttribute("action") || "";
    const fresh = action !== currentItem;
    if (fresh) {
      currentItem = action;
      startedAt = Date.now();
      undoStack = [];
    }
    // Start on the first unanswered question (after a validation error, that is the first error).
    const all = rows();
    let start = [0, 0];
    outer: for (let r = 0; r < all.length; r++) {
      const rc = cells(all[r]);
      for (let c = 0; c < rc.length; c++) {
        if (rc[c].classList.contains("has-error") || !rc[c].querySelector("input:checked")) {
          start = [r, c];
          break outer;
        }
      }
    }
    if (all.length) {
      // The same item shown again (errors): bring its first error into view. A new item
      // opens at its top, not scrolled to where the last one was submitted.
      focusCell(start[0], start[1], !fresh);
      if (fresh) window.scrollTo(0, 0);
    } else el.querySelector("[autofocus], [data-finished] a")?.focus();
  }

  document.addEventListener("keydown", onKey);
  // A question reached by Tab, a click or a screen reader becomes the highlighted one, so the
  // digits score the question that has the focus, not one highlighted before.
  document.addEventListener("focusin", (event) => {
    const cell = event.target.closest?.("#review [data-cell]");
    if (cell) {
      const fieldset = cell.closest("fieldset[data-row]");
      highlight(rows().indexOf(fieldset), cells(fieldset).indexOf(cell));
    }
  });
  // Time spent goes with the submit; the key is kept, so a retry is recognised as the same review.
  document.addEventListener(
    "submit",
    (event) => {
      if (event.target.id !== "review-form") return;
      const seconds = event.target.querySelector("[data-seconds]");
      if (seconds) seconds.value = String(Math.round((Date.now() - startedAt) / 1000));
      setStatus("Saving…");
    },
    true,
  );
  // What went wrong and how to retry is shown by site.js (the form's data-retry-note).
  document.addEventListener("htmx:sendError", () => setStatus("Not saved yet."));
  document.addEventListener("htmx:responseError", () => setStatus("Not saved yet."));
  // What a swap said (saved, skipped, the queue is finished) for screen readers: a status
  // region that arrives together with its text is not read out, so the text goes to one that
  // stays on the page. Emptied first, so a second "Saved." in a row is read out too.
  function announce() {
    const region = document.querySelector("[data-announce]");
    const el = review();
    if (!region || !el) return;
    const said = ["[data-notice=ok]", "[data-finished] .ok"]
      .map((sel) => el.querySelector(sel)?.textContent.trim())
      .filter(Boolean)
      .join(" ");
    region.textContent = "";
    if (said) setTimeout(() => (region.textContent = said), 100);
  }

  // The next item was swapped in without a page load: start over on it at once, so the very
  // next key press already scores the new item's first question.
  document.addEventListener("htmx:afterSwap", () => {
    if (!review()) return;
    init();
    announce();
  });
  document.addEventListener("htmx:afterSettle", startHeartbeat);
  function start() {
    init();
    startHeartbeat();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
