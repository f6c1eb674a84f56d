// Arbitration page keyboard support. No inline scripts (CSP); the form opts in with
// data-arbitration-form. Native radios already work with Tab/arrows; these keys add speed:
//   1-9  set the current score field (focused one, else the first unset disputed one), then
//        move focus to the next unset disputed field
//   n    N/A for the current score field, where offered
//   a, b, ... / t / x   preference: output, tie, both bad
//   Ctrl+Enter (or Cmd+Enter)  resolve, also from the note
(() => {
  const form = () => document.querySelector("[data-arbitration-form]");

  const groups = (f) => Array.from(f.querySelectorAll('[data-arb-group="score"]'));
  const isSet = (g) => !!g.querySelector("input[type=radio]:checked");
  const typing = (el) => el && (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type === "text"));

  function currentGroup(f) {
    const active = document.activeElement;
    const own = active && active.closest && active.closest('[data-arb-group="score"]');
    if (own && f.contains(own)) return own;
    return groups(f).find((g) => g.hasAttribute("data-disputed") && !isSet(g)) || null;
  }

  function focusNext(f, after) {
    const all = groups(f);
    const start = after ? all.indexOf(after) + 1 : 0;
    const next = all.slice(start).concat(all.slice(0, start))
      .find((g) => g.hasAttribute("data-disputed") && !isSet(g));
    if (next) {
      next.querySelector("input[type=radio]").focus();
      return;
    }
    const pref = f.querySelector('[data-arb-group="preference"][data-disputed]');
    if (pref && !isSet(pref)) {
      pref.querySelector("input[type=radio]").focus();
      return;
    }
    const note = f.querySelector("textarea[name=note]");
    if (note) note.focus();
  }

  function choose(group, value) {
    const input = group.querySelector(`input[type=radio][value="${value}"]`);
    if (!input) return false;
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }

  document.addEventListener("keydown", (event) => {
    const f = form();
    if (!f) return;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      f.requestSubmit();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(document.activeElement)) return;
    const key = event.key.toLowerCase();
    if (/^[1-9]$/.test(key) || key === "n") {
      const group = currentGroup(f);
      if (group && choose(group, key === "n" ? "na" : key)) {
        event.preventDefault();
        focusNext(f, group);
      }
      return;
    }
    const pref = f.querySelector('[data-arb-group="preference"]');
    if (!pref) return;
    const value = key === "t" ? "tie" : key === "x" ? "both_bad" : /^[a-h]$/.test(key) ? key.toUpperCase() : null;
    if (value && choose(pref, value)) {
      event.preventDefault();
      focusNext(f, null);
    }
  });

  // Start where the work is: the first disputed field, on load and after htmx swaps.
  function start() {
    const f = form();
    if (f && !f.querySelector(".error")) focusNext(f, null);
  }
  document.addEventListener("DOMContentLoaded", start);
  document.addEventListener("htmx:afterSettle", start);
})();
