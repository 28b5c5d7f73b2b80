// Point require.js at the widget JavaScript served beside this file, so that the static book
// renders pythreejs widgets with no network.  `make widget-js` copies this script, require.js,
// the ipywidgets HTML manager (embed-amd.js) and jupyter-threejs into _static_widgets/widgets-js/,
// which the book publishes as <site>/widgets-js/.  The folder is located from this script's own
// URL, so pages at any depth (and file:// URLs) work.
(function () {
  "use strict";
  var script = document.currentScript;
  var src = script ? script.src : "";
  var base = src.slice(0, src.lastIndexOf("/") + 1);
  var dir = base.slice(0, -1);
  window.requirejs.config({
    paths: {
      "jupyter-threejs": base + "jupyter-threejs/index",
      // embed-amd.js defines the @jupyter-widgets modules itself; these paths only make the
      // URLs it derives from their names (for its icon fonts) point into this folder.
      "@jupyter-widgets": dir,
      "@jupyter-widgets/html-manager/dist": dir
    },
    waitSeconds: 60
  });

  // The widget manager typesets labels with the MathJax 2 call MathJax.Hub.Queue; the book
  // loads MathJax 3, which has no Hub.  Give it a small Hub that typesets with MathJax 3.
  // Installed at "load", after the deferred MathJax script and before widgets render.
  function mathjaxHubShim() {
    var mj = window.MathJax;
    if (!mj || mj.Hub) return;
    mj.Hub = {
      Queue: function (command) {
        var element = Array.isArray(command) ? command[2] : null;
        var mj3 = window.MathJax;
        if (!element || !mj3) return;
        var ready = (mj3.startup && mj3.startup.promise) || Promise.resolve();
        ready.then(function () {
          if (mj3.typesetPromise) return mj3.typesetPromise([element]);
        }).catch(function (err) {
          console.warn("MathJax could not typeset a widget label", err);
        });
      }
    };
  }
  window.addEventListener("load", mathjaxHubShim);
})();
