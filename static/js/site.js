// Site-wide behaviour. No inline scripts anywhere (CSP): pages opt in with data attributes.
document.addEventListener("htmx:afterSwap", (event) => {
  const target = event.detail.target.querySelector("[autofocus]");
  if (target) target.focus();
});
