/** One conversation day of a message-graph answer, numbered as the answer cites it. */
import type { DaySource } from "../api/types";
import { routeHash } from "../app/route";
import { sourceElementId } from "../turns/citations";

export function DayCard({
  turnId,
  day,
  cited,
  focused,
}: {
  turnId: string;
  day: DaySource;
  cited: boolean;
  focused: boolean;
}) {
  const id = sourceElementId(turnId, day.n);
  const classes = ["source", "day-card", focused && "is-focused", cited && "is-cited"]
    .filter(Boolean)
    .join(" ");
  const count = day.message_guids.length;
  return (
    <li
      id={id}
      className={classes}
      tabIndex={-1}
      aria-labelledby={`${id}-title`}
      aria-current={focused ? "true" : undefined}
      data-doc-key={day.doc_key}
    >
      <h3 id={`${id}-title`}>
        <span className="source-n">[{day.n}]</span> {day.thread_name}
        {cited && <span className="pill">cited</span>}
      </h3>
      <dl className="meta">
        <div>
          <dt>Day</dt>
          <dd>{day.span.replace("..", " \u2013 ")}</dd>
        </div>
        <div>
          <dt>Messages</dt>
          <dd>{count}</dd>
        </div>
        <div>
          <dt>Key</dt>
          <dd>
            <code>{day.doc_key}</code>
          </dd>
        </div>
      </dl>
      <blockquote className="content transcript">{day.excerpt}</blockquote>
      <a className="lineage" href={routeHash({ view: "graph", entity: null, day: day.doc_key })}>
        The whole day on the Graph screen
        <span className="visually-hidden">
          {" "}
          ({day.thread_name}, {day.span})
        </span>
      </a>
    </li>
  );
}
