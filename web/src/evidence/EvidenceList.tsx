/** The shown answer's evidence: document passages, or conversation days. */
import type { Evidence, Turn } from "../turns/state";
import { DayCard } from "./DayCard";
import { GraphFindings } from "./GraphFindings";
import { SourceCard } from "./SourceCard";

interface ListProps {
  turn: Turn;
  retrieval: Evidence;
  focusedSource: number | null;
}

/** A message-graph answer's days, what the graph found, and the day-grain footer. */
function DayList({ turn, retrieval, focusedSource }: ListProps) {
  return (
    <>
      {retrieval.days.length === 0 ? (
        <p className="muted">No conversation day matched.</p>
      ) : (
        <ol className="sources days">
          {retrieval.days.map((day) => (
            <DayCard
              key={day.doc_key}
              turnId={turn.id}
              day={day}
              cited={turn.cited.includes(day.n)}
              focused={focusedSource === day.n}
            />
          ))}
        </ol>
      )}
      {retrieval.graph && <GraphFindings graph={retrieval.graph} />}
      <p className="day-grain">
        Day-grain evidence: each card is a whole conversation day, not a single message. A citation points at
        the day; the message it rests on is somewhere in that day.
      </p>
    </>
  );
}

/** A document answer's passages. */
function SourceList({
  turn,
  retrieval,
  focusedSource,
  dagsterUrl,
}: ListProps & { dagsterUrl: string | null }) {
  if (retrieval.sources.length === 0) return <p className="muted">Nothing in the corpus matched.</p>;
  return (
    <ol className="sources">
      {retrieval.sources.map((source) => (
        <SourceCard
          key={source.chunk_id}
          turnId={turn.id}
          source={source}
          cited={turn.cited.includes(source.n)}
          focused={focusedSource === source.n}
          dagsterUrl={dagsterUrl}
        />
      ))}
    </ol>
  );
}

export function EvidenceList({ dagsterUrl, ...list }: ListProps & { dagsterUrl: string | null }) {
  if (list.retrieval.corpus === "graph") return <DayList {...list} />;
  return <SourceList {...list} dagsterUrl={dagsterUrl} />;
}
