// The rubric editor's form is autosaved on the server as unsaved edits (one copy per rubric
// and user, rubrics.working_copy) until it is saved as a version or discarded; the New rubric
// page's form the same way (one copy per team and user, rubrics.new_rubric_copy) until the
// rubric is created. The form is the one with data-autosave-url:
// - as soon as typing changes the form, the state note says "Unsaved edits";
// - 800 ms after the last input, change or swap (add, move, delete, paste), the form is
//   posted to the autosave URL ("Saving…", then "Unsaved edits saved HH:MM" or why not);
// - when the tab is hidden the pending edits are posted at once, and when the page goes
//   away with edits still pending they are sent with navigator.sendBeacon;
// - leaving the page asks first only while edits are pending or failed to save: once the
//   server has them, leaving loses nothing.
// - every autosave says what the page was rendered from (the copy's revision, else the
//   version number); the server refuses one from an older page (409: another tab saved newer
//   edits, or this page came back from the browser's history) and the note says why, so a
//   stale page never overwrites newer edits.
// - the editor's answer says which version number saving the edits makes (a draft version
//   made by comparing the same edits keeps its number): the save button shows it.
// The editor is swapped by htmx, so listeners are delegated and the form is looked up again.
(function () {
  "use strict";
  var FORM = "form[data-autosave-url]";
  var DELAY_MS = 800;
  var IGNORED = ["csrfmiddlewaretoken", "try_run", "compare_n"]; // not part of the edits
  var leaving = false;
  var stored = null; // the serialized form the server holds (or that matches the version)
  var base = ""; // the version number the page's form was loaded from
  var revision = ""; // the revision of the server's copy this page's edits build on ("": none)
  var timer = null;
  var inFlight = null; // the serialized form being posted
  var settled = Promise.resolve(); // resolves once no autosave is in flight
  var failed = false;
  var lastState = null; // the note's state and text once the server answered, or as loaded

  function form() { return document.querySelector(FORM); }

  function fields(el) {
    var data = new FormData(el); // includes fields outside it with form="criteria-draft"
    IGNORED.forEach(function (name) { data.delete(name); });
    return data;
  }

  function serialized(el) { return new URLSearchParams(fields(el)).toString(); }

  function pending() {
    var el = form();
    return !!el && (failed || inFlight !== null || serialized(el) !== stored);
  }

  function note(state, text) {
    var el = form();
    var span = el && el.querySelector("[data-draft-state]");
    if (!span) return;
    span.dataset.draftState = state;
    span.className = state === "saved" ? "hint" : "draft-note"; // "saved": as the version
    span.setAttribute("role", "status");
    span.textContent = text;
  }

  function saveNumber(number) { // the version number saving makes, as the server says
    var el = form();
    var span = el && el.querySelector("[data-save-number]");
    if (typeof number !== "number") return;
    if (span) span.textContent = String(number);
    var input = el && el.querySelector("[data-save-number-input]"); // the server checks it on save
    if (input) input.value = String(number);
  }

  function body(el) {
    var params = new URLSearchParams(fields(el));
    params.set("base_version", base);
    params.set("revision", revision);
    var token = el.querySelector("[name=csrfmiddlewaretoken]");
    if (token) params.set("csrfmiddlewaretoken", token.value);
    return params;
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(save, DELAY_MS);
  }

  function changed() {
    if (leaving || !form()) return;
    if (serialized(form()) === stored && !failed) { // what the server has (a swap may say else)
      if (lastState && inFlight === null) note(lastState[0], lastState[1]);
      return;
    }
    if (inFlight === null) note("unsaved", "Unsaved edits");
    schedule();
  }

  function answered(sent, response) {
    return response.json().catch(function () { return {}; }).then(function (answer) {
      inFlight = null;
      if (leaving) return;
      if (response.status === 409) { // this page is older than what the server holds
        failed = true;
        note("conflict", answer.message || "Not saved: newer edits were saved elsewhere. Reload the page.");
        return;
      }
      if (!response.ok || !answer.state) { // a refusal, or the login page: signed out
        failed = true;
        var why = answer.message ||
          (response.redirected ? "signed out: sign in again in another tab" : "the server answered " + response.status);
        note("failed", "Unsaved edits: not saved on the server (" + why + "). Leaving this page loses them.");
        return;
      }
      failed = false;
      stored = sent;
      revision = answer.revision || "";
      base = answer.base_version === null || answer.base_version === undefined ? "" : String(answer.base_version);
      if (serialized(form()) !== stored) return changed();
      saveNumber(answer.save_number);
      lastState = [answer.state === "saved" ? "stored" : "clean", answer.label];
      note(lastState[0], lastState[1]);
    });
  }

  function save() {
    clearTimeout(timer);
    var el = form();
    if (!el || leaving) return;
    if (inFlight !== null) return schedule(); // one at a time: the next one follows
    var sent = serialized(el);
    if (sent === stored && !failed) { // edited back to what the server has
      if (lastState) note(lastState[0], lastState[1]);
      return;
    }
    inFlight = sent;
    note("saving", "Saving…");
    settled = fetch(el.dataset.autosaveUrl, {
      method: "POST",
      body: body(el),
      credentials: "same-origin",
      headers: { "X-CSRFToken": (el.querySelector("[name=csrfmiddlewaretoken]") || {}).value || "" },
    }).then(function (response) { return answered(sent, response); }, function () {
      inFlight = null;
      failed = true;
      note("failed", "Unsaved edits: not saved on the server (no connection). Leaving this page loses them.");
    });
  }

  function belongs(target) {
    var el = form();
    return !!el && !!target && (target.form === el || (target.closest && target.closest(FORM) === el));
  }

  document.addEventListener("input", function (event) { if (belongs(event.target)) changed(); });
  document.addEventListener("change", function (event) { if (belongs(event.target)) changed(); });
  // Saving a version or discarding the edits is leaving on purpose: nothing more to autosave.
  document.addEventListener("click", function (event) {
    var target = event.target.closest && event.target.closest("[data-draft-leave]");
    if (target) { leaving = true; clearTimeout(timer); }
    var keep = event.target.closest && event.target.closest("[data-unsaved-keep]");
    if (keep) {
      var notice = document.getElementById("unsaved-edits");
      if (notice) notice.hidden = true;
      var first = form() && form().querySelector("textarea");
      if (first) first.focus();
    }
  });
  // Saving or discarding waits for an autosave in flight, so it cannot land after them and
  // bring back edits just discarded. htmx buttons: hold the request; plain forms: the submit.
  document.addEventListener("htmx:confirm", function (event) {
    var detail = event.detail || {};
    var by = (detail.triggeringEvent && detail.triggeringEvent.submitter) || detail.elt;
    if (inFlight === null || !by || !by.closest || !by.closest("[data-draft-leave]")) return;
    event.preventDefault();
    settled.then(function () { event.detail.issueRequest(true); });
  });
  document.addEventListener("submit", function (event) {
    var by = event.submitter;
    if (inFlight === null || event.defaultPrevented || !by || !by.hasAttribute("data-draft-leave")) return;
    if (by.hasAttribute("hx-post")) return; // htmx sends it (above)
    event.preventDefault();
    var el = event.target;
    settled.then(function () { el.requestSubmit(by); });
  });
  window.addEventListener("beforeunload", function (event) {
    if (leaving || !pending()) return;
    event.preventDefault();
    event.returnValue = "";
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden" && !leaving && form() && serialized(form()) !== stored) save();
  });
  window.addEventListener("pagehide", function () {
    var el = form();
    if (leaving || !el || !navigator.sendBeacon) return;
    if (serialized(el) === stored && !failed) return;
    navigator.sendBeacon(el.dataset.autosaveUrl, body(el));
  });
  // A swap (add, move, delete, paste, a refused save) renders the edits anew: autosave them if
  // they changed. Saving or discarding went elsewhere; a swap back here means it did not leave.
  document.addEventListener("htmx:afterSettle", function () {
    leaving = false;
    changed();
  });
  document.addEventListener("DOMContentLoaded", function () {
    var el = form();
    if (!el) return;
    stored = serialized(el);
    base = el.dataset.baseVersion || "";
    revision = el.dataset.revision || "";
    var span = el.querySelector("[data-draft-state]");
    if (span) lastState = [span.dataset.draftState, span.textContent];
    // A page rendered from a post (no htmx) may hold edits the server does not have yet.
    if (span && span.dataset.draftState === "unsaved") { stored = null; lastState = null; schedule(); }
  });
})();
