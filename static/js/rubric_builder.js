// The new-campaign form's rubric builder (templates/tasks/_rubric_builder.html): add, remove
// and reorder rows, anchor inputs that follow the scale, a key made from the label, and the
// live preview (the server checks the rows and draws the review page's own grid).
(() => {
  const ROW = "[data-rubric-row]";
  const PREFIX = /rubric-(\d+|__i__)-/g;
  const builder = () => document.querySelector("[data-rubric-builder]");
  const rowsList = () => document.querySelector("[data-rubric-rows]");

  // --- the preview: asked for a moment after the last change -------------------------------
  let timer = null;
  function changed(delay = 350) {
    clearTimeout(timer);
    timer = setTimeout(() => builder()?.dispatchEvent(new CustomEvent("rubric-changed")), delay);
  }

  // --- rows: numbers, names and ids follow the order on the page ---------------------------
  function renumber() {
    const rows = [...document.querySelectorAll(ROW)];
    rows.forEach((row, n) => {
      const prefix = `rubric-${n}-`;
      row.querySelectorAll("[name], [id], [for], [aria-describedby], [data-row-prefix]").forEach((el) => {
        for (const attr of ["name", "id", "for", "aria-describedby"]) {
          const value = el.getAttribute(attr);
          if (value && value.includes("rubric-")) el.setAttribute(attr, value.replace(PREFIX, prefix));
        }
        if (el.dataset.rowPrefix !== undefined) el.dataset.rowPrefix = `rubric-${n}`;
      });
      const number = row.querySelector("[data-row-number]");
      if (number) number.textContent = String(n + 1);
      const up = row.querySelector("[data-row-up]");
      const down = row.querySelector("[data-row-down]");
      if (up) up.disabled = n === 0;
      if (down) down.disabled = n === rows.length - 1;
      for (const [el, word] of [[up, "up"], [down, "down"], [row.querySelector("[data-row-remove]"), ""]]) {
        const what = word ? `Move question ${n + 1} ${word}` : `Remove question ${n + 1}`;
        el?.setAttribute("aria-label", what);
      }
      title(row);
    });
  }

  function title(row) {
    const label = row.querySelector("[data-row-label]")?.value.trim();
    const key = row.querySelector("[data-row-key]")?.value.trim();
    const shown = row.querySelector("[data-row-title]");
    if (shown) shown.textContent = label || key ? `: ${label || key}` : "";
  }

  function addRow() {
    const list = rowsList();
    const template = document.getElementById("rubric-row-template");
    if (!list || !template) return;
    const index = list.querySelectorAll(ROW).length;
    const html = template.innerHTML.replaceAll("rubric-__i__-", `rubric-${index}-`).replaceAll('"rubric-__i__"', `"rubric-${index}"`);
    list.insertAdjacentHTML("beforeend", html);
    renumber();
    const row = list.querySelectorAll(ROW)[index];
    row.querySelector("[data-row-label]")?.focus();
    changed();
  }

  function removeRow(row) {
    const rows = [...document.querySelectorAll(ROW)];
    const at = rows.indexOf(row);
    const next = rows[at + 1] || rows[at - 1];
    row.remove();
    renumber();
    (next?.querySelector("[data-row-remove]") || document.querySelector("[data-row-add]"))?.focus();
    changed(0);
  }

  function moveRow(row, step) {
    const sibling = step < 0 ? row.previousElementSibling : row.nextElementSibling;
    if (!sibling?.matches(ROW)) return false;
    const focused = document.activeElement;
    if (step < 0) sibling.before(row);
    else sibling.after(row);
    renumber();
    if (focused && row.contains(focused) && !focused.disabled) focused.focus();
    else row.querySelector(step < 0 ? "[data-row-up]:not(:disabled)" : "[data-row-down]:not(:disabled)")?.focus() || row.querySelector("[data-row-label]")?.focus();
    changed(0);
    return true;
  }

  // --- anchors: one input per point of the scale; text typed for a point is kept -----------
  const kept = new WeakMap(); // row -> {point: text}, including points the scale no longer has
  function anchorsOf(row) {
    if (!kept.has(row)) kept.set(row, {});
    const memory = kept.get(row);
    row.querySelectorAll("[data-anchor-list] input").forEach((input) => {
      memory[input.name.replace(/^.*-anchor-/, "")] = input.value;
    });
    return memory;
  }

  function rebuildAnchors(row) {
    const list = row.querySelector("[data-anchor-list]");
    const lo = Number(row.querySelector("[data-row-min]")?.value.trim());
    const hi = Number(row.querySelector("[data-row-max]")?.value.trim());
    const max = Number(rowsList()?.dataset.maxPoints || 101);
    if (!list || !Number.isInteger(lo) || !Number.isInteger(hi) || hi <= lo || hi - lo + 1 > max) return;
    const memory = anchorsOf(row);
    const prefix = list.dataset.rowPrefix;
    const current = [...list.querySelectorAll("input")].map((i) => i.name.replace(/^.*-anchor-/, ""));
    const points = [];
    for (let p = lo; p <= hi; p++) points.push(String(p));
    // Text written for a point outside the new scale stays visible (the server flags it).
    for (const p of current) if (!points.includes(p) && memory[p]?.trim()) points.push(p);
    if (points.join() === current.join()) return;
    list.replaceChildren(
      ...points.map((p) => {
        const label = document.createElement("label");
        label.className = "anchor";
        label.htmlFor = `${prefix}-anchor-${p}`;
        const point = document.createElement("span");
        point.className = "anchor-point";
        point.textContent = p;
        const input = document.createElement("input");
        input.id = label.htmlFor;
        input.name = label.htmlFor;
        input.value = memory[p] || "";
        label.append(point, input);
        return label;
      }),
    );
    const details = row.querySelector(".rubric-anchors");
    if (details && points.length <= Number(rowsList()?.dataset.openAnchors || 11)) details.open = true;
  }

  // --- a key made from the label, until the key is typed in itself -------------------------
  function keyFrom(label) {
    return label
      .toLowerCase()
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .replace(/[^a-z0-9]+/g, "_")
      .replace(/^[^a-z]+/, "")
      .replace(/_+$/, "")
      .slice(0, 63);
  }

  // --- error slots refreshed by the live check: aria-invalid follows them ------------------
  function markErrors() {
    document.querySelectorAll("[data-rubric-rows] .field-error[id]").forEach((slot) => {
      const input = document.getElementById(slot.id.replace(/-error$/, ""));
      const bad = slot.textContent.trim() !== "";
      if (input) {
        if (bad) input.setAttribute("aria-invalid", "true");
        else input.removeAttribute("aria-invalid");
      }
      slot.closest(".bfield, .rubric-anchors")?.classList.toggle("has-error", bad);
    });
    document.querySelectorAll(ROW).forEach((row) => {
      row.classList.toggle("has-error", !!row.querySelector(".has-error"));
    });
  }

  // --- events (delegated: the builder is swapped in and out by htmx) -----------------------
  document.addEventListener("click", (event) => {
    const button = event.target.closest?.("[data-row-add], [data-row-remove], [data-row-up], [data-row-down]");
    if (!button) return;
    const row = button.closest(ROW);
    if (button.matches("[data-row-add]")) addRow();
    else if (button.matches("[data-row-remove]")) removeRow(row);
    else moveRow(row, button.matches("[data-row-up]") ? -1 : 1);
  });

  document.addEventListener("keydown", (event) => {
    const row = event.target.closest?.(ROW);
    if (!row) return;
    if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown")) {
      event.preventDefault();
      moveRow(row, event.key === "ArrowUp" ? -1 : 1);
    } else if (event.key === "Enter" && event.target.matches("input:not([type=checkbox])")) {
      // Enter in a row's field would submit the whole campaign: it moves on instead.
      event.preventDefault();
      const fields = [...row.querySelectorAll("input:not([type=hidden]), select, textarea")];
      fields[fields.indexOf(event.target) + 1]?.focus();
    }
  });

  document.addEventListener("input", (event) => {
    const el = event.target;
    const row = el.closest?.(ROW);
    if (row) {
      if (el.matches("[data-row-key]")) delete el.dataset.auto;
      if (el.matches("[data-row-label]")) {
        const key = row.querySelector("[data-row-key]");
        if (key && key.dataset.auto !== undefined) key.value = keyFrom(el.value);
      }
      if (el.matches("[data-row-min], [data-row-max]")) rebuildAnchors(row);
      if (el.closest("[data-anchor-list]")) anchorsOf(row);
      title(row);
    }
    if (watched(el)) changed();
  });
  document.addEventListener("change", (event) => {
    if (watched(event.target) && !event.target.matches("input[type=text], textarea, input:not([type])")) changed(0);
  });

  // What the preview depends on: the rows or the text, and the form's mode, contenders and
  // masked words (not the preview's own buttons, not the template and editor choices, which
  // swap the whole builder).
  function watched(el) {
    if (!el?.closest?.("#campaign-form") || el.closest("[data-rubric-preview]")) return false;
    if (el.matches("[name=rubric_editor], [name=rubric_template], [name=rubric_copy]")) return false;
    return !!(el.closest("[data-rubric-builder]") || el.matches("[name=mode], [name=contenders], [name=redact]"));
  }

  document.addEventListener("htmx:afterSettle", (event) => {
    if (event.detail.target?.id === "rubric-preview") markErrors();
    else if (document.querySelector("[data-rubric-builder]")) renumber();
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", renumber);
  else renumber();
})();
