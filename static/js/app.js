// evalsite: small progressive enhancements. Every page works without this file.
(function () {
  "use strict";

  function typing(target) {
    return target && (target.isContentEditable || /^(input|textarea|select)$/i.test(target.tagName));
  }

  // A select inside <form data-autosubmit> submits its form when changed (team switcher).
  document.addEventListener("change", function (event) {
    var form = event.target.closest && event.target.closest("form[data-autosubmit]");
    if (form) form.requestSubmit ? form.requestSubmit() : form.submit();
  });

  // <button data-copy="#element-id"> copies that element's text.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.innerText).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1400);
    });
  });

  // <input type=checkbox data-select-all="name"> toggles every checkbox with that name.
  document.addEventListener("change", function (event) {
    var name = event.target.getAttribute && event.target.getAttribute("data-select-all");
    if (!name) return;
    document.querySelectorAll('input[type=checkbox][name="' + name + '"]').forEach(function (box) {
      box.checked = event.target.checked;
    });
  });

  // <button data-confirm="question"> asks before its form is submitted.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-confirm]");
    if (button && !window.confirm(button.getAttribute("data-confirm"))) event.preventDefault();
  });

  // j / k follow the links marked data-hotkey="j" / "k" (failed-criteria walker).
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var link = document.querySelector('[data-hotkey="' + event.key + '"]');
    if (link && link.href) {
      event.preventDefault();
      link.click();
    }
  });
})();
