"use strict";
// The "Download report" link of the run and compare pages: the runs on screen as one HTML file
// (GET /api/report, what `tunetrack report` writes).
{
  const shown = location.pathname.startsWith("/run/")
    ? [decodeURIComponent(location.pathname.split("/").pop())]
    : (new URLSearchParams(location.search).get("ids") || "").split(",").filter(Boolean);
  document.getElementById("report").href = `/api/report?${shown.map(id => `run=${encodeURIComponent(id)}`).join("&")}`;
}
