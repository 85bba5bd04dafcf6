/* Tables on a narrow screen (loaded on every page by _ext/book_offline.py).
 *
 * A results table is often wider than a phone (a dozen columns of names and numbers).
 * Breaking its words to make it fit leaves one letter per line; scrolling it sideways hides
 * the columns a row is about. So a table that does not fit its column, below 600 px,
 * is shown as cards: one block per row, each cell on its own line after its column's
 * header (the header text is copied into a data-label attribute of each cell, and
 * book.css draws it with ::before). Wider screens, and tables that fit, stay tables.
 */
(function () {
  "use strict";
  var NARROW = 600;

  function label(table) {
    if (table.__bookLabelled) return;
    var heads = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
      return th.textContent.trim();
    });
    Array.prototype.forEach.call(table.querySelectorAll("tbody tr"), function (tr) {
      Array.prototype.forEach.call(tr.children, function (td, i) {
        if (heads[i]) td.setAttribute("data-label", heads[i]);
      });
    });
    table.__bookLabelled = true;
  }

  function fit() {
    var narrow = window.innerWidth < NARROW;
    document.querySelectorAll(".bd-content table.table").forEach(function (table) {
      table.classList.remove("book-cards");
      if (!narrow || !table.querySelector("thead th")) return;
      var box = table.parentElement;
      while (box && box !== document.body && getComputedStyle(box).overflowX === "visible" &&
             !box.classList.contains("cell_output")) box = box.parentElement;
      var room = (box && box.clientWidth) || window.innerWidth;
      if (table.getBoundingClientRect().width > room + 1) {
        label(table);
        table.classList.add("book-cards");
      }
    });
  }

  var timer = null;
  function later() { clearTimeout(timer); timer = setTimeout(fit, 150); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fit);
  else fit();
  window.addEventListener("resize", later);
})();
