// app.js: the one small script (no inline script anywhere: strict CSP).
// 1. The password form checks "new" against "confirm" before sending anything.
// 2. A section answered with 500 (unexpected failure) is still swapped in, so
//    its "Something went wrong" banner shows; other 5xx answers are not.
// 3. Keyboard focus survives a section swap. The form's controls are disabled
//    while it submits (which drops focus to <body>) and then replaced, so focus
//    goes to the first field the answer marks invalid, else back to the control
//    that had it (same id), else to the section's first button; but only when
//    focus is still lost (on <body>), never away from where the user moved it.
(function () {
  "use strict";

  function showError(form, text) {
    var region = form.querySelector("[data-status-region]");
    if (!region) return;
    var banner = document.createElement("div");
    banner.className = "banner banner-error";
    banner.setAttribute("role", "alert");
    banner.textContent = text;
    region.replaceChildren(banner);
  }

  document.addEventListener("htmx:beforeRequest", function (evt) {
    var form = evt.detail.elt;
    if (!form || !form.matches || !form.matches("form[data-password-form]")) return;
    var fresh = form.querySelector("[name=new_password]");
    var confirm = form.querySelector("[name=confirm_password]");
    if (fresh && confirm && fresh.value !== confirm.value) {
      evt.preventDefault();
      confirm.setAttribute("aria-invalid", "true");
      showError(form, form.getAttribute("data-mismatch") || "");
      confirm.focus();
    } else if (confirm) {
      confirm.removeAttribute("aria-invalid");
    }
  });

  var refocus = null; // {section: id, control: id} of the submission in flight

  document.addEventListener("htmx:beforeRequest", function (evt) {
    var form = evt.detail.elt;
    var active = document.activeElement;
    var section = form && form.closest ? form.closest("section[id]") : null;
    refocus =
      !evt.defaultPrevented && section && active && form.contains(active)
        ? { section: section.id, control: active.id || "" }
        : null;
  });

  document.addEventListener("htmx:afterSettle", function () {
    if (!refocus) return;
    var section = document.getElementById(refocus.section);
    var active = document.activeElement;
    // Only give back focus that was lost, never take it from where the user moved it.
    if (!section || (active && active !== document.body)) {
      refocus = null;
      return;
    }
    var control = refocus.control && document.getElementById(refocus.control);
    var target =
      section.querySelector("[aria-invalid=true]") ||
      (control && section.contains(control) ? control : null) ||
      section.querySelector("button:not([disabled])");
    refocus = null;
    if (target) target.focus();
  });

  document.addEventListener("htmx:beforeSwap", function (evt) {
    var xhr = evt.detail.xhr;
    if (xhr && xhr.status === 500 && xhr.getResponseHeader("X-Section-Fragment") === "1") {
      evt.detail.shouldSwap = true;
      evt.detail.isError = false;
    }
  });
})();
