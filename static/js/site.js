// Site-wide behaviour. No inline scripts anywhere (CSP): pages opt in with data attributes.
const evalsite = (window.evalsite = {});

// The CSRF token to send. The cookie's is current even after the user logged in again in
// another tab (Django then rotates it), so a form kept open through that still submits; the
// token the page was rendered with is the fallback.
evalsite.csrfToken = () => {
  const cookie = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
  if (cookie) return decodeURIComponent(cookie.slice("csrftoken=".length));
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["x-csrftoken"] || "";
  } catch (e) {
    return "";
  }
};

document.addEventListener("htmx:configRequest", (event) => {
  const token = evalsite.csrfToken();
  if (!token || event.detail.verb === "get") return;
  event.detail.headers["x-csrftoken"] = token;
  // Django reads a form's own token before the header: keep it current too.
  if (event.detail.parameters.csrfmiddlewaretoken !== undefined) {
    event.detail.parameters.csrfmiddlewaretoken = token;
  }
});

// A request that fails leaves the page as it was (htmx swaps successful answers only), so
// nothing typed is lost; say what happened and what to do. A form may add how to retry
// (data-retry-note).
let focusAfterLogin = null;
evalsite.showProblem = (text, { login = false } = {}) => {
  const box = document.getElementById("request-problem");
  if (!box) return;
  if (login && !box.contains(document.activeElement)) focusAfterLogin = document.activeElement;
  box.querySelector("[data-problem-text]").textContent = text;
  box.querySelector("[data-problem-login]").hidden = !login;
  box.hidden = false;
};

function serverMessage(xhr) {
  try {
    return JSON.parse(xhr.responseText).message || "";
  } catch (e) {
    return "";
  }
}

function requestProblem(event, status) {
  const note = event.detail.elt?.closest?.("[data-retry-note]")?.dataset.retryNote;
  const retry = note || "What you entered is still on this page: try again.";
  if (status === 401) return { text: serverMessage(event.detail.xhr) || "Your session has ended: log in again in a new tab.", login: true };
  if (status === 403) return { text: `The server refused this (403): your roles may have changed, or the page is too old. Nothing was changed. ${retry} If it is refused again, reload the page.` };
  if (status === 0) return { text: `No connection to the server, so this was not saved. ${retry}` };
  return { text: `The server had a problem (${status}), so this was not saved. ${retry}` };
}

document.addEventListener("htmx:responseError", (event) => {
  const problem = requestProblem(event, event.detail.xhr.status);
  evalsite.showProblem(problem.text, problem);
});
document.addEventListener("htmx:sendError", (event) => evalsite.showProblem(requestProblem(event, 0).text));
// The next successful request clears the message; so does Dismiss.
document.addEventListener("htmx:afterRequest", (event) => {
  if (event.detail.successful) document.getElementById("request-problem")?.setAttribute("hidden", "");
});
document.addEventListener("click", (event) => {
  if (event.target.closest?.("[data-problem-dismiss]")) {
    document.getElementById("request-problem").hidden = true;
  }
  // The login page opens in a new tab; this page's focus goes back to where the user was
  // (the review grid, say), so on coming back Enter sends the form again instead of opening
  // the login link once more.
  if (event.target.closest?.("[data-problem-login]") && focusAfterLogin?.isConnected) {
    focusAfterLogin.focus();
  }
});

// After htmx swaps a form back in: focus its first field with an error (keyboard and screen
// reader users land on what to fix), else the element marked autofocus.
document.addEventListener("htmx:afterSwap", (event) => {
  // A history restore swaps the whole body and names no target.
  const old = event.detail.target;
  if (!old) return;
  // An outerHTML swap replaced the target itself: look in its successor (same id).
  const root = old.isConnected ? old : (old.id && document.getElementById(old.id)) || document;
  const target =
    root.querySelector('[aria-invalid="true"]') ||
    root.querySelector(".has-error input, .has-error select, .has-error textarea") ||
    root.querySelector("[autofocus]");
  if (target) target.focus();
  else if (!document.activeElement || document.activeElement === document.body) {
    // The focused element (a pagination link, a button) was swapped away: keep the keyboard
    // user in the part that changed instead of back at the top of the page.
    if (root !== document && !root.hasAttribute("tabindex")) root.setAttribute("tabindex", "-1");
    root.focus?.({ preventScroll: true });
  }
});

// What the last action did (a Django message after a redirect): a live region filled before the
// page loaded is not read out, so take the focus there, unless the page names its own first
// focus (its script or an autofocus field takes it, and the region stays visible).
const messagesRegion = document.querySelector("[data-messages]");
if (messagesRegion && !document.querySelector("[autofocus]:not(dialog [autofocus])")) messagesRegion.focus();

