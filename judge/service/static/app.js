// triton-judge pages: a submission's live status (server-sent events) and a convenience on the submit form.
(function () {
  "use strict";

  function describe(s) {
    if (s.status === "queued") {
      return s.position ? s.position + " ahead in the queue" : "next in the queue";
    }
    if (s.status === "running") {
      var p = s.progress || {};
      if (p.phase === "testing") {
        return "testing " + p.group + (p.index && p.groups ? " (group " + p.index + " of " + p.groups + ")" : "");
      }
      if (p.phase === "timing") { return "timing against the reference"; }
      if (p.phase === "waiting") { return p.message || "waiting"; }
      return "starting";
    }
    return s.verdict ? "done: " + s.verdict : "done";
  }

  var live = document.getElementById("live");
  if (live && window.EventSource) {
    var status = document.getElementById("status");
    var progress = document.getElementById("progress");
    var source = new EventSource(live.dataset.events);
    source.addEventListener("status", function (event) {
      var s = JSON.parse(event.data);
      status.textContent = s.status;
      status.className = "status s-" + s.status;
      progress.textContent = describe(s);
      if (s.status !== "done" && !document.querySelector("#live .spinner")) {
        var spin = document.createElement("span");
        spin.className = "spinner";
        status.parentNode.insertBefore(spin, status);
      }
    });
    source.addEventListener("done", function () {
      source.close();
      window.location.reload();
    });
  } else if (live) {
    window.setTimeout(function () { window.location.reload(); }, 5000);
  }

  // The submit form: a chosen file names itself, and replaces whatever was pasted.
  var file = document.getElementById("file");
  var name = document.getElementById("filename");
  if (file && name) {
    file.addEventListener("change", function () {
      if (file.files.length) { name.value = file.files[0].name; }
    });
  }
})();
