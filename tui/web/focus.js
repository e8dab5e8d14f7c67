// The console has the keys from the start and keeps them wherever the page is clicked: the
// page is the terminal and nothing else, so no click beside it may take its focus away.
"use strict";
window.addEventListener("load", () => {
  const keys = () => document.querySelector(".xterm-helper-textarea");  // xterm.js's input field
  setTimeout(() => keys()?.focus());  // after textual.js's own onload has opened the terminal
  document.addEventListener("mousedown", (event) => {
    if (!event.target.closest(".xterm")) event.preventDefault();  // a click beside it: no blur
  });
  window.addEventListener("focus", () => keys()?.focus());  // back to the tab: back to the keys
});