// A page showing a one-time secret (a new password or API token) answers a form's POST. Made
// the current history entry's own, its reload is a plain GET: no "resubmit the form?" that
// would issue yet another secret, and the secret is not shown again. A form posted to an
// action of its own (/users/7/password) names the page to reload instead (data-page-url).
const secretShown = document.querySelector("[data-secret]");
if (secretShown) {
  const pageUrl = secretShown.closest("[data-page-url]")?.dataset.pageUrl || location.href;
  history.replaceState(history.state, "", pageUrl);
}

// A form that undoes work for someone else asks first: <form data-confirm="...">.
document.addEventListener(
  "submit",
  (event) => {
    const message = event.target.dataset?.confirm;
    if (message && !window.confirm(message)) event.preventDefault();
  },
  true,
);

// Pages with live counts (a reviewer's or arbiter's progress) mark themselves data-live; when
// the browser's Back button brings one back from its back-forward cache, it would show the
// counts from before the work just done, so it is fetched again.
window.addEventListener("pageshow", (event) => {
  if (event.persisted && document.querySelector("[data-live]")) window.location.reload();
});

// The keyboard shortcuts dialog of the review and arbitration pages: `?` (their scripts) or
// the "Keyboard shortcuts" button opens it, and closes it again.
evalsite.toggleShortcuts = () => {
  const dialog = document.getElementById("shortcuts");
  if (!dialog) return;
  if (dialog.open) dialog.close();
  else dialog.showModal();
};
document.addEventListener("click", (event) => {
  if (event.target.closest?.("[data-shortcuts-open]")) evalsite.toggleShortcuts();
});

// Unsaved answers on the review and arbitration pages (a form marked data-draft="<key>", the
// key being the item's random token, never anything about a model) are kept in this browser
// while someone works, so a reload, a crash or a wrong link loses nothing. A draft goes once
// its item leaves the page (submitted, skipped, resolved, gone) or is handed back
// (data-draft-drop), after a few days, and at logout (a shared computer). Without storage
// (private mode, full, refused) there are simply no drafts.
const DRAFT = "evalsite-draft:";
const DRAFT_MAX_AGE = 3 * 24 * 3600 * 1000;
const DRAFT_MAX = 30;
const draftStore = () => {
  try {
    return window.localStorage || null;
  } catch (e) {
    return null;
  }
};
const isChoice = (el) => el.type === "radio" || el.type === "checkbox";

evalsite.drafts = {
  // The answers: checked radios and checkboxes, and text areas (no hidden fields: not the
  // submit key, not the time spent).
  save(form) {
    const fields = {};
    for (const el of form.elements) {
      if (!el.name) continue;
      if (isChoice(el)) {
        fields[el.name] ||= [];
        if (el.checked) fields[el.name].push(el.value);
      } else if (el.tagName === "TEXTAREA") fields[el.name] = el.value;
    }
    try {
      draftStore()?.setItem(DRAFT + form.dataset.draft, JSON.stringify({ at: Date.now(), fields }));
    } catch (e) {} // full or refused: no draft
  },
  // Puts a draft back into its form; true if that changed anything. Only the choices the form
  // offers can be set (a field or value a changed rubric no longer has is left out), and the
  // server checks a restored answer as it checks a typed one.
  restore(form) {
    let draft = null;
    try {
      draft = JSON.parse(draftStore()?.getItem(DRAFT + form.dataset.draft) || "null");
    } catch (e) {}
    const fields = draft?.fields;
    if (!fields || typeof fields !== "object" || !(Date.now() - draft.at < DRAFT_MAX_AGE)) return false;
    let changed = false;
    for (const el of form.elements) {
      const saved = Object.hasOwn(fields, el.name) ? fields[el.name] : undefined;
      let next;
      if (isChoice(el) && Array.isArray(saved)) {
        next = saved.includes(el.value);
        // A radio is only ever switched on (which switches its group's others off).
        if (el.type === "radio" && !next) continue;
        if (el.checked === next) continue;
        el.checked = next;
      } else if (el.tagName === "TEXTAREA" && typeof saved === "string") {
        next = el.maxLength > 0 ? saved.slice(0, el.maxLength) : saved;
        if (el.value === next) continue;
        el.value = next;
      } else continue;
      changed = true;
    }
    return changed;
  },
  drop(key) {
    try {
      draftStore()?.removeItem(DRAFT + key);
    } catch (e) {}
  },
  // Keeps the `keep` newest drafts younger than the age limit.
  prune(keep = DRAFT_MAX) {
    try {
      const store = draftStore();
      if (!store) return;
      const drafts = [];
      for (let i = 0; i < store.length; i++) {
        const name = store.key(i);
        if (!name?.startsWith(DRAFT)) continue;
        let at = 0;
        try {
          at = Number(JSON.parse(store.getItem(name)).at) || 0;
        } catch (e) {}
        drafts.push({ name, at });
      }
      drafts.sort((a, b) => b.at - a.at);
      drafts.forEach((d, n) => {
        if (n >= keep || !(Date.now() - d.at < DRAFT_MAX_AGE)) store.removeItem(d.name);
      });
    } catch (e) {}
  },
};

