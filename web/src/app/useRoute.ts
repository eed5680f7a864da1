/** The current route, following the URL's hash. */
import { useCallback, useEffect, useState } from "react";

import { parseRoute, routeHash, type Route } from "./route";

export interface RouteController {
  route: Route;
  /** Go to `route`; `replace` rewrites the current history entry instead of adding one. */
  navigate: (route: Route, replace?: boolean) => void;
}

export function useRoute(): RouteController {
  const [route, setRoute] = useState<Route>(
    () => parseRoute(window.location.hash) ?? { view: "chat", conversationId: null },
  );

  useEffect(() => {
    const onChange = () => {
      const next = parseRoute(window.location.hash);
      if (next !== null) setRoute(next);
    };
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);

  const navigate = useCallback((next: Route, replace = false) => {
    const hash = routeHash(next);
    if (replace) {
      // replaceState fires no hashchange: update the state here
      window.history.replaceState(null, "", hash);
      setRoute(next);
    } else if (window.location.hash !== hash) {
      window.location.hash = hash;
    } else {
      setRoute(next);
    }
  }, []);

  return { route, navigate };
}
