/* Navigation on a narrow screen (loaded on every page by _ext/book_offline.py).
 *
 * Below 992 px the article header of sphinx-book-theme shows its own "Toggle primary
 * sidebar" and "Toggle secondary sidebar" buttons, but pydata-sphinx-theme (which opens
 * the sidebars as <dialog>s) and sphinx-book-theme (which hides the primary sidebar on a
 * wide screen) both bind their handlers to the FIRST .primary-toggle / .secondary-toggle
 * of the page only: pydata-sphinx-theme's own navbar buttons, which this layout hides.
 * The visible buttons did nothing. Here a click on any other toggle is handed to the
 * first one, so both themes' handlers run as they were written to.
 *
 * On a touch screen the Bootstrap tooltips of those buttons stay up after a tap and
 * cover the search button; book.css does not show them where the pointer cannot hover.
 */
(function () {
  "use strict";
  function forward(selector) {
    var all = document.querySelectorAll(selector);
    if (all.length < 2) return;
    var first = all[0];
    Array.prototype.slice.call(all, 1).forEach(function (btn) {
      if (btn.__bookForward) return;
      btn.__bookForward = true;
      btn.addEventListener("click", function (e) {
        e.preventDefault();
        e.stopPropagation();
        btn.blur();
        first.click();
      });
    });
  }
  function start() {
    forward(".primary-toggle");
    forward(".secondary-toggle");
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
