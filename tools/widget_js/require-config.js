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
})();
