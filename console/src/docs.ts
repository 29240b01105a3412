/**
 * The API reference at /docs: Redoc (its standalone bundle, loaded before this script as a classic
 * script, which sets window.Redoc) renders the service's own /openapi.json. The fonts are the
 * system's: Redoc's theme names Montserrat and Roboto, which a page that loads nothing from other
 * hosts would not have.
 */
interface RedocGlobal {
  init(specUrl: string, options: object, element: HTMLElement | null): void;
}

declare const Redoc: RedocGlobal;

const SYSTEM_FONTS = "system-ui, -apple-system, 'Segoe UI', sans-serif";

Redoc.init(
  "/openapi.json",
  {
    expandResponses: "200,201,204",
    theme: {
      typography: {
        fontFamily: SYSTEM_FONTS,
        headings: { fontFamily: SYSTEM_FONTS },
        code: { fontFamily: "ui-monospace, 'DejaVu Sans Mono', monospace" },
      },
    },
  },
  document.getElementById("reference"),
);
