/** One passage of a document answer: its rank badges, where it comes from, its text and page. */
import type { Source } from "../api/types";
import { SourceFeedback } from "../feedback/Feedback";
import { sourceElementId } from "../turns/citations";
import { partitionUrl } from "./dagster";
import { PagePreview } from "./PagePreview";
import { markedPieces } from "./quotes";
import { traceBadges } from "./trace";

/** Why the passage ranked where it did (`sem #1 · bm25 #3 · fused 0.94 · rerank +2`). */
function RankBadges({ source }: { source: Source }) {
  const badges = traceBadges(source.trace ?? null);
  if (badges.length === 0) return null;
  return (
    <ul className="badges" aria-label="Ranking">
      {badges.map((badge) => (
        <li key={badge.kind} className={`badge badge-${badge.kind}`} title={badge.title}>
          {badge.label}
          <span className="visually-hidden">: {badge.title}</span>
        </li>
      ))}
    </ul>
  );
}

/** The file, page, extraction and chunk the passage comes from. */
function SourceMeta({ source }: { source: Source }) {
  return (
    <dl className="meta">
      <div>
        <dt>File</dt>
        <dd>{source.relative_path}</dd>
      </div>
      {source.page != null && (
        <div>
          <dt>Page</dt>
          <dd>{source.page}</dd>
        </div>
      )}
      <div>
        <dt>Extraction</dt>
        <dd>{source.extraction}</dd>
      </div>
      <div>
        <dt>Chunk</dt>
        <dd>{source.chunk_index}</dd>
      </div>
    </dl>
  );
}

/** The passage's text, what the answer quotes of it marked. */
function PassageText({ source }: { source: Source }) {
  return (
    <blockquote className="content">
      {markedPieces(source.content, source.quotes).map((piece, i) =>
        piece.quoted ? (
          <mark key={i} className="quote" title="The answer rests on this text">
            {piece.text}
          </mark>
        ) : (
          piece.text
        ),
      )}
    </blockquote>
  );
}

export function SourceCard({
  turnId,
  source,
  cited,
  focused,
  dagsterUrl,
}: {
  turnId: string;
  source: Source;
  cited: boolean;
  focused: boolean;
  dagsterUrl: string | null;
}) {
  const titleId = `${sourceElementId(turnId, source.n)}-title`;
  const classes = ["source", focused && "is-focused", cited && "is-cited"].filter(Boolean).join(" ");
  return (
    <li
      id={sourceElementId(turnId, source.n)}
      className={classes}
      tabIndex={-1}
      aria-labelledby={titleId}
      aria-current={focused ? "true" : undefined}
      data-chunk-id={source.chunk_id}
    >
      <h3 id={titleId}>
        <span className="source-n">[{source.n}]</span> {source.file_name}
        {cited && <span className="pill">cited</span>}
        <SourceFeedback turnId={turnId} n={source.n} />
      </h3>
      <RankBadges source={source} />
      <SourceMeta source={source} />
      <div className="source-body">
        <PagePreview source={source} />
        <PassageText source={source} />
      </div>
      {source.context && (
        <p className="context">
          <span className="context-label">Context added at ingest:</span> {source.context}
        </p>
      )}
      {dagsterUrl && (
        <a
          className="lineage"
          href={partitionUrl(dagsterUrl, source.relative_path)}
          target="_blank"
          rel="noreferrer"
        >
          Lineage in Dagster
          <span className="visually-hidden"> for {source.relative_path} (opens in a new tab)</span>
        </a>
      )}
    </li>
  );
}
