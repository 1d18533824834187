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

// Opened as a file (file://), a browser refuses the fetches of pages that Sphinx's
// search makes for the quote under each result, and logs an error for each. There the
// search lists the pages without quotes, and its page says how to get them: a served
// copy of the site. Runs before the search does, which waits for the page to load.
if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
  DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  document.addEventListener("DOMContentLoaded", () => {
    const results = document.getElementById("search-results");
    if (!results) return;
    const note = document.createElement("p");
    note.className = "search-file-note";
    note.textContent = document.documentElement.lang.startsWith("ru")
      ? "Сайт открыт как файл: поиск перечисляет страницы без цитат. С цитатами — в копии, " +
        "которую показывает сервер: nox -s serve в клоне курса."
      : "This site is opened as a file, so the search lists pages without quotes. A served " +
        "copy shows them: nox -s serve in a clone of the course.";
    results.parentNode.insertBefore(note, results);
  });
}
