// crawlog console: follow the job's event stream and redraw the live parts of this page.
// The page is rendered by the server; on each event (throttled) it is fetched again and
// every element with data-live is swapped in by its id, except one being typed into.
(function () {
  "use strict";
  var REDRAW_MS = 250;
  var pending = null;
  var seen = 0;

  function typing(el) {
    var inputs = el.querySelectorAll("input[type=text], textarea");
    for (var i = 0; i < inputs.length; i++) {
      if (inputs[i] === document.activeElement || inputs[i].value !== "") return true;
    }
    return false;
  }

  function redraw() {
    pending = null;
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (old) {
          var next = fresh.getElementById(old.id);
          if (next && !typing(old)) old.replaceWith(next);
        });
      });
  }

  function schedule() {
    if (pending === null) pending = setTimeout(redraw, REDRAW_MS);
  }

  var url = document.body.getAttribute("data-events");
  if (!url || !window.EventSource) return;
  var state = document.getElementById("stream-state");
  var source = new EventSource(url);
  source.addEventListener("open", function () { if (state) state.textContent = "live"; });
  source.addEventListener("error", function () { if (state) state.textContent = "reconnecting"; });
  // A task's page follows the events of that task (and those of no task: its site's, the
  // job's); any other page, every event.
  var follows = document.querySelector("[data-task-events]");
  var task = follows ? follows.getAttribute("data-task-events") : null;

  function concerns(data) {
    if (task === null) return true;
    try {
      var event = JSON.parse(data);
      return !("task_id" in event) || event.task_id === task;
    } catch (e) {
      return true;
    }
  }

  source.addEventListener("log", function (message) {
    seen += 1;
    if (state) state.textContent = "live · " + seen + " events";
    if (concerns(message.data)) schedule();
  });
  source.addEventListener("reset", function () { source.close(); window.location.reload(); });
  // A form sent: this page is about to be replaced, so its redraws would only compete
  // with the action for the console's time.
  document.addEventListener("submit", function () {
    source.close();
    if (pending !== null) clearTimeout(pending);
    pending = -1;
  });
})();
