// Site-wide behaviour. No inline scripts anywhere (CSP): pages opt in with data attributes.

// After htmx swaps a form back in: focus its first field with an error (keyboard and screen
// reader users land on what to fix), else the element marked autofocus.
document.addEventListener("htmx:afterSwap", (event) => {
  // An outerHTML swap replaced the target itself: look in its successor (same id).
  const old = event.detail.target;
  const root = old.isConnected ? old : (old.id && document.getElementById(old.id)) || document;
  const target =
    root.querySelector('[aria-invalid="true"]') ||
    root.querySelector(".has-error input, .has-error select, .has-error textarea") ||
    root.querySelector("[autofocus]");
  if (target) target.focus();
});

// A form that undoes work for someone else asks first: <form data-confirm="...">.
document.addEventListener(
  "submit",
  (event) => {
    const message = event.target.dataset?.confirm;
    if (message && !window.confirm(message)) event.preventDefault();
  },
  true,
);
