// passkeys.js: the browser's part of passkeys (WebAuthn), on the pages that
// offer them (sign-in, its second step, the profile). No inline script (strict
// CSP). The server does everything else: it hands out the options, checks the
// answer and renders every message (static/app.js's focus rules apply).
//
// A form marked `data-passkey="create"` (add one) or `"get"` (sign in, confirm
// it's you) starts hidden: shown only where the browser has WebAuthn. The
// note that passkeys need JavaScript (`data-passkey-needs-js`) shows until this
// script runs (not <noscript>: it also covers a script that failed to load). Its
// submit first POSTs the form to `data-options` for the options (JSON), asks
// the browser's authenticator, puts the answer in the form's `credential`
// field (or the error's name in `client_error`: cancelled, timed out, or a
// SecurityError when the page's address is an IP address or not BASE_URL's:
// the server names each cause in its own message) and then
// submits the form for real: as htmx would (in a section) or as a plain post.
// When the options are refused (a stale proof, a bad name, too many tries) the
// form is submitted without an answer, and the server's answer says why.
(function () {
  "use strict";

  var supported = !!(
    window.PublicKeyCredential &&
    PublicKeyCredential.parseCreationOptionsFromJSON &&
    PublicKeyCredential.parseRequestOptionsFromJSON
  );

  function reveal() {
    document.querySelectorAll("form[data-passkey]").forEach(function (form) {
      form.hidden = !supported;
    });
    document.querySelectorAll("[data-passkey-needs-js]").forEach(function (note) {
      note.hidden = true;
    });
    document.querySelectorAll("[data-passkey-unsupported]").forEach(function (note) {
      note.hidden = supported;
    });
  }

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  function submitWith(form, credential, error) {
    form.elements.credential.value = credential ? JSON.stringify(credential) : "";
    form.elements.client_error.value = error || "";
    form.setAttribute("data-passkey-ready", "");
    form.requestSubmit();
  }

  // Passkey autofill (WebAuthn conditional mediation). On a page whose
  // passkey form is marked `data-passkey-autofill` (/login), a request started
  // at load lets the browser offer this site's passkeys in the autofill of the
  // field marked autocomplete="username webauthn", where the browser supports
  // it (isConditionalMediationAvailable). Choosing one submits that form as
  // its button would, with `mediation=conditional` (its options and answer
  // use the autofill challenge). A browser runs one WebAuthn request at a
  // time: the button aborts the autofill request before it asks.
  var autofill = null; // the AbortController of the pending autofill request
  var autofillStarted = false; // once per page load

  function stopAutofill() {
    if (autofill) {
      autofill.abort();
      autofill = null;
    }
  }

  function startAutofill() {
    var form = document.querySelector("form[data-passkey-autofill]");
    if (!form || !supported || autofillStarted || !PublicKeyCredential.isConditionalMediationAvailable) {
      return;
    }
    autofillStarted = true;
    var controller = new AbortController();
    autofill = controller;
    PublicKeyCredential.isConditionalMediationAvailable()
      .then(function (available) {
        if (!available) throw new Error("no passkey autofill here");
        var body = new FormData(form);
        body.set("mediation", "conditional");
        return fetch(form.getAttribute("data-options"), {
          method: "POST",
          body: body,
          headers: { "X-CSRFToken": csrfToken() },
          credentials: "same-origin",
          signal: controller.signal,
        });
      })
      .then(function (resp) {
        if (!resp.ok) throw new Error("options refused");
        return resp.json();
      })
      .then(function (options) {
        return navigator.credentials.get({
          mediation: "conditional",
          publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
          signal: controller.signal,
        });
      })
      .then(function (credential) {
        if (autofill !== controller || !credential) return;
        autofill = null;
        form.elements.mediation.value = "conditional";
        submitWith(form, credential.toJSON(), "");
      })
      .catch(function () {
        // Aborted by the button, unavailable, or refused: the button still works.
        if (autofill === controller) autofill = null;
      });
  }

  function ask(form) {
    var creating = form.getAttribute("data-passkey") === "create";
    stopAutofill();
    if (form.elements.mediation) form.elements.mediation.value = "";
    form.setAttribute("aria-busy", "true");
    fetch(form.getAttribute("data-options"), {
      method: "POST",
      body: new FormData(form),
      headers: { "X-CSRFToken": csrfToken() },
      credentials: "same-origin",
    })
      .then(function (resp) {
        if (!resp.ok) throw new Error("options refused");
        return resp.json();
      })
      .then(function (options) {
        return creating
          ? navigator.credentials.create({
              publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
            })
          : navigator.credentials.get({
              publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options),
            });
      })
      .then(
        function (credential) {
          submitWith(form, credential ? credential.toJSON() : null, credential ? "" : "none");
        },
        function (err) {
          submitWith(form, null, (err && err.name) || "Error");
        }
      )
      .finally(function () {
        form.removeAttribute("aria-busy");
      });
  }

  // Capture phase: before htmx's own listener on the form sees the submit.
  document.addEventListener(
    "submit",
    function (evt) {
      var form = evt.target;
      if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-passkey")) return;
      if (form.hasAttribute("data-passkey-ready")) {
        form.removeAttribute("data-passkey-ready"); // the answer is in: let it go
        return;
      }
      evt.preventDefault();
      evt.stopImmediatePropagation();
      if (!form.hasAttribute("aria-busy")) ask(form);
    },
    true
  );

  function ready() {
    reveal();
    startAutofill();
  }

  document.addEventListener("DOMContentLoaded", ready);
  document.addEventListener("htmx:afterSettle", reveal); // a section swapped in
  if (document.readyState !== "loading") ready();
})();
