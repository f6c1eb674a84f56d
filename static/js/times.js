// Times in the reader's own time zone: the server writes each <time data-when> in UTC (and
// says "UTC"); here it becomes the browser's local time with the zone's name, the UTC time
// kept as its title. Run on load and on every htmx swap (evalsite/templatetags/times.py).
(function () {
  "use strict";

  const pad = (n) => String(n).padStart(2, "0");

  function zoneName(date) {
    try {
      const parts = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(date);
      const zone = parts.find((p) => p.type === "timeZoneName");
      return zone ? zone.value : "";
    } catch (e) {
      return "";
    }
  }

  function utcText(date) {
    return date.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  function show(el) {
    const date = new Date(el.getAttribute("datetime"));
    if (Number.isNaN(date.getTime())) return;
    const day = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
    const clock = `${pad(date.getHours())}:${pad(date.getMinutes())}`;
    const zone = zoneName(date);
    const local = `${day} ${clock} ${zone}`.trim();
    const kind = el.dataset.when;
    if (kind === "ago") {
      el.title = local;
    } else {
      el.textContent = kind === "time" ? `${clock} ${zone}`.trim() : local;
      el.title = utcText(date);
    }
    el.dataset.local = zone;
  }

  function showAll(root) {
    const scope = root && root.querySelectorAll ? root : document;
    if (scope.matches && scope.matches("time[data-when]")) show(scope);
    scope.querySelectorAll("time[data-when]").forEach(show);
  }

  window.evalsiteTimes = { show, showAll };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => showAll(document));
  } else {
    showAll(document);
  }
  document.addEventListener("htmx:load", (event) => showAll(event.target));
})();
