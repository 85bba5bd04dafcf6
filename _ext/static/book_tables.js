/* Tables on a narrow screen (loaded on every page by _ext/book_offline.py).
 *
 * A results table is often wider than a phone (a dozen columns of names and numbers).
 * Breaking its words to make it fit leaves one letter per line; scrolling it sideways hides
 * the columns a row is about. So a table that does not fit its column, below 600 px,
 * is shown as cards: one block per row, each cell on its own line after its column's
 * header (the header text is copied into a data-label attribute of each cell, and
 * book.css draws it with ::before). Wider screens, and tables that fit, stay tables.
 *
 * A long table (more than LONG body rows) would be a long run of cards (chapter 9's
 * 52 shapes: 12,000 px on a phone). Below 600 px it stays a table, in a box at most 70 %
 * of the screen high that scrolls down and, if the table is wider than the screen,
 * sideways; its header row and its first column (what a row is about) are held in place
 * (book.css, .book-scrollbox). A line above the box says how it scrolls. A long table
 * that fits the screen's width stays as it is (the landing page's chapter list).
 */
(function () {
  "use strict";
  var NARROW = 600;
  var LONG = 30;                         // a run of cards past this many rows is too long to read

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

  /* The box a long table scrolls in: the theme's wrapper around it, or one made here. */
  function boxOf(table) {
    var p = table.parentElement;
    if (p && (p.classList.contains("pst-scrollable-table-container") || p.classList.contains("book-scrollwrap")))
      return p;
    var w = document.createElement("div");
    w.className = "book-scrollwrap";
    p.insertBefore(w, table);
    w.appendChild(table);
    return w;
  }

  /* A long table that does not fit the screen in its scroll box (on), each column as wide
   * as its content (a long name wraps; book.css), or back as it was (off). */
  function scrollBox(table, on) {
    var b = table.__bookBox || (on ? (table.__bookBox = boxOf(table)) : null);
    if (!b) return;
    b.classList.toggle("book-scrollbox", on);
    table.classList.toggle("book-long", on);
    table.classList.toggle("book-wide", on);
    var note = table.__bookNote;
    if (on && !note) {
      note = table.__bookNote = document.createElement("p");
      note.className = "book-scroll-note";
      b.parentElement.insertBefore(note, b);
    }
    if (!note) return;
    note.hidden = !on;
    if (!on) return;
    var rows = table.querySelectorAll("tbody tr").length;
    var cols = table.querySelectorAll("thead th").length;
    var sideways = b.scrollWidth > b.clientWidth + 1;
    note.textContent = rows + " rows" + (cols ? " \u00d7 " + cols + " columns" : "") +
      (sideways ? ": the table scrolls sideways and down; its header and first column stay in place."
                : ": the table scrolls down; its header stays in place.");
  }

  function fit() {
    var narrow = window.innerWidth < NARROW;
    document.querySelectorAll(".bd-content table.table").forEach(function (table) {
      table.classList.remove("book-cards");
      scrollBox(table, false);
      if (!narrow || !table.querySelector("thead th")) return;
      var box = table.parentElement;
      while (box && box !== document.body && getComputedStyle(box).overflowX === "visible" &&
             !box.classList.contains("cell_output")) box = box.parentElement;
      var room = (box && box.clientWidth) || window.innerWidth;
      var fits = table.getBoundingClientRect().width <= room + 1;
      if (fits) return;                       // a table that fits stays a table, however long
      if (table.querySelectorAll("tbody tr").length > LONG) {
        scrollBox(table, true);
      } else {
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
