/* "Show all code": one switch that opens or folds every folded code cell of a page at once.
 *
 * Cells tagged hide-input (and hide-cell) are folded by myst-nb into a <details
 * class="hide above-input"> each, opened one at a time by its own "Show code cell source"
 * summary (a folded output, hide-output, is not code and stays as it is).  On
 * a page that has such cells this script puts a button in the article's header (beside the
 * download and full-screen buttons; at the top of the article where a theme has no header):
 * pressed, it opens every one of them; pressed again, it folds them all.  It is a toggle button
 * for screen readers (aria-pressed) whose name says what it does ("Show all code" / "Hide all
 * code"), and it follows the cells opened or folded one by one: it offers "Hide all code" once
 * every cell is open.  No network, nothing stored: it works from file:// as from a server.
 */
(function () {
  "use strict";
  var FOLDED = "div.cell details.hide.above-input";
  var SHOW = "Show all code";
  var HIDE = "Hide all code";

  function folds(root) {
    return Array.prototype.slice.call(root.querySelectorAll(FOLDED));
  }

  function allOpen(list) {
    return list.length > 0 && list.every(function (d) { return d.open; });
  }

  function label(button, list) {
    var open = allOpen(list);
    button.setAttribute("aria-pressed", open ? "true" : "false");
    button.setAttribute("title", open ? HIDE : SHOW);
    button.querySelector(".usaav-code-toggle__text").textContent = open ? HIDE : SHOW;
  }

  function makeButton() {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "btn btn-sm usaav-code-toggle";
    var icon = document.createElement("i");
    icon.className = "fas fa-code";
    icon.setAttribute("aria-hidden", "true");
    var text = document.createElement("span");
    text.className = "usaav-code-toggle__text";
    button.appendChild(icon);
    button.appendChild(text);
    return button;
  }

  function install() {
    var article = document.querySelector("article.bd-article") || document.querySelector("[role='main']");
    if (!article || !folds(article).length || document.querySelector(".usaav-code-toggle")) return;
    var button = makeButton();
    label(button, folds(article));
    button.addEventListener("click", function () {
      var list = folds(article);
      var open = !allOpen(list);
      list.forEach(function (d) { d.open = open; });
      label(button, list);
    });
    // a cell opened or folded by its own summary: the switch follows
    article.addEventListener("toggle", function () { label(button, folds(article)); }, true);
    var header = document.querySelector(".article-header-buttons");
    if (header) {
      header.insertBefore(button, header.firstChild);
    } else {
      button.classList.add("usaav-code-toggle--in-article");
      article.insertBefore(button, article.firstChild);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", install);
  } else {
    install();
  }
})();
