// app.js: the one small script (no inline script anywhere: strict CSP).
// Forms work without it; it adds what only a script can do after an htmx swap.
// 1. A section answered with 500 (unexpected failure) is still swapped in, so
//    its "Something went wrong" summary shows; other 5xx answers are not.
// 2. Keyboard focus survives a section swap. The form's controls are disabled
//    while it submits (which drops focus to <body>) and then replaced. When the
//    answer shows errors, focus goes to the error summary if it lists more than
//    one error (or an error of the whole form), else to the one field in error;
//    otherwise back to the control that had it (same id), else to the section's
//    first button. Only when focus is still lost (on <body>, or on the new copy
//    of the control that submitted, where htmx puts it), never away from
//    where the user moved it. (Page loads: the server marks the summary `autofocus`.)
// 3. A link in an error summary focuses its field and scrolls the field's label
//    into view (the browser alone would scroll the label out of sight).
// 4. The page title starts with "Error: " exactly while the page shows an error
//    summary (a swap can add or remove one).
(function () {
  "use strict";

  function targetOf(link) {
    var href = link && link.getAttribute("href");
    return href && href.charAt(0) === "#" ? document.getElementById(href.slice(1)) : null;
  }

  // The summary, unless it holds exactly one error and that error is a field's.
  function errorFocus(section) {
    var summary = section.querySelector("[data-error-summary]");
    if (!summary) return null;
    var items = summary.querySelectorAll("li");
    if (items.length === 1) {
      var field = targetOf(items[0].querySelector("a"));
      if (field && field.getAttribute("aria-invalid") === "true") return field;
    }
    return summary;
  }

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

  // The title follows the DOM as soon as the swap lands (and again once settled).
  document.addEventListener("htmx:afterSwap", function () {
    syncTitle();
  });

  document.addEventListener("htmx:afterSettle", function () {
    syncTitle();
    if (!refocus) return;
    var section = document.getElementById(refocus.section);
    var active = document.activeElement;
    var control = refocus.control && document.getElementById(refocus.control);
    // Only give back focus that was lost, never take it from where the user moved it.
    // Focus on the new copy of the submitting control was not moved by the user:
    // htmx put it there, because Chromium drops focus from a disabled control only
    // at its next rendering update, and an answer can land before that.
    var lost = !active || active === document.body || (control && active === control);
    if (!section || !lost) {
      refocus = null;
      return;
    }
    var target =
      errorFocus(section) ||
      (control && section.contains(control) ? control : null) ||
      section.querySelector("button:not([disabled])");
    refocus = null;
    if (target) target.focus();
  });

  document.addEventListener("click", function (evt) {
    var link = evt.target.closest ? evt.target.closest("[data-error-summary] a") : null;
    var field = targetOf(link);
    if (!field) return;
    evt.preventDefault();
    var label = document.querySelector("label[for='" + CSS.escape(field.id) + "']");
    (label || field).scrollIntoView();
    field.focus({ preventScroll: true });
  });

  function syncTitle() {
    var prefix = document.body.getAttribute("data-error-title-prefix") || "";
    if (!prefix) return;
    var shows = !!document.querySelector("[data-error-summary]");
    var has = document.title.indexOf(prefix) === 0;
    if (shows && !has) document.title = prefix + document.title;
    if (!shows && has) document.title = document.title.slice(prefix.length);
  }

  document.addEventListener("htmx:beforeSwap", function (evt) {
    var xhr = evt.detail.xhr;
    if (xhr && xhr.status === 500 && xhr.getResponseHeader("X-Section-Fragment") === "1") {
      evt.detail.shouldSwap = true;
      evt.detail.isError = false;
    }
  });
})();
