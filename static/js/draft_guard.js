// The rubric editor's draft lives in the page until it is saved as a version: say so as soon
// as typing changes it ("Unsaved draft"), and ask before leaving the page while it differs
// from the saved version. The editor is swapped by htmx, so listeners are delegated and the
// saved state is read again after every swap.
(function () {
  "use strict";
  var FORM = "#criteria-draft";
  var leaving = false;
  var snapshot = null;

  function form() { return document.querySelector(FORM); }

  function serialized(el) {
    var data = new FormData(el);
    data.delete("csrfmiddlewaretoken");
    return new URLSearchParams(data).toString();
  }

  function remember() {
    var el = form();
    snapshot = el ? serialized(el) : null;
    leaving = false;
  }

  function dirty() {
    var el = form();
    if (!el) return false;
    return el.dataset.dirty === "1" || serialized(el) !== snapshot;
  }

  function showUnsaved() {
    var el = form();
    var note = el && el.querySelector("[data-draft-state]");
    if (!note || note.dataset.draftState === "unsaved") return;
    note.dataset.draftState = "unsaved";
    note.className = "draft-note";
    note.setAttribute("role", "status");
    note.textContent = "Unsaved draft";
  }

  document.addEventListener("input", function (event) {
    if (event.target.closest && event.target.closest(FORM) && dirty()) showUnsaved();
  });
  document.addEventListener("change", function (event) {
    if (event.target.closest && event.target.closest(FORM) && dirty()) showUnsaved();
  });
  // Saving or discarding is leaving on purpose.
  document.addEventListener("click", function (event) {
    var target = event.target.closest && event.target.closest("[data-draft-leave]");
    if (target) leaving = true;
  });
  window.addEventListener("beforeunload", function (event) {
    if (leaving || !dirty()) return;
    event.preventDefault();
    event.returnValue = "";
  });
  document.addEventListener("htmx:afterSettle", remember);
  document.addEventListener("DOMContentLoaded", remember);
})();
