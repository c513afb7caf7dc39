// Progressive enhancement of the offers explorer; the page works fully without it.
// 1. Blank fields are left out of the URL, so shared links hold only what was set.
// 2. A change to a select or a checkbox updates the results in place (the URL follows,
//    so it stays shareable); on any failure the browser simply loads the page.
(function () {
  "use strict";
  var form = document.getElementById("filters");
  if (!form || !window.fetch || !window.URLSearchParams) return;

  function query() {
    var data = new FormData(form), out = new URLSearchParams();
    data.forEach(function (value, name) {
      if (String(value).trim() !== "") out.append(name, value);
    });
    return out.toString();
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var q = query();
    window.location.assign("/" + (q ? "?" + q : ""));
  });

  var pending = null;
  function refresh() {
    var q = query(), url = "/" + (q ? "?" + q : "");
    if (pending) pending.abort();
    pending = new AbortController();
    fetch(url, { signal: pending.signal, headers: { Accept: "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("results"), old = document.getElementById("results");
        if (!fresh || !old) { window.location.assign(url); return; }
        old.replaceWith(fresh);
        window.history.replaceState(null, "", url);
      })
      .catch(function (err) { if (err.name !== "AbortError") window.location.assign(url); });
  }

  form.addEventListener("change", function (event) {
    var t = event.target;
    if (t.tagName === "SELECT" || t.type === "checkbox") refresh();
  });
})();
