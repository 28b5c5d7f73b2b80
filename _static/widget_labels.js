/* Accessible names for the widget controls of the static pages.
 *
 * The player's animation buttons (play, pause, stop, repeat) are drawn as icons only, and a
 * slider's handle or a text box is not tied to the description printed beside it, so a screen
 * reader announces "button" or "slider" with no name.  Every control inside a rendered widget
 * that has no accessible name gets one: an icon button the name of its icon, any other control
 * the description of its widget.  Widgets render after the page loads (and again when an
 * explorer switches runs), so the names are set again whenever the widget area changes.
 */
(function () {
  "use strict";
  var ICON_NAMES = {
    "fa-play": "Play", "fa-pause": "Pause", "fa-stop": "Stop",
    "fa-retweet": "Repeat", "fa-repeat": "Repeat", "fa-sync": "Repeat"
  };
  var CONTROLS = "button, input, select, textarea, [role='slider'], [contenteditable='true']";

  function hasName(el) {
    if ((el.getAttribute("aria-label") || "").trim()) return true;
    if (el.getAttribute("aria-labelledby")) return true;
    if (el.labels && Array.prototype.some.call(el.labels, function (l) {
      return l.textContent.trim();
    })) return true;
    if (el.tagName === "BUTTON" && el.textContent.trim()) return true;
    return !!(el.getAttribute("title") || "").trim();
  }

  function iconName(el) {
    var icons = el.querySelectorAll("[class*='fa-']");
    for (var i = 0; i < icons.length; i++) {
      var classes = (icons[i].getAttribute("class") || "").split(/\s+/);
      for (var j = 0; j < classes.length; j++) {
        if (ICON_NAMES[classes[j]]) return ICON_NAMES[classes[j]];
      }
    }
    return "";
  }

  function description(el) {
    /* the description label of the nearest widget that has one */
    for (var node = el.parentElement; node; node = node.parentElement) {
      var label = node.querySelector(":scope > .widget-label, :scope > label");
      if (label && label.textContent.trim()) return label.textContent.trim();
      if (node.classList && node.classList.contains("cell_output")) break;
    }
    return "";
  }

  function label(root) {
    var controls = root.querySelectorAll(".jupyter-widgets " + CONTROLS.split(", ").join(
      ", .jupyter-widgets "));
    for (var i = 0; i < controls.length; i++) {
      var el = controls[i];
      if (hasName(el)) continue;
      var name = iconName(el) || description(el);
      if (!name) continue;
      if (el.tagName === "BUTTON" || el.getAttribute("role") === "slider") {
        el.setAttribute("aria-label", name);
        if (el.tagName === "BUTTON") el.setAttribute("title", name);
      } else {
        el.setAttribute("aria-label", name);
      }
    }
  }

  var pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; label(document); });
  }

  function start() {
    label(document);
    new MutationObserver(schedule).observe(document.body, {childList: true, subtree: true});
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
