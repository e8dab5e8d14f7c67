// The page script of `escalate serve` (tui/web/gate.py says why):
// - on the link's page, keeps the key in localStorage (this origin's alone: no other port's page
//   reads it, no request carries it) and goes on to "/", leaving the token out of the history;
// - on the console's page, offers the key when textual.js opens its websocket (a subprotocol),
//   and shows the server's notices (another browser session opened) above the console.
(() => {
  "use strict";
  const STORE = "escalate-serve-key";
  const PROTOCOL = "escalate-key.";
  const NOTICE = "escalate-notice";

  function stored() {
    try {
      return localStorage.getItem(STORE) || "";
    } catch (error) {  // storage turned off: the console cannot open; the server refuses
      return "";
    }
  }

  function notice(text) {
    const box = document.createElement("div");
    box.className = "session-notice";
    box.setAttribute("role", "alert");
    const line = document.createElement("span");
    line.textContent = text;
    const close = document.createElement("button");
    close.textContent = "OK";
    close.addEventListener("click", () => box.remove());
    box.append(line, close);
    document.body.append(box);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const key = document.body.dataset.key;
    if (key) {
      localStorage.setItem(STORE, key);
      location.replace("/");
    } else if (new URLSearchParams(location.search).has("token")) {
      history.replaceState(null, "", "/");  // the link opened again in this browser
    }
  });

  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(url) {
      super(url, [PROTOCOL + (stored() || "none")]);
      this.addEventListener("message", (event) => {
        if (typeof event.data !== "string") return;
        let message;
        try {
          message = JSON.parse(event.data);
        } catch (error) {
          return;
        }
        if (Array.isArray(message) && message[0] === NOTICE && typeof message[1] === "string") notice(message[1]);
      });
    }
  };
})();
