// evalsite: selecting a verdict on the run page highlights the trajectory steps it cites and
// scrolls the first into view. Without this file the verdicts' step links and :target work.
(function () {
  "use strict";

  document.documentElement.classList.add("js-evidence");

  function clear() {
    document.querySelectorAll(".step.is-cited").forEach(function (step) {
      step.classList.remove("is-cited");
    });
    document.querySelectorAll("tr.verdict-row.is-selected").forEach(function (row) {
      row.classList.remove("is-selected");
    });
    document.querySelectorAll("[data-show-evidence]").forEach(function (button) {
      button.setAttribute("aria-pressed", "false");
    });
  }

  function cited(row) {
    return (row.getAttribute("data-evidence") || "").split(/\s+/).map(function (index) {
      return index && document.getElementById("step-" + index);
    }).filter(Boolean);
  }

  function select(row) {
    var button = row.querySelector("[data-show-evidence]");
    var wasSelected = row.classList.contains("is-selected");
    clear();
    if (wasSelected) return;
    row.classList.add("is-selected");
    if (button) button.setAttribute("aria-pressed", "true");
    var steps = cited(row);
    steps.forEach(function (step) { step.classList.add("is-cited"); });
    if (steps.length) {
      var still = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
      steps[0].scrollIntoView({ block: "center", behavior: still ? "auto" : "smooth" });
    }
  }

  document.addEventListener("click", function (event) {
    var row = event.target.closest && event.target.closest("tr.verdict-row[data-evidence]");
    if (!row) return;
    var button = event.target.closest("[data-show-evidence]");
    // Links, other controls and selecting text keep their own behaviour.
    if (!button && event.target.closest("a, button, input, select, textarea, summary")) return;
    if (!button && window.getSelection && String(window.getSelection())) return;
    select(row);
  });
})();
