/* agent-farm report, served by farm view with its results paged: asks the view for a page of the
   results table (farm/view/table.py). Only in those pages; the standalone report fetches nothing. */
window.farmPagedCases = (url) =>
  fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then((r) => r.json().then((body) => {
      if (!r.ok) throw new Error(body.error || "HTTP " + r.status);
      return body;
    }));
