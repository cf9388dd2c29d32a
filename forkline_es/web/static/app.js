// forkline-es serve: progressive touches only; every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // The status filter applies as soon as it is chosen (the form's button does it without JS).
  for (const select of document.querySelectorAll("select[data-autosubmit]")) {
    select.addEventListener("change", () => select.form.submit());
  }
  // Times are recorded in UTC; hovering one shows it in the browser's own time zone.
  for (const node of document.querySelectorAll("time")) {
    const text = node.textContent.trim();
    const when = text ? new Date(text) : null;
    if (when && !Number.isNaN(when.getTime())) {
      node.setAttribute("datetime", text);
      node.title = when.toLocaleString();
    }
  }
  // The verify badge: re-checking a run reads all of it, so the page asks for it after loading.
  const badge = document.querySelector("[data-verify]");
  if (badge) {
    fetch(badge.dataset.verify)
      .then((response) => response.json())
      .then((report) => {
        if (!report || typeof report.ok !== "boolean") throw new Error("no report");
        badge.className = "badge " + (report.ok ? "ok" : "bad");
        badge.dataset.ok = String(report.ok);
        badge.textContent = report.ok ? "verify: ok" : `verify: ${report.problems.length} problem(s)`;
        const list = document.getElementById("problems");
        for (const problem of report.problems) {
          const item = document.createElement("li");
          item.textContent = JSON.stringify(problem);  // recorded text stays text
          list.append(item);
        }
        list.hidden = report.ok;
      })
      .catch(() => { badge.textContent = "verify: not available"; });
  }
  // Collapse or expand every payload at once.
  const blocks = document.querySelectorAll(".slot details");
  const place = document.querySelector("[data-payload-toggle]");
  if (place && blocks.length > 1) {
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "toggle-payloads";
    toggle.textContent = "collapse payloads";
    toggle.addEventListener("click", () => {
      const open = toggle.textContent.startsWith("expand");
      for (const d of blocks) d.open = open;
      toggle.textContent = open ? "collapse payloads" : "expand payloads";
    });
    place.append(toggle);
  }
});
