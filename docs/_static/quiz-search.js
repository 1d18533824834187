// Search results quote each page around the words found. Sphinx takes the quote from the
// page's text, closed dropdowns included; this leaves out what is marked no-search (a
// quiz's verdicts, which the search index leaves out too), so a search never quotes an
// answer. Runs before Sphinx's search starts, which also waits for the page to load.
document.addEventListener("DOMContentLoaded", () => {
  if (typeof Search === "undefined" || typeof Search.htmlToText !== "function") return;
  const pageText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    page.querySelectorAll(".no-search").forEach((element) => element.remove());
    return pageText(page.documentElement.outerHTML, anchor);
  };
});
