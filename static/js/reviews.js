// evalsite review page: keyboard shortcuts. Every action is also a plain button or link.
//   j / k   move between criteria      a   agree with the judge on the focused criterion
//   d       disagree: type why, Enter  n   next unreviewed run     p   previous run
//   Esc     leave the note field        ?   list of the keys (shortcuts can be switched off)
// Opening Disagree, by key or by mouse, puts the caret in its note: focus never stays on the
// Disagree button while the reviewer types, so no letter of the note is ever a shortcut. In
// the note, Enter saves and Shift+Enter starts a new line.
(function () {
  "use strict";

  var list = document.getElementById("review-verdicts");
  if (!list) return;

  function rows() {
    return Array.prototype.slice.call(list.querySelectorAll(".review-criterion"));
  }

  var typing = window.evalsiteTyping || function (target) {
    return !!target && (target.isContentEditable || /^(input|textarea|select)$/i.test(target.tagName));
  };

  function focusRow(row) {
    if (!row) return;
    row.focus();
    row.scrollIntoView({ block: "nearest" });
  }

  function current() {
    var active = document.activeElement;
    return (active && active.closest && active.closest(".review-criterion")) || null;
  }

  function press(selector, scope) {
    var target = (scope || document).querySelector(selector);
    if (target && !target.hasAttribute("disabled")) target.click();
  }

  function noteOf(details) { return details.querySelector("[name=note]"); }

  function disagree(row) {
    var details = row.querySelector("details.rc-disagree");
    if (!details) return;
    details.open = true; // the toggle listener below moves the caret; this press may not wait
    noteOf(details).focus();
  }

  // A click on Disagree (or Enter or Space on it) opens it and moves the caret to the note in
  // the same task: the browser's own opening fires "toggle" a task later, and letters typed
  // meanwhile would reach the summary, where a / d / j / k are shortcuts.
  list.addEventListener("click", function (event) {
    var summary = event.target.closest && event.target.closest("details.rc-disagree > summary");
    if (!summary || summary.parentElement.open) return; // closing: the browser does it
    event.preventDefault();
    summary.parentElement.open = true;
    noteOf(summary.parentElement).focus();
  });

  // However else Disagree opened, the caret goes to the note. "toggle" does not bubble:
  // listen while capturing.
  list.addEventListener("toggle", function (event) {
    var details = event.target;
    if (!details.matches || !details.matches("details.rc-disagree") || !details.open) return;
    var note = noteOf(details);
    if (note && document.activeElement !== note) note.focus();
  }, true);

  // Enter in the note saves it (the form's own check refuses an empty one); Shift+Enter is a
  // new line. Not while an input method is composing a character.
  list.addEventListener("keydown", function (event) {
    var note = event.target;
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    if (!note.matches || !note.matches(".rc-disagree-form textarea[name=note]")) return;
    event.preventDefault();
    var form = note.form;
    if (form.requestSubmit) form.requestSubmit(); else if (form.reportValidity()) form.submit();
  });

  // Start where the server says (the next criterion to review), or in a note that failed.
  var failed = list.querySelector("details.rc-disagree[open] [name=note]");
  if (failed) failed.focus();
  else focusRow(list.querySelector("[data-autofocus]") || rows()[0]);

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (typing(event.target) || typing(document.activeElement)) {
      if (event.key === "Escape") {
        var field = typing(event.target) ? event.target : document.activeElement;
        var details = field.closest("details");
        if (details) details.open = false;
        focusRow(field.closest(".review-criterion"));
        event.preventDefault();
      }
      return;
    }
    if (window.evalsiteShortcutsOn && !window.evalsiteShortcutsOn()) return;
    var dialog = document.getElementById("keys-dialog");
    if (dialog && dialog.open) return;
    // Keys act on the verdict list: from inside it, or from nowhere in particular (the body),
    // never from another control such as the nav or a button elsewhere on the page.
    var active = document.activeElement;
    var inList = active && list.contains(active);
    if (!inList && active && active !== document.body) return;
    var row = current() || list.querySelector("[data-autofocus]") || rows()[0];
    var all = rows();
    var index = all.indexOf(row);
    switch (event.key) {
      case "j": focusRow(all[Math.min(index + 1, all.length - 1)]); break;
      case "k": focusRow(all[Math.max(index - 1, 0)]); break;
      case "a": if (row) press('[data-action="agree"]', row); break;
      case "d": if (row) disagree(row); break;
      case "n": press('[data-review-key="n"]'); break;
      case "p": press('[data-review-key="p"]'); break;
      default: return;
    }
    event.preventDefault();
  });
})();
