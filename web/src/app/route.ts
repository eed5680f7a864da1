/**
 * The address of a screen, kept in the URL's hash so a reload (or a shared link)
 * restores it without the server knowing any client route: `#/` a new chat,
 * `#/c/<conversation id>` a saved conversation, `#/corpus` the corpus.
 */
export type Route = { view: "chat"; conversationId: string | null } | { view: "corpus" };

/**
 * The route a hash names. A hash that is not a route (an in-page anchor such as
 * `#question`) gives `null`; an empty hash or an unknown route is a new chat.
 */
export function parseRoute(hash: string): Route | null {
  const raw = hash.replace(/^#/, "");
  if (raw !== "" && !raw.startsWith("/")) return null;
  const path = raw.replace(/^\/+/, "");
  if (path === "corpus") return { view: "corpus" };
  const match = /^c\/([^/?#]+)$/.exec(path);
  if (match?.[1]) {
    try {
      return { view: "chat", conversationId: decodeURIComponent(match[1]) };
    } catch {
      // a malformed escape: not a conversation id this client wrote
    }
  }
  return { view: "chat", conversationId: null };
}

/** The hash of a route (`parseRoute`'s inverse). */
export function routeHash(route: Route): string {
  if (route.view === "corpus") return "#/corpus";
  return route.conversationId === null ? "#/" : `#/c/${encodeURIComponent(route.conversationId)}`;
}
