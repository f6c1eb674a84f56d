// Arbitration page keyboard support. No inline scripts (CSP); the form opts in with
// data-arbitration-form. Native radios already work with Tab/arrows; these keys add speed,
// and mean what they mean on the review page (people who review also arbitrate):
//   1-9  set the current field (the focused one, else the first unset disputed one): a score,
//        or in the preference the n-th choice; then focus the next unset disputed field
//   x    N/A for the current score field, where offered
//   e/E  open or close the steps of a transcript (the current output's / all); t/T turns
//   (a key that is not a choice there says so in the status line, as on the review page)
//   ?    show or hide the list of keys
//   Ctrl+Enter (or Cmd+Enter)  resolve, also from the note
// It also keeps the lease alive while the form is open (a heartbeat, as on the review page).
(() => {
  const form = () => document.querySelector("[data-arbitration-form]");
  let heartbeatTimer = null;
  let beatingFor = ""; // the heartbeat URL the timer runs for (the token of the open dispute)

  // The score fields, then the preference: the form's order.
  const groups = (f) => Array.from(f.querySelectorAll("[data-arb-group]"));
  const isSet = (g) => !!g.querySelector("input[type=radio]:checked");
  const waiting = (g) => g.hasAttribute("data-disputed") && !isSet(g);
  const typing = (el) => el && (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type === "text"));

  function currentGroup(f) {
    const active = document.activeElement;
    const own = active && active.closest && active.closest("[data-arb-group]");
    if (own && f.contains(own)) return own;
    return groups(f).find(waiting) || null;
  }

  function focusNext(f, after) {
    const all = groups(f);
    const start = after ? all.indexOf(after) + 1 : 0;
    const next = all.slice(start).concat(all.slice(0, start)).find(waiting);
    if (next) {
      next.querySelector("input[type=radio]").focus();
      return;
    }
    const note = f.querySelector("textarea[name=note]");
    if (note) note.focus();
  }

  function setStatus(text) {
    const el = form()?.querySelector("[data-status]");
    if (el) el.textContent = text;
  }

  // A digit is a score's value, or the n-th choice of the preference (as on the review page).
  // A key that is no choice here says so, in the review page's words.
  function choose(group, key) {
    let input;
    if (key === "x") input = group.querySelector("input[type=radio][value=na]");
    else if (group.dataset.arbGroup === "preference") input = group.querySelectorAll("input[type=radio]")[Number(key) - 1];
    else input = group.querySelector(`input[type=radio][value="${key}"]`);
    if (!input) {
      const text = `${key === "x" ? "N/A" : key} is not a choice here`;
      setStatus(text);
      window.evalsite.refuse(group, text); // next to the focus: the status line may be out of view
      return false;
    }
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }


  document.addEventListener("keydown", (event) => {
    const f = form();
    if (!f) return;
    if (document.getElementById("shortcuts")?.open) {
      if (event.key === "?") {
        event.preventDefault();
        window.evalsite.toggleShortcuts();
      }
      return;
    }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      f.requestSubmit();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(document.activeElement)) return;
    const key = event.key.toLowerCase();
    if (event.key === "?") {
      event.preventDefault();
      window.evalsite.toggleShortcuts();
      return;
    }
    if (key === "i") {
      // The instructions open and close without taking the focus from the current choice.
      const instructions = document.querySelector("#workspace details.instructions");
      if (instructions) {
        event.preventDefault();
        instructions.open = !instructions.open;
        if (instructions.open) instructions.scrollIntoView({ block: "nearest" });
      }
      return;
    }
    if (key === "r" && event.key === "r") {
      // "This answer reveals the model": open the report, the cursor in its note (Enter sends).
      const report = document.querySelector("#workspace details.report-identity");
      if (report) {
        event.preventDefault();
        report.open = true;
        report.querySelector("[data-report-note]")?.focus();
      }
      return;
    }
    if (key === "m") {
      // "More" on the focused output, else the first clipped one.
      const active = document.activeElement;
      const box = active?.matches?.(".output-body, [data-scrollbox]")
        ? active
        : document.querySelector("#workspace .output-body.is-clipped, #workspace .output-body.expanded");
      if (box) {
        event.preventDefault();
        window.evalsite.toggleMore(box);
      }
      return;
    }
    if (key === "e" || key === "t") {
      // Steps of a transcript (e: the current output's, E: all) and a conversation's turns;
      // the current output is the focused one, else the column of the focused score.
      event.preventDefault();
      const root = document.getElementById("workspace");
      const cell = document.activeElement?.closest?.(".arb-grid td");
      const done = window.evalsite.transcript.key(root, event, cell ? cell.cellIndex - 1 : 0);
      if (!done.done) window.evalsite.refuse(currentGroup(f) || f, done.say);
      if (done.say) setStatus(done.say);
      return;
    }
    if (/^[0-9]$/.test(key) || key === "x") {
      const group = currentGroup(f);
      if (group && choose(group, key)) {
        event.preventDefault();
        focusNext(f, group);
      }
    }
  });

  function leaseStatus(text) {
    const el = document.querySelector("[data-lease-status]");
    if (!el) return;
    el.textContent = text;
    el.hidden = !text;
  }

  function heartbeat() {
    const url = form()?.dataset.heartbeatUrl;
    if (!url) return;
    fetch(url, {
      method: "POST",
      headers: { "X-CSRFToken": window.evalsite.csrfToken(), Accept: "application/json" },
      credentials: "same-origin",
    })
      .then((r) => r.json().then((body) => ({ ok: r.ok, status: r.status, body })))
      .then(({ ok, status, body }) => {
        if (status === 401) {
          window.evalsite.showProblem(body.message, { login: true });
          return;
        }
        if (!ok) {
          leaseStatus(body.message || "This dispute is no longer held for you.");
          return;
        }
        leaseStatus("");
        const until = document.querySelector("[data-lease-until]");
        if (until && body.lease_expires_at) {
          until.setAttribute("datetime", body.lease_expires_at);
          until.textContent = new Date(body.lease_expires_at).toISOString().slice(11, 16) + " UTC";
          if (window.evalsiteTimes) window.evalsiteTimes.show(until); // the reader's zone
        }
      })
      .catch(() => leaseStatus("Connection lost; your choices stay on this page."));
  }

  // One timer per open dispute: a swap that re-renders the same form (a validation error)
  // keeps its rhythm; the next dispute, or no form (resolved, gone), restarts or stops it.
  function startHeartbeat() {
    const f = form();
    const url = f?.dataset.heartbeatUrl || "";
    if (url === beatingFor) return;
    clearInterval(heartbeatTimer);
    heartbeatTimer = null;
    beatingFor = url;
    if (url) heartbeatTimer = setInterval(heartbeat, Number(f.dataset.heartbeatMs) || 60000);
  }

  // Start where the work is: the first disputed field still unset, on load and after htmx
  // swaps, a re-shown form with errors included (its list is announced as an alert), so the
  // keyboard can go on at once.
  function start() {
    const f = form();
    if (f) focusNext(f, null);
    startHeartbeat();
  }
  // What a swap said (resolved, nothing left) for screen readers: a status region that
  // arrives together with its text is not read out, so the text goes to one that stays.
  function announce() {
    const region = document.querySelector("[data-announce]");
    if (!region) return;
    const said = document.querySelector("#workspace [data-said]");
    const text = said ? Array.from(said.querySelectorAll("h2, p"), (el) => el.textContent.trim()).join(" ") : "";
    region.textContent = "";
    if (text) setTimeout(() => (region.textContent = text), 100);
  }

  document.addEventListener("DOMContentLoaded", start);
  document.addEventListener("htmx:afterSettle", start);
  document.addEventListener("htmx:afterSettle", announce);
})();
