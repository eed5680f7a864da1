/** What the message graph found besides the days: its entities and relations. */
import type { GraphEvidence } from "../api/types";
import { routeHash } from "../app/route";

export function GraphFindings({ graph }: { graph: GraphEvidence }) {
  if (graph.entities.length === 0 && graph.relations.length === 0) return null;
  return (
    <section className="graph-findings" aria-labelledby="graph-findings-heading">
      <h3 id="graph-findings-heading">
        Found in the message graph <span className="muted">({graph.mode} mode)</span>
      </h3>
      {graph.entities.length > 0 && (
        <ul className="entity-chips" aria-label="Entities">
          {graph.entities.map((entity) => (
            <li key={entity.name} title={entity.description}>
              <a href={routeHash({ view: "graph", entity: entity.name, day: null })}>
                <span className={`entity-type type-${entity.type.toLowerCase()}`}>{entity.type}</span>{" "}
                {entity.name}
              </a>
            </li>
          ))}
        </ul>
      )}
      {graph.relations.length > 0 && (
        <ul className="relations" aria-label="Relations">
          {graph.relations.map((relation) => (
            <li key={`${relation.source}\u0000${relation.target}`} title={relation.description}>
              <strong>{relation.source}</strong> {"\u2194"} <strong>{relation.target}</strong>
              {relation.keywords && <span className="muted">: {relation.keywords}</span>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