let shownDraft = "";
// On load and after each swap, before the page scripts pick where the focus starts.
function showDraft() {
  const form = document.querySelector("form[data-draft]");
  const key = form?.dataset.draft || "";
  // The same item again (a validation error): the server sent back what was entered.
  if (key === shownDraft) return;
  // Another item (or none) in place of the last one: that one was saved, skipped or is gone.
  if (shownDraft) evalsite.drafts.drop(shownDraft);
  shownDraft = key;
  if (form && evalsite.drafts.restore(form)) {
    const status = form.querySelector("[data-status]");
    if (status) status.textContent = "Your unsaved answers to this item were restored.";
  }
}
evalsite.drafts.prune();
showDraft();
document.addEventListener("htmx:afterSwap", showDraft);
const keepDraft = (event) => {
  const form = event.target.form;
  if (form?.dataset.draft) evalsite.drafts.save(form);
};
document.addEventListener("input", keepDraft);
document.addEventListener("change", keepDraft);
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (event.defaultPrevented) return; // not sent after all (a data-confirm declined)
  if (form.dataset?.draftDrop) evalsite.drafts.drop(form.dataset.draftDrop);
  if (form.matches?.("form.logout")) evalsite.drafts.prune(0);
});

// A file over the server's limit is refused here, before a long upload the server would refuse
// unread (it then cannot give back the other fields either): input[type=file][data-max-bytes],
// with data-too-big for the server's own wording where it has one.
document.addEventListener("change", (event) => {
  const input = event.target;
  if (!input.matches?.("input[type=file][data-max-bytes]")) return;
  const file = input.files?.[0];
  const tooBig = file && file.size > Number(input.dataset.maxBytes);
  // Worded as the server words sizes (intake._size).
  const bytes = `${(file?.size || 0).toLocaleString("en")} bytes`;
  const size = file?.size >= 1024 * 1024 ? `${(file.size / (1024 * 1024)).toFixed(1)} MiB (${bytes})` : bytes;
  const problem = input.dataset.tooBig || `This file is ${size}; the limit is ${input.dataset.maxSize}.`;
  input.setCustomValidity(tooBig ? `${problem} Choose a smaller file.` : "");
  if (tooBig) input.reportValidity();
});

// A refused key says so next to the focus: the status line under the form may be
// far out of view, so nothing visibly happened. One note at a time, gone after a while.
evalsite.refuse = (anchor, text) => {
  document.querySelectorAll("[data-refused]").forEach((el) => el.remove());
  if (!anchor) return;
  const note = document.createElement("span");
  note.className = "key-refused";
  note.dataset.refused = "";
  note.setAttribute("role", "status");
  note.textContent = text;
  anchor.appendChild(note);
  note.scrollIntoView({ block: "nearest" });
  setTimeout(() => note.remove(), 3000);
};

// Clipped boxes (an output, a task) get a visible "More" button after them, which shows the
// whole text (and "Less" again); Tab reaches it, and `m` on the review and arbitration pages
// presses it for the current output.
const CLIPPED = ".output-body, [data-scrollbox]";
evalsite.toggleMore = (box) => {
  const button = box?.nextElementSibling;
  if (button?.matches("[data-more]")) button.click();
};
function moreCues() {
  document.querySelectorAll(CLIPPED).forEach((box) => {
    let button = box.nextElementSibling?.matches("[data-more]") ? box.nextElementSibling : null;
    const clipped = box.scrollHeight > box.clientHeight + 2;
    const open = box.classList.contains("expanded");
    if (!clipped && !open) {
      button?.remove();
      box.classList.remove("is-clipped");
      return;
    }
    box.classList.toggle("is-clipped", clipped && !open);
    if (!button) {
      button = document.createElement("button");
      button.type = "button";
      button.className = "link small more-cue";
      button.dataset.more = "";
      button.addEventListener("click", () => {
        box.classList.toggle("expanded");
        moreCues();
        if (!box.classList.contains("expanded")) box.scrollIntoView({ block: "nearest" });
      });
      box.after(button);
    }
    const expanded = box.classList.contains("expanded");
    button.setAttribute("aria-expanded", String(expanded));
    button.innerHTML = expanded ? "Less ↑ <kbd>m</kbd>" : "More ↓ <kbd>m</kbd>";
  });
}
evalsite.moreCues = moreCues;
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", moreCues);
else moreCues();
document.addEventListener("htmx:afterSettle", moreCues);
window.addEventListener("resize", () => {
  clearTimeout(moreCues.timer);
  moreCues.timer = setTimeout(moreCues, 150);
});

// A task's images (reviews/_task_images.html): a button enlarges its image and shrinks it back
// (a click, or Enter or Space on the focused button).
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-image-zoom]");
  if (!button) return;
  const zoomed = button.classList.toggle("zoomed");
  button.setAttribute("aria-pressed", zoomed ? "true" : "false");
  const label = button.getAttribute("aria-label") || "";
  button.setAttribute("aria-label", label.replace(/: (enlarge|shrink)$/, zoomed ? ": shrink" : ": enlarge"));
});
