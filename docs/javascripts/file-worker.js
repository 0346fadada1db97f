/*
 * Search on a site opened from disk (file://).
 *
 * The theme runs its search index in a Web Worker, and browsers refuse
 * `new Worker(...)` on a page opened from disk (Chromium: "cannot be accessed
 * from origin 'null'").  On file:// only, this replaces `Worker` with a
 * stand-in that runs the worker's script in a hidden iframe whose window
 * plays the worker's global scope.  The iframe is written from `srcdoc`, so it
 * shares the page's origin: the page hands it each message as a "message"
 * event of its window (a copy, on a later task, as a worker would get it), and
 * the worker's `postMessage(...)` answers the page with `parent.postMessage`.
 * Served over HTTP, the page keeps the browser's own Worker and this does
 * nothing.
 *
 * Loaded in the page's <head> (mkdocs.yml, extra.polyfills), before the
 * theme's bundle creates its worker.  Written for this site; it needs nothing
 * from outside it.
 */
(function () {
  "use strict";
  if (location.protocol !== "file:" || typeof window.Worker === "undefined") {
    return;
  }

  var KEY = "jsonrpcThreadsFileWorker";
  var next = 1;

  function copy(data) {
    return typeof structuredClone === "function" ? structuredClone(data) : JSON.parse(JSON.stringify(data));
  }

  function FileWorker(url) {
    var events = document.createDocumentFragment(); // an EventTarget for the page's listeners
    var self = this;
    var id = next++;
    var script = new URL(url, document.baseURI).href;
    var frame = document.createElement("iframe");
    var queue = [];
    var loaded = false;

    this.onmessage = null;
    this.onerror = null;
    this.addEventListener = events.addEventListener.bind(events);
    this.removeEventListener = events.removeEventListener.bind(events);
    this.dispatchEvent = events.dispatchEvent.bind(events);

    function deliver(event) {
      var handler = event.type === "message" ? self.onmessage : self.onerror;
      if (typeof handler === "function") {
        handler.call(self, event);
      }
      events.dispatchEvent(event);
    }

    function fromFrame(event) {
      var data = event.data;
      if (event.source !== frame.contentWindow || !data || data[KEY] !== id) {
        return;
      }
      if (data.failed) {
        deliver(new ErrorEvent("error", { message: "cannot load the worker script " + script }));
      } else {
        deliver(new MessageEvent("message", { data: data.data }));
      }
    }

    function toFrame(data) {
      var scope = frame.contentWindow;
      if (scope) {
        scope.dispatchEvent(new scope.MessageEvent("message", { data: copy(data) }));
      }
    }

    this.postMessage = function (data) {
      if (loaded) {
        setTimeout(toFrame, 0, data);
      } else {
        queue.push(data);
      }
    };
    this.terminate = function () {
      window.removeEventListener("message", fromFrame);
      queue = [];
      loaded = false;
      if (frame.parentNode) {
        frame.parentNode.removeChild(frame);
      }
    };

    window.addEventListener("message", fromFrame);
    frame.hidden = true;
    frame.tabIndex = -1;
    frame.setAttribute("aria-hidden", "true");
    frame.addEventListener("load", function () {
      loaded = true;
      var waiting = queue;
      queue = [];
      waiting.forEach(self.postMessage);
    });
    // The worker's postMessage(data) goes to the page, tagged with this worker's id.
    var post =
      "window.postMessage=function(data){parent.postMessage({" + KEY + ":" + id + ",data:data},'*');};";
    var failed = "parent.postMessage({" + KEY + ":" + id + ",failed:true},'*')";
    frame.srcdoc =
      "<!doctype html><meta charset=utf-8><script>" + post + "<\/script>" +
      "<script src=" + JSON.stringify(script) + " onerror=\"" + failed + "\"><\/script>";
    (document.body || document.documentElement).appendChild(frame);
  }

  window.Worker = FileWorker;
})();
