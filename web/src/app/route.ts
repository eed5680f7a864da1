/**
 * The address of a screen, kept in the URL's hash so a reload (or a shared link)
 * restores it without the server knowing any client route: `#/` a new chat,
 * `#/c/<conversation id>` a saved conversation, `#/corpus` the corpus (`?path=` shows
 * one document), `#/graph` the message graph (`?entity=` centres its view on an entity,
 * `?day=` opens a day, `?archive=` shows one archive), `#/map` the codebase map
 * (`?card=` spotlights a card).
 */
export type Route =
  | { view: "chat"; conversationId: string | null }
  | { view: "corpus"; path?: string | null }
  | { view: "graph"; entity: string | null; day: string | null; archive?: string | null }
  | { view: "map"; card: string | null };

type GraphRoute = Extract<Route, { view: "graph" }>;

/**
 * The route a hash names. A hash that is not a route (an in-page anchor such as
 * `#question`) gives `null`; an empty hash or an unknown route is a new chat.
 */
export function parseRoute(hash: string): Route | null {
  const raw = hash.replace(/^#/, "");
  if (raw !== "" && !raw.startsWith("/")) return null;
  const [path = "", search = ""] = raw.replace(/^\/+/, "").split(/\?(.*)/s, 2);
  const query = new URLSearchParams(search);
  if (path === "corpus") {
    const doc = query.get("path");
    return doc ? { view: "corpus", path: doc } : { view: "corpus" };
  }
  if (path === "graph") {
    const route: GraphRoute = {
      view: "graph",
      entity: query.get("entity") || null,
      day: query.get("day") || null,
    };
    const archive = query.get("archive");
    return archive ? { ...route, archive } : route;
  }
  if (path === "map") return { view: "map", card: query.get("card") || null };
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
  const query = new URLSearchParams();
  const withQuery = (base: string) => {
    const search = query.toString();
    return search ? `${base}?${search}` : base;
  };
  if (route.view === "corpus") {
    if (route.path) query.set("path", route.path);
    return withQuery("#/corpus");
  }
  if (route.view === "graph") {
    if (route.entity) query.set("entity", route.entity);
    if (route.day) query.set("day", route.day);
    if (route.archive) query.set("archive", route.archive);
    return withQuery("#/graph");
  }
  if (route.view === "map") {
    if (route.card) query.set("card", route.card);
    return withQuery("#/map");
  }
  return route.conversationId === null ? "#/" : `#/c/${encodeURIComponent(route.conversationId)}`;
}
