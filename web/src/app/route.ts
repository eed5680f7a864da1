/**
 * The address of a screen, kept in the URL's hash so a reload (or a shared link)
 * restores it without the server knowing any client route: `#/` a new chat,
 * `#/c/<conversation id>` a saved conversation, `#/corpus` the corpus, `#/graph` the
 * message graph (`?entity=` centres its view on an entity, `?day=` opens a day).
 */
export type Route =
  | { view: "chat"; conversationId: string | null }
  | { view: "corpus" }
  | { view: "graph"; entity: string | null; day: string | null };

/**
 * The route a hash names. A hash that is not a route (an in-page anchor such as
 * `#question`) gives `null`; an empty hash or an unknown route is a new chat.
 */
export function parseRoute(hash: string): Route | null {
  const raw = hash.replace(/^#/, "");
  if (raw !== "" && !raw.startsWith("/")) return null;
  const [path = "", search = ""] = raw.replace(/^\/+/, "").split(/\?(.*)/s, 2);
  if (path === "corpus") return { view: "corpus" };
  if (path === "graph") {
    const query = new URLSearchParams(search);
    return { view: "graph", entity: query.get("entity") || null, day: query.get("day") || null };
  }
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
  if (route.view === "graph") {
    const query = new URLSearchParams();
    if (route.entity) query.set("entity", route.entity);
    if (route.day) query.set("day", route.day);
    const search = query.toString();
    return search ? `#/graph?${search}` : "#/graph";
  }
  return route.conversationId === null ? "#/" : `#/c/${encodeURIComponent(route.conversationId)}`;
}
