// evalsite: small progressive enhancements. Every page works without this file.
(function () {
  "use strict";

  // Whether keys pressed at ``target`` are text being typed (a field, a select, or anything
  // editable): single-key shortcuts never act then. Shared with the page scripts.
  function typing(target) {
    return !!target && (target.isContentEditable || /^(input|textarea|select)$/i.test(target.tagName));
  }
  window.evalsiteTyping = typing;

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

  // Keyboard shortcuts, listed by the "?" overlay (#keys-dialog, on every page:
  // templates/includes/keys.html): never while typing in a field, and, but for "?" itself, off
  // altogether when the reader switches them off (kept in localStorage).
  var KEYS_OFF = "evalsite-shortcuts-off";
  function shortcutsOn() {
    try { return window.localStorage.getItem(KEYS_OFF) !== "1"; } catch (e) { return true; }
  }
  window.evalsiteShortcutsOn = shortcutsOn;

  // The page's search field, which "/" puts the cursor in (the overlay lists "/" only then).
  function searchField() {
    return document.querySelector("main input[type=search]");
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (searchField()) {
      document.querySelectorAll("#keys-dialog [data-keys-search]").forEach(function (el) { el.hidden = false; });
    }
    var toggle = document.getElementById("keys-toggle");
    if (!toggle) return;
    toggle.checked = shortcutsOn();
    toggle.addEventListener("change", function () {
      try {
        if (toggle.checked) window.localStorage.removeItem(KEYS_OFF);
        else window.localStorage.setItem(KEYS_OFF, "1");
      } catch (e) { /* storage refused: the setting lasts for this page only */ }
    });
  });

  // The overlay opens over whatever had focus, and gives focus back to it when it closes
  // (Escape, its Close button, or "?" again).
  var beforeKeys = null;
  function openKeys(dialog) {
    beforeKeys = document.activeElement;
    dialog.showModal();
  }
  document.addEventListener("close", function (event) {
    if (event.target.id !== "keys-dialog") return;
    var back = beforeKeys;
    beforeKeys = null;
    if (back && back !== document.body && back.isConnected && back.focus) back.focus();
  }, true);

  document.addEventListener("click", function (event) {
    var opener = event.target.closest && event.target.closest("[data-keys-open]");
    var dialog = document.getElementById("keys-dialog");
    if (opener && dialog) openKeys(dialog);
  });

  // "g" then a letter follows the overlay's link for it (g h: Home); the pair must come
  // within two seconds, and a "g" followed by anything else is forgotten.
  var goArmed = 0;
  function goTo(key) {
    var armed = goArmed && Date.now() - goArmed < 2000;
    goArmed = 0;
    var link = armed && document.querySelector('#keys-dialog a[data-go="' + CSS.escape(key) + '"]');
    if (link) window.location.assign(link.href);
    return !!link;
  }

  // "?" shows or hides the overlay; "/" goes to the search field; "g" pairs go places;
  // elements marked data-hotkey="n" (links or buttons) are pressed by that key.
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    var dialog = document.getElementById("keys-dialog");
    if (!dialog) return;
    var inDialog = dialog.open && dialog.contains(document.activeElement);
    if (!inDialog && (typing(event.target) || typing(document.activeElement))) return;
    if (event.key === "?") {
      event.preventDefault();
      if (dialog.open) dialog.close(); else openKeys(dialog);
      return;
    }
    if (!shortcutsOn() || dialog.open) return;
    if (goTo(event.key)) {
      event.preventDefault();
      event.stopImmediatePropagation(); // the page's own key (a: agree) does not act too
      return;
    }
    if (event.key === "g") {
      goArmed = Date.now();
      return;
    }
    var search = event.key === "/" && searchField();
    if (search) {
      event.preventDefault();
      search.focus();
      return;
    }
    var target = document.querySelector('[data-hotkey="' + CSS.escape(event.key) + '"]');
    if (target && !target.disabled && (target.href || target.form)) {
      event.preventDefault();
      target.click();
    }
  });

  // The user menu (a <details>) closes on Escape and gives focus back to its summary.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var menu = document.querySelector("details.user-menu[open]");
    if (!menu) return;
    menu.open = false;
    menu.querySelector("summary").focus();
  });

  // After an htmx swap, focus goes back to the control that triggered it (found again by id,
  // else by name and value: a Move up button follows its criterion), not to the page body.
  var lastFocus = null;
  document.addEventListener("htmx:beforeRequest", function () {
    var el = document.activeElement;
    lastFocus = el && el !== document.body ? { id: el.id, name: el.name, value: el.value } : null;
  });
  document.addEventListener("submit", function (event) {
    var el = event.submitter;
    if (el) lastFocus = { id: el.id, name: el.name, value: el.value };
  }, true);

  function candidates(saved) {
    var list = [];
    if (saved.id) list.push("#" + CSS.escape(saved.id));
    var move = /^(up|down)-(\d+)$/.exec(saved.value || "");
    if (move) {
      var at = Number(move[2]) + (move[1] === "up" ? -1 : 1);
      var other = move[1] === "up" ? "down" : "up";
      list.push('[name="op"][value="' + move[1] + "-" + at + '"]', '[name="op"][value="' + other + "-" + at + '"]');
    }
    if (saved.name) list.push('[name="' + CSS.escape(saved.name) + '"][value="' + CSS.escape(saved.value || "") + '"]');
    return list;
  }

  // <time datetime="…" data-local-time> shows its moment in the reader's own time zone (the
  // page says it in UTC, and keeps UTC in the title).
  var LOCAL = { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23" };
  function localTimes(root) {
    root.querySelectorAll("time[data-local-time]").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (!isNaN(when)) el.textContent = when.toLocaleString(undefined, LOCAL);
    });
  }
  localTimes(document);
  document.addEventListener("htmx:afterSettle", function (event) { localTimes(event.detail.target || document); });

  document.addEventListener("htmx:afterSettle", function (event) {
    var saved = lastFocus;
    var active = document.activeElement;
    if (!saved || (active && active !== document.body && active.isConnected)) return;
    var found = candidates(saved).map(function (sel) { return document.querySelector(sel); })
      .filter(function (el) { return el && !el.disabled; })[0];
    if (!found) {
      found = event.detail.target;
      if (found && !found.hasAttribute("tabindex")) found.setAttribute("tabindex", "-1");
    }
    if (found && found.isConnected) found.focus();
  });
})();
