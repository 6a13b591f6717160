/* agent-farm history pages (comparison, trends): the helpers both pages use.
   Values reach the page through textContent only. */
const farmUi = (() => {
  "use strict";
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  // One toggle button per [key, label, test] filter, with the count of items it keeps.
  function chips(box, filters, items, current, pick) {
    for (const [key, label, test] of filters) {
      const chip = el("button", "chip", label);
      chip.appendChild(el("span", "n", String(items.filter(test).length)));
      chip.type = "button";
      chip.dataset.filter = key;
      chip.setAttribute("aria-pressed", String(key === current));
      chip.addEventListener("click", () => {
        for (const other of box.children) other.setAttribute("aria-pressed", String(other === chip));
        pick(key);
      });
      box.appendChild(chip);
    }
  }
  return { el, chips };
})();
