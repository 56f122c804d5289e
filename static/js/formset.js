// The postmortem editor's "Add …" buttons: a new blank row from the formset's empty form
// (a <template> holding it with "__prefix__" for its index) and one more in TOTAL_FORMS,
// without a reload. Without this script the same buttons submit and the page comes back
// with the row added. No inline scripts.
(function () {
  "use strict";

  function field(form, name) {
    return form.querySelector('input[name="' + name + '"]');
  }

  function wire(button) {
    var prefix = button.getAttribute("data-add-row");
    var form = button.form;
    var template = document.getElementById(prefix + "-empty-row");
    var rows = document.getElementById(prefix + "-rows");
    var total = form && field(form, prefix + "-TOTAL_FORMS");
    var max = form && field(form, prefix + "-MAX_NUM_FORMS");
    if (!template || !rows || !total) return;  // the server adds the row instead
    button.type = "button";  // Enter in a field still saves the draft, never adds a row
    button.addEventListener("click", function () {
      var index = parseInt(total.value, 10);
      var limit = max ? parseInt(max.value, 10) : Infinity;
      if (!(index >= 0) || index >= limit) {
        button.disabled = true;
        return;
      }
      var html = template.innerHTML
        .replace(/__prefix__/g, String(index))
        .replace(/, new row"/g, ", row " + (index + 1) + '"');
      rows.insertAdjacentHTML("beforeend", html);
      total.value = String(index + 1);
      if (index + 1 >= limit) button.disabled = true;
      var first = rows.lastElementChild && rows.lastElementChild.querySelector("input, select, textarea");
      if (first) first.focus();
    });
  }

  document.querySelectorAll("button[data-add-row]").forEach(wire);
})();
